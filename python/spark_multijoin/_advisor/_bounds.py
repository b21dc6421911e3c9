"""How long a multi-join keeps each input's rows: the rule's JoinTree and EventTimeBounds
(scala/.../analysis/), over conditions whose columns are resolved to leaves.

A conjunct comparing the event times of inputs i and j (`b.t BETWEEN a.t - INTERVAL 10 MINUTES
AND a.t + INTERVAL 1 HOUR` is two) bounds t_i - t_j in the output rows it holds in; bounds compose
along paths (longest paths over these difference constraints), a conjunct of an outer input's ON
clause only in rows where that input is present. A stored row of input i is evicted once it can
join no row still to come, nor decide a null-padded row that is not yet final.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from sqlglot import exp

from spark_multijoin._advisor._expressions import (
    Column,
    columns,
    leaves_read,
    null_when_any_column_is_null,
)


@dataclass(frozen=True)
class Conjunct:
    """A conjunct of a chain's conditions: of the inner joins (`outer_input` None), or of the ON
    clause of the outer input `outer_input`, which it decides the matches of."""

    expression: exp.Expr
    outer_input: int | None


@dataclass(frozen=True)
class JoinTree:
    """As the rule's JoinTree: per input, None for an inner input, else the input its ON clause
    reads last; the outer inputs in the order their joins apply; the FULL OUTER ones."""

    parents: tuple[int | None, ...]
    outer_order: tuple[int, ...] = ()
    full_outer: frozenset[int] = field(default_factory=frozenset)

    @staticmethod
    def inner(inputs: int) -> JoinTree:
        return JoinTree((None,) * inputs)

    def is_outer(self, input_index: int) -> bool:
        return self.parents[input_index] is not None

    @property
    def inner_inputs(self) -> list[int]:
        return [i for i in range(len(self.parents)) if not self.is_outer(i)]

    @property
    def deciding_inputs(self) -> list[int]:
        if not self.outer_order:
            return []
        return [self.inner_inputs[0]] + [i for i in self.outer_order if i in self.full_outer]

    @property
    def always_present(self) -> set[int]:
        return set() if self.full_outer else set(self.inner_inputs)


def eviction_offsets(times: Sequence[Column | None], input_leaves: Sequence[frozenset[str]],
                     conjuncts: Sequence[Conjunct], tree: JoinTree) -> list[int | None]:
    """Per input, the offset (ms) from the watermark at or below which its rows are evicted;
    None where no condition bounds it (its rows are kept for good). `times` are the inputs'
    event-time columns, `input_leaves` the leaves whose columns each input outputs."""
    lower_bound = _LowerBounds(times, input_leaves, conjuncts, tree)
    finals = _final_offsets(len(times), lower_bound)
    offsets = []
    for input_index, own in enumerate(finals):
        kept = own
        for decider in tree.deciding_inputs:
            if decider == input_index:
                continue
            to_decider = lower_bound(input_index, decider)
            kept = None if kept is None or finals[decider] is None or to_decider is None \
                else min(kept, finals[decider] + to_decider)
        offsets.append(kept)
    return offsets


def _final_offsets(inputs: int, lower_bound: _LowerBounds) -> list[int | None]:
    """Per input, the offset below which a row of it can join no row to come."""
    finals = []
    for input_index in range(inputs):
        others = [lower_bound(input_index, other) for other in range(inputs)
                  if other != input_index]
        finals.append(min(others) if others and None not in others else None)  # type: ignore
    return finals


@dataclass(frozen=True)
class _Edge:
    """A direct bound t_from >= t_to + millis, from a conjunct of `owner`'s ON clause."""

    source: int
    target: int
    millis: int
    owner: int | None


class _LowerBounds:
    """L*(i, k): the tightest lower bound on t_i - t_k over output rows with rows of i and k."""

    def __init__(self, times: Sequence[Column | None], input_leaves: Sequence[frozenset[str]],
                 conjuncts: Sequence[Conjunct], tree: JoinTree) -> None:
        self._inputs = len(times)
        self._tree = tree
        self._edges = _direct_bounds(times, conjuncts)
        self._first_inner = tree.inner_inputs[0]
        leaf_inputs = {uid: i for i, uids in enumerate(input_leaves) for uid in uids}
        # Per outer input, the inputs its presence implies are present, where its ON clause held.
        self._implied = {outer: {leaf_inputs[uid] for c in conjuncts if c.outer_input == outer
                                 and null_when_any_column_is_null(c.expression)
                                 for uid in leaves_read(c.expression) if uid in leaf_inputs}
                         for outer in tree.outer_order}
        self._joined_before = {outer: set(tree.inner_inputs) | set(tree.outer_order[:place])
                               for place, outer in enumerate(tree.outer_order)}
        self._closures: dict[frozenset[int], list[list[int | None]]] = {}

    def __call__(self, i: int, k: int) -> int | None:
        present = frozenset(self._present_with({i, k} | self._tree.always_present))
        if present not in self._closures:
            edges = [edge for edge in self._edges if self._held(edge.owner, present)]
            self._closures[present] = _longest_paths(self._inputs, edges)
        return self._closures[present][i][k]

    def _held(self, owner: int | None, present: frozenset[int] | set[int]) -> bool:
        if owner is None:
            return self._first_inner in present
        return owner in present and (owner not in self._tree.full_outer or
                                     bool(present & self._joined_before[owner]))

    def _present_with(self, seed: set[int]) -> set[int]:
        inner = set(self._tree.inner_inputs) if any(
            not self._tree.is_outer(i) for i in seed) else set()
        more = inner.union(*(self._implied[i] for i in seed
                             if self._tree.is_outer(i) and self._held(i, seed))) - seed
        return self._present_with(seed | more) if more else seed


