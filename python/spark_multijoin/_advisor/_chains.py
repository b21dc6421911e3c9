"""The rule's decisions over one join tree: CollapseStreamingJoinChains and EquivalentKeys
(scala/.../optimizer/), step for step, with its reasons in its words (inputs named as written
instead of by their columns).

One difference, on purpose: in an inner chain, every key class with three or more streaming
inputs left after the larger ones fuses into a multi-join of its own (the rule as it is being
changed to), where the rule of 0.1.0 fuses only the largest.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sqlglot import exp

from spark_multijoin._advisor._bounds import Conjunct
from spark_multijoin._advisor._expressions import (
    Column,
    leaves_read,
    null_intolerant_columns,
    unresolved,
)
from spark_multijoin._advisor._tree import (
    Filtered,
    Join,
    Tree,
    is_deterministic,
    is_streaming,
    leaves,
    name_of,
)

CHAIN_KINDS = ("INNER", "LEFT", "RIGHT", "FULL")
HINT = "MULTI_JOIN"
STATE_TTL_HINT = "STATE_TTL"
# The advisor does not follow the STATE_TTL hint; it says so where a statement has one.
STATE_TTL_HINT_READ = (
    f"The {STATE_TTL_HINT} hint gives the inputs it names a state TTL, which the running rule "
    "reads and the advisor does not follow: in a multi-join of inner joins such an input keeps "
    "its rows for that long (it is then not unbounded); in one with outer joins the TTL does not "
    "apply, and the rule warns of it.")
ENABLED_KEY = "multi-join.enabled"
MAX_TABLES_KEY = "multi-join.max-tables"
STATE_TTL_KEY = "multi-join.state-ttl"
PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"
CHECKPOINT_FORMAT_KEY = "spark.sql.streaming.stateStore.checkpointFormatVersion"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


@dataclass(frozen=True)
class Settings:
    """What the rule reads besides the plan: its confs (`state_ttl`: whether the session sets a
    state TTL, which every input of a multi-join of inner joins takes and no input of one with
    outer joins), the leaves the MULTI_JOIN hint names where the hint is what enables it (None:
    the conf enables it for every chain), and why the session's state store keeps every
    streaming join as Spark planned it (None: it does not)."""

    max_tables: int | None
    state_ttl: bool
    named: frozenset[str] | None
    store_problem: str | None = None


@dataclass(eq=False)
class ChainInput:
    """An input of a chain: a subtree the chain does not flatten (a leaf, mostly)."""

    tree: Tree
    name: str
    leaf_uids: frozenset[str]
    covers: frozenset[str]
    streaming: bool
    event_time: Column | None
    event_time_unknown: str | None

    @staticmethod
    def of(tree: Tree) -> ChainInput:
        under = list(leaves(tree))
        # Spark's event-time column of an input: the one column with a watermark in its output.
        times = [(leaf.uid, leaf.event_time) for leaf in under if leaf.event_time]
        unknown = [leaf.event_time_unknown for leaf in under if leaf.event_time_unknown]
        return ChainInput(tree, name_of(tree), frozenset(leaf.uid for leaf in under),
                          frozenset().union(*(leaf.covers for leaf in under)),
                          is_streaming(tree), times[0] if len(times) == 1 else None,
                          unknown[0] if len(under) == 1 and unknown else
                          "joins inputs defined outside this SQL" if unknown else None)


@dataclass
class Chain:
    """The inputs and conditions of a chain, as the rule's Chain: an outer join's ON clause is
    owned by its null-padded input (the right one of a FULL OUTER join); `outer_order` has those
    inputs in the order their joins apply. `joined_above_full_outer` notes an inner input, inner
    condition or LEFT OUTER join that applies above a FULL OUTER join."""

    inputs: list[ChainInput] = field(default_factory=list)
    outer_order: list[int] = field(default_factory=list)
    full_outer: list[int] = field(default_factory=list)
    conjuncts: list[Conjunct] = field(default_factory=list)
    joined_above_full_outer: bool = False
    # Whether a projection inside the chain renames or computes a column.
    aliased: bool = False

    def add_input(self, tree: Tree) -> int:
        self.inputs.append(ChainInput.of(tree))
        return len(self.inputs) - 1

    def add_inner_input(self, tree: Tree) -> int:
        self.joined_above_full_outer |= bool(self.full_outer)
        return self.add_input(tree)

    def add_outer_join(self, padded: int, conjuncts: list[exp.Expr]) -> None:
        self.joined_above_full_outer |= bool(self.full_outer)
        self.outer_order.append(padded)
        self.conjuncts.extend(Conjunct(c, padded) for c in conjuncts)

    def add_full_outer_join(self, right: int, conjuncts: list[exp.Expr]) -> None:
        self.full_outer.append(right)
        self.outer_order.append(right)
        self.conjuncts.extend(Conjunct(c, right) for c in conjuncts)

    def add_conjuncts(self, conjuncts: list[exp.Expr]) -> None:
        # A Filter with nothing to filter is no Filter in Spark's plan.
        if conjuncts:
            self.joined_above_full_outer |= bool(self.full_outer)
            self.conjuncts.extend(Conjunct(c, None) for c in conjuncts)

    @property
    def names(self) -> str:
        return ", ".join(chain_input.name for chain_input in self.inputs)

    def inputs_of(self, expression: exp.Expr) -> set[int]:
        read = leaves_read(expression)
        return {i for i, chain_input in enumerate(self.inputs) if read & chain_input.leaf_uids}


def is_chain_join(tree: Tree) -> bool:
    """A join the rule starts a chain at: of a kind it takes, both sides streaming."""
    return isinstance(tree, Join) and tree.kind in CHAIN_KINDS and \
        is_streaming(tree.left) and is_streaming(tree.right)


def continues_chain(tree: Tree) -> bool:
    """Whether a chain goes into `tree`, seen through deterministic projections and filters:
    a chain join, or an inner join of a streaming and a static side."""
    if isinstance(tree, Filtered):
        return tree.deterministic and continues_chain(tree.child)
    if not isinstance(tree, Join):
        return False
    stream_static = tree.kind == "INNER" and is_streaming(tree.left) != is_streaming(tree.right)
    return (is_chain_join(tree) or stream_static) and all(map(is_deterministic, tree.conjuncts))


def flatten(tree: Tree, chain: Chain) -> None:
    if isinstance(tree, Join) and continues_chain(tree) and tree.kind == "INNER":
        flatten(tree.left, chain)
        flatten(tree.right, chain)
        chain.add_conjuncts(tree.conjuncts)
    elif isinstance(tree, Join) and continues_chain(tree) and tree.kind == "LEFT":
        flatten(tree.left, chain)
        chain.add_outer_join(chain.add_input(tree.right), tree.conjuncts)
    elif isinstance(tree, Join) and continues_chain(tree) and tree.kind == "RIGHT":
        # A LEFT OUTER join with the sides swapped; the output keeps their order.
        padded = chain.add_input(tree.left)
        flatten(tree.right, chain)
        chain.add_outer_join(padded, tree.conjuncts)
    elif isinstance(tree, Join) and continues_chain(tree) and tree.kind == "FULL":
        flatten(tree.left, chain)
        chain.add_full_outer_join(chain.add_input(tree.right), tree.conjuncts)
    elif isinstance(tree, Filtered) and continues_chain(tree):
        flatten(tree.child, chain)
        chain.add_conjuncts(tree.conjuncts)
        chain.aliased |= tree.renames
    else:
        chain.add_inner_input(tree)


def outer_joins_made_inner(tree: Tree, notes: list[str],
                           rejected: frozenset[str] = frozenset()) -> Tree:
    """As the rule's `outerJoinsMadeInner`: `tree`, copied where it changes, with the outer joins
    of its chain made inner where a condition applied above them rejects their null-padded rows
    (Spark's optimizer leaves those whose rejecting condition belongs to a join it made inner
    only after inferring filters), each said in `notes`. `rejected` are the leaves with a column
    whose nulls a condition above `tree` rejects; a padded side's columns are all null."""
    if isinstance(tree, Join) and continues_chain(tree):
        def pads_rejected(side: Tree) -> bool:
            return any(leaf.uid in rejected for leaf in leaves(side))
        kind = tree.kind
        padded_left, padded_right = pads_rejected(tree.left), pads_rejected(tree.right)
        # A FULL OUTER join whose right side only is rejected stays, as in the rule.
        if (kind == "LEFT" and padded_right) or (kind == "RIGHT" and padded_left) or \
                (kind == "FULL" and padded_left and padded_right):
            kind = "INNER"
        elif kind == "FULL" and padded_left:
            kind = "LEFT"
        if kind != tree.kind:
            notes.append(_made_inner_note(tree, kind, padded_left, padded_right))
        # An outer join's ON clause pads the rows it does not match instead of dropping them.
        below = rejected | _null_rejected(tree.conjuncts) if kind == "INNER" else rejected
        left = outer_joins_made_inner(tree.left, notes, below) if kind != "RIGHT" else tree.left
        right = outer_joins_made_inner(tree.right, notes, below) \
            if kind in ("INNER", "RIGHT") else tree.right
        return Join(kind, left, right, tree.conjuncts)
    if isinstance(tree, Filtered) and continues_chain(tree):
        return replace(tree, child=outer_joins_made_inner(
            tree.child, notes, rejected | _null_rejected(tree.conjuncts)))
    return tree


