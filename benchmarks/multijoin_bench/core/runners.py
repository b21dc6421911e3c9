"""Spark's runs of a workload: Spark's chain and the multi-join in micro-batches (with their state
and batch metrics), the multi-join in one trigger and on Spark's in-memory store, and the floors
set against it (the batch query, a stateless stream, Spark's deduplication of the same rows).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from multijoin_bench.core import metrics
from multijoin_bench.core.runs import (IN_MEMORY_PROVIDER, JOIN_FORMAT_KEY, folder_bytes,
                                       median_and_best, median_seconds, provider, run_to_end,
                                       seconds, settings, timed_runs)
from multijoin_bench.core.workload import Workload, inputs, streams
from spark_multijoin import multi_join


def run_mode(spark: SparkSession, workload: Workload, folder: Path, enabled: bool,
             join_format: str | None = None) -> dict:
    """One run of `workload` in micro-batches with the multi-join off (Spark's chain, on its
    join state format `join_format`, None: the session's) or on, and what it kept in state per
    batch."""
    multi_join(spark).enabled = enabled
    checkpoint = folder / ("checkpoint_multi" if enabled else
                           f"checkpoint_chain{'_v' + join_format if join_format else ''}")
    started = time.perf_counter()
    with settings(spark, {JOIN_FORMAT_KEY: join_format}):
        query = (workload.query(streams(spark, workload, folder)).writeStream.format("noop")
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
                 .start())
    query.awaitTermination()
    wall = time.perf_counter() - started
    progress = [json.loads(p.json) for p in query.recentProgress]
    return {"multi_join_in_plan": metrics.ran_multi_join(progress),
            "output_rows": metrics.output_rows(progress),
            "wall_seconds": round(wall, 2),
            **batch_metrics(progress, workload.input_rows / wall),
            "state_bytes_on_disk": folder_bytes(checkpoint / "state"),
            "state_rows_per_batch": [metrics.state_rows(p) for p in progress],
            "state_rows_per_data_batch": [metrics.state_rows(p)
                                          for p in metrics.data_batches(progress)],
            "batch_ms_per_batch": [metrics.trigger_ms(p) for p in progress]}


def batch_metrics(progress: list[dict], input_rows_per_second: float) -> dict:
    """A run's time per micro-batch and its state after the last and at its peak."""
    durations = [metrics.trigger_ms(p) for p in metrics.data_batches(progress)]
    state_per_batch = [metrics.state_rows(p) for p in progress]
    return {
        # The micro-batches' execution (Spark's addBatch), without the engine's own per-batch
        # work (listing sources, offset and commit logs, planning) and the query's start.
        "execution_seconds": round(sum(metrics.phase_ms(p, metrics.ADD_BATCH)
                                       for p in progress) / 1000, 2),
        "input_rows_per_second": round(input_rows_per_second, 1),
        "batch_ms_p50": statistics.median(durations),
        "batch_ms_p95": sorted(durations)[max(0, int(len(durations) * 0.95 + 0.5) - 1)],
        "state_rows": state_per_batch[-1],
        "state_rows_peak": max(state_per_batch),
    }


def batch_query_and_one_trigger(spark: SparkSession, workload: Workload,
                                folder: Path, times: int = 5) -> tuple[float, float, float]:
    """Seconds for the same join as one batch query over all files (warm), and for the
    multi-join streaming query over all files in one trigger: medians of runs that alternate,
    so that both see the machine alike (single runs of either vary widely), and the one
    trigger's best run."""
    tables = inputs(workload, folder).tables(spark)
    multi_join(spark).enabled = True

    def batch_query() -> None:
        workload.query(tables).write.format("noop").mode("overwrite").save()

    def one_trigger() -> None:
        run_to_end(workload.query(streams(spark, workload, folder, workload.files)),
                   folder / "checkpoint_one")

    batch_query()  # warm-up
    runs = [(seconds(batch_query), seconds(one_trigger)) for _ in range(times)]
    return (round(statistics.median(batch for batch, _ in runs), 2),
            *median_and_best([one for _, one in runs]))


def multi_join_micro_batches(spark: SparkSession, workload: Workload, folder: Path,
                             times: int = 3) -> tuple[float, float]:
    """Seconds for the multi-join over one file per trigger, measured as its floors are: the
    median of warm runs (and the best run). The run that gives the state and batch metrics is a
    single run right after Spark's chain, too noisy a time to set against the floors."""
    multi_join(spark).enabled = True
    return median_and_best(timed_runs(lambda: run_to_end(
        workload.query(streams(spark, workload, folder)), folder / "checkpoint_multi_again"),
        times))


def on_in_memory_store(spark: SparkSession, workload: Workload, folder: Path,
                       times: int = 3) -> dict | None:
    """The multi-join on Spark's in-memory state store (Spark's default provider): over one
    file per trigger and in one trigger (median and best of `times` warm runs), with Spark's
    deduplication of the same rows on that store. Flink's MultiJoin keeps its state on the heap
    by default: this is the like-for-like peer. None where the rule keeps Spark's joins on that
    store."""
    multi_join(spark).enabled = True
    with provider(spark, IN_MEMORY_PROVIDER):
        warm_up = run_to_end(workload.query(streams(spark, workload, folder)),
                             folder / "checkpoint_in_memory")
        if not metrics.ran_multi_join(warm_up):
            return None
        micro = multi_join_micro_batches(spark, workload, folder, times)
        one = median_and_best(timed_runs(lambda: run_to_end(
            workload.query(streams(spark, workload, folder, workload.files)),
            folder / "checkpoint_in_memory"), times))
        stored = streaming_floor(spark, workload, folder, store_rows=True, times=times)
    return {"output_rows": metrics.output_rows(warm_up),
            "micro_batches_seconds": micro[0], "micro_batches_best_seconds": micro[1],
            "one_trigger_seconds": one[0], "one_trigger_best_seconds": one[1],
            "stored_rows_seconds": stored}


def streaming_floor(spark: SparkSession, workload: Workload, folder: Path,
                    files_per_trigger: int = 1, store_rows: bool = False, times: int = 3) -> float:
    """Seconds for a streaming query over the same inputs that joins nothing.

    Stateless: what any streaming query over these files costs before it joins anything, the
    engine's per-batch work (listing sources, offset and commit logs, planning) and reading the
    rows. With `store_rows`, Spark's own stateful operator stores every input row (a streaming
    deduplication of the rows, as JSON): what keeping the rows in state costs in Spark itself.
    """
    return median_seconds(lambda: run_to_end(
        unioned_rows(spark, workload, folder, files_per_trigger, store_rows),
        folder / "checkpoint_floor"), times)


def unioned_rows(spark: SparkSession, workload: Workload, folder: Path, files_per_trigger: int,
                 store_rows: bool, shuffle: bool = False) -> DataFrame:
    """Every input's rows as (input, row as JSON), deduplicated by Spark with `store_rows`; with
    `shuffle` (and not `store_rows`), hash-partitioned by both, as a stateful operator's input
    is, and stored nowhere."""
    frames = [frame.select(F.lit(i).alias("input"),
                           F.to_json(F.struct(*frame.columns)).alias("row"))
              for i, frame in enumerate(streams(spark, workload, folder, files_per_trigger))]
    unioned = frames[0]
    for frame in frames[1:]:
        unioned = unioned.unionAll(frame)
    if store_rows:
        return unioned.dropDuplicates(["input", "row"])
    if shuffle:
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
        return unioned.repartition(partitions, "input", "row").select(F.length("row"))
    return unioned.select("input")
