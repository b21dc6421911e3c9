"""`--cdc-sweep`: changes a second at a given latency, for tables that change, on both engines.

Per workload and peer, on a Kafka broker of its own: the peer's query starts, reading the
tables' topics from their start; the initial load is produced and its marker awaited (the
initial load's time, reported apart); then stages of offered load (paced.py), each at a set
rate for `stage_seconds`, its last third measured (markers.py). The rates climb by half while
the highest bound holds, then close in on each bound's highest rate (markers.next_rate): every
bound for a peer that runs the same at all of them, its own for a Flink mode whose mini-batch is
set from the bound (peer_bounds). After a stage that fails the highest bound, only markers are
offered until the backlog is gone, so that the next stage starts level. Each stage records the
cores the broker, the producer and the machine took: the engine had the rest.

Peers: ours on RocksDB and on Spark's in-memory store (the changelog join into a JVM sink that
notes its markers, ArrivalWriter.java); Flink's modes (flink/cdc_sweep.py, a process of its
own, with the CDC peer's tuning at the sweep's latency bound). The queries read the same topics
the same way and write nowhere else: the CDC run (run.py) checks their answers on the same
workloads.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from multijoin_bench.cdc import markers
from multijoin_bench.cdc.model import CdcWorkload
from multijoin_bench.cdc.paced import MARKER_BASE, PacedFeed, Stage, topic
from multijoin_bench.cdc.settings import SWEEP_TRIGGER, spark_settings
from multijoin_bench.cdc.state_size import logical_bytes, spark_state
from multijoin_bench.cdc.sweep_report import write_sweep
from multijoin_bench.cdc.tables import envelope_schema
from multijoin_bench.cdc.workloads import cdc_workload
from multijoin_bench.core.cpu import CpuSplit
from multijoin_bench.core.machine import machine
from multijoin_bench.core.runs import settings
from multijoin_bench.flink.cdc_sweep import STOPPED
from multijoin_bench.flink.launch import PACKAGE_PARENT
from multijoin_bench.flink.tuning import (DEFAULT_LATENCY_BOUND_MS, Tuning, checkpoint_interval_ms,
                                          managed_memory_mb, mini_batches)
from multijoin_bench.scale.run import BOUNDED_MEMORY

SPARK_PEERS = {"ours_rocksdb": None, "ours_in_memory": {
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"}}
FLINK_PEERS = ("multi_join", "multi_join_rocksdb", "binary_joins", "binary_joins_rocksdb")
START_RATE = 2_000
# Every peer's first stage, unmeasured, at the start rate: the JVM's first batches (or records)
# are neither engine's cost.
WARM_UP_SECONDS = 60
MAX_STAGES = 14
DRAIN_SECONDS = 5.0
DRAIN_CAP_SECONDS = 180.0
FLINK_START_SECONDS = 120
# The workloads' keys are those of their one-million-change version; their changes run on as
# long as the stages need.
KEYS_OF_CHANGES = 1_000_000
# --tiny: a smoke run, small keys, two short stages.
TINY = {"keys_of_changes": 2_000, "start_rate": 500, "max_stages": 2, "warm_up_seconds": 6}


def sweep_spec(workload: CdcWorkload) -> dict:
    """What both engines read: the tables (columns, row id, topic), the SELECT, the output
    column of the join key and where markers start."""
    return {"workload": workload.name, "select": workload.select, "output_key": workload.output_key,
            "marker_base": MARKER_BASE, "parameters": workload.parameters,
            "tables": [{"name": t.name, "columns": [list(c) for c in t.columns],
                        "primary_key": [t.row_id], "topic": topic(t.name)}
                       for t in workload.tables]}


def kafka_changes(spark: SparkSession, table: dict, bootstrap: str) -> DataFrame:
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", table["topic"]).option("startingOffsets", "earliest").load())
    return (raw.select(F.from_json(F.col("value").cast("string"), envelope_schema(table))
                       .alias("e")).select("e.*"))


@dataclass
class SparkPeer:
    """Our changelog join of the topics into the marker-noting sink, on `store`'s settings."""
    spark: SparkSession
    store: dict | None

    def start(self, spec: dict, bootstrap: str, arrivals: Path, work: Path) -> dict:
        from spark_multijoin import changelog

        for table in spec["tables"]:
            changelog.debezium(kafka_changes(self.spark, table, bootstrap),
                               row_id=table["primary_key"], full_before=True
                               ).createOrReplaceTempView(table["name"])
        frame = self.spark.sql(spec["select"])
        jvm = self.spark._jvm  # type: ignore[attr-defined]
        writer = jvm.multijoinbench.ArrivalWriter(str(arrivals), spec["output_key"], MARKER_BASE)
        with settings(self.spark, self.store or {}):
            self.query = (frame._jdf.writeStream().foreach(writer)
                          .option("checkpointLocation", str(work / "checkpoint")).start())
        return {"settings": self.store or {}}

    def stop(self) -> dict:
        """Stops the query; its batches, and its plan, which must hold the changelog join."""
        plan = self.query.explainInternal(False)
        progress = [json.loads(p.json()) for p in self.query.recentProgress()]
        self.query.stop()
        if "ChangelogJoin" not in plan:
            raise SystemExit(f"no changelog join in the sweep's plan:\n{plan}")
        batch_ms = sorted(p["durationMs"].get("triggerExecution", 0) for p in progress
                          if p["numInputRows"])
        return {"plan": plan, "state": spark_state(progress), "batches": len(batch_ms),
                "batch_ms_p50": markers.percentile(batch_ms, 0.5),
                "batch_ms_p99": markers.percentile(batch_ms, 0.99),
                "batch_ms_max": max(batch_ms, default=None)}