def _direct_bounds(times: Sequence[Column | None], conjuncts: Sequence[Conjunct]) -> list[_Edge]:
    edges = []
    for conjunct in conjuncts:
        read = columns(conjunct.expression)
        for i, time in enumerate(times):
            for j, other in enumerate(times):
                if i == j or time is None or other is None or read != {time, other}:
                    continue
                millis = _lower_bound(conjunct.expression, time, other)
                if millis is not None:
                    edges.append(_Edge(i, j, millis, conjunct.outer_input))
    return edges


def _lower_bound(comparison: exp.Expr, time: Column, other: Column) -> int | None:
    """c where `comparison` says t_time >= t_other + c (or >), if it is such a bound."""
    if isinstance(comparison, (exp.GT, exp.GTE)):
        difference = _linear(comparison.this, comparison.expression, subtract=True)
    elif isinstance(comparison, (exp.LT, exp.LTE)):
        difference = _linear(comparison.expression, comparison.this, subtract=True)
    else:
        return None
    if difference is None:
        return None
    coefficients, constant = difference
    # difference > 0 with difference = t_time - t_other + constant: t_time > t_other - constant
    if coefficients == {time: 1, other: -1}:
        return -constant
    return None


def _linear(left: exp.Expr, right: exp.Expr, subtract: bool) -> tuple[dict, int] | None:
    """`left - right` (or `left + right`) as column coefficients and a constant in ms."""
    parts = [_terms(left), _terms(right)]
    if None in parts:
        return None
    (left_columns, left_constant), (right_columns, right_constant) = parts  # type: ignore
    sign = -1 if subtract else 1
    combined = dict(left_columns)
    for column, coefficient in right_columns.items():
        combined[column] = combined.get(column, 0) + sign * coefficient
    return {c: k for c, k in combined.items() if k}, left_constant + sign * right_constant


def _terms(expression: exp.Expr) -> tuple[dict, int] | None:
    expression = expression.unnest()
    if isinstance(expression, exp.Column):
        return {(expression.table, expression.name): 1}, 0
    if isinstance(expression, exp.Interval):
        millis = interval_millis(expression)
        return None if millis is None else ({}, millis)
    if isinstance(expression, (exp.Add, exp.Sub)):
        return _linear(expression.this, expression.expression, isinstance(expression, exp.Sub))
    if isinstance(expression, exp.Neg):
        inner = _terms(expression.this)
        return None if inner is None else ({c: -k for c, k in inner[0].items()}, -inner[1])
    return None


_UNIT_MILLIS = {"microsecond": 0.001, "millisecond": 1, "second": 1000, "minute": 60_000,
                "hour": 3_600_000, "day": 86_400_000, "week": 604_800_000}
_AMOUNT_AND_UNIT = re.compile(r"(-?\d+(?:\.\d+)?)\s*([a-z]+)")


def interval_millis(interval: exp.Interval) -> int | None:
    """An interval literal in ms; None for months or years, which Spark does not bound by."""
    unit = interval.args.get("unit")
    text = interval.this.name if interval.this is not None else ""
    spelled = f"{text} {unit.name}" if unit is not None else text
    total = 0.0
    found = _AMOUNT_AND_UNIT.findall(spelled.lower())
    if not found:
        return None
    for amount, name in found:
        name = name[:-1] if name.endswith("s") else name
        if name not in _UNIT_MILLIS:
            return None
        total += float(amount) * _UNIT_MILLIS[name]
    return int(total)


def _longest_paths(n: int, edges: list[_Edge]) -> list[list[int | None]]:
    bounds: list[list[int | None]] = [[None] * n for _ in range(n)]
    for edge in edges:
        current = bounds[edge.source][edge.target]
        if current is None or current < edge.millis:
            bounds[edge.source][edge.target] = edge.millis
    for via in range(n):
        for i in range(n):
            for j in range(n):
                if len({i, j, via}) < 3:
                    continue
                first, second = bounds[i][via], bounds[via][j]
                if first is not None and second is not None:
                    current = bounds[i][j]
                    if current is None or current < first + second:
                        bounds[i][j] = first + second
    return bounds
