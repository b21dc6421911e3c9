"""The rule from PySpark: what EXPLAIN shows, and answers of shapes the rule splits or surrounds.

Which shapes collapse and which keep Spark's plan (exactly) is CollapseStreamingJoinChainsSuite's
job, on plans alone; here the answers of the split and surrounded ones are checked.
"""

from __future__ import annotations

import random

import pytest

from spark_multijoin._session_conf import ENABLED_KEY
from spark_multijoin.testing import join_on_k
from support.generators import keyed_inputs, mixed_key_chain
from support.runs import batch_rows, explain, run_chain_and_multi, run_stream, session_conf


@pytest.mark.line_shared
@pytest.mark.parametrize("max_tables, multi_joins, binary_joins", [(3, 2, 0), (4, 1, 1)])
def test_a_chain_split_by_max_tables_gives_the_batch_answer(spark, tmp_path, max_tables,
                                                           multi_joins, binary_joins):
    inputs = keyed_inputs(tmp_path / "inputs", 5)
    multi = run_stream(spark, inputs, join_on_k, enabled=True, checkpoint=tmp_path / "on",
                       max_tables=max_tables)
    assert multi.multi_join_count == multi_joins, multi.plan
    assert multi.symmetric_join_count == binary_joins, multi.plan
    assert multi.rows == batch_rows(spark, inputs, join_on_k)


@pytest.mark.line_shared
@pytest.mark.parametrize("seed, n_on_j", [(0, 1), (1, 3), (2, 3)])
def test_key_groups_and_static_inputs_anywhere_fuse_a_multi_join_per_group(
        spark, tmp_path, seed, n_on_j):
    """Inner joins in a random order of three streaming inputs and a static one on k, and
    `n_on_j` streaming inputs on j: each group of three or more streaming inputs fuses wherever
    its inputs are, and the answer is Spark's chain's and the batch query's."""
    inputs, order, build = mixed_key_chain(random.Random(40 + seed), tmp_path / "inputs", n_on_j)
    chain, multi = run_chain_and_multi(spark, inputs, build, tmp_path, chain_in_one_trigger=True)
    expected = batch_rows(spark, inputs, build)
    assert expected, f"the data should join (order {order})"
    assert multi.rows == chain.rows == expected, f"order {order}"
    groups = 1 + (n_on_j >= 3)
    streaming_units = groups + (n_on_j if n_on_j < 3 else 0)
    assert multi.multi_join_count == groups, multi.plan
    assert multi.symmetric_join_count == streaming_units - 1, multi.plan
    assert chain.symmetric_join_count == 2 + n_on_j, chain.plan


@pytest.mark.line_shared
def test_the_multi_join_hint_fuses_a_running_query_while_the_conf_is_off(spark, tmp_path):
    inputs = keyed_inputs(tmp_path / "inputs", 3)

    def build(frames):
        named = [frame.alias(f"t{i}") for i, frame in enumerate(frames)]
        return join_on_k(named).hint("MULTI_JOIN", "t0", "t1", "t2")

    multi = run_stream(spark, inputs, build, enabled=False, checkpoint=tmp_path / "on")
    assert multi.multi_join_count == 1, multi.plan
    assert multi.rows == batch_rows(spark, inputs, build)


@pytest.mark.line_shared
def test_a_static_input_joined_after_the_chain_gives_the_batch_answer(spark, tmp_path):
    inputs = keyed_inputs(tmp_path / "inputs", 3)
    static = spark.createDataFrame([(key, key * 10) for key in range(5)], "k int, w int")

    def build(frames):
        return join_on_k(frames).join(static, "k")

    multi = run_stream(spark, inputs, build, enabled=True, checkpoint=tmp_path / "on")
    assert multi.multi_join_count == 1, multi.plan
    assert "BroadcastHashJoin" in multi.plan or "SortMergeJoin" in multi.plan
    assert multi.rows == batch_rows(spark, inputs, build)


def test_explain_before_start_shows_the_operator_without_state(spark, tmp_path):
    inputs = keyed_inputs(tmp_path / "inputs", 3)
    with session_conf(spark, {ENABLED_KEY: True}):
        enabled_plan = explain(join_on_k(inputs.streams(spark)))
    with session_conf(spark, {ENABLED_KEY: False}):
        disabled_plan = explain(join_on_k(inputs.streams(spark)))
    assert enabled_plan.count("StreamingMultiJoin input0 key=[k]") == 1
    assert "state=<unknown>" in enabled_plan
    # The physical plan, not EXPLAIN's spark-multijoin section, which says why nothing fused.
    assert "StreamingMultiJoin" not in disabled_plan.split("== Extended Information")[0]
    assert disabled_plan.count("StreamingSymmetricHashJoin") == 2
