"""`--soak N`: a time-bounded outer star over N small micro-batches, the multi-join and then
Spark's chain on the same generated input, to show whether state, checkpoint, heap and batch
time stay flat over a long stream (state store maintenance, snapshots, changelog clean-up).

The input is Spark's `rate-micro-batch` source, one per input: a fixed number of rows per
micro-batch and an event time that moves ten seconds per micro-batch whatever the batch takes, so
that every run sees the same rows in the same micro-batches. Per micro-batch: its time and state
rows (from the progress, read every second from the JVM, which keeps the last hundred); sampled
while it runs: the checkpoint's bytes on disk; at each tenth of the run, the JVM's heap after a
full GC (forced there, and only there).

State store maintenance (snapshots, and deleting the changelogs and snapshots no longer needed)
runs every MAINTENANCE_INTERVAL instead of Spark's 60 s: a soak of minutes then sees as many
maintenance passes as a stream of hours does, and the checkpoint shows whether clean-up keeps up
rather than how many batches fit in a minute.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from multijoin_bench.core import metrics
from multijoin_bench.core.runs import folder_bytes, settings
from multijoin_bench.core.workloads import bounded_star
from multijoin_bench.soak.report import decile_summary, write_soak
from spark_multijoin import multi_join

INPUTS, KEYS, ROWS_PER_BATCH = 4, 1000, 20
# Event time per micro-batch: the ±30 s bound and 30 s delay then keep about nine batches of
# rows, so that the state reaches its steady size within the first tenth of a short soak.
ADVANCE_MS = 10_000
CAP_SECONDS = 30 * 60
MAINTENANCE_INTERVAL = "5s"


def soak_inputs(spark: SparkSession) -> list[DataFrame]:
    """Input i: ROWS_PER_BATCH rows per micro-batch, keys in an order of its own, event time a
    ADVANCE_MS further each micro-batch."""
    return [spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", ROWS_PER_BATCH).option("advanceMillisPerBatch", ADVANCE_MS)
            .option("numPartitions", 1).load()
            .select((F.col("value") * (2 * i + 1) % KEYS).cast("int").alias(f"k{i}"),
                    F.col("value").cast("int").alias(f"v{i}"), F.col("timestamp").alias(f"t{i}"))
            for i in range(INPUTS)]


def run_soak(spark: SparkSession, batches: int, out: Path, work: Path,
             cap_seconds: float = CAP_SECONDS) -> None:
    shutil.rmtree(work, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    runs = {}
    for mode, enabled in (("multi_join", True), ("chain", False)):
        print(f"soak {mode}: {batches} micro-batches ...", flush=True)
        runs[mode] = soak_run(spark, enabled, batches, work / mode, cap_seconds)
        print(f"    {runs[mode]['batches_done']} batches, last tenth: "
              f"{json.dumps(runs[mode]['deciles'][-1:])}", flush=True)
    write_soak(runs, batches, out)
    print(f"wrote soak.json, soak.md and soak.png to {out}")


def soak_run(spark: SparkSession, enabled: bool, batches: int, folder: Path,
             cap_seconds: float) -> dict:
    multi_join(spark).enabled = enabled
    folder.mkdir(parents=True, exist_ok=True)
    checkpoint = Path(tempfile.mkdtemp(prefix="run_", dir=folder))
    maintenance = {"spark.sql.streaming.stateStore.maintenanceInterval": MAINTENANCE_INTERVAL}
    with settings(spark, maintenance):
        query = (bounded_star("left_outer")(soak_inputs(spark)).writeStream.format("noop")
                 .option("checkpointLocation", str(checkpoint))
                 .trigger(processingTime="0 seconds").start())
        started = time.perf_counter()
        progress: dict[int, dict] = {}
        samples = sample_until(spark, query, batches, checkpoint, cap_seconds, progress)
        query.stop()
    progress = [progress[batch] for batch in sorted(progress)][:batches]
    per_batch = [{"batch": p["batchId"], "ms": metrics.trigger_ms(p),
                  "state_rows": metrics.state_rows(p)} for p in progress]
    return {"multi_join_in_plan": metrics.ran_multi_join(progress),
            "batches_done": len(per_batch), "wall_seconds": round(time.perf_counter() - started),
            "output_rows": metrics.output_rows(progress), "per_batch": per_batch,
            "samples": samples, "deciles": decile_summary(per_batch, samples, batches)}


def sample_until(spark: SparkSession, query, batches: int, checkpoint: Path,
                 cap_seconds: float, progress: dict[int, dict]) -> list[dict]:
    """Until `query` has run `batches` micro-batches (or `cap_seconds`): about every second, the
    progress not yet in `progress` (by batch id), the last batch's id and the checkpoint's bytes;
    at each tenth of the batches, heap after GC."""
    deadline, samples, next_tenth = time.monotonic() + cap_seconds, [], 0
    while query.isActive and time.monotonic() < deadline:
        query.awaitTermination(1)
        new_progress(query, progress)
        if not progress:
            continue
        batch = max(progress)
        sample = {"batch": batch, "checkpoint_bytes": folder_bytes(checkpoint)}
        if batch >= next_tenth * batches / 10:
            sample["heap_after_gc_mb"] = heap_after_gc_mb(spark)
            next_tenth = int(batch * 10 / batches) + 1
        samples.append(sample)
        if batch + 1 >= batches:
            break
    return samples


def new_progress(query, progress: dict[int, dict]) -> None:
    """Adds to `progress` the query's retained progress updates it has not, newest first, asking
    the JVM for one JSON at a time: Spark keeps the last hundred, and keeping every one there
    would grow the heap the soak measures."""
    retained = query._jsq.recentProgress()
    for index in range(len(retained) - 1, -1, -1):
        update = json.loads(retained[index].json())
        if update["batchId"] in progress:
            break
        progress[update["batchId"]] = update


def heap_after_gc_mb(spark: SparkSession) -> float:
    jvm = spark._jvm
    jvm.java.lang.System.gc()
    heap = jvm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage()
    return round(heap.getUsed() / 2**20, 1)

