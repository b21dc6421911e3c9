"""`--latency`: how long a joined row takes to come out, in Spark 4.3's real-time mode and in
micro-batches, for a 4-way inner multi-join on one key.

A producer thread feeds the four inputs (Spark's `LowLatencyMemoryStream`, one partition each)
at a steady rate: every tick it adds to each input the sequence numbers due by then, the same
ones to all four, and notes when the fourth was added. Row n of every input has key n, so each
key's fourth row completes exactly one output row. A `foreach` sink in the JVM
(ArrivalWriter.java, compiled by the run) notes when each output row reaches it: console and
memory sinks wait for the commit, and Spark hands rows to a Python writer in batches. A row's
latency is its arrival less the time its last input row was sent. One key goes through first,
so that the query's start is not timed. Every run also counts the keys that came out twice, and
those not out within 30 s of the last send.

A real-time batch's end holds the rows sent meanwhile until the next batch reads them, so the
tail is those pauses. Each is reported (the slowest row sent near it), and so is p99 without the
first: the first end after a query's start also commits the state's first version, which later
ends do not. The driver's first real-time query is a mode of its own (see MODES).

Spark's test source answers each record's fetch by walking the rows added to its input before
it, so it falls behind once an input holds some tens of thousands of rows: runs stay short.
"""

from __future__ import annotations

import datetime
import functools
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pyspark
from pyspark.sql import DataFrame, SparkSession

from spark_multijoin import multi_join

INPUTS = 4
TICK_SECONDS = 0.005
# Rows sent this long around a real-time batch's start count towards that boundary's pause.
PAUSE_WINDOW = (-2.0, 1.0)
# The first real-time query of a driver pays what its JVM does once (loading classes, the
# first commit's files), most of it at its first batch boundary: real_time_first_query is that
# query, and the modes after it run warm, as a long-running driver does. The last is Spark's own
# stateful operator in real-time mode on the same sources and rows (a deduplication of the four
# inputs' union), for what a batch boundary costs without the join.
MODES = ("real_time_first_query", "real_time", "micro_batch_0s", "micro_batch_1s",
         "real_time_deduplication")
# Flink's MultiJoin on the same shape of events (flink_latency.py, in a process of its own), with
# Flink's default network buffer timeout and with none; they run with --flink.
FLINK_MODES = {"flink_multi_join": None, "flink_multi_join_no_buffer_timeout": 0}
WARM_UP_KEY = -1


class Inputs:
    """The four inputs, fed from the driver through Spark's JVM."""

    def __init__(self, spark: SparkSession) -> None:
        jvm = spark._jvm  # type: ignore[attr-defined]
        stream_class = jvm.org.apache.spark.sql.execution.streaming.sources.LowLatencyMemoryStream
        encoder = jvm.org.apache.spark.sql.Encoders.scalaInt()
        context = spark._jsparkSession.sqlContext()  # type: ignore[attr-defined]
        self._jvm = jvm
        self._streams = [stream_class.singlePartition(encoder, context) for _ in range(INPUTS)]
        self.frames = [DataFrame(s.toDF(), spark).withColumnRenamed("value", f"k{i}")
                       for i, s in enumerate(self._streams)]

    def add(self, start: int, end: int) -> float:
        """Adds keys start..end-1 to every input; when the last input got them."""
        for stream in self._streams:
            stream.addData(self._jvm.scala.runtime.RichInt(start).until(end))
        return time.time()


def joined(frames: list[DataFrame]) -> DataFrame:
    result = frames[0]
    for i, frame in enumerate(frames[1:], start=1):
        result = result.join(frame, result["k0"] == frame[f"k{i}"])
    return result.select("k0")


def compiled_writer(classes: Path) -> Path:
    """Compiles ArrivalWriter.java, the JVM sink, into `classes` (for the driver's class path)."""
    jars = Path(pyspark.__file__).parent / "jars"
    classes.mkdir(parents=True, exist_ok=True)
    subprocess.run(["javac", "-cp", f"{jars}/*", "-d", str(classes),
                    str(Path(__file__).parent / "ArrivalWriter.java")], check=True)
    return classes