def _made_inner_note(join: Join, kind: str, padded_left: bool, padded_right: bool) -> str:
    """The rule's note on an outer join it runs as `kind`."""
    sides = {"LEFT": [join.right], "RIGHT": [join.left]}.get(
        join.kind, [side for side, padded in ((join.left, padded_left), (join.right, padded_right))
                    if padded])
    padded = " and ".join(", ".join(leaf.name for leaf in leaves(side)) for side in sides)
    runs_as = "an INNER" if kind == "INNER" else f"a {kind} OUTER"
    return (f"The {join.kind} OUTER join that pads {padded} with nulls runs as {runs_as} join: a "
            "condition above it rejects those null-padded rows (Spark's optimizer does the same "
            "where that condition is a filter right above the join).")


def _null_rejected(conjuncts: list[exp.Expr]) -> frozenset[str]:
    """The leaves with a column whose nulls make one of `conjuncts` null or false."""
    def rejected_by(conjunct: exp.Expr) -> set[Column]:
        conjunct = conjunct.unnest()
        negated = conjunct.this.unnest() if isinstance(conjunct, exp.Not) else None
        # `x IS NOT NULL` rejects the nulls of x's null-intolerant columns, as Spark infers them.
        if isinstance(negated, exp.Is) and isinstance(negated.expression, exp.Null):
            return null_intolerant_columns(negated.this)
        return null_intolerant_columns(conjunct)
    return frozenset(uid for conjunct in conjuncts for uid, _ in rejected_by(conjunct))


