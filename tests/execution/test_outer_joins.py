"""LEFT, RIGHT and FULL OUTER multi-joins: null-padded rows exactly when a row never matches.

Inputs have event times growing batch by batch, then two far-future batches that join nothing
(support.generators.timed_inputs). The far-future rows never become final within a run, so
their null-padded rows are the one part of the batch answer a stream does not emit yet.
"""

from __future__ import annotations

import random

import pytest
from pyspark.sql import functions as F

from spark_multijoin._session_conf import ENABLED_KEY
from spark_multijoin.testing import Inputs, timestamp, timestamp_value
from support.generators import (DELAY, FAR_FUTURE_SECONDS, add_late_rows, bounded_chain,
                                random_outer_tree, timed_inputs)
from support.metrics import progress_key
from support.runs import (STATE_STORES, batch_rows, explain, run_chain_and_multi, run_stream,
                          session_conf)
from support.line_share import seeds
from support.spark_lines import several_event_times_error


def without_far_rows(rows):
    """`rows` without those of the far-future batches' keys (1000 + i), whose padded rows a
    stream does not emit yet: the deciding inputs' far rows never become final within a run."""
    return type(rows)({row: n for row, n in rows.items()
                       if not any(isinstance(value, int) and value >= 1000 for value in row)})


# Every seed in RocksDB; a quarter of them on Spark's in-memory store too, which finds the rows that
# became final, and evicts, by scanning.
@pytest.mark.parametrize("seed, store", [(seed, "rocksdb") for seed in seeds(range(12))]
                         + [(seed, "in-memory") for seed in seeds(range(3))])
def test_random_outer_tree_matches_the_batch_query(spark, tmp_path, seed, store):
    """Nested LEFT and RIGHT OUTER joins mixed with inner ones, FULL OUTER joins above them, ON
    clauses reading the parent and other inputs joined before, null keys, late rows, several
    micro-batches: the answer is the batch query's, and the state ends as the far-future rows
    only."""
    rng = random.Random(900 + seed)
    n_inputs = 3 + seed % 4
    tree = random_outer_tree(rng, n_inputs, n_full_outer=min(seed % 3, n_inputs - 1))
    n_batches = rng.randint(4, 6)
    on_time = timed_inputs(tmp_path / "on_time", random.Random(seed), n_inputs, n_batches,
                           rows_per_batch=6, n_keys=4, null_keys=0.1)
    inputs = timed_inputs(tmp_path / "inputs", random.Random(seed), n_inputs, n_batches,
                          rows_per_batch=6, n_keys=4, null_keys=0.1)
    # Odd seeds: late rows in two inputs, which the multi-join drops (the batch query over the
    # on-time rows is the answer), and few of a micro-batch's rows kept in memory.
    late_inputs = rng.sample(range(n_inputs), 2) if seed % 2 else []
    add_late_rows(inputs, late_inputs)
    with session_conf(spark, STATE_STORES[store]):
        multi = run_stream(spark, inputs, tree.build, enabled=True, checkpoint=tmp_path / "on",
                           shuffle_partitions=rng.choice([1, 3]),
                           batch_rows_memory="32m" if seed % 2 == 0 else "300b")
    expected = without_far_rows(batch_rows(spark, on_time, tree.build))
    assert any(None in row for row in expected), "some rows should be padded: " + tree.describe()
    dropped = progress_key(spark, "NUM_ROWS_DROPPED_BY_WATERMARK")
    assert multi.state_metric_total(dropped) == 4 * len(late_inputs)
    assert multi.multi_join_count == 1, tree.describe() + "\n" + multi.plan
    assert without_far_rows(multi.rows) == expected, tree.describe()
    assert multi.state_rows("multiJoin") == [2 * n_inputs], tree.describe()


