"""The scale workloads, chosen by name and never in the default run: primary-key and fan-out
joins at a million keys and more, and a hot key.

Their rows are made as each file is written (`Generated`), never all held in Python at once: a
key's place in a micro-batch comes from a permutation of the keys, one per input, so that every
input holds every key once per copy, in an order of its own, and a key's rows of different
inputs come in different micro-batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

from multijoin_bench.core.workload import Workload
from spark_multijoin.testing import join_on_k

# Coprime with every key count used here (a prime above them), so that `key * STRIDE % keys`
# visits every key once.
STRIDE = 2_000_003
BATCHES = 10
# Output bounded by the shape: 4 output rows per key, 7 input rows; Spark's chain stores the
# partial joins (17 rows per key) where the multi-join stores the 7.
FANOUT_SHAPE = [1, 2, 2, 1, 1]
HOT_ROWS = 1_000_000
HOT_OTHERS = [3, 2]


@dataclass(frozen=True)
class Generated:
    """One input's rows in one micro-batch, made as they are read."""

    count: int
    make: Callable[[], Iterator[dict]]

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[dict]:
        return self.make()


def permuted(i: int, fan_out: int, keys: int, batch: int, n_batches: int) -> Generated:
    """Input `i`'s rows of micro-batch `batch`: `fan_out` rows for each key whose place in
    input i's order falls in the batch."""
    places = range(batch, keys, n_batches)

    def make() -> Iterator[dict]:
        for place in places:
            key = (place * STRIDE + i * (keys // 7 + 1)) % keys
            for copy in range(fan_out):
                yield {"k": key, f"v{i}": copy}

    return Generated(len(places) * fan_out, make)


def keyed_at_scale(name: str, description: str, rows_per_key: list[int], keys: int,
                   n_batches: int = BATCHES) -> Workload:
    batches = [[permuted(i, fan_out, keys, b, n_batches) for b in range(n_batches)]
               for i, fan_out in enumerate(rows_per_key)]
    schemas = [f"k int, v{i} int" for i in range(len(rows_per_key))]
    return Workload(name, description, schemas, batches, join_on_k, flink_peer=True)


def hot_key(rows: int, n_batches: int = BATCHES) -> Workload:
    """One key with `rows` rows in input 0, spread over the micro-batches, and a few rows of
    the same key in each other input, in the first: every batch joins its share of the hot rows
    with all of them."""
    def share(b: int) -> Generated:
        count = len(range(b, rows, n_batches))
        return Generated(count, lambda: ({"k": 0, "v0": n} for n in range(count)))

    def few(i: int, count: int, b: int) -> Generated:
        count = count if b == 0 else 0
        return Generated(count, lambda: ({"k": 0, f"v{i}": n} for n in range(count)))

    batches = [[share(b) for b in range(n_batches)]]
    batches += [[few(i, count, b) for b in range(n_batches)]
                for i, count in enumerate(HOT_OTHERS, start=1)]
    schemas = [f"k int, v{i} int" for i in range(len(batches))]
    return Workload("hot_key", f"3 inputs, one key: {rows:,} rows in input 0, "
                    f"{', '.join(map(str, HOT_OTHERS))} in the others", schemas, batches,
                    join_on_k, flink_peer=True)


def scale_workload(name: str, shrink: int) -> Workload | None:
    """The scale workload `name` (scale_pk_1m, scale_pk_2m, scale_fanout_1m, scale_fanout_2m,
    hot_key), its keys divided by `shrink`; None for another name."""
    n_batches = BATCHES if shrink == 1 else 3
    if name == "hot_key":
        return hot_key(HOT_ROWS // shrink, n_batches)
    millions = {"scale_pk_1m": 1, "scale_pk_2m": 2, "scale_fanout_1m": 1, "scale_fanout_2m": 2}
    if name not in millions:
        return None
    keys = millions[name] * 1_000_000 // shrink
    if name.startswith("scale_pk"):
        return keyed_at_scale(name, f"5 inputs, one row per key, {keys:,} keys, {n_batches} "
                              "batches", [1] * 5, keys, n_batches)
    return keyed_at_scale(name, f"5 inputs, {','.join(map(str, FANOUT_SHAPE))} rows per key, "
                          f"{keys:,} keys, {n_batches} batches", FANOUT_SHAPE, keys, n_batches)


SCALE_NAMES = ("scale_pk_1m", "scale_pk_2m", "scale_fanout_1m", "scale_fanout_2m", "hot_key")
