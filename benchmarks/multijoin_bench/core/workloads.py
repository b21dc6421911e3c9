"""The benchmark's workloads: each one's inputs, as rows per input and micro-batch, and its query.

Every workload's rows are fixed by a seed, so that every run, and Flink's peer, reads the same
files. `--tiny` shrinks every workload by a factor (`workloads(names, shrink)`).
"""

from __future__ import annotations

import random
from typing import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from multijoin_bench.core.workload import Workload
from multijoin_bench.scale.workloads import SCALE_NAMES, scale_workload
from spark_multijoin.testing import join_on_k, timestamp

NAMES = ("fanout", "primary_key", "time_bounded", "outer_star", "scale")


def keyed(name: str, description: str, rows_per_key: list[int], keys: int,
          n_batches: int = 4) -> Workload:
    """Inputs with `rows_per_key[i]` rows per key, spread evenly over the batches."""
    batches = []
    for i, fan_out in enumerate(rows_per_key):
        rows = [{"k": key, f"v{i}": copy} for key in range(keys) for copy in range(fan_out)]
        random.Random(i).shuffle(rows)
        batches.append([rows[b::n_batches] for b in range(n_batches)])
    schemas = [f"k int, v{i} int" for i in range(len(rows_per_key))]
    return Workload(name, description, schemas, batches, join_on_k, flink_peer=True)


def time_bounded(keys: int, n_batches: int) -> Workload:
    """Four inputs, each bounded to within a minute of input 0, one minute of data per batch."""
    rng = random.Random(7)
    n_inputs = 4
    batches = [[[] for _ in range(n_batches)] for _ in range(n_inputs)]
    for b in range(n_batches):
        for key in range(keys):
            base = b * 60 + rng.uniform(0, 60)
            for i in range(n_inputs):
                at = timestamp(base + (rng.uniform(-20, 20) if i else 0))
                batches[i][b].append({f"k{i}": key, f"v{i}": b, f"t{i}": at})

    schemas = [f"k{i} int, v{i} int, t{i} timestamp" for i in range(n_inputs)]
    return Workload("time_bounded", f"4 inputs x {keys} keys x {n_batches} batches, "
                    "bounded to +-30 s of input 0, 30 s watermark delay", schemas, batches,
                    bounded_star("inner"), check_flat_state=True,
                    flink_peer=True, flink_joins=flink_bounded_star("INNER", n_inputs))


def bounded_star(how: str) -> Callable[[list[DataFrame]], DataFrame]:
    """Input 0 joined (`how`) with each other input on the key, each within 30 s of input 0,
    30 s watermark delay; each other input's time dropped after its join, as Spark's chain runs
    only with one event time left."""

    def query(frames: list[DataFrame]) -> DataFrame:
        frames = [frame.withWatermark(f"t{i}", "30 seconds") for i, frame in enumerate(frames)]
        joined = frames[0]
        for i in range(1, len(frames)):
            joined = joined.join(frames[i], F.expr(
                f"k0 = k{i} AND t{i} BETWEEN t0 - INTERVAL 30 SECONDS "
                "AND t0 + INTERVAL 30 SECONDS"), how).drop(f"t{i}")
        return joined

    return query


def flink_bounded_star(kind: str, n_inputs: int) -> list[list[str]]:
    """bounded_star's joins for Flink: its interval condition as a plain predicate, as Flink's
    MultiJoin runs no interval joins. Flink then keeps every row where the multi-join evicts by
    the watermark; on data whose rows come in event-time order, none late, the answer is the
    same."""
    return [[kind, f"t0.`k0` = t{i}.`k{i}` AND t{i}.`t{i}` BETWEEN "
             f"t0.`t0` - INTERVAL '30' SECOND AND t0.`t0` + INTERVAL '30' SECOND"]
            for i in range(1, n_inputs)]


def outer_star(keys: int, n_batches: int, fan_out: int, n_inputs: int = 10) -> Workload:
    """Flink's benchmark shape, time-bounded as Spark needs: input 0 LEFT OUTER JOIN each of the
    other inputs on one tenant-like key, each bounded to within 30 s of input 0.

    Every key has, per batch, one row of input 0 and `fan_out` rows of each other input within
    20 s of it, except that an input now and then has none (its columns come out null-padded).
    A batch spans two minutes, so no row joins a row of another batch. A last batch, an hour
    later, moves the watermark past every earlier row, so that every null-padded row comes out
    and the streaming answer is the batch query's.
    """
    rng = random.Random(10)
    batches: list[list[list[dict]]] = [[] for _ in range(n_inputs)]
    for b in range(n_batches):
        for rows in batches:
            rows.append([])
        for key in range(keys):
            base = b * 120 + rng.uniform(0, 60)
            batches[0][b].append({"k0": key, "v0": b, "t0": timestamp(base)})
            for i in range(1, n_inputs):
                if (key * 7 + b * 3 + i) % 11 == 0:
                    continue  # this input has no row for the key in this batch: padded
                batches[i][b] += [{f"k{i}": key, f"v{i}": copy,
                                   f"t{i}": timestamp(base + rng.uniform(-20, 20))}
                                  for copy in range(fan_out)]
    flush_at = n_batches * 120 + 3600
    for i, rows in enumerate(batches):
        rows.append([{f"k{i}": keys, f"v{i}": 0, f"t{i}": timestamp(flush_at)}])

    schemas = [f"k{i} int, v{i} int, t{i} timestamp" for i in range(n_inputs)]
    return Workload("outer_star", f"{n_inputs}-way LEFT OUTER star, 1 row and {fan_out} per key "
                    f"and batch, {keys} keys x {n_batches} batches (and a flush batch), bounded "
                    "to +-30 s of input 0, 30 s watermark delay", schemas, batches,
                    bounded_star("left_outer"),
                    flink_peer=True, flink_joins=flink_bounded_star("LEFT", n_inputs))


def workloads(names: list[str], shrink: int) -> list[Workload]:
    """The named workloads, their keys divided by `shrink` (and, where it is not 1, fewer
    batches and a smaller fan-out, for a smoke run); `scale` is three workloads. The large
    workloads of scale/workloads.py run only by name."""
    chosen = []
    files = 4 if shrink == 1 else 2
    for name in names:
        if name == "fanout":
            chosen.append(keyed("fanout", f"5 inputs, 1,10,10,10,2 rows per key, {500 // shrink} "
                                "keys", [1, 10, 10, 10, 2], 500 // shrink, files))
        elif name == "primary_key":
            chosen.append(keyed("primary_key", f"5 inputs, one row per key, {20000 // shrink} keys",
                                [1, 1, 1, 1, 1], 20000 // shrink, files))
        elif name == "time_bounded":
            chosen.append(time_bounded(keys=max(1, 300 // shrink),
                                       n_batches=20 if shrink == 1 else 4))
        elif name == "outer_star":
            chosen.append(outer_star(keys=4 if shrink == 1 else 1,
                                     n_batches=20 if shrink == 1 else 4,
                                     fan_out=3 if shrink == 1 else 2))
        elif name == "scale":
            for factor in (1, 4, 16):
                keys = max(1, 125 * factor // shrink)
                chosen.append(keyed(f"scale_x{factor}", f"fan-out 1,10,10,10,2 over {keys} keys",
                                    [1, 10, 10, 10, 2], keys, files))
        else:
            chosen.append(scale_workload(name, shrink) or unknown(name))
    return chosen


def unknown(name: str) -> Workload:
    raise SystemExit(f"unknown workload {name!r}: choose from {', '.join(NAMES + SCALE_NAMES)}")
