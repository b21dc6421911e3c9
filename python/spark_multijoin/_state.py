"""Reading a multi-join's state from a checkpoint, offline."""

from __future__ import annotations

import os

from pyspark.sql import DataFrame, SparkSession


def _check_id(name: str, value: int | None, *, optional: bool) -> int:
    if value is None and optional:
        return -1  # the reader's default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        allowed = "a non-negative integer" + (" or None" if optional else "")
        raise TypeError(f"{name} takes {allowed}, not {value!r}")
    return value


def read_state(spark: SparkSession, checkpoint_location: str | os.PathLike[str], input: int,
               *, batch_id: int | None = None, operator_id: int | None = None) -> DataFrame:
    """The rows input `input` (its position in the multi-join, from 0) has in the state of the
    checkpoint at `checkpoint_location`, as a DataFrame of the input's columns plus `batch_id`
    (the micro-batch that stored the row) and `partition_id` (its state partition).

    `batch_id` chooses the state after that micro-batch (default: the last committed one);
    `operator_id` the multi-join (default: the checkpoint's only one; with several, the error
    names their ids). The query need not run: this reads the checkpoint of a stopped query.
    Stored rows are the input rows with a non-null key that are not evicted; of a changelog
    join, the input's current rows. Needs a classic
    (not Spark Connect) session with spark-multijoin's jar.
    """
    jvm = spark._jvm  # type: ignore[attr-defined]
    reader = jvm.io.github.sparkmultijoin.execution.state.MultiJoinStateReader
    frame = reader.readForPython(
        spark._jsparkSession,  # type: ignore[attr-defined]
        os.fspath(checkpoint_location), _check_id("input", input, optional=False),
        _check_id("batch_id", batch_id, optional=True),
        _check_id("operator_id", operator_id, optional=True))
    return DataFrame(frame, spark)
