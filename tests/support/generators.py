"""Queries and the data to run them on, random or fixed: the one place tests generate them.

- Random chains of inner joins on one key (`random_shape`, `random_inputs`, `build_chain`):
  inputs t0..tn-1 (columns k<i> key, g<i> second key column, v<i> value), each input's key
  equated to an earlier input's key (a random tree, so keys are often only transitively equal),
  optionally with the g columns as a second key column, residual conditions between inputs, a
  computed column between joins, a filter over the result and a bushy shape.
- Time-bounded chains (`timed_inputs`, `bounded_chain`): inputs k<i>, v<i>, t<i> with event
  times growing batch by batch, each input bounded in time by a parent.
- Inputs for plain chains on one column `k` (`keyed_inputs`; the chain itself is
  `spark_multijoin.testing.join_on_k`, which the benchmark shares).
- Inner chains in a random order of streaming inputs on two keys and a static input
  (`mixed_key_chain`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_multijoin.testing import Inputs, timestamp


@dataclass
class ChainShape:
    n_inputs: int
    n_batches: int
    parents: list[int]           # parents[j] for j >= 1: input whose key input j's key equals
    composite_key: bool
    residuals: dict[int, tuple[int, int]]  # join of input j -> (other input, kind)
    computed_after: int | None   # add s = v0 + v1 after joining this many inputs
    final_filter: bool
    bushy_split: int | None      # join [0, split) and [split, n) separately, then each other
    shuffle_partitions: int

    def describe(self) -> str:
        return (f"{self.n_inputs} inputs, {self.n_batches} batches, parents={self.parents}, "
                f"composite={self.composite_key}, residuals={self.residuals}, "
                f"computed_after={self.computed_after}, final_filter={self.final_filter}, "
                f"bushy_split={self.bushy_split}, partitions={self.shuffle_partitions}")


def random_shape(rng: random.Random, n_inputs: int) -> ChainShape:
    bushy_split = None
    if n_inputs >= 4:
        bushy_split = rng.choice([None, None, rng.randrange(2, n_inputs - 1)])
    parents = [0]
    for j in range(1, n_inputs):
        low = bushy_split if bushy_split is not None and j > bushy_split else 0
        parents.append(rng.randrange(low, j) if j != bushy_split else rng.randrange(0, j))
    residuals = {j: (rng.randrange(0, j), rng.randrange(2))
                 for j in range(1, n_inputs) if rng.random() < 0.3
                 and not (bushy_split is not None and j >= bushy_split)}
    computed_after = rng.choice([None, 2]) if n_inputs >= 3 and bushy_split is None else None
    return ChainShape(
        n_inputs=n_inputs,
        n_batches=rng.randint(2, 4),
        parents=parents,
        composite_key=rng.random() < 0.3,
        residuals=residuals,
        computed_after=computed_after,
        final_filter=rng.random() < 0.3,
        bushy_split=bushy_split,
        shuffle_partitions=rng.choice([1, 2, 3]),
    )


def random_inputs(rng: random.Random, shape: ChainShape, root: Path, n_keys: int = 6) -> Inputs:
    """Rows with duplicate, missing and null keys; fan-out kept so the output stays small."""
    schemas = [f"k{i} int, g{i} int, v{i} int" for i in range(shape.n_inputs)]
    inputs = Inputs(root, schemas)
    budget = 48  # bound on the product of rows per key over all inputs
    for i in range(shape.n_inputs):
        fan_out = rng.choice([1, 2, 3]) if budget >= 3 else 1
        budget //= fan_out
        present = [key for key in range(n_keys) if rng.random() < 0.85]
        rows = []
        for key in present:
            for _ in range(rng.randint(1, fan_out)):
                rows.append({f"k{i}": key, f"g{i}": rng.choice([0, 1, None]) if rng.random() < 0.1
                             else rng.choice([0, 1]), f"v{i}": rng.randint(0, 20)})
        rows += [{f"k{i}": None, f"g{i}": 0, f"v{i}": rng.randint(0, 20)}
                 for _ in range(rng.randint(0, 2))]
        rng.shuffle(rows)
        batches = [[] for _ in range(shape.n_batches)]
        for row in rows:
            batches[rng.randrange(shape.n_batches)].append(row)
        inputs.batches.append(batches)
    return inputs


def build_chain(shape: ChainShape):
    """The query of `shape`, over one DataFrame per input."""

    def condition(j: int, parent: int):
        cond = F.col(f"k{parent}") == F.col(f"k{j}")
        if shape.composite_key:
            cond = cond & (F.col(f"g{parent}") == F.col(f"g{j}"))
        if j in shape.residuals:
            other, kind = shape.residuals[j]
            if kind == 0:
                cond = cond & ((F.col(f"v{j}") + F.col(f"v{other}")) % 3 != 0)
            else:
                cond = cond & (F.col(f"v{j}") <= F.col(f"v{other}") + 8)
        return cond

    def left_deep(frames: list[DataFrame], first: int, last: int) -> DataFrame:
        joined = frames[first]
        for j in range(first + 1, last):
            joined = joined.join(frames[j], condition(j, shape.parents[j]))
            if shape.computed_after is not None and j + 1 == shape.computed_after:
                joined = joined.withColumn("s", F.col("v0") + F.col("v1"))
        return joined

    def build(frames: list[DataFrame]) -> DataFrame:
        n = shape.n_inputs
        if shape.bushy_split is None:
            joined = left_deep(frames, 0, n)
        else:
            split = shape.bushy_split
            joined = left_deep(frames, 0, split).join(
                left_deep(frames, split, n), condition(split, shape.parents[split]))
        if shape.computed_after is not None:
            joined = joined.where(F.col("s") >= F.col(f"v{n - 1}") - 15)
        if shape.final_filter:
            joined = joined.where(F.col("v0") != F.col(f"v{n - 1}"))
        return joined

    return build


def keyed_inputs(root: Path, n_inputs: int, seed: int = 0, n_keys: int = 5,
                 rows_per_batch: int = 6, n_batches: int = 2) -> Inputs:
    """Inputs with columns k, v<i>, random keys, written."""
    rng = random.Random(seed)
    inputs = Inputs(root, [f"k int, v{i} int" for i in range(n_inputs)])
    for i in range(n_inputs):
        inputs.batches.append([[{"k": rng.randrange(n_keys), f"v{i}": rng.randrange(10)}
                                for _ in range(rows_per_batch)] for _ in range(n_batches)])
    inputs.write()
    return inputs


BATCH_SECONDS = 60
DELAY = "70 seconds"
FAR_FUTURE_SECONDS = 10 ** 6


def timed_inputs(root: Path, rng: random.Random, n_inputs: int, n_batches: int,
                 rows_per_batch: int = 8, n_keys: int = 4, null_keys: float = 0.0) -> Inputs:
    """Rows with event times growing batch by batch within the watermark delay (so none is late),
    a `null_keys` share of them with a null key, then two batches of far-future rows that join
    nothing (key 1000 + i in input i): they move the watermark past every earlier row. Written."""
    inputs = Inputs(root, [f"k{i} int, v{i} int, t{i} timestamp" for i in range(n_inputs)])

    def key() -> int | None:
        return None if rng.random() < null_keys else rng.randrange(n_keys)

    for i in range(n_inputs):
        batches = [[{f"k{i}": key(), f"v{i}": rng.randrange(10),
                     f"t{i}": timestamp(b * BATCH_SECONDS + rng.uniform(0, BATCH_SECONDS))}
                    for _ in range(rows_per_batch)] for b in range(n_batches)]
        for far in (FAR_FUTURE_SECONDS, FAR_FUTURE_SECONDS + 1):
            batches.append([{f"k{i}": 1000 + i, f"v{i}": 0, f"t{i}": timestamp(far)}])
        inputs.batches.append(batches)
    inputs.write()
    return inputs


def add_late_rows(inputs: Inputs, late_inputs: list[int], batch: int = 3) -> None:
    """Rows far behind the watermark in `batch` of each of `late_inputs`, written."""
    for i in late_inputs:
        inputs.batches[i][batch] += [{f"k{i}": key, f"v{i}": 5, f"t{i}": timestamp(1)}
                                     for key in range(4)]
    inputs.write()


def random_bounds(rng: random.Random, n_inputs: int, lows: list[int],
                  highs: list[int]) -> list[tuple[int, int]]:
    """Per input after the first, how far (seconds) before and after its parent's event time
    its own may be: one of `lows` and one of `highs`."""
    return [(0, 0)] + [(rng.choice(lows), rng.choice(highs)) for _ in range(1, n_inputs)]


def bounded_chain(parents: list[int], bounds: list[tuple[int, int]], drop_times: bool = False,
                  kinds: list[str] | None = None):
    """Input j joins input parents[j] on k, with t_j within [t_p - lo, t_p + hi] seconds, as
    kinds[j] ("inner", the default, "left_outer" or "full_outer").

    With `drop_times` (a star: every parent is input 0), t_j is dropped right after its join:
    the only shape Spark's chain runs, as it allows one event-time column into a stateful
    operator.
    """

    def build(frames):
        frames = [frame.withWatermark(f"t{i}", DELAY) for i, frame in enumerate(frames)]
        joined = frames[0]
        for j in range(1, len(frames)):
            p = parents[j]
            lo, hi = bounds[j]
            joined = joined.join(frames[j], (F.col(f"k{p}") == F.col(f"k{j}")) & F.expr(
                f"t{j} BETWEEN t{p} - INTERVAL {lo} SECONDS AND t{p} + INTERVAL {hi} SECONDS"),
                kinds[j] if kinds else "inner")
            if drop_times:
                joined = joined.drop(f"t{j}")
        return joined

    return build


@dataclass
class OuterTree:
    """A chain of INNER, LEFT, RIGHT and FULL OUTER joins over timed inputs, each input joined to an
    earlier one (its parent) on k and within an interval of its event time, its ON clause
    maybe also bounding it against another earlier input, and equating its key to the parent's
    or to another earlier input's."""

    kinds: list[str]
    parents: list[int]
    bounds: list[tuple[int, int]]
    key_partners: list[int]            # the earlier input whose k the ON clause equates to
    extra_bounds: dict[int, int]       # input -> another earlier input it is bounded against

    def describe(self) -> str:
        return (f"kinds={self.kinds} parents={self.parents} bounds={self.bounds} "
                f"key_partners={self.key_partners} extra_bounds={self.extra_bounds}")

    def build(self, frames: list[DataFrame]) -> DataFrame:
        frames = [frame.withWatermark(f"t{i}", DELAY) for i, frame in enumerate(frames)]
        joined = frames[0]
        for j in range(1, len(frames)):
            lo, hi = self.bounds[j]
            on = (F.col(f"k{self.key_partners[j]}") == F.col(f"k{j}")) & F.expr(
                f"t{j} BETWEEN t{self.parents[j]} - INTERVAL {lo} SECONDS AND "
                f"t{self.parents[j]} + INTERVAL {hi} SECONDS")
            if j in self.extra_bounds:
                other = self.extra_bounds[j]
                on = on & F.expr(f"t{j} BETWEEN t{other} - INTERVAL 90 SECONDS AND "
                                 f"t{other} + INTERVAL 90 SECONDS")
            if self.kinds[j] == "right_outer":
                joined = frames[j].join(joined, on, "right_outer")
            else:
                joined = joined.join(frames[j], on, self.kinds[j])
        return joined