@pytest.mark.line_shared
def test_left_and_full_outer_star_matches_spark_chain(spark, tmp_path):
    """Two LEFT OUTER joins, then a FULL OUTER one, each time dropped after its join: a shape
    Spark's chain runs."""
    inputs = timed_inputs(tmp_path / "inputs", random.Random(77), 4, n_batches=4,
                          rows_per_batch=6, n_keys=5)
    build = bounded_chain([0, 0, 0, 0], [(0, 0), (20, 20), (10, 40), (0, 30)], drop_times=True,
                          kinds=["inner", "left_outer", "left_outer", "full_outer"])
    chain, multi = run_chain_and_multi(spark, inputs, build, tmp_path)
    expected = without_far_rows(batch_rows(spark, inputs, build))
    assert any(row[0] is None for row in expected), "some rows of the FULL OUTER input's own"
    assert multi.multi_join_count == 1, multi.plan
    assert without_far_rows(multi.rows) == expected
    assert without_far_rows(chain.rows) == expected
    padded_rows = progress_key(spark, "NUM_NULL_PADDED_ROWS")
    padded = [entry["customMetrics"][padded_rows] for p in multi.progress
              for entry in p["stateOperators"]]
    assert sum(padded) == sum(n for row, n in expected.items() if None in row) > 0


@pytest.mark.line_shared
def test_right_outer_join_is_a_swapped_left_outer_join(spark, tmp_path):
    inputs = timed_inputs(tmp_path / "inputs", random.Random(31), 3, n_batches=4,
                          rows_per_batch=6, n_keys=5)

    def build(frames):
        a, b, c = [frame.withWatermark(f"t{i}", DELAY) for i, frame in enumerate(frames)]
        on_b = (F.col("k0") == F.col("k1")) & F.expr(
            "t1 BETWEEN t0 - INTERVAL 20 SECONDS AND t0 + INTERVAL 20 SECONDS")
        on_c = (F.col("k0") == F.col("k2")) & F.expr(
            "t2 BETWEEN t0 - INTERVAL 10 SECONDS AND t0 + INTERVAL 30 SECONDS")
        return b.join(a, on_b, "right_outer").join(c, on_c, "left_outer")

    multi = run_stream(spark, inputs, build, enabled=True, checkpoint=tmp_path / "on")
    expected = without_far_rows(batch_rows(spark, inputs, build))
    assert multi.multi_join_count == 1, multi.plan
    assert any(None in row for row in expected)
    assert multi.rows == expected


@pytest.mark.line_shared
def test_on_clause_reading_a_padded_input_key_matches_the_batch_query(spark, tmp_path):
    """Regression: c's ON clause equates c.k to b.k, which is null where b is padded, so an `a`
    row no b row matches joins no c row either: (a, null, null), never (a, null, c)."""
    inputs = Inputs(tmp_path / "inputs", [f"k{i} int, v{i} int, t{i} timestamp"
                                          for i in range(3)])
    at_seconds = [0, 30, 5]  # b outside a's window of +-10 s, c inside a's window of [0, 20 s]
    for i, seconds in enumerate(at_seconds):
        inputs.batches.append([[{f"k{i}": 1, f"v{i}": i, f"t{i}": timestamp(seconds)}]] + [
            [{f"k{i}": 1000 + i, f"v{i}": 0, f"t{i}": timestamp(far)}]
            for far in (FAR_FUTURE_SECONDS, FAR_FUTURE_SECONDS + 1)])
    inputs.write()

    def build(frames):
        a, b, c = [frame.withWatermark(f"t{i}", DELAY) for i, frame in enumerate(frames)]
        a_b = a.join(b, F.expr("k0 = k1 AND t1 BETWEEN t0 - INTERVAL 10 SECONDS AND "
                               "t0 + INTERVAL 10 SECONDS"), "left_outer").drop("t1")
        return a_b.join(c, F.expr("k2 = k1 AND t2 BETWEEN t0 AND t0 + INTERVAL 20 SECONDS"),
                        "left_outer")

    expected = without_far_rows(batch_rows(spark, inputs, build))
    assert (1, 0, timestamp_value(0), None, None, None, None, None) in expected, expected
    multi = run_stream(spark, inputs, build, enabled=True, checkpoint=tmp_path / "on")
    assert multi.multi_join_count == 1, multi.plan
    assert "input2 key=[k2] LEFT OUTER to input1" in multi.plan, "c hangs off b, read last"
    assert without_far_rows(multi.rows) == expected


