"""Time-bounded multi-joins: eviction, late rows, output watermark; answers as Spark's.

Event times grow batch by batch and stay within the watermark delay, so no row is late unless a
test makes it so; two final batches of far-future rows that join nothing push the watermark past
everything, after which the streaming answer must equal the batch answer and the state must hold
only those far-future rows (see support.generators.timed_inputs).
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

from spark_multijoin.testing import timestamp_value
from support.generators import (DELAY, FAR_FUTURE_SECONDS, add_late_rows, bounded_chain,
                                random_bounds, timed_inputs)
from support.metrics import progress_key
from support.runs import (STATE_STORES, batch_rows, run_chain_and_multi, run_stream,
                          session_conf, start_reference, start_stream)
from support.line_share import seeds
from support.spark_lines import several_event_times_error


@pytest.mark.line_shared
def test_general_shape_fails_in_spark_and_runs_here(spark, tmp_path):
    """b is bounded by a, c by b: Spark's chain rejects it, the multi-join matches the batch."""
    inputs = timed_inputs(tmp_path / "inputs", random.Random(5), 3, n_batches=4)
    build = bounded_chain(parents=[0, 0, 1], bounds=[(0, 0), (30, 60), (20, 40)])
    chain = start_reference(spark, inputs, build, tmp_path / "off")
    multi = start_stream(spark, inputs, build, enabled=True, checkpoint=tmp_path / "on")
    with pytest.raises(StreamingQueryException, match=several_event_times_error(spark)):
        chain.finish()
    multi = multi.finish()
    expected = batch_rows(spark, inputs, build)
    assert expected and multi.rows == expected
    assert multi.multi_join_count == 1
    assert multi.state_rows("multiJoin") == [6], "only the far-future rows stay"


# Every seed in RocksDB; three of them on Spark's in-memory store too, which evicts by scanning.
@pytest.mark.parametrize("seed, store", [(seed, "rocksdb") for seed in seeds(range(8))]
                         + [(seed, "in-memory") for seed in seeds(range(3))])
def test_random_time_bounded_chain(spark, tmp_path, seed, store):
    rng = random.Random(100 + seed)
    n_inputs = 3 + seed % 4
    star = seed % 2 == 0
    parents = [0] + [0 if star else rng.randrange(j) for j in range(1, n_inputs)]
    bounds = random_bounds(rng, n_inputs, lows=[0, 20, 60], highs=[10, 45, 90])
    inputs = timed_inputs(tmp_path / "inputs", rng, n_inputs, n_batches=rng.randint(3, 5))
    build = bounded_chain(parents, bounds, drop_times=star)
    description = f"parents={parents} bounds={bounds}"

    # Seeds 2, 3, 6, 7 keep few of a micro-batch's rows in memory, reading the rest from state.
    with session_conf(spark, STATE_STORES[store]):
        multi = start_stream(spark, inputs, build, enabled=True, checkpoint=tmp_path / "on",
                             shuffle_partitions=rng.choice([1, 3]),
                             batch_rows_memory="300b" if seed % 4 >= 2 else "32m")
    chain = start_reference(spark, inputs, build, tmp_path / "off") if star else None
    multi = multi.finish()
    assert multi.multi_join_count == 1, multi.plan
    assert multi.rows == batch_rows(spark, inputs, build), description
    assert multi.state_rows("multiJoin") == [2 * n_inputs], description
    removed = multi.state_metric_total(progress_key(spark, "NUM_REMOVED_STATE_ROWS"))
    assert removed == sum(len(batch) for batches in inputs.batches for batch in batches[:-2])
    if chain is not None:
        assert chain.finish().rows == multi.rows, description


@pytest.mark.line_shared
def test_late_rows_of_the_first_joins_inputs_are_dropped_as_in_spark(spark, tmp_path):
    inputs = timed_inputs(tmp_path / "inputs", random.Random(9), 3, n_batches=4)
    add_late_rows(inputs, late_inputs=[0, 1])
    build = bounded_chain(parents=[0, 0, 0], bounds=[(0, 0), (200, 200), (200, 200)],
                          drop_times=True)
    chain, multi = run_chain_and_multi(spark, inputs, build, tmp_path)
    assert multi.rows == chain.rows
    dropped = progress_key(spark, "NUM_ROWS_DROPPED_BY_WATERMARK")
    assert multi.state_metric_total(dropped) == chain.state_metric_total(dropped) == 8


