"""The scale workloads' runs (workloads.py): the multi-join and its peers, Spark's chain on
both join state formats and Flink's MultiJoin in RocksDB, each stopped at a cap and reported as
not finished with how far it got, with their state in RocksDB on bounded memory and the driver
JVM's resident memory.

Per micro-batch: time, input and output rows, state rows, RocksDB's gets (stored rows read),
the multi-join's key reads, the state's memory and SST files, and the JVM's resident memory
sampled after the batch.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Collection

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from multijoin_bench.core import metrics
from multijoin_bench.core.benchmark import SPARK_PEERS, peers_not_available
from multijoin_bench.core.breakdown import batch_split
from multijoin_bench.core.chart import growth_chart
from multijoin_bench.core.runs import JOIN_FORMAT_KEY, capped_wait, folder_bytes, settings
from multijoin_bench.core.workload import Workload, inputs, streams
from multijoin_bench.flink import launch as flink
from multijoin_bench.scale.report import write_scale
from spark_multijoin import multi_join

# RocksDB on bounded memory: every store instance of the JVM shares one cache and write
# buffer budget of this size, so state several times larger has to live on disk.
BOUNDED_MEMORY = {"spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage": "true",
                  "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB": "256"}
CAP_SECONDS = 20 * 60
SCALE_PEERS = tuple(mode for mode, _, _ in SPARK_PEERS) + ("flink_rocksdb",)


def run_scale(spark: SparkSession, chosen: list[Workload], out: Path, work: Path,
              cap_seconds: float = CAP_SECONDS, with_flink: bool = False,
              peers: Collection[str] = SCALE_PEERS) -> None:
    """The multi-join and the others of `peers` on each of `chosen`, capped; writes
    scale_results.json, scale_results.md and cost_growth.png to `out`."""
    peers = {*peers, "multi_join"}  # every ratio is against it
    shutil.rmtree(work, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for workload in chosen:
        folder = work / workload.name
        inputs(workload, folder).write()
        print(f"{workload.name}: {workload.description}, {workload.input_rows:,} input rows",
              flush=True)
        result = {"workload": workload.name, "description": workload.description,
                  "input_rows": workload.input_rows, "cap_seconds": cap_seconds,
                  "driver_memory": spark.conf.get("spark.driver.memory", None),
                  **peers_not_available(spark)}
        for mode, enabled, join_format in SPARK_PEERS:
            if mode not in result and mode in peers:
                result[mode] = capped_run(spark, workload, folder, enabled, join_format,
                                          cap_seconds)
                print(f"    {mode:<10} {summary(result[mode])}", flush=True)
        if with_flink and "flink_rocksdb" in peers and flink.installed():
            result["flink_rocksdb"] = flink.capped_peer(workload, folder, cap_seconds)
        check(spark, workload, folder, result)
        results.append(result)
    write_scale(results, out)
    growth_chart(results, out / "cost_growth.png")
    print(f"wrote scale_results.json, scale_results.md and cost_growth.png to {out}")


def capped_run(spark: SparkSession, workload: Workload, folder: Path, enabled: bool,
               join_format: str | None, cap_seconds: float) -> dict:
    """One peer's run over one file per trigger, stopped after `cap_seconds`."""
    multi_join(spark).enabled = enabled
    checkpoint = folder / f"checkpoint_{'multi' if enabled else 'chain'}_{join_format or 'd'}"
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    reset_peak_rss(pid)
    started = time.perf_counter()
    with settings(spark, {JOIN_FORMAT_KEY: join_format, **BOUNDED_MEMORY}):
        query = (workload.query(streams(spark, workload, folder)).writeStream.format("noop")
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
                 .start())
    finished, rss_after = poll(query, cap_seconds, pid)
    wall = time.perf_counter() - started
    progress = [json.loads(p.json) for p in query.recentProgress]
    return {"finished": finished, "wall_seconds": round(wall, 1),
            "multi_join_in_plan": metrics.ran_multi_join(progress),
            "batches_done": len(metrics.data_batches(progress)),
            "input_rows_done": sum(p["numInputRows"] for p in progress),
            "output_rows": metrics.output_rows(progress),
            "state_rows_peak": max([metrics.state_rows(p) for p in progress], default=0),
            "state_bytes_on_disk": folder_bytes(checkpoint / "state"),
            "peak_rss_mb": peak_rss_mb(pid),
            "per_batch": [batch_record(p, rss_after.get(p["batchId"])) for p in progress]}


def poll(query: StreamingQuery, cap_seconds: float, pid: int) -> tuple[bool, dict[int, float]]:
    """Waits for `query` up to `cap_seconds` (stopping it then), sampling the JVM's resident
    memory every second: whether it finished, and the first sample after each batch."""
    rss_after: dict[int, float] = {}

    def sample() -> None:
        last = query.lastProgress
        if last is not None:
            rss_after.setdefault(json.loads(last.json)["batchId"], rss_mb(pid))
    return capped_wait(query, cap_seconds, sample), rss_after


def batch_record(p: dict, rss: float | None) -> dict:
    return {"batch": p["batchId"], "ms": metrics.trigger_ms(p),
            "input_rows": p["numInputRows"], "output_rows": p["sink"]["numOutputRows"],
            "state_rows": metrics.state_rows(p),
            "stored_reads": metrics.state_metric(p, "rocksdbGetCount"),
            "key_reads": metrics.state_metric(p, metrics.KEY_READS),
            "state_memory_bytes": metrics.state_metric(p, metrics.STATE_MEMORY),
            "state_sst_bytes": metrics.state_metric(p, "rocksdbSstFileSize"),
            "rss_mb": rss, **batch_split(p)}


def check(spark: SparkSession, workload: Workload, folder: Path, result: dict) -> None:
    """Fails where the peers that finished disagree with the batch query on the output rows, or
    the plans are not their modes'."""
    finished = {mode: result[mode]["output_rows"] for mode, _, _ in SPARK_PEERS
                if result.get(mode) and result[mode]["finished"]}
    if finished:
        result["batch_query_rows"] = workload.query(inputs(workload, folder).tables(spark)).count()
        if set(finished.values()) != {result["batch_query_rows"]}:
            raise SystemExit(f"{workload.name}: output rows differ: {finished}, "
                             f"{result['batch_query_rows']} with the batch query")
    in_plan = [result[mode]["multi_join_in_plan"] for mode, _, _ in SPARK_PEERS
               if result.get(mode)]
    if in_plan != [False] * (len(in_plan) - 1) + [True]:
        raise SystemExit(f"{workload.name}: the plans are not the modes'")


def summary(run: dict) -> str:
    state = "finished" if run["finished"] else "NOT FINISHED at the cap"
    return (f"{state}: {run['wall_seconds']:.1f} s, {run['batches_done']} batches, "
            f"{run['input_rows_done']:,} input rows, {run['output_rows']:,} output rows, "
            f"peak RSS {run['peak_rss_mb']} MB")


def rss_mb(pid: int, field: str = "VmRSS") -> float | None:
    """The process's resident memory (or its peak, VmHWM), MB; None where /proc has not it."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def peak_rss_mb(pid: int) -> float | None:
    return rss_mb(pid, "VmHWM")


def reset_peak_rss(pid: int) -> None:
    """Resets the process's peak resident memory (Linux: 5 to clear_refs), so that each run
    reports its own; where it cannot, the peak is the JVM's since it started."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        pass