def random_outer_tree(rng: random.Random, n_inputs: int, n_full_outer: int = 0) -> OuterTree:
    """A random OuterTree: the last `n_full_outer` joins FULL OUTER (a multi-join runs FULL
    OUTER joins only above the rest), the others INNER, LEFT or RIGHT OUTER, at least one
    outer."""
    kinds = ["inner"] + [rng.choice(["inner", "left_outer", "left_outer", "right_outer"])
                         for _ in range(1, n_inputs)]
    if all(kind == "inner" for kind in kinds):
        kinds[-1] = "left_outer"
    if n_full_outer:
        kinds[-n_full_outer:] = ["full_outer"] * n_full_outer
    parents = [0] + [rng.randrange(j) for j in range(1, n_inputs)]
    key_partners = [0] + [rng.choice([parents[j], rng.randrange(j)]) for j in range(1, n_inputs)]
    extra_bounds = {j: rng.randrange(j) for j in range(2, n_inputs) if rng.random() < 0.3}
    return OuterTree(kinds, parents, random_bounds(rng, n_inputs, [0, 15, 40], [10, 30, 60]),
                     key_partners, extra_bounds)


def mixed_key_chain(rng: random.Random, root: Path, n_on_j: int):
    """Inputs k<i>, j<i>, w<i>, v<i>, written: three streaming inputs and one static input on k,
    then `n_on_j` streaming inputs on j, inner-joined in a random order. Each input joins an
    earlier input of its key; the first of a key joins any earlier input on w, which links the
    key groups without merging them. Returns the inputs, the join order and a builder that reads
    the static input (index 3) as a table."""
    static, n_inputs = 3, 4 + n_on_j
    key = ["k"] * 4 + ["j"] * n_on_j
    inputs = Inputs(root, [f"k{i} int, j{i} int, w{i} int, v{i} int" for i in range(n_inputs)])
    for i in range(n_inputs):
        inputs.batches.append([[{f"k{i}": rng.randrange(4), f"j{i}": rng.randrange(4),
                                 f"w{i}": rng.randrange(3), f"v{i}": rng.randrange(10)}
                                for _ in range(5)] for _ in range(3)])
    inputs.write()
    order = rng.sample(range(n_inputs), n_inputs)
    conditions = {}
    for place, i in enumerate(order[1:], start=1):
        same_key = [p for p in order[:place] if key[p] == key[i]]
        column, p = (key[i], rng.choice(same_key)) if same_key else ("w", rng.choice(order[:place]))
        conditions[i] = F.col(f"{column}{p}") == F.col(f"{column}{i}")

    def build(frames: list[DataFrame]) -> DataFrame:
        spark = frames[0].sparkSession
        frames = list(frames)
        frames[static] = inputs.tables(spark)[static]
        joined = frames[order[0]]
        for i in order[1:]:
            joined = joined.join(frames[i], conditions[i])
        return joined

    return inputs, order, build