@pytest.mark.line_shared
def test_outer_join_whose_padded_rows_a_later_inner_join_rejects_fuses(spark, tmp_path):
    """a LEFT b, LEFT c ON c.k = b.k, then d inner on c's key: Spark makes c's join inner, whose
    condition then rejects b's padded rows, and leaves b's join LEFT OUTER under it. The rule
    makes that one inner too and fuses all four; the batch query, with its LEFT OUTER join, is
    the reference."""
    inputs = timed_inputs(tmp_path / "inputs", random.Random(15), 4, n_batches=4,
                          rows_per_batch=6, n_keys=3, null_keys=0.1)

    def build(frames):
        a, b, c, d = [frame.withWatermark(f"t{i}", DELAY) for i, frame in enumerate(frames)]

        def on(j, p):
            return (F.col(f"k{j}") == F.col(f"k{p}")) & F.expr(
                f"t{j} BETWEEN t{p} - INTERVAL 20 SECONDS AND t{p} + INTERVAL 20 SECONDS")
        return a.join(b, on(1, 0), "left_outer").join(c, on(2, 1), "left_outer").join(d, on(3, 2))

    multi = run_stream(spark, inputs, build, enabled=True, checkpoint=tmp_path / "on")
    expected = without_far_rows(batch_rows(spark, inputs, build))
    assert expected, "some rows should join"
    assert multi.multi_join_count == 1, multi.plan
    # The physical plan; EXPLAIN's spark-multijoin section says which outer join runs as inner.
    assert "OUTER" not in multi.plan.split("== Extended Information")[0], multi.plan
    assert without_far_rows(multi.rows) == expected


@pytest.mark.line_shared
def test_shapes_a_multi_join_cannot_run_stay_with_spark(spark, tmp_path):
    inputs = timed_inputs(tmp_path / "inputs", random.Random(1), 3, n_batches=2)
    frames = [frame.withWatermark(f"t{i}", DELAY)
              for i, frame in enumerate(inputs.streams(spark))]
    bound = "t{0} BETWEEN t{1} - INTERVAL 10 SECONDS AND t{1} + INTERVAL 10 SECONDS"

    def on(j, p):
        return (F.col(f"k{p}") == F.col(f"k{j}")) & F.expr(bound.format(j, p))

    # A condition after a LEFT OUTER join that reads its null-padded side (and accepts nulls, so
    # Spark does not turn the outer join into an inner one).
    padded_side_used = frames[0].join(frames[1], on(1, 0), "left_outer").join(
        frames[2], on(2, 0) & F.expr("v1 IS NULL OR v2 >= v1"))
    # A LEFT OUTER join above a FULL OUTER join.
    full_outer = frames[0].join(frames[1], on(1, 0), "full_outer").join(
        frames[2], on(2, 1), "left_outer")
    # LEFT OUTER joins without time bounds on every input.
    unbounded = frames[0].join(frames[1], F.col("k0") == F.col("k1"), "left_outer").join(
        frames[2], on(2, 0), "left_outer")
    with session_conf(spark, {ENABLED_KEY: True}):
        for query in (padded_side_used, full_outer, unbounded):
            assert "StreamingMultiJoin" not in plan_or_spark_error(query)


def plan_or_spark_error(query) -> str:
    """The physical plan, or the error with which Spark's own planning rejects the query."""
    try:
        return explain(query)
    except Exception as error:  # noqa: BLE001 - Spark's rejection is the expected outcome here
        assert several_event_times_error(query.sparkSession) in str(error), error
        return str(error)
