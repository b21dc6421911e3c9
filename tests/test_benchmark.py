"""A smoke run of the benchmark command on tiny data (its numbers are not checked here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parent.parent / "scripts" / "benchmark.py"


@pytest.mark.slow
def test_benchmark_runs_both_modes_and_writes_its_results(tmp_path):
    run = subprocess.run(
        [sys.executable, str(BENCHMARK), "--tiny", "--workloads", "fanout,time_bounded",
         "--out", str(tmp_path / "out"), "--work", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert [r["workload"] for r in results] == ["fanout", "time_bounded"]
    for result in results:
        assert result["chain"]["output_rows"] == result["multi_join"]["output_rows"] > 0
        assert result["multi_join"]["multi_join_in_plan"]
    assert (tmp_path / "out" / "state_and_batch_duration.png").stat().st_size > 0
    table = (tmp_path / "out" / "results.md").read_text()
    assert "| fanout |" in table and "| time_bounded |" in table