SQL_INPUTS = 7  # inputs s<i> (streaming) and b<i> (static) a random SQL chain may read


def sql_input_schema(i: int) -> str:
    """Input i of a SQL chain: key k<i>, second key column g<i>, other key x<i>, value v<i>,
    event time t<i>."""
    return f"k{i} int, g{i} int, x{i} int, v{i} int, t{i} timestamp"


@dataclass
class SqlChain:
    """A random SQL query joining inputs 0..n-1 (views s<i> read as `STREAM(s<i>)`, or static
    views b<i>), with the confs it runs with: the MULTI_JOIN hint with the conf off where
    `hinted`, and `max_tables`. `names` are the inputs' names in the query (alias or view)."""

    sql: str
    names: list[str]
    hinted: bool
    max_tables: int | None
    subquery_inputs: list[str]  # the inputs `sub` joins, where it joins several

    def owner(self, column: str) -> str:
        """The name of the input a column (k3, t0, key3...) belongs to: its number says which."""
        return self.names[int(re.search(r"\d+$", column).group())]

    @staticmethod
    def schema() -> dict[str, dict[str, str]]:
        """The views' columns, as sqlglot takes a schema."""
        return {f"{kind}{i}": dict(column.split() for column in sql_input_schema(i).split(", "))
                for i in range(SQL_INPUTS) for kind in "sb"}


