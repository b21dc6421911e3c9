"""Random joins of changelog inputs (tests/support/changelogs.py), built the same way over the
declared streams and over batch DataFrames of the inputs' current rows.

A shape joins its inputs left-deep: the first level on k (one changelog join), then, stacked
over it, a second level on p, whose first input equates its p to an input's of the first level
(a second changelog join that reads the first's changes). Within a level, INNER, LEFT and RIGHT
joins come first and FULL OUTER joins last, and an inner join's ON clause reads no outer input:
what one changelog join can run, so that a shape of L levels runs as L operators. Filters on
the inputs, one above the join and one between the levels read the columns updates change; a
final select keeps every row id.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from support.changelogs import Changes, ChangelogSpec, random_changes


@dataclass
class ChangelogShape:
    inputs: list[ChangelogSpec]
    kinds: list[str]                # per input, how it joins those before it ("" for input 0)
    parents: list[int]              # per input, the earlier input whose key its ON equates
    input_filters: dict[int, str]   # input -> a condition on its own columns
    above_filter: str | None        # a condition on the joined columns
    between_filter: str | None      # a condition on the first level's, between the levels
    select: list[str] | None        # the final select's expressions
    n_batches: int

    @property
    def levels(self) -> int:
        return len({spec.key for spec in self.inputs})

    def describe(self) -> str:
        inputs = ", ".join(f"{i}:{spec.key}{'/upsert' if spec.upsert else ''}"
                           f"{'/id+key' if spec.id_holds_key else ''}"
                           f"{'/full' if spec.full_changelog else ''}"
                           for i, spec in enumerate(self.inputs))
        return (f"inputs [{inputs}] kinds={self.kinds[1:]} parents={self.parents[1:]} "
                f"input_filters={self.input_filters} above_filter={self.above_filter!r} "
                f"between_filter={self.between_filter!r} "
                f"select={self.select} batches={self.n_batches}")

    def identity(self) -> list[str]:
        """The output identity's columns: every input's row id, as the select names it."""
        renamed = dict(expression.split(" AS ") for expression in self.select or ()
                       if " AS " in expression)
        return [renamed.get(name, name) for spec in self.inputs for name in spec.row_id]

    def build(self, frames: list[DataFrame]) -> DataFrame:
        frames = [frame.where(self.input_filters[i]) if i in self.input_filters else frame
                  for i, frame in enumerate(frames)]
        joined = frames[0]
        for j in range(1, len(frames)):
            key = self.inputs[j].key
            on = F.col(f"{key}{self.parents[j]}") == F.col(f"{key}{j}")
            if self.kinds[j] == "right_outer":
                joined = frames[j].join(joined, on, "right_outer")
            else:
                joined = joined.join(frames[j], on, self.kinds[j])
            if self.between_filter and j + 1 < len(frames) and self.inputs[j + 1].key != key:
                joined = joined.where(self.between_filter)
        if self.above_filter:
            joined = joined.where(self.above_filter)
        return joined.selectExpr(*self.select) if self.select else joined


def random_changelog_shape(rng: random.Random) -> ChangelogShape:
    n = rng.randint(2, 6)
    # Inputs [0, first) are joined on k; the others, if any, on p, stacked.
    first = n if n < 3 or rng.random() < 0.5 else rng.randint(2, n - 1)
    inputs = []
    for i in range(n):
        upsert = rng.random() < 0.3
        id_holds_key = rng.random() < (0.5 if upsert else 0.2)
        inputs.append(ChangelogSpec(i, "k" if i < first else "p", upsert, id_holds_key))
    kinds, parents = [""], [0]
    _random_level(rng, range(1, first), list(range(first)), kinds, parents)
    if first < n:
        _random_level(rng, range(first, n), [rng.randrange(first)] + list(range(first, n)),
                      kinds, parents)
    filters = {i: rng.choice([f"w{i} >= 1", f"w{i} <> 2", f"v{i} < 7", f"p{i} <> 1"])
               for i in range(n) if rng.random() < 0.35}
    shape = ChangelogShape(inputs, kinds, parents, filters, _above_filter(rng, n),
                           _above_filter(rng, first) if first < n else None,
                           _select(rng, inputs), rng.randint(4, 5))
    # Drawn last, so that the shapes drawn before full changelogs were are drawn still.
    shape.inputs = [replace(spec, full_changelog=not spec.upsert and rng.random() < 0.5)
                    for spec in inputs]
    return shape


def _random_level(rng: random.Random, joined: range, members: list[int], kinds: list[str],
                  parents: list[int]) -> None:
    """The kinds and parents of the inputs `joined`, each joined to one of the level's
    `members` before it (in a stacked level, the first member is the input of the level below
    whose p the level's key is)."""
    n_full = rng.choice([0, 0, 1, 2])
    outer: set[int] = set()
    for j in joined:
        kind = "full_outer" if j >= joined.stop - n_full else rng.choice(
            ["inner", "inner", "left_outer", "left_outer", "right_outer"])
        before = [m for m in members if m < j]
        if kind == "inner":
            before = [m for m in before if m not in outer]
        kinds.append(kind)
        parents.append(rng.choice(before))
        if kind != "inner":
            outer.add(j)


def _above_filter(rng: random.Random, n: int) -> str | None:
    if rng.random() < 0.5:
        return None
    x, y = rng.randrange(n), rng.randrange(n)
    return rng.choice([f"w{x} <= 2", f"(w{x} <= 1 OR w{x} IS NULL)",
                       f"coalesce(v{x}, 0) + coalesce(v{y}, 0) < 12"])


def _select(rng: random.Random, inputs: list[ChangelogSpec]) -> list[str] | None:
    """Every row id (one maybe renamed), some other columns, maybe a computed one, in a random
    order; or no select."""
    if rng.random() < 0.3:
        return None
    ids = [name for spec in inputs for name in spec.row_id]
    others = [name for spec in inputs for name in spec.columns if name not in ids]
    chosen = ids + rng.sample(others, rng.randint(0, len(others)))
    if rng.random() < 0.3:
        renamed = rng.randrange(len(ids))
        chosen[renamed] = f"{chosen[renamed]} AS rid{renamed}"
    if rng.random() < 0.4:
        a, b = rng.randrange(len(inputs)), rng.randrange(len(inputs))
        chosen.append(f"coalesce(v{a}, 0) + coalesce(v{b}, 0) AS s")
    rng.shuffle(chosen)
    return chosen


def random_case(seed: int) -> tuple[ChangelogShape, list[Changes]]:
    """The random shape of `seed` and its inputs' changes."""
    rng = random.Random(4700 + seed)
    shape = random_changelog_shape(rng)
    return shape, [random_changes(rng, spec, shape.n_batches) for spec in shape.inputs]
