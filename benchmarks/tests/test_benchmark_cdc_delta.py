"""The CDC benchmark end to end on a tiny cdc_star (its fan-out, null-padded identities and
children keyed apart from their row ids: the harder of the two workloads) and a tiny cdc_left10
(the wide recipe's, alone), on Delta: the changelog join's Delta table (through delta_merge),
the foreachBatch recipe's and the batch join of the tables' final rows must be the same rows,
and the result files written.

Delta's jars resolve on one Spark line only: scripts/test runs this file there, in the Delta step,
beside tests/changelog/test_delta_sink.py. Elsewhere it is skipped.
"""

from __future__ import annotations

import json
from typing import Iterator

import pyspark
import pytest
from pyspark.sql import SparkSession

from multijoin_bench.cdc.run import final_tables, run_cdc, run_one
from multijoin_bench.cdc.workloads import cdc_workload, write
from scripts.kafka_jars import DELTA_BY_LINE
from support.delta_session import delta_spark_session

LINE = ".".join(pyspark.__version__.split(".")[:2])
pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    LINE not in DELTA_BY_LINE,
    reason=f"Delta's jars resolve for Spark {', '.join(DELTA_BY_LINE)} only (this is "
           f"{pyspark.__version__}); scripts/test runs these tests there")]


@pytest.fixture(scope="module")
def delta_spark() -> Iterator[SparkSession]:
    yield from delta_spark_session("cdc-benchmark-tests")


def test_the_multi_join_and_the_recipe_end_with_the_batch_join(delta_spark, tmp_path):
    results = run_cdc(delta_spark, ["cdc_star"], changes=300, batch_sizes=[150],
                      out=tmp_path / "out", work=tmp_path / "work", cap_seconds=600,
                      warm_up=False, noop_runs=1)
    for result in results:
        runs = result["batch_sizes"]["150"]
        assert all(runs[run]["finished"] for run in ("multi_join", "multi_join_delta", "recipe"))
        assert runs["multi_join"]["changes_done"] == 300 == runs["recipe"]["changes_done"]
        assert runs["multi_join"]["batches"] == 2
        assert runs["final_tables"]["multi_join_vs_batch"] == (0, 0)
        assert runs["final_tables"]["recipe_vs_batch"] == (0, 0)
        assert runs["final_tables"]["batch_rows"] > 0
        state = result["compacted_state"]
        assert state["finished"] and state["state_rows"] == runs["multi_join"]["state_rows"]
        assert 0 < state["state_sst_bytes"]
    written = json.loads((tmp_path / "out" / "cdc_results.json").read_text())
    assert [r["workload"] for r in written["results"]] == ["cdc_star"]
    assert (tmp_path / "out" / "cdc_cost.png").stat().st_size > 0


def test_the_wide_recipe_ends_with_the_batch_join(delta_spark, tmp_path):
    spec = write(cdc_workload("cdc_left10", 300, 100), tmp_path / "files")
    run = run_one(delta_spark, spec, tmp_path / "runs", "recipe", 1, cap_seconds=600)
    assert run["finished"] and run["changes_done"] == 300 and run["batches"] == 3
    assert (tmp_path / "runs" / "recipe_current" / "wide").is_dir()  # one table, not ten
    checks = final_tables(delta_spark, spec, tmp_path / "runs", {"recipe": run})
    assert checks["recipe_vs_batch"] == (0, 0) and checks["batch_rows"] > 0