KeyClass = list[tuple[int, exp.Expr]]


def key_classes(chain: Chain) -> list[KeyClass]:
    """As EquivalentKeys.all: the classes of expressions the chain's equalities make equal,
    directly or through other members, in order of first appearance; members are deterministic
    expressions over one input."""
    parent: dict[str, str] = {}
    members: dict[str, tuple[int, exp.Expr]] = {}

    def root(key: str) -> str:
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    def add(input_index: int, member: exp.Expr) -> str:
        key = member.sql()
        if key not in parent:
            parent[key] = key
            members[key] = (input_index, member)
        return key

    for conjunct in chain.conjuncts + _guaranteed(chain):
        expression = conjunct.expression
        if not isinstance(expression, exp.EQ):
            continue
        left, right = _input_of(chain, expression.this), _input_of(chain, expression.expression)
        if left is not None and right is not None:
            left_root = root(add(left, expression.this))
            right_root = root(add(right, expression.expression))
            if left_root != right_root:
                parent[right_root] = left_root
    classes: dict[str, KeyClass] = {}
    for key in members:
        classes.setdefault(root(key), []).append(members[key])
    return list(classes.values())


def _guaranteed(chain: Chain) -> list[Conjunct]:
    """The equalities each input guarantees itself (Spark's constraints of its plan: its
    filters', and its inner joins'): they link classes too."""
    return [Conjunct(c, None) for chain_input in chain.inputs
            for c in _constraints(chain_input.tree) if isinstance(c, exp.EQ)]


def _constraints(tree: Tree) -> list[exp.Expr]:
    if isinstance(tree, Filtered):
        return tree.conjuncts + _constraints(tree.child)
    if not isinstance(tree, Join):
        return []
    if tree.kind in ("INNER", "LEFT SEMI"):
        return tree.conjuncts + _constraints(tree.left) + _constraints(tree.right)
    # An outer join guarantees what its preserved side does.
    preserved = {"LEFT": [tree.left], "LEFT ANTI": [tree.left], "RIGHT": [tree.right]}
    return [c for side in preserved.get(tree.kind, []) for c in _constraints(side)]


def _input_of(chain: Chain, expression: exp.Expr) -> int | None:
    read = leaves_read(expression)
    if not read or unresolved(expression) or not is_deterministic(expression):
        return None
    return next((i for i, chain_input in enumerate(chain.inputs)
                 if read <= chain_input.leaf_uids), None)