@pytest.mark.line_shared
def test_late_rows_of_every_input_are_dropped_by_the_watermark(spark, tmp_path):
    """One operator, one watermark: a late row of any input is dropped and counted.

    (Spark's chain checks a later join's new input against that join's input watermark, which
    the joins below lower by their time bounds, so it may keep such a row.)
    """
    rng_seed, late_inputs = 9, [0, 1, 2]
    on_time = timed_inputs(tmp_path / "on_time", random.Random(rng_seed), 3, n_batches=4)
    inputs = timed_inputs(tmp_path / "inputs", random.Random(rng_seed), 3, n_batches=4)
    add_late_rows(inputs, late_inputs)
    build = bounded_chain(parents=[0, 0, 1], bounds=[(0, 0), (200, 200), (200, 200)])
    multi = run_stream(spark, inputs, build, enabled=True, checkpoint=tmp_path / "on")
    assert multi.rows == batch_rows(spark, on_time, build)
    dropped = progress_key(spark, "NUM_ROWS_DROPPED_BY_WATERMARK")
    assert multi.state_metric_total(dropped) == 4 * len(late_inputs)


@pytest.mark.line_shared
def test_state_stays_flat_on_a_long_stream(spark, tmp_path):
    n_batches = 10
    inputs = timed_inputs(tmp_path / "inputs", random.Random(3), 3, n_batches=n_batches)
    build = bounded_chain(parents=[0, 0, 1], bounds=[(0, 0), (10, 30), (10, 30)])
    multi = run_stream(spark, inputs, build, enabled=True, checkpoint=tmp_path / "on")
    state = [entry[multi.state_rows_key] for p in multi.progress
             for entry in p["stateOperators"]]
    assert len(state) >= n_batches
    # Each batch adds 24 rows (240 in all); with a 70 s watermark delay a few batches' rows are
    # live at once.
    assert max(state[: n_batches]) <= 24 * 5, state
    assert multi.rows == batch_rows(spark, inputs, build)


@pytest.mark.line_shared
def test_windowed_aggregation_after_the_join_sees_every_row(spark, tmp_path):
    """The output watermark keeps rows the join still emits from being late downstream."""
    inputs = timed_inputs(tmp_path / "inputs", random.Random(21), 3, n_batches=5)
    join = bounded_chain(parents=[0, 0, 1], bounds=[(0, 0), (60, 60), (60, 60)])

    def build(frames):
        return (join(frames).select("k0", "t0")
                .groupBy(F.window("t0", "2 minutes"), "k0").count()
                .select(F.col("window.start").alias("start"), "k0", "count"))

    multi = run_stream(spark, inputs, build, enabled=True, checkpoint=tmp_path / "on")
    expected = batch_rows(spark, inputs, build)
    # The far-future rows' windows stay open: the watermark never passes them.
    far_windows = Counter(row for row in expected
                          if row[0] >= timestamp_value(FAR_FUTURE_SECONDS - 200))
    assert multi.rows == expected - far_windows


@pytest.mark.line_shared
def test_stream_on_another_column_joined_above_by_spark_sees_no_late_rows(spark, tmp_path):
    """A star on t0: inputs 1 and 2 on k, input 3 between them on v. Inputs 0, 1 and 2 fuse;
    Spark's join of input 3 above the multi-join checks its rows against the multi-join's output
    watermark, which must keep every row the multi-join still emits from being late there. Each
    time is dropped after its join, as Spark's chain needs."""
    inputs = timed_inputs(tmp_path / "inputs", random.Random(501), 4, n_batches=5,
                          rows_per_batch=10, n_keys=3)
    bounds = {1: (0, 200), 3: (60, 60), 2: (0, 200)}

    def build(frames):
        frames = [frame.withWatermark(f"t{i}", DELAY) for i, frame in enumerate(frames)]
        joined = frames[0]
        for i in (1, 3, 2):
            column = "v" if i == 3 else "k"
            lo, hi = bounds[i]
            within = F.expr(f"t{i} BETWEEN t0 - INTERVAL {lo} SECONDS AND "
                            f"t0 + INTERVAL {hi} SECONDS")
            on = (F.col(f"{column}0") == F.col(f"{column}{i}")) & within
            joined = joined.join(frames[i], on).drop(f"t{i}")
        return joined

    multi = run_stream(spark, inputs, build, enabled=True, checkpoint=tmp_path / "on")
    expected = batch_rows(spark, inputs, build)
    assert expected and multi.rows == expected
    assert multi.multi_join_count == 1 and multi.symmetric_join_count == 1, multi.plan
