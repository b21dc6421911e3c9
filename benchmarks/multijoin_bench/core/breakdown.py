"""`--breakdown`: where each micro-batch's time goes, for the chosen workloads.

The multi-join and Spark's deduplication of the same rows (in RocksDB and on the in-memory
store), the stateless query and the same shuffled by the deduplication's key (stored nowhere),
over the same micro-batches, each once after a warm-up run. Per micro-batch with data after the
first: the engine's phases from the progress (durationMs) and the stateful operators' metrics
(state store instances, update and commit times, RocksDB's load, changelog commit, gets, and
the multi-join's key reads).
"""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path
from typing import Callable

from pyspark.sql import DataFrame, SparkSession

from multijoin_bench.core import metrics
from multijoin_bench.core import report
from multijoin_bench.core.runners import unioned_rows
from multijoin_bench.core.runs import IN_MEMORY_PROVIDER, provider, run_to_end
from multijoin_bench.core.workload import Workload, inputs, streams
from spark_multijoin import multi_join


def batch_cost(progress: list[dict]) -> dict:
    """The mean per micro-batch with data after the first (which also pays for starting the
    query, and is reported on its own): each engine phase, and each state metric summed over
    the query's stateful operators."""
    data_batches = metrics.data_batches(progress)
    later = data_batches[1:] or data_batches

    def mean(values: list[float]) -> float:
        return round(statistics.mean(values), 1)

    cost = {"batches": len(data_batches),
            "first_batch_ms": metrics.trigger_ms(data_batches[0]),
            "trigger_ms": mean([metrics.trigger_ms(p) for p in later])}
    for phase in metrics.ENGINE_PHASES:
        cost[phase] = mean([metrics.phase_ms(p, phase) for p in later])
    cost["other"] = round(cost["trigger_ms"] - sum(cost[phase]
                                                   for phase in metrics.ENGINE_PHASES), 1)
    for metric in metrics.STATE_METRICS + metrics.STORE_METRICS:
        cost[metrics.key(metric)] = mean([metrics.state_metric(p, metric) for p in later])
    return cost


def run_breakdown(spark: SparkSession, chosen: list[Workload], out: Path, work: Path) -> None:
    """Where each micro-batch's time goes in each of `chosen`; writes breakdown.json and
    breakdown.md to `out`."""
    shutil.rmtree(work, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    breakdown = []
    for workload in chosen:
        folder = work / workload.name
        inputs(workload, folder).write()
        multi_join(spark).enabled = True
        for name, query in queries(spark, workload, folder).items():
            for store in (None,) if name.startswith("stateless") else (None, IN_MEMORY_PROVIDER):
                label = name if store is None else f"{name}, in-memory store"
                with provider(spark, store):
                    run_to_end(query(), folder / "checkpoint_warm_up")
                    cost = batch_cost(run_to_end(query(), folder / "checkpoint_breakdown"))
                breakdown.append({"workload": workload.name, "query": label, **cost})
                print(f"{workload.name} {label}: {cost}", flush=True)
    report.write_breakdown(breakdown, out)
    print(f"wrote breakdown.json and breakdown.md to {out}")


def queries(spark: SparkSession, workload: Workload,
            folder: Path) -> dict[str, Callable[[], DataFrame]]:
    """The breakdown's queries over `workload`'s files, one file per trigger, by name."""
    return {
        "multi-join": lambda: workload.query(streams(spark, workload, folder)),
        "Spark's deduplication": lambda: unioned_rows(spark, workload, folder, 1, True),
        "stateless": lambda: unioned_rows(spark, workload, folder, 1, False),
        "stateless, shuffled": lambda: unioned_rows(spark, workload, folder, 1, False, True),
    }


# A micro-batch's state time split (task ms, summed over partitions) as batch_split names it:
# the multi-join's reads of stored rows, the rest of its updates (storing the new rows,
# joining and emitting the output), removals, and the store's commit with RocksDB's parts.
# Background compaction is beside the batch, not inside it: its time and bytes are RocksDB's
# own counters for the batch.
SPLIT = {"key_read_ms": metrics.KEY_READ_MS, "updates_ms": metrics.UPDATES_MS,
         "removals_ms": metrics.REMOVALS_MS, "commit_ms": metrics.COMMIT_MS,
         "changelog_commit_ms": "rocksdbChangeLogWriterCommitLatencyMs",
         "flush_ms": "rocksdbCommitFlushLatency",
         "file_sync_ms": "rocksdbCommitFileSyncLatencyMs",
         "checkpoint_ms": "rocksdbCommitCheckpointLatency",
         "compaction_ms": "rocksdbTotalCompactionLatencyMs",
         "compaction_bytes_written": "rocksdbTotalBytesWrittenByCompaction",
         "bytes_written": "rocksdbTotalBytesWritten"}


def batch_split(p: dict) -> dict:
    """Where one micro-batch's time went: the engine's addBatch (wall ms) and SPLIT's state
    metrics, with the updates less the stored rows' reads as `join_and_emit_ms`."""
    split = {name: metrics.state_metric(p, metric) for name, metric in SPLIT.items()}
    split["add_batch_ms"] = metrics.phase_ms(p, metrics.ADD_BATCH)
    split["join_and_emit_ms"] = split["updates_ms"] - split["key_read_ms"]
    return split
