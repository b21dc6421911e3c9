"""What Spark's optimizer does to a join tree before the rule sees it, where it changes what the
rule decides: outer joins it makes inner, and where filters end up.

Which outer joins Spark makes inner depends on the order its rules run in, so this runs them in
that order, on the tree itself (filters as `Filtered` nodes without an alias):

1. "Operator Optimization before Inferring Filters", to a fixed point: EliminateOuterJoin (an
   outer join under a filter that rejects the rows it pads with nulls becomes inner, or a FULL
   one LEFT or RIGHT), then PushDownPredicates (a filter's conjuncts go into the sides of a join
   they read, not into a side it pads, nor through a FULL OUTER join; a join's conditions that
   read one side go into it the same way; what reads both sides of an inner join joins its
   condition), then PruneFilters (an `IS NOT NULL` the plan below already guarantees goes);
2. "Infer Filters", once: InferFiltersFromConstraints adds `IS NOT NULL` filters for the columns
   a filter or join condition reads through null-intolerant operators (both sides of an inner
   join, the padded side of an outer one);
3. "Operator Optimization after Inferring Filters": as 1.

A join that only step 3 makes inner infers nothing more, as in Spark.
"""

from __future__ import annotations

from typing import Callable

from sqlglot import exp

from spark_multijoin._advisor._expressions import (
    Column,
    leaves_read,
    null_intolerant_columns,
    rejects_nulls_of,
)
from spark_multijoin._advisor._tree import Filtered, Join, Leaf, Tree, is_deterministic, leaves

Describe = Callable[[exp.Expr], str]

# The side a join of each kind pads with nulls is the other one: a LEFT join pads its right.
_OTHER_SIDE = {"LEFT": "RIGHT", "RIGHT": "LEFT"}
# Per join kind, whether a filter above it, and a condition of it, goes into its left and right
# side.
_FILTER_INTO = {"INNER": (True, True), "LEFT": (True, False), "LEFT SEMI": (True, False),
                "LEFT ANTI": (True, False), "RIGHT": (False, True), "FULL": (False, False)}
_CONDITION_INTO = {"INNER": (True, True), "LEFT SEMI": (True, True), "LEFT": (False, True),
                   "LEFT ANTI": (False, True), "RIGHT": (True, False), "FULL": (False, False)}
_INFERRED_FOR = {"INNER": (True, True), "LEFT SEMI": (True, True), "LEFT": (False, True),
                 "LEFT ANTI": (False, True), "RIGHT": (True, False), "FULL": (False, False)}


def optimize(tree: Tree, describe: Describe) -> tuple[Tree, list[str]]:
    """`tree` as Spark's optimizer leaves it (see the module's doc), and which outer joins it
    made inner and why (`describe` shows a condition)."""
    notes: list[str] = []
    tree = _to_fixed_point(tree, notes, describe)
    tree = _infer(tree)
    return _to_fixed_point(tree, notes, describe), notes


def _to_fixed_point(tree: Tree, notes: list[str], describe: Describe) -> Tree:
    for _ in range(100):  # Spark's fixed point is at most 100 iterations too
        changed = _eliminate_outer_joins(tree, notes, describe)
        tree, pushed = _push_down(tree)
        tree, pruned = _prune(tree)
        if not (changed or pushed or pruned):
            break
    return tree


def _eliminate_outer_joins(tree: Tree, notes: list[str], describe: Describe) -> bool:
    """EliminateOuterJoin, bottom up: whether it changed a join."""
    if isinstance(tree, Leaf):
        return False
    if isinstance(tree, Join):
        changed = _eliminate_outer_joins(tree.left, notes, describe)
        return _eliminate_outer_joins(tree.right, notes, describe) or changed
    changed = _eliminate_outer_joins(tree.child, notes, describe)
    child = tree.child
    if not isinstance(child, Join) or child.kind not in ("LEFT", "RIGHT", "FULL"):
        return changed
    # A side stays padded unless a conjunct of the filter rejects the rows where it is null.
    padded = {side: (subtree, _rejecting(tree.conjuncts, _uids(subtree)))
              for side, subtree in (("LEFT", child.left), ("RIGHT", child.right))
              if child.kind in (_OTHER_SIDE[side], "FULL")}
    still = {side for side, (_, rejecting) in padded.items() if rejecting is None}
    kind = "FULL" if len(still) == 2 else _OTHER_SIDE[still.pop()] if still else "INNER"
    if kind == child.kind:
        return changed
    for subtree, rejecting in padded.values():
        if rejecting is not None:
            names = ", ".join(leaf.name for leaf in leaves(subtree))
            notes.append(f"The {child.kind} OUTER join of {names} runs as "
                         f"{'an INNER' if kind == 'INNER' else f'a {kind} OUTER'} join: "
                         f"{describe(rejecting)} rejects the rows it pads with nulls, and "
                         "Spark's optimizer drops them.")
    child.kind = kind
    return True