@dataclass
class FlinkPeer:
    """A Flink mode of flink/cdc_sweep.py, in a process of its own."""
    mode: str
    tuning: Tuning
    connector_jar: Path

    def start(self, spec: dict, bootstrap: str, arrivals: Path, work: Path) -> dict:
        (work / "spec.json").write_text(json.dumps(spec))
        ready = self.ready = work / "ready.json"
        t = self.tuning
        command = [sys.executable, "-m", "multijoin_bench.flink.cdc_sweep", str(work / "spec.json"),
                   "--bootstrap", bootstrap, "--mode", self.mode, "--heap", t.heap,
                   "--connector-jar", str(self.connector_jar), "--arrivals", str(arrivals),
                   "--ready", str(ready), "--managed-memory-mb", str(t.managed_memory_mb),
                   "--checkpoint-interval-ms", str(t.checkpoint_interval_ms),
                   "--latency-bound-ms", str(t.latency_bound_ms)]
        self.log = (work / "flink.log").open("w")
        self.process = subprocess.Popen(command, cwd=PACKAGE_PARENT, stdout=self.log,
                                        stderr=subprocess.STDOUT,
                                        env={**os.environ, "JVM_ARGS": t.jvm_args()})
        deadline = time.time() + FLINK_START_SECONDS
        while not ready.exists():
            if self.process.poll() is not None or time.time() > deadline:
                raise SystemExit(f"Flink's {self.mode} did not start: {work / 'flink.log'}")
            time.sleep(0.5)
        started = json.loads(ready.read_text())
        if started["plan_problems"]:
            self.stop()
            raise SystemExit(f"Flink's {self.mode} plan: {started['plan_problems']}")
        return started

    def stop(self) -> dict:
        """Stops the job; the state of its latest checkpoint, which it writes as it stops."""
        self.process.terminate()
        self.process.wait(60)
        self.log.close()
        stopped = self.ready.with_name(STOPPED)
        return json.loads(stopped.read_text()) if stopped.exists() else {
            "state": {"not_read": f"Flink wrote no {STOPPED}: {self.log.name}"}}


def run_peer(peer: SparkPeer | FlinkPeer, name: str, stage_seconds: float, work: Path,
             bounds: tuple[int, ...] = markers.BOUNDS_MS, keys_of_changes: int = KEYS_OF_CHANGES,
             start_rate: float = START_RATE, max_stages: int = MAX_STAGES,
             warm_up_seconds: float = WARM_UP_SECONDS) -> dict:
    """`peer`'s sweep of workload `name` on a broker of its own under `work`, searching the
    highest rate that holds each of `bounds`."""
    from examples.kafka_delta.broker import running_broker

    workload = cdc_workload(name, keys_of_changes, keys_of_changes)
    spec = sweep_spec(workload)
    workload.changes = 10**9  # as many as the stages take
    arrivals = work / "arrivals"
    arrivals.mkdir(parents=True)
    with running_broker(work / "broker", {t["topic"]: 1 for t in spec["tables"]}) as broker:
        feed = PacedFeed(broker.bootstrap, workload)
        started = peer.start(spec, broker.bootstrap, arrivals, work)
        load = feed.load()
        load["seconds"] = wait_for(arrivals, [feed.markers[-1]], DRAIN_CAP_SECONDS)
        print(f"    initial load: {load}", flush=True)
        feed.stage(Stage(start_rate, warm_up_seconds))
        # The broker and the producer share the machine with the engine: each stage says how
        # much of it they took.
        cpu = CpuSplit({"broker": broker.pid, "producer": os.getpid()})
        points = stages(feed, arrivals, cpu, Stage(start_rate, stage_seconds), bounds, max_stages)
        stopped = peer.stop()
        feed.producer.flush(5)
        stopped["logical_state"] = logical_bytes(workload.tables, feed.live_rows())
    return {"initial_load": load, "warm_up": {"rate": start_rate, "seconds": warm_up_seconds},
            "points": points, "best_rates": markers.best_rates(points, bounds), "started": started,
            **stopped}