def produce(inputs: Inputs, rate: int, seconds: float, sent: list[tuple[int, int, float]]) -> None:
    """Feeds `rate` keys a second to every input for `seconds`, noting (start, end, time)."""
    started, next_key = time.time(), 0
    while (now := time.time()) < started + seconds:
        due = int((now - started) * rate)
        if due > next_key:
            sent.append((next_key, due, inputs.add(next_key, due)))
            next_key = due
        time.sleep(TICK_SECONDS)


def run_flink_mode(mode: str, rate: int, seconds: float, work: Path) -> dict:
    """One run of Flink's MultiJoin (`mode`, one of FLINK_MODES), whose summary is latency.py's."""
    out = work / f"{mode}-{rate}.json"
    timeout = FLINK_MODES[mode]
    subprocess.run([sys.executable, "-m", "scripts.bench.flink_latency", "--rate", str(rate),
                    "--seconds", str(seconds), "--out", str(out), "--work", str(work)]
                   + ([] if timeout is None else ["--buffer-timeout-ms", str(timeout)]),
                   check=True)
    return {**json.loads(out.read_text()), "mode": mode}


def run_mode(spark: SparkSession, mode: str, rate: int, seconds: float, batch_seconds: int,
             work: Path) -> dict:
    """One run of `mode` at `rate` keys a second per input: the latencies and the check."""
    arrivals, checkpoint = work / f"{mode}-{rate}" / "arrivals", work / f"{mode}-{rate}" / "cp"
    shutil.rmtree(arrivals.parent, ignore_errors=True)
    arrivals.mkdir(parents=True)
    inputs = Inputs(spark)
    jvm = spark._jvm  # type: ignore[attr-defined]
    triggers = jvm.org.apache.spark.sql.streaming.Trigger
    real_time = mode.startswith("real_time")
    trigger = (triggers.RealTime(f"{batch_seconds} seconds") if real_time
               else triggers.ProcessingTime(mode.rsplit("_", 1)[1].replace("s", " seconds")))
    frame = (functools.reduce(DataFrame.union, inputs.frames).dropDuplicates(["k0"])
             if mode == "real_time_deduplication" else joined(inputs.frames))
    query = (frame._jdf.writeStream().outputMode("update")
             .foreach(jvm.multijoinbench.ArrivalWriter(str(arrivals)))
             .option("checkpointLocation", str(checkpoint)).trigger(trigger).start())
    sent: list[tuple[int, int, float]] = []
    try:
        warm_up(inputs, arrivals)
        produce(inputs, rate, seconds, sent)
        keys = sent[-1][1] if sent else 0
        deadline = time.time() + 30
        while time.time() < deadline and count_rows(arrivals) < keys + 1:
            time.sleep(0.2)
        starts = batch_starts(query) if real_time else []
    finally:
        query.stop()
    return summary(mode, rate, sent, read_arrivals(arrivals), starts)


def batch_starts(query) -> list[float]:
    """When each batch after the first started (epoch seconds): the batch boundaries."""
    progress = [json.loads(p.json()) for p in query.recentProgress()]
    return sorted(datetime.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00"))
                  .timestamp() for p in progress if p["batchId"] > 0)


def warm_up(inputs: Inputs, arrivals: Path) -> None:
    """One key through the running query first, so that the query's start is not timed."""
    inputs.add(WARM_UP_KEY, WARM_UP_KEY + 1)
    deadline = time.time() + 120
    while count_rows(arrivals) < 1:
        if time.time() > deadline:
            raise TimeoutError("the warm-up row did not come out within 120 s")
        time.sleep(0.05)


def count_rows(folder: Path) -> int:
    return sum(1 for f in folder.glob("*.csv") for _ in f.open())


def read_arrivals(folder: Path) -> list[tuple[int, float]]:
    """(key, arrival in seconds) per output row (its first column and the time)."""
    return [(int(fields[0]), int(fields[-1]) / 1000) for f in folder.glob("*.csv")
            for fields in (line.split(",") for line in f.read_text().splitlines())]


