"""`--latency`: how long a joined row takes to come out, in Spark 4.3's real-time mode and in
micro-batches, for a 4-way inner multi-join on one key.

Each input is the project's paced source (`PacedRowsProvider`, one partition): row n of every
input has key n and is due n / rate seconds after a start shared by the four, which its column
`sent_ms` records; the source reads no row before it is due. So each key's fourth row completes
exactly one output row, which carries the greatest of its rows' `sent_ms`. A `foreach` sink in
the JVM (ArrivalWriter.java, compiled by the run) notes when each output row reaches it: console
and memory sinks wait for the commit, and Spark hands rows to a Python writer in batches. A
row's latency is its arrival less its `sent_ms`. The rows start LEAD_SECONDS after the query
does, so that its start is not timed; rows due before the query's first tasks ran (Spark's event
log, which the run turns on, says when) are left out (and counted). Every run also counts the
keys that came out twice, and those not out within 30 s of the last one's due time.

A real-time batch's end holds the rows due meanwhile until the next batch reads them, so the
tail is those pauses. Each is reported (the slowest row due near it), and so is p99 without the
first: the first end after a query's start also commits the state's first version, which later
ends do not. The driver's first real-time query is a mode of its own (see MODES); the others run
on a warm driver (warm_up). `real_time_source_only` is the four inputs' union into the sink, no
state: what the source and the sink cost; `real_time_shuffle_only` shuffles that union by key
first, as the join and the deduplication do: what the shuffle adds, and how long a key waits for
the last of its four copies, which a join cannot beat (a deduplication waits for the first).

With a time bound (`--latency-time-bound`), each input has an event time (its `sent_ms`) with a
watermark that delay behind, the join's inputs join only within that bound of the first's, and
the deduplication is on the key and that time: both keep their state bounded, as long runs in
production do, and remove what the watermark passed (the multi-join while rows arrive, Spark's
deduplication at each batch's end).
"""

from __future__ import annotations

import datetime
import functools
import json
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import pyspark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from multijoin_bench.flink.launch import run_latency_peer
from multijoin_bench.latency import boundaries
from multijoin_bench.core.cpu import CpuWindow
from multijoin_bench.latency.report import markdown
from spark_multijoin import multi_join

INPUTS = 4
PACED_SOURCE = "io.github.sparkmultijoin.source.PacedRowsProvider"
# Time for a query to start before its rows come due.
LEAD_SECONDS = 10.0
# Rows due this long around a real-time batch's start count towards that boundary's pause.
PAUSE_WINDOW = (-2.0, 1.0)
# The first real-time query of a driver pays what its JVM does once (loading classes, the
# first commit's files), most of it at its first batch boundary: real_time_first_query is that
# query, and the modes after it run warm, as a long-running driver does. Spark's own stateful
# operator in real-time mode runs on the same sources and rows (a deduplication of the four
# inputs' union), for what a batch boundary costs without the join.
MODES = ("real_time_first_query", "real_time", "micro_batch_0s", "micro_batch_1s",
         "real_time_deduplication", "real_time_source_only", "real_time_shuffle_only")
# The modes that write the four inputs' union: deduplicated, as it is, and shuffled by key.
UNIONS = ("real_time_deduplication", "real_time_source_only", "real_time_shuffle_only")
# Flink's MultiJoin on the same shape of events (flink/latency.py, in a process of its own), with
# Flink's default network buffer timeout and with none; they run with --flink.
FLINK_MODES = {"flink_multi_join": None, "flink_multi_join_no_buffer_timeout": 0}
GRACE_SECONDS = 30
# A warm driver has run the queries it runs many times, as a long-running one has: the JIT has
# compiled the planner's paths and the operators'. Before the first warm real-time mode, each
# real-time query runs this long in real-time batches of WARM_UP_BATCH_SECONDS, untimed (see
# warm_up): as many batch boundaries as ten minutes of 10 s batches. Spark refuses real-time
# batches shorter than MIN_BATCH_KEY says, so the warm-up lowers it for its own queries.
WARM_UP_SECONDS = 60
WARM_UP_BATCH_SECONDS = 1
MIN_BATCH_KEY = "spark.sql.streaming.realTimeMode.minBatchDuration"