def _rejecting(conjuncts: list[exp.Expr], side: set[str]) -> exp.Expr | None:
    """The conjunct that rejects rows where every column of `side` is null, if any."""
    return next((c for c in conjuncts if is_deterministic(c) and rejects_nulls_of(c, side)),
                None)


def _push_down(tree: Tree, frozen: set[int] | None = None) -> tuple[Tree, bool]:
    """PushDownPredicates, top down: the tree, and whether a conjunct moved. As in Spark's
    transformDown, a filter that another one was combined into (`frozen`, by `id`) moves no
    further in this pass."""
    frozen = set() if frozen is None else frozen
    if isinstance(tree, Leaf):
        return tree, False
    moved = False
    if isinstance(tree, Filtered) and tree.deterministic and tree.conjuncts and \
            id(tree) not in frozen:
        moved = _push_filter(tree, frozen)
    if isinstance(tree, Join):
        moved = _push_condition(tree, frozen)
    if isinstance(tree, Filtered):
        tree.child, below = _push_down(tree.child, frozen)
        if not tree.conjuncts and tree.alias is None:
            return tree.child, True
        return tree, moved or below
    tree.left, left_moved = _push_down(tree.left, frozen)
    tree.right, right_moved = _push_down(tree.right, frozen)
    return tree, moved or left_moved or right_moved


def _push_filter(tree: Filtered, frozen: set[int]) -> bool:
    """Moves what it can of a filter's conjuncts below it; whether any moved."""
    child = tree.child
    if isinstance(child, Filtered) and child.deterministic:
        if child.alias is None:
            # CombineFilters: this filter takes the one below, and moves no further this pass.
            tree.conjuncts = child.conjuncts + tree.conjuncts
            tree.child = child.child
            frozen.add(id(tree))
        else:
            # Through a projection, into its filter.
            child.conjuncts = child.conjuncts + tree.conjuncts
            tree.conjuncts = []
            frozen.add(id(child))
        return True
    if not isinstance(child, Join):
        return False
    into_left, into_right = _FILTER_INTO[child.kind]
    left, right = _uids(child.left), _uids(child.right)
    to_left = [c for c in tree.conjuncts if into_left and leaves_read(c) <= left]
    to_right = [c for c in tree.conjuncts if into_right and leaves_read(c) <= right
                and c not in to_left]
    stay = [c for c in tree.conjuncts if c not in to_left and c not in to_right]
    if child.kind == "INNER":
        # What reads both sides of an inner join becomes part of its condition.
        child.conjuncts = child.conjuncts + stay
        stay = []
    child.left = _filtered(child.left, to_left, frozen)
    child.right = _filtered(child.right, to_right, frozen)
    moved = len(stay) < len(tree.conjuncts)
    tree.conjuncts = stay
    return moved


def _push_condition(join: Join, frozen: set[int]) -> bool:
    """Moves a join's conditions that read one side only into that side, where Spark does."""
    into_left, into_right = _CONDITION_INTO[join.kind]
    left, right = _uids(join.left), _uids(join.right)
    to_left = [c for c in join.conjuncts if into_left and is_deterministic(c)
               and leaves_read(c) and leaves_read(c) <= left]
    to_right = [c for c in join.conjuncts if into_right and is_deterministic(c)
                and leaves_read(c) and leaves_read(c) <= right]
    if not to_left and not to_right:
        return False
    join.conjuncts = [c for c in join.conjuncts if c not in to_left and c not in to_right]
    join.left = _filtered(join.left, to_left, frozen)
    join.right = _filtered(join.right, to_right, frozen)
    return True