def stages(feed: PacedFeed, arrivals: Path, cpu: CpuSplit, first: Stage,
           bounds: tuple[int, ...], max_stages: int) -> list[dict]:
    """The measured stages, from `first` on, each rate picked by markers.next_rate."""
    points: list[dict] = []
    rate: float | None = first.rate
    while rate is not None and len(points) < max_stages:
        before = cpu.read()
        record = feed.stage(Stage(rate, first.seconds))
        used = cpu.cores_since(before)
        wait_for(arrivals, record["markers"], max(markers.BOUNDS_MS) / 1000 + 2)
        points.append({**markers.measure(record, markers.arrivals(arrivals)), "cpu": used})
        print(f"    {points[-1]}", flush=True)
        if not markers.holds(points[-1], max(bounds)):
            points[-1]["drained_seconds"] = drain(feed, arrivals)
        rate = markers.next_rate(points, bounds)
    return points


def wait_for(arrivals: Path, waited: list[tuple[int, float]], seconds: float) -> float | None:
    """Until every marker of `waited` arrived or `seconds` passed; the last one's latency in
    seconds, or None."""
    deadline = time.time() + seconds
    ids = {row_id for row_id, _ in waited}
    while True:
        arrived = markers.arrivals(arrivals)
        if ids <= arrived.keys():
            row_id, released = waited[-1]
            return round(arrived[row_id] - released, 2)
        if time.time() > deadline:
            return None
        time.sleep(0.2)


def drain(feed: PacedFeed, arrivals: Path) -> float:
    """Markers alone until one comes out within the lowest bound; the seconds it took."""
    started = time.time()
    while time.time() - started < DRAIN_CAP_SECONDS:
        record = feed.stage(Stage(0, DRAIN_SECONDS))
        last = wait_for(arrivals, record["markers"][-1:], 1.0)
        if last is not None and last * 1000 <= min(markers.BOUNDS_MS):
            break
    return round(time.time() - started, 1)


def peer_names(flink: bool) -> list[str]:
    """Every peer's name: ours, then Flink's modes, those with mini-batches once per bound (their
    mini-batch waits a quarter of the bound searched)."""
    names = list(SPARK_PEERS)
    if flink:
        for mode in FLINK_PEERS:
            names += ([f"flink_{mode}@{bound}" for bound in markers.BOUNDS_MS]
                      if mini_batches(mode) else [f"flink_{mode}"])
    return names


def peer_bounds(name: str) -> tuple[int, ...]:
    """The bounds `name`'s sweep searches: the one its mini-batch is set from, or every one."""
    _, _, bound = name.partition("@")
    return (int(bound),) if bound else markers.BOUNDS_MS


def make_peer(name: str, spark: SparkSession, driver_memory: str,
              ours: dict | None) -> SparkPeer | FlinkPeer:
    """The peer `name`; Flink's checkpoint at our RocksDB run's median batch (`ours`) or every
    second."""
    if name in SPARK_PEERS:
        return SparkPeer(spark, SPARK_PEERS[name])
    from multijoin_bench.flink.connector import connector_jar

    mode, _, bound = name.removeprefix("flink_").partition("@")
    tuning = Tuning(managed_memory_mb(BOUNDED_MEMORY), driver_memory,
                    checkpoint_interval_ms((ours or {}).get("batch_ms_p50")),
                    int(bound) if bound else DEFAULT_LATENCY_BOUND_MS)
    return FlinkPeer(mode, tuning, connector_jar())


def run_sweep(spark: SparkSession, names: list[str], peers: list[str], stage_seconds: float,
              out: Path, work: Path, driver_memory: str, again: bool = False,
              tiny: bool = False, kept_only: bool = False) -> list[dict]:
    """Each peer's sweep of each workload, each kept in `out`/points as it ends: a later run goes
    on where one left off (or, with `again`, runs them anew; with `kept_only`, runs none and
    reports the kept ones); then the report."""
    kept = out / "points"
    kept.mkdir(parents=True, exist_ok=True)
    results = []
    for name in names:
        sizes = TINY if tiny else {}
        keys_of_changes = sizes.get("keys_of_changes", KEYS_OF_CHANGES)
        result = {"workload": name,
                  "spec": sweep_spec(cdc_workload(name, keys_of_changes, keys_of_changes)),
                  "stage_seconds": stage_seconds,
                  "spark_settings": spark_settings(spark, SWEEP_TRIGGER), "peers": {}}
        for peer in peers:
            path = kept / f"{name}-{peer}.json"
            if kept_only and not path.exists():
                continue
            if again or not path.exists():
                print(f"{name}: {peer}", flush=True)
                folder = work / name / peer
                shutil.rmtree(folder, ignore_errors=True)
                made = make_peer(peer, spark, driver_memory,
                                 result["peers"].get("ours_rocksdb"))
                # Probed before the peer starts: its processes, as they shut down, slow a probe.
                began, host = time.time(), machine()
                ran = run_peer(made, name, stage_seconds, folder, peer_bounds(peer), **sizes)
                path.write_text(json.dumps({**ran, "machine": host,
                                            "sweep_seconds": round(time.time() - began)},
                                           indent=2))
            result["peers"][peer] = json.loads(path.read_text())
        results.append(result)
    write_sweep(results, out, spark.version)
    return results