def paced_inputs(spark: SparkSession, rate: int, rows: int, start_ms: int,
                 time_bound: int | None = None) -> list[DataFrame]:
    """The four inputs: keys 0..rows-1 at `rate` a second from `start_ms`, as (k<i>, sent<i>),
    with a time bound also t<i>, the send time as event time, its watermark that far behind."""
    frames = [spark.readStream.format(PACED_SOURCE).option("rowsPerSecond", rate)
              .option("rows", rows).option("startMillis", start_ms).load()
              for _ in range(INPUTS)]
    return [timed(frame.select(F.col("key").alias(f"k{i}"), F.col("sent_ms").alias(f"sent{i}")),
                  i, time_bound) for i, frame in enumerate(frames)]


def timed(frame: DataFrame, i: int, time_bound: int | None) -> DataFrame:
    """Input `i` (k<i>, sent<i>) with its event time t<i> and watermark, given a time bound."""
    if time_bound is None:
        return frame
    return (frame.withColumn(f"t{i}", F.timestamp_millis(f"sent{i}"))
            .withWatermark(f"t{i}", f"{time_bound} seconds"))


def joined(frames: list[DataFrame], time_bound: int | None = None) -> DataFrame:
    result = frames[0]
    for i, frame in enumerate(frames[1:], start=1):
        on = result["k0"] == frame[f"k{i}"]
        if time_bound is not None:
            bound = F.expr(f"INTERVAL {time_bound} SECONDS")
            on = on & frame[f"t{i}"].between(result["t0"] - bound, result["t0"] + bound)
        result = result.join(frame, on)
    return result.select("k0", F.greatest(*[f"sent{i}" for i in range(INPUTS)]).alias("sent"))


def query_frame(mode: str, frames: list[DataFrame], time_bound: int | None = None) -> DataFrame:
    """What `mode` writes: (key, sent ms) per row."""
    if mode in UNIONS:
        event_time = ["t"] if time_bound is not None else []
        union = functools.reduce(DataFrame.union, frames).toDF("k0", "sent", *event_time)
        # The key's copies share their send time: on (key, time), the watermark bounds the state.
        distinct = union.dropDuplicates(["k0", *event_time])
        return {"real_time_deduplication": distinct,
                "real_time_shuffle_only": union.repartition("k0")}.get(mode, union) \
            .select("k0", "sent")
    return joined(frames, time_bound)


def compiled_writer(classes: Path) -> Path:
    """Compiles ArrivalWriter.java, the JVM sink, into `classes` (for the driver's class path)."""
    jars = Path(pyspark.__file__).parent / "jars"
    classes.mkdir(parents=True, exist_ok=True)
    subprocess.run(["javac", "-cp", f"{jars}/*", "-d", str(classes),
                    str(Path(__file__).parent / "ArrivalWriter.java")], check=True)
    return classes


def run_mode(spark: SparkSession, mode: str, rate: int, seconds: float, batch_seconds: int,
             work: Path, time_bound: int | None = None) -> dict:
    """One run of `mode` at `rate` keys a second per input: the latencies and the check."""
    keys = int(rate * seconds)
    start = time.time() + LEAD_SECONDS
    frames = paced_inputs(spark, rate, keys, int(start * 1000), time_bound)
    jvm = spark._jvm  # type: ignore[attr-defined]
    real_time = mode.startswith("real_time")
    trigger = (real_time_trigger(spark, batch_seconds) if real_time
               else jvm.org.apache.spark.sql.streaming.Trigger.ProcessingTime(
                   mode.rsplit("_", 1)[1].replace("s", " seconds")))
    folder = work / f"{mode}-{rate}"
    query = start_in(folder, query_frame(mode, frames, time_bound), trigger)
    arrivals = folder / "arrivals"
    copies = INPUTS if mode in UNIONS and mode != "real_time_deduplication" else 1
    # The driver's JVM runs every task here (local mode): its CPU while the rows are due.
    cpu = CpuWindow(jvm.java.lang.ProcessHandle.current().pid(), start, start + seconds)
    try:
        wait_for_rows(arrivals, keys * copies, start + seconds + GRACE_SECONDS, cpu)
        starts = batch_starts(query) if real_time else []
    finally:
        query.stop()
    arrived = read_arrivals(arrivals)
    jobs = jobs_of(spark, query)
    clock_start = None if jobs is None else boundaries.reading_from(jobs[0]) / 1000
    result = (summary(mode, rate, keys, arrived, starts, copies, clock_start)
              | {"jvm_cpu_cores": cpu.cores()})
    if real_time and jobs is not None:
        result["boundary_parts_ms"] = boundaries.summary(
            jobs, [(due * 1000, at * 1000) for _, due, at in arrived])
    return result


def jobs_of(spark: SparkSession, query) -> list[dict] | None:
    """`query`'s jobs, from the session's event log (boundaries.read_jobs); None without one."""
    events = spark.conf.get("spark.eventLog.dir", None)
    if events is None:
        return None
    # The log holds the whole session: read once a run.
    return boundaries.read_jobs(
        boundaries.event_log(Path(events.removeprefix("file:"))))[str(query.id())]