def _filtered(tree: Tree, conjuncts: list[exp.Expr], frozen: set[int] | None = None) -> Tree:
    """`tree` under a filter of `conjuncts`: combined with the filter it already is (which then
    moves no further in the pass, `frozen`), or a new one."""
    if not conjuncts:
        return tree
    if isinstance(tree, Filtered) and tree.deterministic:
        tree.conjuncts = tree.conjuncts + conjuncts
        if frozen is not None:
            frozen.add(id(tree))
        return tree
    return Filtered(tree, list(conjuncts), deterministic=all(map(is_deterministic, conjuncts)))


def _prune(tree: Tree) -> tuple[Tree, bool]:
    """PruneFilters: drops the `IS NOT NULL` conjuncts of filters that the plan below them
    already guarantees; the tree, and whether it dropped any."""
    if isinstance(tree, Leaf):
        return tree, False
    if isinstance(tree, Join):
        tree.left, left_pruned = _prune(tree.left)
        tree.right, right_pruned = _prune(tree.right)
        return tree, left_pruned or right_pruned
    tree.child, pruned = _prune(tree.child)
    guaranteed = _not_null_below(tree.child)
    kept = [c for c in tree.conjuncts if _not_null_column(c) not in guaranteed]
    pruned = pruned or len(kept) < len(tree.conjuncts)
    tree.conjuncts = kept
    if not kept and tree.alias is None:
        return tree.child, True
    return tree, pruned


def _infer(tree: Tree) -> Tree:
    """InferFiltersFromConstraints, once, top down."""
    if isinstance(tree, Leaf):
        return tree
    if isinstance(tree, Filtered):
        if tree.deterministic:
            guaranteed = _not_null_below(tree.child) | {
                _not_null_column(c) for c in tree.conjuncts}
            tree.conjuncts = tree.conjuncts + [
                c for c in _not_null(tree.conjuncts) if _not_null_column(c) not in guaranteed]
        tree.child = _infer(tree.child)
        return tree
    for_left, for_right = _INFERRED_FOR[tree.kind]
    inferred = _not_null(tree.conjuncts)
    if for_left:
        tree.left = _filtered(tree.left, _new_for(tree.left, inferred))
    if for_right:
        tree.right = _filtered(tree.right, _new_for(tree.right, inferred))
    tree.left = _infer(tree.left)
    tree.right = _infer(tree.right)
    return tree


def _new_for(side: Tree, inferred: list[exp.Expr]) -> list[exp.Expr]:
    """The inferred `IS NOT NULL`s of `side`'s columns that its plan does not guarantee yet."""
    uids = _uids(side)
    guaranteed = _not_null_below(side)
    return [c for c in inferred if leaves_read(c) <= uids and _not_null_column(c) not in guaranteed]


def _not_null(conjuncts: list[exp.Expr]) -> list[exp.Expr]:
    """`IS NOT NULL` of each column the conjuncts read through null-intolerant operators, once."""
    columns = sorted(set().union(*(null_intolerant_columns(c) for c in conjuncts
                                   if is_deterministic(c))))
    return [exp.Not(this=exp.Is(this=exp.column(name, table=uid), expression=exp.Null()))
            for uid, name in columns]


def _not_null_column(conjunct: exp.Expr) -> Column | None:
    """The column of a conjunct `NOT column IS NULL`, if it is one."""
    if isinstance(conjunct, exp.Not) and isinstance(conjunct.this, exp.Is) and \
            isinstance(conjunct.this.this, exp.Column) and \
            isinstance(conjunct.this.expression, exp.Null):
        return conjunct.this.this.table, conjunct.this.this.name
    return None


def _not_null_below(tree: Tree) -> set[Column]:
    """The columns the constraints of `tree`'s plan say are not null: those its filters and
    inner joins read through null-intolerant operators (an outer join passes on its preserved
    side's)."""
    if isinstance(tree, Leaf):
        return set()
    if isinstance(tree, Filtered):
        own = set().union(*map(null_intolerant_columns, tree.conjuncts)) | {
            _not_null_column(c) for c in tree.conjuncts if _not_null_column(c)}
        return own | _not_null_below(tree.child)
    if tree.kind in ("INNER", "LEFT SEMI"):
        return set().union(*map(null_intolerant_columns, tree.conjuncts)) | \
            _not_null_below(tree.left) | _not_null_below(tree.right)
    preserved = {"LEFT": tree.left, "LEFT ANTI": tree.left, "RIGHT": tree.right}.get(tree.kind)
    return _not_null_below(preserved) if preserved is not None else set()


def _uids(tree: Tree) -> set[str]:
    return {leaf.uid for leaf in leaves(tree)}