@dataclass
class _SqlInput:
    index: int
    streaming: bool
    watermarked: bool
    alias: str | None
    on_other_key: bool = False

    @property
    def name(self) -> str:
        return self.alias or f"{'s' if self.streaming else 'b'}{self.index}"

    def read(self) -> str:
        alias = f" AS {self.alias}" if self.alias else ""
        if not self.streaming:
            return f"b{self.index}{alias}"
        watermark = f" WATERMARK t{self.index} DELAY OF INTERVAL 70 SECONDS" \
            if self.watermarked else ""
        return f"STREAM(s{self.index}){watermark}{alias}"


def random_sql_chain(rng: random.Random) -> SqlChain:
    """A left-deep chain of 3 to 6 inputs, mostly inner joins, in outer chains also LEFT, RIGHT
    and FULL OUTER ones; each input's key equated to an earlier input's (k, with g too for a
    composite key), some streaming inputs maybe on another key (x: with three, a second key
    group), static inputs joined inner,
    interval conditions between watermarked inputs, residual conditions, a WHERE that may make
    an outer join inner, the last inputs maybe in a subquery `sub`, and maybe the MULTI_JOIN
    hint (with the conf off) or max-tables."""
    n = rng.randint(3, 6)
    outer_chain = rng.random() < 0.4
    inputs = []
    for i in range(n):
        streaming = i == 0 or rng.random() < (0.95 if outer_chain else 0.8)
        watermarked = streaming and rng.random() < (0.85 if outer_chain else 0.3)
        inputs.append(_SqlInput(i, streaming, watermarked, rng.choice([None, f"a{i}"])))
    later = [i for i in range(1, n) if inputs[i].streaming]
    for i in rng.sample(later, min(len(later), rng.choice([0, 0, 0, 1, 1, 3]))):
        inputs[i].on_other_key = True
    split = rng.randrange(2, n) if n >= 4 and rng.random() < 0.25 else None
    kinds = ["INNER"] + [rng.choice(["LEFT", "LEFT", "RIGHT", "FULL", "INNER"])
                         if outer_chain and inputs[i].streaming and (split is None or i <= split)
                         else "INNER" for i in range(1, n)]
    conditions = _SqlConditions(rng, inputs, split, composite=rng.random() < 0.25)
    where = ""
    if rng.random() < 0.2:
        target = rng.randrange(n)
        column = f"{conditions.ref(target, None)}.v{target}"
        where = rng.choice([f" WHERE {column} > 3", f" WHERE ({column} IS NULL OR {column} > 3)"])
    hinted = rng.random() < 0.15
    hint = f"/*+ MULTI_JOIN({', '.join(rng.sample([x.name for x in inputs], rng.randint(2, n)))})"\
        " */ " if hinted else ""
    names = [x.name for x in inputs]
    if split == n - 1:
        names[split] = "sub"  # a subquery of one input is that input, named by its alias
    return SqlChain(f"SELECT {hint}* FROM {_sql_joins(inputs, kinds, conditions, split)}{where}",
                    names, hinted, rng.choice([None, None, None, 3, 4]),
                    names[split:] if split is not None and split < n - 1 else [])