def start_in(folder: Path, frame: DataFrame, trigger):
    """`frame`'s query into the JVM sink, which notes each row's arrival in `folder`/arrivals;
    its checkpoint in `folder`/cp. Whatever `folder` held goes first."""
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "arrivals").mkdir(parents=True)
    jvm = frame.sparkSession._jvm  # type: ignore[attr-defined]
    return (frame._jdf.writeStream().outputMode("update")
            .foreach(jvm.multijoinbench.ArrivalWriter(str(folder / "arrivals")))
            .option("checkpointLocation", str(folder / "cp")).trigger(trigger).start())


def real_time_trigger(spark: SparkSession, batch_seconds: int):
    """Spark's trigger for real-time batches of `batch_seconds`."""
    return spark._jvm.org.apache.spark.sql.streaming.Trigger.RealTime(  # type: ignore
        f"{batch_seconds} seconds")


def wait_for_rows(arrivals: Path, rows: int, deadline: float, cpu: CpuWindow) -> None:
    """Until `rows` rows are out or `deadline` (epoch seconds), reading `cpu` as it passes."""
    while time.time() < deadline and count_rows(arrivals) < rows:
        cpu.check()
        time.sleep(0.2)
    cpu.check()


def batch_starts(query) -> list[float]:
    """When each batch after the first started (epoch seconds): the batch boundaries."""
    progress = [json.loads(p.json()) for p in query.recentProgress()]
    return sorted(datetime.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00"))
                  .timestamp() for p in progress if p["batchId"] > 0)


def count_rows(folder: Path) -> int:
    return sum(1 for f in folder.glob("*.csv") for _ in f.open())


def read_arrivals(folder: Path) -> list[tuple[int, float, float]]:
    """(key, due, arrival), both in epoch seconds, per output row."""
    return [(int(fields[0]), int(fields[1]) / 1000, int(fields[-1]) / 1000)
            for f in folder.glob("*.csv")
            for fields in (line.split(",") for line in f.read_text().splitlines())]


def summary(mode: str, rate: int, keys: int, arrived: list[tuple[int, float, float]],
            boundaries: list[float], copies: int = 1, clock_start: float | None = None) -> dict:
    """The latency distribution in ms, the pause at each real-time batch boundary, and whether
    every key of 0..`keys`-1 came out `copies` times: of the rows due once the query's first
    tasks read (`clock_start`, epoch seconds), or without it once the first row came out."""
    first_out = min((at for _, _, at in arrived), default=0.0)
    start = first_out if clock_start is None else clock_start
    timed = [(due, (at - due) * 1000) for _, due, at in arrived if due >= start]
    latencies = sorted(ms for _, ms in timed)
    after_first = sorted(ms for due, ms in timed
                         if boundaries and due > boundaries[0] + PAUSE_WINDOW[1])
    last_due = max((due for _, due, _ in arrived), default=0.0)
    pauses = [max((ms for due, ms in timed
                   if start + PAUSE_WINDOW[0] <= due <= start + PAUSE_WINDOW[1]), default=None)
              for start in boundaries if start + PAUSE_WINDOW[1] < last_due]
    counts: dict[int, int] = {}
    for key, _, _ in arrived:
        counts[key] = counts.get(key, 0) + 1
    copies_out = copies_latency(timed_rows(arrived, start)) if copies > 1 else {}
    return {"mode": mode, "rate_per_input": rate, "keys_sent": keys,
            "rows_out": len(arrived), "untimed": len(arrived) - len(timed),
            "duplicated": sum(max(0, n - copies) for n in counts.values()),
            "not_out": sum(1 for key in range(keys) if counts.get(key, 0) < copies),
            "p50_ms": pct(latencies, 0.5), "p99_ms": pct(latencies, 0.99),
            "max_ms": pct(latencies, 1.0),
            "mean_ms": round(statistics.fmean(latencies), 1) if latencies else None,
            "p99_after_first_boundary_ms": pct(after_first, 0.99),
            "boundary_pauses_ms": [round(p) for p in pauses if p is not None], **copies_out}


def timed_rows(arrived: list[tuple[int, float, float]], start: float) -> dict[int, list[float]]:
    """Per key, the latencies (ms) of its copies, of the keys due from `start` on."""
    per_key: dict[int, list[float]] = {}
    for key, due, at in arrived:
        if due >= start:
            per_key.setdefault(key, []).append((at - due) * 1000)
    return per_key


