"""`--cdc`: the CDC benchmark, Spark's side. Per workload (workloads.py), its change files once,
then at each micro-batch size, each on a checkpoint and tables of its own and stopped at the cap:

- multi_join: the changelog join of the tables' Debezium changes into Spark's `noop` sink, the
  peer of Flink's jobs, which write to a blackhole;
- multi_join_delta: the same query into a Delta table through `changelog.delta_merge`;
- recipe: the foreachBatch recipe (recipe.py; the wide one where each input's row id is its
  join key) into a Delta table of its own.

The two Delta tables must hold the same rows, and those of the batch join of the tables' final
rows (where the runs finished). With `--flink`, Flink's peer (flink/cdc_peer.py, in
a process of its own) reads the same folder through its spec.json.

A change arrives when the micro-batch that reads it starts, and its row is out when that batch
commits: its latency is its batch's trigger time, and p50 and p99 are over changes, not batches.
State bytes are the checkpoint's state folder on disk and RocksDB's live SST files after the last
batch; the recipe's state is its current tables. Against Flink's, which are its RocksDB's SST
files when a checkpoint is taken, the state run's: the same query once more, untimed, its RocksDB
compacting at every commit.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from multijoin_bench.cdc.recipe import recipe_for
from multijoin_bench.cdc.report import write_cdc
from multijoin_bench.cdc.settings import flink_tuning, spark_settings
from multijoin_bench.cdc.tables import changelog_join, delta_rows, differing_rows, snapshot_join
from multijoin_bench.cdc.workloads import cdc_workload, write
from multijoin_bench.core import metrics
from multijoin_bench.core.breakdown import batch_cost, batch_split
from multijoin_bench.core.runs import capped_wait, folder_bytes, settings
from multijoin_bench.flink import cdc_peer as flink_cdc_peer
from multijoin_bench.flink import launch as flink
from multijoin_bench.flink.tuning import Tuning
from multijoin_bench.scale.run import BOUNDED_MEMORY

CHANGES = 1_000_000
BATCH_SIZES = (10_000, 100_000)
TINY_CHANGES, TINY_BATCH_SIZES = 2_000, (500, 1_000)
RUNS = ("multi_join", "multi_join_delta", "recipe")
# The multi-join into noop runs as often as Flink's peer runs each mode (flink.run_cdc_peer's
# `runs`), and like it reports its best run: the JIT's warm-up is neither engine's cost.
NOOP_RUNS = 2
# The state run's RocksDB flushes and compacts at every commit, so that its SST files hold each
# live row once, as the SST files of Flink's RocksDB do when its checkpoint is taken. RocksDB
# compacts when a commit takes a snapshot; with changelog checkpointing, that is one commit in
# minDeltasForSnapshot, so it is set to 1.
COMPACT_ON_COMMIT = {"spark.sql.streaming.stateStore.rocksdb.compactOnCommit": "true",
                     "spark.sql.streaming.stateStore.minDeltasForSnapshot": "1"}


def cdc_session(driver_memory: str, shuffle_partitions: int,
                classes: Path | None = None) -> SparkSession:
    """Local Spark with Delta's jars (scripts/setup-kafka fetches them) and the extension, RocksDB
    on bounded memory as in the scale runs, and Delta's deletion vectors on for every table, so
    that a MERGE marks the rows it replaces instead of rewriting their files (both Delta sinks
    get them); `classes` on the driver's class path (the sweep's JVM sink)."""
    from examples.kafka_delta.pipeline import DELTA_CATALOG, DELTA_EXTENSION, connector_jars
    from spark_multijoin import configure_spark_with_multijoin

    builder = (SparkSession.builder.master("local[2]").appName("multijoin-cdc-benchmark")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
               .config("spark.driver.memory", driver_memory)
               .config("spark.jars", ",".join(connector_jars()))
               .config("spark.sql.extensions", DELTA_EXTENSION)
               .config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
               .config("spark.databricks.delta.snapshotPartitions", "1")
               .config("spark.databricks.delta.properties.defaults.enableDeletionVectors", "true")
               # Every batch's progress, not Spark's last 100: the run reports each one.
               .config("spark.sql.streaming.numRecentProgressUpdates", "1000000"))
    for key, value in BOUNDED_MEMORY.items():
        builder = builder.config(key, value)
    if classes:
        builder = builder.config("spark.driver.extraClassPath", str(classes))
    spark = configure_spark_with_multijoin(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_cdc(spark: SparkSession, names: list[str], changes: int, batch_sizes: list[int],
            out: Path, work: Path, cap_seconds: float, flink: FlinkPeer | None = None,
            warm_up: bool = True, noop_runs: int = NOOP_RUNS) -> list[dict]:
    """Every run of each of `names` at each of `batch_sizes`, after an unreported `warm_up` of
    each run on the tiny workload (the JVM's first queries and Delta commits are the slow ones),
    and with `flink`, Flink's peer; writes cdc_results.json, .md and cdc_cost.png to
    `out`. Fails, after writing them, where a finished run's table differs from the batch join."""
    file_changes = min(batch_sizes)
    check_batch_sizes(batch_sizes)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    if warm_up:
        warm(spark, work, cap_seconds, names[0])
    for name in names:
        folder = work / name
        spec = write(cdc_workload(name, changes, file_changes), folder)
        print(f"{name}: {spec['parameters']}", flush=True)
        result = {"workload": name, "parameters": spec["parameters"], "select": spec["select"],
                  "cap_seconds": cap_seconds, "spark_settings": spark_settings(spark),
                  "batch_sizes": {}}
        for size in batch_sizes:
            result["batch_sizes"][str(size)] = run_batch_size(
                spark, spec, folder / f"runs_{size}", size // file_changes, cap_seconds,
                noop_runs)
        result["compacted_state"] = compacted_state(spark, spec, folder / "compacted_state",
                                                    max(batch_sizes) // file_changes,
                                                    cap_seconds)
        print(f"    state, compacted: {result['compacted_state']}", flush=True)
        if flink:
            result["flink"] = flink_peer(folder, cap_seconds, flink, flink_tuning(spark, result))
        results.append(result)
    write_checked(results, out, spark.version)
    return results


def write_checked(results: list[dict], out: Path, spark_version: str) -> None:
    """Writes the results; then fails where a finished run's table differs from the batch
    join."""
    write_cdc(results, out, spark_version)
    print(f"wrote cdc_results.json, cdc_results.md and cdc_cost.png to {out}")
    wrong = [f"{r['workload']} at {size}: {checks}" for r in results
             for size, runs in r["batch_sizes"].items()
             for checks in [runs["final_tables"]] if checks.get("differs")]
    if wrong:
        raise SystemExit("final tables differ: " + "; ".join(wrong))


def warm(spark: SparkSession, work: Path, cap_seconds: float, name: str = "cdc_left10") -> None:
    """Every run once on the tiny workload, unreported: the JVM's first queries and Delta
    commits are the slow ones."""
    spec = write(cdc_workload(name, TINY_CHANGES, TINY_BATCH_SIZES[0]), work / "warm_up")
    run_batch_size(spark, spec, work / "warm_up" / "runs", 2, cap_seconds, noop_runs=1)


def check_batch_sizes(batch_sizes: list[int]) -> None:
    if any(size % min(batch_sizes) for size in batch_sizes):
        raise SystemExit(
            f"--batch-sizes: each must be a multiple of the smallest, {min(batch_sizes)}")


def rerun(spark: SparkSession, names: list[str], parts: list[str], out: Path, work: Path,
          cap_seconds: float, flink: FlinkPeer | None = None) -> None:
    """`parts` of the run that wrote `out`'s results again on the workloads `names` (`spark`:
    the runs at each batch size, `state`: the state runs, `flink`: Flink's peer), over the files
    it left in `work`, Flink's as `flink` says or in every mode; rewrites those results."""
    recorded = json.loads((out / "cdc_results.json").read_text())
    if "spark" in parts:
        warm(spark, work, cap_seconds)
    for result in (r for r in recorded["results"] if r["workload"] in names):
        folder = work / result["workload"]
        spec = json.loads((folder / "spec.json").read_text())
        if "spark" in parts:
            file_changes = spec["parameters"]["changes_per_file"]
            for size in result["batch_sizes"]:
                result["batch_sizes"][size] = run_batch_size(
                    spark, spec, folder / f"runs_{size}", int(size) // file_changes,
                    cap_seconds, NOOP_RUNS)
        if "state" in parts:
            files = max(map(int, result["batch_sizes"])) // spec["parameters"]["changes_per_file"]
            result["compacted_state"] = compacted_state(spark, spec, folder / "compacted_state",
                                                        files, cap_seconds)
        if "flink" in parts:
            again = flink_peer(folder, cap_seconds, flink or FlinkPeer(),
                               flink_tuning(spark, result))
            result["flink"] = merged_peer(result.get("flink"), again)
        print(f"{result['workload']}: {parts} again", flush=True)
    write_checked(recorded["results"], out, spark.version)


def run_batch_size(spark: SparkSession, spec: dict, folder: Path, files: int,
                   cap_seconds: float, noop_runs: int) -> dict:
    """The three runs over `files` files per table and trigger (the noop one `noop_runs` times,
    the fastest kept), and their final tables compared."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    runs = {}
    for run in runs_of(spec):
        tries = ([run_one(spark, spec, folder / f"try_{i}", run, files, cap_seconds)
                  for i in range(noop_runs)] if run == "multi_join"
                 else [run_one(spark, spec, folder, run, files, cap_seconds)])
        runs[run] = max(tries, key=lambda t: (t["finished"], t["changes_per_second"] or 0))
        runs[run]["tries_changes_per_second"] = [t["changes_per_second"] for t in tries]
        print(f"    {files * spec['parameters']['changes_per_file']:>9,} a batch  {run:<17}"
              f"{summary(runs[run])}", flush=True)
    runs["final_tables"] = final_tables(spark, spec, folder, runs)
    print(f"    final tables: {runs['final_tables']}", flush=True)
    return runs


def runs_of(spec: dict) -> tuple[str, ...]:
    """The runs of a workload: the recipe cuts a batch to the join key it touched, so it runs
    only where every table joins on that one key."""
    one_key = spec["parameters"].get("one_join_key", True)
    return RUNS if one_key else tuple(run for run in RUNS if run != "recipe")


def compacted_state(spark: SparkSession, spec: dict, folder: Path, files: int,
                    cap_seconds: float) -> dict:
    """The multi-join's state bytes as Flink's are measured: an untimed run into noop whose
    RocksDB compacts at every commit, and its SST files after the last micro-batch (a timed
    run's SST files still hold the rows that later changes replaced, until RocksDB compacts)."""
    # A checkpoint left by an earlier run would resume at its end and store nothing.
    shutil.rmtree(folder, ignore_errors=True)
    with settings(spark, COMPACT_ON_COMMIT):
        run = run_one(spark, spec, folder, "multi_join", files, cap_seconds)
    return {key: run[key] for key in ("finished", "state_sst_bytes", "state_rows")}


def run_one(spark: SparkSession, spec: dict, folder: Path, run: str, files: int,
            cap_seconds: float) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    checkpoint = folder / f"checkpoint_{run}"
    started = time.perf_counter()
    if run == "recipe":
        recipe = recipe_for(spark, spec, folder / "recipe_current", folder / "table_recipe")
        writer = recipe.stream(spark, files).writeStream.foreachBatch(recipe)
        state = folder / "recipe_current"
    else:
        from spark_multijoin import changelog

        writer = changelog_join(spark, spec, files).writeStream
        writer = (writer.foreachBatch(changelog.delta_merge(str(folder / "table_multi_join"),
                                                            path=True))
                  if run == "multi_join_delta" else writer.format("noop"))
        state = checkpoint / "state"
    query = (writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
             .start())
    finished = capped_wait(query, cap_seconds)
    wall = time.perf_counter() - started
    progress = [json.loads(p.json) for p in query.recentProgress]
    return record(progress, finished, wall, folder_bytes(state), sink_counts=run == "multi_join")


def record(progress: list[dict], finished: bool, wall: float, state_bytes: int,
           sink_counts: bool) -> dict:
    """A run's figures: throughput, batch time, latency over changes, state, and per batch its
    time and split (`sink_counts`: the sink counts its rows, which foreachBatch does not)."""
    batches = metrics.data_batches(progress)
    changes_done = sum(p["numInputRows"] for p in progress)
    durations = sorted(metrics.trigger_ms(p) for p in batches)
    weighted = sorted((metrics.trigger_ms(p), p["numInputRows"]) for p in batches)
    return {"finished": finished, "wall_seconds": round(wall, 1), "changes_done": changes_done,
            "changes_per_second": round(changes_done / wall, 1) if wall else None,
            "batches": len(batches),
            "batch_ms_p50": percentile([(ms, 1) for ms in durations], 0.50),
            "batch_ms_p95": percentile([(ms, 1) for ms in durations], 0.95),
            "latency_ms_p50": percentile(weighted, 0.50),
            "latency_ms_p99": percentile(weighted, 0.99),
            "state_bytes": state_bytes,
            # RocksDB's live SST files after the last batch: the state without the versions
            # the checkpoint retains.
            "state_sst_bytes": metrics.state_metric(batches[-1], "rocksdbSstFileSize")
            if batches else 0,
            "state_rows": metrics.state_rows(progress[-1]) if progress else 0,
            "output_rows": metrics.output_rows(progress) if sink_counts else None,
            "profile": batch_cost(progress) if batches else {},
            "per_batch": [{"batch": p["batchId"], "changes": p["numInputRows"],
                           "ms": metrics.trigger_ms(p), "state_rows": metrics.state_rows(p),
                           **batch_split(p)} for p in batches]}


def percentile(weighted: list[tuple[float, int]], q: float) -> float | None:
    """The value below which a `q` share of the weight lies, of (value, weight) pairs in order."""
    total = sum(weight for _, weight in weighted)
    seen = 0
    for value, weight in weighted:
        seen += weight
        if seen >= q * total:
            return value
    return None


def final_tables(spark: SparkSession, spec: dict, folder: Path, runs: dict) -> dict:
    """Rows each Delta table has that the batch join of the final rows has not, and the
    reverse, where its run finished; and the two tables against each other."""
    batch = snapshot_join(spark, spec).persist()
    tables = {run: delta_rows(spark, str(folder / f"table_{run}"))
              for run in ("multi_join", "recipe")
              if runs.get("multi_join_delta" if run == "multi_join" else run,
                          {}).get("finished")}
    checks: dict = {f"{run}_vs_batch": differing_rows(table, batch)
                    for run, table in tables.items()}
    if len(tables) == 2:
        checks["multi_join_vs_recipe"] = differing_rows(tables["multi_join"], tables["recipe"])
    checks["batch_rows"] = batch.count()
    checks["differs"] = any(pair != (0, 0) for key, pair in checks.items() if "_vs_" in key)
    batch.unpersist()
    return checks


def merged_peer(recorded: dict | None, again: dict) -> dict:
    """Flink's modes run `again` in place of the `recorded` ones, the others kept; where it did
    not run, the recorded result as it was."""
    kept = {key: value for key, value in (recorded or {}).items() if key != "not_available"}
    if "not_available" in again:
        print(f"    flink      {again['not_available']}", flush=True)
        return recorded or again
    return {**kept, **again}


@dataclass(frozen=True)
class FlinkPeer:
    """Which of Flink's modes run (None: every one), and how many timed runs each."""
    modes: list[str] | None = None
    runs: int = NOOP_RUNS


def flink_peer(folder: Path, cap_seconds: float, peer: FlinkPeer, tuning: Tuning) -> dict:
    """Flink's peer on the workload's folder (its spec.json) with `tuning`, in a process of its
    own, capped at a cap per run of each join mode (its timed runs and its state run); or why it
    did not run."""
    if not flink.installed():
        return {"not_available": flink.MISSING}
    caps = len(peer.modes or flink_cdc_peer.MODES) * (peer.runs + 1)
    try:
        return flink.run_cdc_peer(folder / "spec.json", tuning, runs=peer.runs, modes=peer.modes,
                                  cap_seconds=caps * cap_seconds)
    except subprocess.TimeoutExpired:
        return {"not_available": f"not finished in {caps} caps"}
    except subprocess.CalledProcessError as failed:
        return {"not_available": f"the Flink peer failed ({failed})"}


def summary(run: dict) -> str:
    state = "finished" if run["finished"] else "NOT FINISHED at the cap"
    return (f"{state}: {run['wall_seconds']:.1f} s, {run['changes_done']:,} changes, "
            f"{run['changes_per_second']:,.0f}/s, {run['batches']} batches, latency p50/p99 "
            f"{run['latency_ms_p50']}/{run['latency_ms_p99']} ms, state "
            f"{run['state_bytes'] / 1e6:,.1f} MB")
