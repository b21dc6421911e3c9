"""The markdown of a latency run (run.py): latency.md, whose tables docs/benchmarks.md shows."""

from __future__ import annotations

import os

from pyspark import SparkContext

from multijoin_bench.latency import boundaries


def markdown(results: list[dict], context: SparkContext, batch_seconds: int,
             time_bound: int | None = None) -> str:
    """latency.md: the runs' latencies, then where their boundaries' pauses went and what the
    union alone gives a key's copies, for the runs that measured them."""
    slots = context.defaultParallelism
    bounded = ("" if time_bound is None else f", inputs joined within {time_bound} s of the "
               "first's event time and deduplicated on key and event time, watermarks that far "
               "behind")
    lines = [f"4-way inner multi-join, one key per row, {slots} task slots "
             f"(`{context.master}`), real-time batches of {batch_seconds} s{bounded}.",
             "",
             "| mode | rows/s per input | keys sent | rows out | due before the first read (not "
             "timed) | duplicated | not out at the end | p50 ms | p99 ms | max ms | p99 after the "
             "first boundary ms | pause at each boundary ms |", "| --- |" + " ---: |" * 11]
    lines += [f"| {r['mode']} | {r['rate_per_input']:,} | {r['keys_sent']:,} | "
              f"{r['rows_out']:,} | {r.get('untimed', '')} | {r['duplicated']} | "
              f"{r['not_out']:,} | {r['p50_ms']} | "
              f"{r['p99_ms']} | {r['max_ms']} | {r['p99_after_first_boundary_ms'] or ''} | "
              f"{', '.join(map(str, r['boundary_pauses_ms']))} |" for r in results]
    return "\n".join(lines + boundary_table(results) + copies_table(results)
                     + cpu_table(results)) + "\n"


def boundary_table(results: list[dict]) -> list[str]:
    """Where each real-time mode's boundary pauses went (boundaries.py)."""
    runs = [r for r in results if r.get("boundary_parts_ms")]
    if not runs:
        return []
    lines = ["", "Where a boundary's pause goes "
             "(`benchmarks/multijoin_bench/latency/boundaries.py`): the median over the run's "
             "boundaries, ms, and the first boundary's in brackets.", "",
             "| mode | rows/s per input | boundaries | " + " | ".join(boundaries.PARTS) + " |",
             "| --- |" + " ---: |" * (2 + len(boundaries.PARTS))]
    for r in runs:
        parts = r["boundary_parts_ms"]
        lines.append(f"| {r['mode']} | {r['rate_per_input']:,} | {parts['boundaries']} | "
                     + " | ".join(f"{parts['median'][part]} ({parts['first'][part]})"
                                  for part in boundaries.PARTS) + " |")
    return lines


def copies_table(results: list[dict]) -> list[str]:
    """What the union alone gives a key's four copies (real_time_source_only and _shuffle_only)."""
    runs = [r for r in results if r.get("last_copy_p50_ms") is not None]
    if not runs:
        return []
    lines = ["", "The four inputs' union, no state: of a key's four copies, the first out (what a "
             "deduplication of the union waits for) and the last out (what a join of the inputs "
             "waits for at the least), ms.", "",
             "| mode | rows/s per input | first copy p50 | first copy p99 | last copy p50 | "
             "last copy p99 |", "| --- |" + " ---: |" * 5]
    lines += [f"| {r['mode']} | {r['rate_per_input']:,} | {r['first_copy_p50_ms']} | "
              f"{r['first_copy_p99_ms']} | {r['last_copy_p50_ms']} | {r['last_copy_p99_ms']} |"
              for r in runs]
    return lines


def cpu_table(results: list[dict]) -> list[str]:
    """How much of the machine each Spark mode's driver JVM (every task, in local mode) used
    while the rows were due."""
    runs = [r for r in results if r.get("jvm_cpu_cores") is not None]
    if not runs:
        return []
    lines = ["", f"The driver JVM's CPU while the rows were due (sources, shuffle, state and sink "
             f"alike: local mode runs every task in it), in cores of the machine's "
             f"{os.cpu_count()}.", "", "| mode | rows/s per input | JVM CPU cores |",
             "| --- |" + " ---: |" * 2]
    lines += [f"| {r['mode']} | {r['rate_per_input']:,} | {r['jvm_cpu_cores']} |" for r in runs]
    return lines