def copies_latency(per_key: dict[int, list[float]]) -> dict:
    """Of a key's copies, one from each input, the first out and the last out: a join of the
    inputs can put a key out no sooner than its last copy arrives, while a deduplication of
    their union puts it out with the first."""
    firsts = sorted(min(ms) for ms in per_key.values())
    lasts = sorted(max(ms) for ms in per_key.values())
    return {"first_copy_p50_ms": pct(firsts, 0.5), "first_copy_p99_ms": pct(firsts, 0.99),
            "last_copy_p50_ms": pct(lasts, 0.5), "last_copy_p99_ms": pct(lasts, 0.99)}


def pct(latencies: list[float], p: float) -> float | None:
    return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))], 1) \
        if latencies else None


def run_latency(spark: SparkSession, rates: list[int], seconds: float, batch_seconds: int,
                modes: list[str], out: Path, work: Path, time_bound: int | None = None) -> None:
    if unknown := set(modes) - set(MODES) - set(FLINK_MODES):
        raise SystemExit(f"--latency-modes: unknown mode(s) {', '.join(sorted(unknown))}; "
                         f"choose from {', '.join([*MODES, *FLINK_MODES])}")
    out.mkdir(parents=True, exist_ok=True)
    multi_join(spark).enabled = True
    results, warmed = [], False
    warm_modes = [m for m in modes if m.startswith("real_time") and m != "real_time_first_query"]
    for rate in rates:
        for mode in modes:
            if mode in warm_modes and not warmed:
                warm_up(spark, warm_modes, rate, work, time_bound)
                warmed = True
            if mode == "real_time_first_query" and results:
                print(f"latency {mode} at {rate} rows/s: skipped, as the driver ran a query "
                      "before; run that rate alone for its first query", flush=True)
                continue
            print(f"latency {mode} at {rate} rows/s per input ...", flush=True)
            results.append(
                run_latency_peer(mode, FLINK_MODES[mode], rate, seconds, work)
                if mode in FLINK_MODES else
                run_mode(spark, mode, rate, seconds, batch_seconds, work, time_bound))
            print(f"    {results[-1]}", flush=True)
            # After each run, so that a run that fails later loses none before it.
            (out / "latency.json").write_text(json.dumps(results, indent=2))
            (out / "latency.md").write_text(
                markdown(results, spark.sparkContext, batch_seconds, time_bound))
    print(f"wrote latency.json and latency.md to {out}")


def warm_up(spark: SparkSession, modes: list[str], rate: int, work: Path,
            time_bound: int | None = None) -> None:
    """Runs each of `modes`' queries in real-time mode for WARM_UP_SECONDS, in batches of
    WARM_UP_BATCH_SECONDS, untimed: so that the multi-join and the deduplication are measured
    on the same warm driver, whose JIT has compiled what their real-time batches run, boundaries
    included. Without it, whichever ran after the micro-batch modes ran on a planner the JIT had
    compiled, and the other did not; a warm-up in micro-batches left cold what only real-time
    batches run (the multi-join's row-at-a-time path); and one of a few boundaries left the
    multi-join's planning slower than the deduplication's, which many more boundaries closed."""
    min_batch = spark.conf.get(MIN_BATCH_KEY, None)
    spark.conf.set(MIN_BATCH_KEY, str(WARM_UP_BATCH_SECONDS * 1000))
    try:
        for mode in modes:
            print(f"warm-up: {mode} in real-time batches of {WARM_UP_BATCH_SECONDS} s for "
                  f"{WARM_UP_SECONDS} s, untimed", flush=True)
            run_untimed(spark, mode, rate, work / f"warm-up-{mode}-{rate}", time_bound)
    finally:
        if min_batch is None:
            spark.conf.unset(MIN_BATCH_KEY)
        else:
            spark.conf.set(MIN_BATCH_KEY, min_batch)


def run_untimed(spark: SparkSession, mode: str, rate: int, scratch: Path,
                time_bound: int | None) -> None:
    """`mode`'s query at `rate` for WARM_UP_SECONDS in real-time batches of
    WARM_UP_BATCH_SECONDS, its output and checkpoint in `scratch`."""
    frames = paced_inputs(spark, rate, int(rate * WARM_UP_SECONDS), int(time.time() * 1000),
                          time_bound)
    query = start_in(scratch, query_frame(mode, frames, time_bound),
                     real_time_trigger(spark, WARM_UP_BATCH_SECONDS))
    try:
        time.sleep(WARM_UP_SECONDS)
    finally:
        query.stop()