class _SqlConditions:
    """The ON clause of each input of a random SQL chain (see `random_sql_chain`)."""

    def __init__(self, rng: random.Random, inputs: list[_SqlInput], split: int | None,
                 composite: bool) -> None:
        self._rng = rng
        self._inputs = inputs
        self._split = split
        self._composite = composite

    def ref(self, j: int, joining: int | None) -> str:
        """How the ON clause of input `joining` (None: the WHERE) names input j: by `sub` where
        j is in the subquery and the clause is outside it."""
        inside = self._split is not None and joining is not None and joining > self._split
        if self._split is not None and j >= self._split and not inside:
            return "sub"
        return self._inputs[j].name

    def __call__(self, i: int) -> str:
        rng, inputs = self._rng, self._inputs
        low = self._split if self._split is not None and i > self._split else 0
        # Inputs on the other key join one another where they can: a second key group.
        same_key = [p for p in range(low, i) if inputs[p].on_other_key == inputs[i].on_other_key]
        partner = rng.choice(same_key or list(range(low, i)))
        key = "x" if inputs[i].on_other_key or inputs[partner].on_other_key else "k"

        def column(name: str, j: int) -> str:
            return f"{self.ref(j, i)}.{name}{j}"

        parts = [f"{column(key, partner)} = {column(key, i)}"]
        if self._composite and key == "k":
            parts.append(f"{column('g', partner)} = {column('g', i)}")
        if inputs[i].watermarked and inputs[partner].watermarked and rng.random() < 0.85:
            low_s, high_s = rng.choice([0, 30, 60]), rng.choice([30, 120])
            parts.append(f"{column('t', i)} BETWEEN {column('t', partner)} - INTERVAL {low_s} "
                         f"SECONDS AND {column('t', partner)} + INTERVAL {high_s} SECONDS")
        if rng.random() < 0.2:
            parts.append(f"{column('v', i)} <= {column('v', partner)} + 8")
        return " AND ".join(parts)


def _sql_joins(inputs: list[_SqlInput], kinds: list[str], conditions: _SqlConditions,
               split: int | None) -> str:
    """The FROM clause: inputs joined left-deep, those from `split` on in a subquery `sub` that
    selects all their columns."""
    end = split if split is not None else len(inputs)
    body = inputs[0].read()
    for i in range(1, end):
        body += f" {kinds[i]} JOIN {inputs[i].read()} ON {conditions(i)}"
    if split is None:
        return body
    columns = ", ".join(f"{inputs[j].name}.{c}{j}" for j in range(split, len(inputs))
                        for c in "kgxvt")
    inner = inputs[split].read() + "".join(
        f" JOIN {inputs[j].read()} ON {conditions(j)}" for j in range(split + 1, len(inputs)))
    return f"{body} {kinds[split]} JOIN (SELECT {columns} FROM {inner}) AS sub " \
           f"ON {conditions(split)}"
