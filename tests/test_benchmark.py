"""A smoke run of the benchmark on tiny data, in the tests' session (its numbers are not
checked here; `main()` only builds a session around `run_benchmark`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_multijoin._config import ENABLED_KEY
from support.modules import load_module
from support.runs import session_conf

BENCHMARK = Path(__file__).resolve().parent.parent / "scripts" / "benchmark.py"


@pytest.mark.slow
def test_benchmark_runs_both_modes_and_writes_its_results(spark, tmp_path):
    benchmark = load_module(BENCHMARK)
    with session_conf(spark, {ENABLED_KEY: None}):
        benchmark.run_benchmark(spark, benchmark.workloads(["fanout", "time_bounded"], shrink=50),
                                tmp_path / "out", tmp_path / "work", tiny=True)
    results = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert [r["workload"] for r in results] == ["fanout", "time_bounded"]
    for result in results:
        assert result["chain"]["output_rows"] == result["multi_join"]["output_rows"] > 0
        assert result["multi_join"]["multi_join_in_plan"]
    assert (tmp_path / "out" / "state_and_batch_duration.png").stat().st_size > 0
    table = (tmp_path / "out" / "results.md").read_text()
    assert "| fanout |" in table and "| time_bounded |" in table


@pytest.mark.slow
def test_outer_star_fuses_into_one_multi_join_with_the_batch_querys_answer(spark, tmp_path):
    benchmark = load_module(BENCHMARK)
    workload = benchmark.outer_star(keys=1, n_batches=2, fan_out=2)
    benchmark.inputs(workload, tmp_path).write()
    with session_conf(spark, {ENABLED_KEY: None}):
        multi = benchmark.run_mode(spark, workload, tmp_path, enabled=True)
    assert multi["multi_join_in_plan"]
    batch_rows = workload.query(benchmark.inputs(workload, tmp_path).tables(spark)).collect()
    assert multi["output_rows"] == len(batch_rows) > 0
    assert any(value is None for row in batch_rows for value in row), "some are null-padded"
