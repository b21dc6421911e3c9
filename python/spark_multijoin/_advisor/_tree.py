"""The join trees the advisor reasons over: `Leaf` inputs, `Join`s, `Filtered` nodes and the
`Fused` multi-joins the rule made, with what the rule asks of them.

`_relations` builds these trees from a statement; `_optimizer`, `_chains` and `_collapse` read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Union

from sqlglot import exp

# Functions Spark does not treat as deterministic, which stop the rule at the join or projection
# that calls them.
_NONDETERMINISTIC_NODES = (exp.Rand, exp.Randn, exp.Uuid, exp.Shuffle)
_NONDETERMINISTIC_NAMES = {"monotonically_increasing_id", "spark_partition_id", "input_file_name",
                           "input_file_block_start", "input_file_block_length", "uniform",
                           "randstr"}


@dataclass(eq=False)
class Leaf:
    """An input of a join tree that the rule does not look into.

    `event_time` is the column that carries a watermark, if the advisor knows of one;
    `event_time_unknown` says what it is, where that keeps the advisor from knowing whether it
    has one. `covers` are the uids of the leaves inside it (a derived table's), itself included:
    the MULTI_JOIN hint names an input where it names a relation under it.
    """

    uid: str
    name: str
    streaming: bool
    event_time: str | None = None
    event_time_unknown: str | None = None
    covers: frozenset[str] = frozenset()

    def column(self, name: str) -> exp.Column:
        return exp.column(name, table=self.uid)


@dataclass(eq=False)
class Join:
    """A join as written: `kind` is INNER, LEFT, RIGHT, FULL, LEFT SEMI or LEFT ANTI."""

    kind: str
    left: Tree
    right: Tree
    conjuncts: list[exp.Expr]


@dataclass(eq=False)
class Filtered:
    """A WHERE, or a derived table, view or CTE that only selects and filters: `deterministic`
    where its filter and its projections are, which is when the rule sees through it. `reads`
    are the columns its projection reads (None: all it gets, as `SELECT *` does)."""

    child: Tree
    conjuncts: list[exp.Expr]
    deterministic: bool
    alias: str | None = None
    reads: frozenset[tuple[str, str]] | None = None
    renames: bool = False  # whether its projection renames or computes a column


@dataclass(eq=False)
class Fused:
    """A multi-join the rule made of `inputs`, number `number` of its verdict: an input of the
    joins of Spark's that join it to the rest, which the rule then visits in turn."""

    inputs: list[Tree]
    number: int


Tree = Union[Leaf, Join, Filtered, Fused]


def leaves(tree: Tree) -> Iterator[Leaf]:
    if isinstance(tree, Leaf):
        yield tree
    elif isinstance(tree, Join):
        yield from leaves(tree.left)
        yield from leaves(tree.right)
    elif isinstance(tree, Fused):
        for input_tree in tree.inputs:
            yield from leaves(input_tree)
    else:
        yield from leaves(tree.child)


def named_inputs(tree: Tree) -> list[Tree]:
    """The relations `tree` joins, as the query names them: a leaf, or a view, CTE or derived
    table (one with an alias) that joins nothing itself."""
    if isinstance(tree, Join):
        return named_inputs(tree.left) + named_inputs(tree.right)
    if isinstance(tree, Filtered) and not (tree.alias and not joins(tree.child)):
        return named_inputs(tree.child)
    return [tree]


def joins(tree: Tree) -> bool:
    """Whether `tree` joins relations itself, or through filters over a join."""
    return isinstance(tree, (Join, Fused)) or (isinstance(tree, Filtered) and joins(tree.child))


def name_of(tree: Tree) -> str:
    """A relation's name as the query gives it (see `named_inputs`); a join of several, by
    theirs; a multi-join by its number."""
    under = list(leaves(tree))
    if isinstance(tree, Fused):
        return f"(multi-join {tree.number})"
    if isinstance(tree, Filtered) and tree.alias:
        return tree.alias
    if len(under) == 1:
        return under[0].name
    return "(" + " JOIN ".join(name_of(named) for named in named_inputs(tree)) + ")"


def is_streaming(tree: Tree) -> bool:
    return any(leaf.streaming for leaf in leaves(tree))


def is_deterministic(expression: exp.Expr) -> bool:
    return not any(isinstance(node, _NONDETERMINISTIC_NODES) or (
        isinstance(node, exp.Anonymous) and node.name.lower() in _NONDETERMINISTIC_NAMES)
        for node in expression.walk())


def conjuncts_of(condition: exp.Expr | None) -> list[exp.Expr]:
    """The conjuncts of a condition, a BETWEEN as its two comparisons (as Spark reads it)."""
    if condition is None:
        return []
    condition = condition.unnest()
    if isinstance(condition, exp.And):
        return conjuncts_of(condition.this) + conjuncts_of(condition.expression)
    if isinstance(condition, exp.Between):
        return [exp.GTE(this=condition.this.copy(), expression=condition.args["low"].copy()),
                exp.LTE(this=condition.this.copy(), expression=condition.args["high"].copy())]
    return [condition]
