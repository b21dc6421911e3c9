"""What Spark's optimizer does to a join tree before the rule sees it, where it changes what the
rule decides: outer joins made inner, and filters pushed down into the joins.

Spark's EliminateOuterJoin turns a LEFT OUTER join into an inner one where a filter above it
rejects the rows it pads with nulls (`WHERE b.v > 1` over `a LEFT JOIN b`), a FULL OUTER join
into a LEFT, RIGHT or inner one; the filters reach it pushed down from a WHERE, or inferred
(`IS NOT NULL`) from the condition of an inner join above it. Its predicate pushdown then moves
each conjunct of a filter down to the join where the inputs it reads meet (not into the side an
outer join pads, nor through a FULL OUTER join), so that a WHERE above a join the rule does not
start at still reaches the chain below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sqlglot import exp

from spark_multijoin._advisor._expressions import (
    leaves_read,
    null_intolerant_columns,
    rejects_nulls_of,
)
from spark_multijoin._advisor._relations import Filtered, Join, Leaf, Tree, is_deterministic, leaves


@dataclass(frozen=True)
class _Constraint:
    """A filter on rows that holds above a join: a conjunct, or the `IS NOT NULL` of a column
    Spark infers from one (`origin`)."""

    expression: exp.Expr
    origin: exp.Expr


def optimize(tree: Tree, describe: Callable[[exp.Expr], str]) -> list[str]:
    """Changes `tree` in place as Spark's optimizer would (see the module's doc); says which
    outer joins it made inner, and why (`describe` shows a condition)."""
    notes: list[str] = []
    _push(tree, [], notes, describe)
    _place(tree, [])
    return notes


def _push(tree: Tree, above: list[_Constraint], notes: list[str],
          describe: Callable[[exp.Expr], str]) -> None:
    if isinstance(tree, Leaf):
        return
    if isinstance(tree, Filtered):
        # Spark pushes no filter through a nondeterministic one.
        below = above + _constraints(tree.conjuncts) if tree.deterministic else []
        _push(tree.child, below, notes, describe)
        return
    left, right = _uids(tree.left), _uids(tree.right)
    _make_inner_where_rejected(tree, above, left, right, notes, describe)
    own = _constraints(tree.conjuncts)
    to_left, to_right = {
        "INNER": (above + own, above + own),
        "LEFT": (above, own),
        "RIGHT": (own, above),
        "LEFT SEMI": (above + own, own),
        "LEFT ANTI": (above, own),
    }.get(tree.kind, ([], []))
    _push(tree.left, [c for c in to_left if leaves_read(c.expression) <= left], notes, describe)
    _push(tree.right, [c for c in to_right if leaves_read(c.expression) <= right], notes,
          describe)


def _make_inner_where_rejected(join: Join, above: list[_Constraint], left: set[str],
                               right: set[str], notes: list[str],
                               describe: Callable[[exp.Expr], str]) -> None:
    if join.kind not in ("LEFT", "RIGHT", "FULL"):
        return
    # A side stays padded unless a condition above rejects the rows where it is null.
    padded = {side: (tree, _rejecting(above, uids)) for side, tree, uids in
              (("LEFT", join.left, left), ("RIGHT", join.right, right))
              if join.kind in (_OTHER_SIDE[side], "FULL")}
    still = {side for side, (_, rejecting) in padded.items() if rejecting is None}
    kind = "FULL" if len(still) == 2 else _OTHER_SIDE[still.pop()] if still else "INNER"
    if kind == join.kind:
        return
    for tree, rejecting in padded.values():
        if rejecting is not None:
            names = ", ".join(leaf.name for leaf in leaves(tree))
            notes.append(f"The {join.kind} OUTER join of {names} runs as "
                         f"{'an INNER' if kind == 'INNER' else f'a {kind} OUTER'} join: "
                         f"{describe(rejecting)} rejects the rows it pads with nulls, and "
                         "Spark's optimizer drops them.")
    join.kind = kind


# The side a join of each kind pads with nulls is the other one: a LEFT join pads its right.
_OTHER_SIDE = {"LEFT": "RIGHT", "RIGHT": "LEFT"}


def _rejecting(above: list[_Constraint], side: set[str]) -> exp.Expr | None:
    """The condition of `above` that rejects rows where every column of `side` is null."""
    for constraint in above:
        if rejects_nulls_of(constraint.expression, side):
            return constraint.origin
    return None


def _constraints(conjuncts: list[exp.Expr]) -> list[_Constraint]:
    found = []
    for conjunct in conjuncts:
        if not is_deterministic(conjunct):
            continue
        found.append(_Constraint(conjunct, conjunct))
        found.extend(_Constraint(exp.Not(this=exp.Is(this=exp.column(name, table=uid),
                                                     expression=exp.Null())), conjunct)
                     for uid, name in null_intolerant_columns(conjunct))
    return found


def _uids(tree: Tree) -> set[str]:
    return {leaf.uid for leaf in leaves(tree)}


def _place(tree: Tree, conjuncts: list[exp.Expr]) -> list[exp.Expr]:
    """Moves `conjuncts` (of a filter above `tree`) and the filters inside `tree` down to where
    Spark's predicate pushdown takes them; returns those that must stay above `tree`."""
    if isinstance(tree, Leaf):
        return conjuncts
    if isinstance(tree, Filtered):
        if not tree.deterministic:
            _place(tree.child, [])
            return conjuncts
        tree.conjuncts = _place(tree.child, tree.conjuncts + conjuncts)
        return []
    left, right = _uids(tree.left), _uids(tree.right)
    to_left = [c for c in conjuncts if leaves_read(c) <= left]
    to_right = [c for c in conjuncts if leaves_read(c) <= right and c not in to_left]
    rest = [c for c in conjuncts if c not in to_left and c not in to_right]
    if tree.kind == "INNER":
        # What reaches no deeper stays with this join, whose condition an inner join takes.
        tree.conjuncts = _place(tree.left, to_left) + _place(tree.right, to_right) + \
            tree.conjuncts + rest
        return []
    pushable_left = tree.kind in ("LEFT", "LEFT SEMI", "LEFT ANTI")
    pushable_right = tree.kind == "RIGHT"
    stays = (_place(tree.left, to_left) if pushable_left else _place(tree.left, []) + to_left) + \
        (_place(tree.right, to_right) if pushable_right else _place(tree.right, []) + to_right)
    return stays + rest
