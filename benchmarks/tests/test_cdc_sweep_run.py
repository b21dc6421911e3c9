"""The CDC sweep end to end, tiny: `python -m multijoin_bench --cdc-sweep cdc_skew --tiny` on a
broker of its own, our changelog join into the JVM sink that notes the markers. Every marker
released comes out, each stage offered its rate, the plan holds the changelog join, its state
holds the rows the changes left, and the result files are written.

The sweep reads Kafka through Spark's connector, whose jars scripts/setup-kafka fetches for one
Spark line: scripts/test runs this file there, in the Delta step. Elsewhere it is skipped. Its
driver is a process of its own, as the JVM sink goes on the driver's class path at its start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from scripts.kafka_jars import DELTA_BY_LINE

ROOT = Path(__file__).resolve().parents[2]
LINE = ".".join(pyspark.__version__.split(".")[:2])
pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    LINE not in DELTA_BY_LINE,
    reason=f"Spark's Kafka connector is fetched for Spark {', '.join(DELTA_BY_LINE)} only (this "
           f"is {pyspark.__version__}); scripts/test runs these tests there")]


def test_a_tiny_sweep_measures_every_marker_at_the_rates_offered(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT)])}
    finished = subprocess.run(
        [sys.executable, "-m", "multijoin_bench", "--cdc-sweep", "cdc_skew", "--tiny",
         "--sweep-peers", "ours_rocksdb", "--driver-memory", "1g", "--out", str(out),
         "--work", str(tmp_path / "work")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]

    result = json.loads((out / "cdc_sweep.json").read_text())["results"][0]
    run = result["peers"]["ours_rocksdb"]
    assert run["initial_load"]["seconds"] is not None
    assert len(run["points"]) == 2
    for point in run["points"]:
        assert point["missing_markers"] == 0 and point["measured_markers"] > 0
        assert point["offered_rate"] == pytest.approx(point["rate"], rel=0.05)
        assert 0 < point["p50_ms"] <= point["p99_ms"]
    assert run["batches"] > 0 and "ChangelogJoin" in run["plan"]
    # The state at stop holds at least the inputs' live rows, on RocksDB in SST files.
    logical = run["logical_state"]["tables"]
    assert run["state"]["rows"] >= sum(table["rows"] for table in logical.values()) > 0
    assert run["state"]["sst_bytes"] > 0
    assert "cdc_skew" in (out / "cdc_sweep.md").read_text()
    assert (out / "cdc_sweep.png").stat().st_size > 0
