"""Differential tests: the multi-join gives Spark's answer, with input rows only in state."""

from __future__ import annotations

import random

import pytest
from pyspark.sql import functions as F

from spark_multijoin.testing import Inputs, join_on_k
from support.generators import build_chain, random_inputs, random_shape
from support.runs import STATE_STORES, batch_rows, run_chain_and_multi, session_conf
from support.line_share import seeds

# Per seed, how the multi-join takes the files (a micro-batch each, or all in one) and how much
# of a micro-batch's rows it keeps in memory: all of them, or a few hundred bytes' worth (past
# which they are dropped after some keys and read back from the state store).
READ_MODES = [(1, "32m"), (100, "32m"), (100, "300b"), (1, "300b")]


def random_chain(spark, tmp_path, seed):
    """A random chain's shape, query, inputs, and the batch query's answer (never empty)."""
    rng = random.Random(seed)
    shape = random_shape(rng, n_inputs=3 + seed % 5)
    build = build_chain(shape)
    # Data that joins to nothing tests little: draw again (same shape) until some rows join.
    for attempt in range(20):
        inputs = random_inputs(rng, shape, tmp_path / f"inputs{attempt}")
        inputs.write()
        expected = batch_rows(spark, inputs, build)
        if expected:
            break
    return shape, build, inputs, expected


@pytest.mark.parametrize("seed", seeds(range(12)))
def test_random_chain_matches_spark_chain_and_batch(spark, tmp_path, seed):
    shape, build, inputs, expected = random_chain(spark, tmp_path, seed)
    files_per_trigger, batch_rows_memory = READ_MODES[seed % len(READ_MODES)]
    description = f"{shape.describe()}, files per trigger {files_per_trigger}, " \
                  f"batch rows memory {batch_rows_memory}"

    chain, multi = run_chain_and_multi(
        spark, inputs, build, tmp_path, chain_in_one_trigger=True,
        shuffle_partitions=shape.shuffle_partitions,
        files_per_trigger=files_per_trigger, batch_rows_memory=batch_rows_memory)

    assert expected, "no random data joined: " + description
    assert multi.rows == chain.rows == expected, description
    assert chain.multi_join_count == 0 and chain.symmetric_join_count == shape.n_inputs - 1
    assert multi.multi_join_count == 1 and multi.symmetric_join_count == 0, multi.plan
    if files_per_trigger > 1:
        assert len(multi.progress) == 1, "all files in one micro-batch"

    assert multi.state_rows("multiJoin") == [stored_rows(shape, inputs)]


def stored_rows(shape, inputs):
    """What the state holds: the input rows whose key has no null component, and nothing else."""
    key_columns = ["k", "g"] if shape.composite_key else ["k"]
    return sum(
        all(row[f"{column}{i}"] is not None for column in key_columns)
        for i, batches in enumerate(inputs.batches) for batch in batches for row in batch)


@pytest.mark.parametrize("seed", seeds(range(4)))
def test_random_chain_on_the_in_memory_store(spark, tmp_path, seed):
    """Spark's in-memory store (multi-join state layout 4): each of the read modes once."""
    shape, build, inputs, expected = random_chain(spark, tmp_path, 100 + seed)
    files_per_trigger, batch_rows_memory = READ_MODES[seed]
    with session_conf(spark, STATE_STORES["in-memory"]):
        chain, multi = run_chain_and_multi(
            spark, inputs, build, tmp_path, chain_in_one_trigger=True,
            shuffle_partitions=shape.shuffle_partitions,
            files_per_trigger=files_per_trigger, batch_rows_memory=batch_rows_memory)

    assert multi.rows == chain.rows == expected, shape.describe()
    assert multi.multi_join_count == 1 and multi.symmetric_join_count == 0, multi.plan
    assert multi.state_rows("multiJoin") == [stored_rows(shape, inputs)]


@pytest.mark.line_shared
def test_fan_out_state_is_the_input_rows(spark, tmp_path):
    """The design's fan-out shape (1, 10, 10, 2 rows per key): Spark's chain stores far more."""
    fan_outs = [1, 10, 10, 2]
    inputs = Inputs(tmp_path / "inputs", [f"k int, v{i} int" for i in range(len(fan_outs))])
    for i, fan_out in enumerate(fan_outs):
        rows = [{"k": key, f"v{i}": copy} for key in range(20) for copy in range(fan_out)]
        inputs.batches.append([rows[: len(rows) // 2], rows[len(rows) // 2:]])
    inputs.write()

    chain, multi = run_chain_and_multi(spark, inputs, join_on_k, tmp_path,
                                       chain_in_one_trigger=True)
    assert multi.rows == chain.rows == batch_rows(spark, inputs, join_on_k)
    input_rows = 20 * sum(fan_outs)
    assert multi.state_rows("multiJoin") == [input_rows]
    assert sum(chain.state_rows("symmetricHashJoin")) > 5 * input_rows


@pytest.mark.line_shared
def test_condition_on_keys_of_one_input_and_composite_keys(spark, tmp_path):
    """a.k = b.k AND b.k = b.j AND b.j = c.k: b's two columns are in the key's class."""
    inputs = Inputs(tmp_path / "inputs", ["k int, x int", "k2 int, j int", "k3 int, y int"])
    rng = random.Random(7)
    for schema_columns in (("k", "x"), ("k2", "j"), ("k3", "y")):
        rows = [{schema_columns[0]: rng.randint(0, 4), schema_columns[1]: rng.randint(0, 4)}
                for _ in range(30)]
        inputs.batches.append([rows[:15], rows[15:]])
    inputs.batches[1] = [[{"k2": r["k2"], "j": r["j"] if rng.random() < 0.5 else r["k2"]}
                          for r in batch] for batch in inputs.batches[1]]
    inputs.write()

    def build(frames):
        a, b, c = frames
        return (a.join(b, (F.col("k") == F.col("k2")) & (F.col("k2") == F.col("j")))
                .join(c, F.col("j") == F.col("k3")))

    chain, multi = run_chain_and_multi(spark, inputs, build, tmp_path, chain_in_one_trigger=True)
    assert multi.rows == chain.rows == batch_rows(spark, inputs, build)
    assert sum(multi.rows.values()) > 0
    assert multi.multi_join_count == 1
