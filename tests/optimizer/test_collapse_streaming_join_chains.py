"""Which chains the rule collapses, what it leaves alone, and that results never change."""

from __future__ import annotations

import random

import pytest
from pyspark.sql import functions as F

from streaming_joins import Inputs, batch_rows, explain, run_stream, session_conf


def keyed_inputs(root, n_inputs: int, seed: int = 0, n_keys: int = 5) -> Inputs:
    rng = random.Random(seed)
    inputs = Inputs(root, [f"k int, v{i} int" for i in range(n_inputs)])
    for i in range(n_inputs):
        rows = [{"k": rng.randrange(n_keys), f"v{i}": rng.randrange(10)} for _ in range(12)]
        inputs.batches.append([rows[:6], rows[6:]])
    inputs.write()
    return inputs


def join_on_k(frames):
    joined = frames[0]
    for frame in frames[1:]:
        joined = joined.join(frame, "k")
    return joined


def assert_same_answer(spark, tmp_path, inputs, build, *, multi_joins: int, **run_options):
    chain = run_stream(spark, inputs, build, enabled=False, checkpoint=tmp_path / "off",
                       **run_options)
    multi = run_stream(spark, inputs, build, enabled=True, checkpoint=tmp_path / "on",
                       **run_options)
    assert multi.rows == chain.rows == batch_rows(spark, inputs, build)
    assert chain.multi_join_count == 0
    assert multi.multi_join_count == multi_joins, multi.plan
    return multi


@pytest.mark.parametrize("max_tables, multi_joins", [(2, 4), (3, 2), (4, 2), (5, 1)])
def test_max_tables_splits_the_chain(spark, tmp_path, max_tables, multi_joins):
    inputs = keyed_inputs(tmp_path / "inputs", 5)
    assert_same_answer(spark, tmp_path, inputs, join_on_k, multi_joins=multi_joins,
                       max_tables=max_tables)


def test_two_way_join_is_left_to_spark(spark, tmp_path):
    inputs = keyed_inputs(tmp_path / "inputs", 2)
    assert_same_answer(spark, tmp_path, inputs, join_on_k, multi_joins=0)


def test_no_common_key_is_left_to_spark(spark, tmp_path):
    inputs = Inputs(tmp_path / "inputs", ["a int, x int", "a2 int, b int", "b2 int, y int"])
    rng = random.Random(3)
    for columns in (("a", "x"), ("a2", "b"), ("b2", "y")):
        rows = [{column: rng.randrange(4) for column in columns} for _ in range(10)]
        inputs.batches.append([rows[:5], rows[5:]])
    inputs.write()

    def build(frames):
        first, second, third = frames
        return (first.join(second, F.col("a") == F.col("a2"))
                .join(third, F.col("b") == F.col("b2")))

    assert_same_answer(spark, tmp_path, inputs, build, multi_joins=0)


def test_left_outer_join_stays_binary_and_the_inner_chain_below_collapses(spark, tmp_path):
    inputs = keyed_inputs(tmp_path / "inputs", 4)

    def build(frames):
        inner = frames[0].join(frames[1], "k").join(frames[2], "k")
        return inner.join(frames[3], "k", "left_outer")

    # Spark needs watermarks for a streaming outer join, so only the plan is compared here.
    with session_conf(spark, enabled=True):
        plan = explain(build(inputs.streams(spark)))
    assert plan.count("StreamingMultiJoin input0") == 1
    assert "LeftOuter" in plan


def test_static_input_stays_with_spark(spark, tmp_path):
    inputs = keyed_inputs(tmp_path / "inputs", 3)
    static = spark.createDataFrame([(key, key * 10) for key in range(5)], "k int, w int")

    def build(frames):
        return frames[0].join(frames[1], "k").join(frames[2], "k").join(static, "k")

    multi = assert_same_answer(spark, tmp_path, inputs, build, multi_joins=1)
    assert "BroadcastHashJoin" in multi.plan or "SortMergeJoin" in multi.plan


def test_batch_queries_are_never_rewritten(spark, tmp_path):
    inputs = keyed_inputs(tmp_path / "inputs", 4)
    with session_conf(spark, enabled=True):
        plan = explain(join_on_k(inputs.tables(spark)))
    assert "MultiJoin" not in plan


def test_explain_before_start_shows_the_operator_without_state(spark, tmp_path):
    inputs = keyed_inputs(tmp_path / "inputs", 3)
    with session_conf(spark, enabled=True):
        enabled_plan = explain(join_on_k(inputs.streams(spark)))
    with session_conf(spark, enabled=False):
        disabled_plan = explain(join_on_k(inputs.streams(spark)))
    assert enabled_plan.count("StreamingMultiJoin input0 key=[k]") == 1
    assert "state=<unknown>" in enabled_plan
    assert "StreamingMultiJoin" not in disabled_plan
    assert disabled_plan.count("StreamingSymmetricHashJoin") == 2


def test_hdfs_state_store_leaves_the_chain_to_spark(spark, tmp_path):
    inputs = keyed_inputs(tmp_path / "inputs", 3)
    provider = "spark.sql.streaming.stateStore.providerClass"
    previous = spark.conf.get(provider)
    spark.conf.set(provider, "org.apache.spark.sql.execution.streaming.state."
                             "HDFSBackedStateStoreProvider")
    try:
        assert_same_answer(spark, tmp_path, inputs, join_on_k, multi_joins=0)
    finally:
        spark.conf.set(provider, previous)