def summary(mode: str, rate: int, sent: list[tuple[int, int, float]],
            arrived: list[tuple[int, float]], boundaries: list[float]) -> dict:
    """The latency distribution in ms, the pause at each real-time batch boundary, and whether
    every key sent came out exactly once."""
    sent_at = {key: at for start, end, at in sent for key in range(start, end)}
    arrived = [(key, at) for key, at in arrived if key != WARM_UP_KEY]
    keys = [key for key, _ in arrived]
    rows = [(sent_at[key], (at - sent_at[key]) * 1000) for key, at in arrived if key in sent_at]
    latencies = sorted(ms for _, ms in rows)
    after_first = sorted(ms for at, ms in rows
                         if boundaries and at > boundaries[0] + PAUSE_WINDOW[1])
    pauses = [max((ms for at, ms in rows
                   if start + PAUSE_WINDOW[0] <= at <= start + PAUSE_WINDOW[1]), default=None)
              for start in boundaries if start + PAUSE_WINDOW[1] < sent[-1][2]] if sent else []
    return {"mode": mode, "rate_per_input": rate, "keys_sent": len(sent_at),
            "rows_out": len(arrived), "duplicated": len(keys) - len(set(keys)),
            "not_out": len(set(sent_at) - set(keys)),
            "p50_ms": pct(latencies, 0.5), "p99_ms": pct(latencies, 0.99),
            "max_ms": pct(latencies, 1.0),
            "mean_ms": round(statistics.fmean(latencies), 1) if latencies else None,
            "p99_after_first_boundary_ms": pct(after_first, 0.99),
            "boundary_pauses_ms": [round(p) for p in pauses if p is not None]}


def pct(latencies: list[float], p: float) -> float | None:
    return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))], 1) \
        if latencies else None


def run_latency(spark: SparkSession, rates: list[int], seconds: float, batch_seconds: int,
                modes: list[str], out: Path, work: Path) -> None:
    if unknown := set(modes) - set(MODES) - set(FLINK_MODES):
        raise SystemExit(f"--latency-modes: unknown mode(s) {', '.join(sorted(unknown))}; "
                         f"choose from {', '.join([*MODES, *FLINK_MODES])}")
    out.mkdir(parents=True, exist_ok=True)
    multi_join(spark).enabled = True
    results = []
    for rate in rates:
        for mode in modes:
            print(f"latency {mode} at {rate} rows/s per input ...", flush=True)
            results.append(run_flink_mode(mode, rate, seconds, work) if mode in FLINK_MODES
                           else run_mode(spark, mode, rate, seconds, batch_seconds, work))
            print(f"    {results[-1]}", flush=True)
    (out / "latency.json").write_text(json.dumps(results, indent=2))
    (out / "latency.md").write_text(markdown(results, spark, batch_seconds))
    print(f"wrote latency.json and latency.md to {out}")


def markdown(results: list[dict], spark: SparkSession, batch_seconds: int) -> str:
    slots = spark.sparkContext.defaultParallelism
    lines = [f"4-way inner multi-join, one key per row, {slots} task slots "
             f"(`{spark.sparkContext.master}`), real-time batches of {batch_seconds} s.", "",
             "| mode | rows/s per input | keys sent | rows out | duplicated | not out at the end | "
             "p50 ms | p99 ms | max ms | p99 after the first boundary ms | "
             "pause at each boundary ms |", "| --- |" + " ---: |" * 10]
    lines += [f"| {r['mode']} | {r['rate_per_input']:,} | {r['keys_sent']:,} | "
              f"{r['rows_out']:,} | {r['duplicated']} | {r['not_out']:,} | {r['p50_ms']} | "
              f"{r['p99_ms']} | {r['max_ms']} | {r['p99_after_first_boundary_ms'] or ''} | "
              f"{', '.join(map(str, r['boundary_pauses_ms']))} |" for r in results]
    return "\n".join(lines) + "\n"
