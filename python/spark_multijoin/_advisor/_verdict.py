"""The verdict on one join tree, and the walk over the tree that makes it, as the rule's
`transformDown` visits joins: a chain join is collapsed; where it keeps Spark's joins, the joins
below it are tried in turn; a multi-join's inputs are visited for chains of their own."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from sqlglot import exp

from spark_multijoin._advisor._chains import (
    CHAIN_KINDS,
    ENABLED_KEY,
    HINT,
    STATE_TTL_KEY,
    Chain,
    KeyClass,
    Settings,
    flatten,
    is_chain_join,
    key_classes,
)
from spark_multijoin._advisor._collapse import MultiJoin, Outcome, collapse
from spark_multijoin._advisor._expressions import Column, columns, unresolved
from spark_multijoin._advisor._tree import (
    Filtered,
    Fused,
    Join,
    Tree,
    is_streaming,
    leaves,
    name_of,
    named_inputs,
)

# Catalyst's names of the join types a multi-join does not take, as the rule's note shows them.
_SPARK_JOIN_TYPES = {"LEFT SEMI": "LeftSemi", "LEFT ANTI": "LeftAnti"}


@dataclass(frozen=True)
class Verdict:
    """What spark-multijoin's rule would do with one join tree of a statement.

    Inputs are named as written: the alias if there is one, else the table name (`name#2` where
    a CTE or view is read twice). Conditions are shown over the relations they read, with the
    views, CTEs and subqueries in between inlined, as Spark inlines them.

    - `fused_groups`: the inputs of each multi-join that would be built, one list per multi-join
      (where `multi-join.max-tables` splits a chain, a later one first takes the output of the
      one before, named `(multi-join n)`, n counting from 1); empty where every join stays
      Spark's.
    - `keys`: per fused group, its key: per key column (two or more: a composite key), the
      expression each of its inputs is looked up by, which the conditions make equal.
    - `key_classes`: every class of expressions the chain's equalities make equal, directly or
      transitively.
    - `residual_conditions`: the conditions between inputs that are not key equalities.
    - `bounded`: per input of a multi-join, whether interval conditions between event times bound
      it (its rows are evicted as the watermark passes), None where the advisor cannot know;
      `state_kept` says for how long, in words.
    - `reasons`: why each join that stays Spark's does so, in the words the rule logs.
    - `warnings`: what the rule logs as a WARNING (an unbounded input, a hint naming nothing).
    - `unknowns`: what the advisor cannot know from SQL and what it would change.
    - `notes`: what Spark's optimizer changes first (an outer join it makes inner).
    """

    location: str
    statement: str
    inputs: list[str]
    streaming: list[str]
    fused_groups: list[list[str]]
    keys: list[list[list[str]]]
    key_classes: list[list[str]]
    residual_conditions: list[str]
    bounded: dict[str, bool | None]
    state_kept: dict[str, str]
    reasons: list[str]
    warnings: list[str]
    unknowns: list[str]
    notes: list[str]
    streaming_chain_inputs: int

    @property
    def fuses(self) -> bool:
        return bool(self.fused_groups)

    @property
    def misses_fusion(self) -> bool:
        """A chain of three or more streaming inputs of which none fuse."""
        return self.streaming_chain_inputs >= 3 and not self.fused_groups


@dataclass
class TreeContext:
    """What a verdict needs besides its tree: where it is, the rule's settings, how to show
    conditions, and what the statement as a whole could not tell."""

    location: str
    statement: str
    settings: Settings
    render: Callable[[exp.Expr], str]
    schema_given: bool
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unknowns: list[str] = field(default_factory=list)


def verdict_of(root: Tree, context: TreeContext) -> Verdict:
    walk = _Walk(context)
    if not any(leaf.streaming for leaf in leaves(root)):
        walk.reasons.append("Batch queries are never rewritten: no input of this join is "
                            "streaming.")
    elif context.settings.named is not None and not context.settings.named and \
            _has_chain_join(root):
        walk.reasons.append(
            f"Streaming joins run as Spark planned them: {ENABLED_KEY} is false. Set it to "
            "true to run chains of joins on one key as one StreamingMultiJoin (or name a "
            f"chain's inputs in the {HINT} hint).")
    elif context.settings.store_problem and _has_chain_join(root):
        # The rule logs it as a warning: a conf keeps every chain from fusing.
        problem = f"Streaming joins run as Spark planned them: {context.settings.store_problem}"
        walk.reasons.append(problem)
        context.warnings.append(problem)
    else:
        walk.visit(root)
        if not walk.outcomes and not walk.reasons:
            walk.reasons.append("No join here has streaming inputs on both sides: joins of a "
                                "stream with static inputs keep no state and run as Spark "
                                "planned them.")
    return walk.verdict(root)


def _has_chain_join(tree: Tree) -> bool:
    return _streaming_chain_inputs(tree) > 0


def _streaming_chain_inputs(tree: Tree) -> int:
    """The most streaming inputs of a chain of `tree`, whatever the rule makes of it."""
    if isinstance(tree, Filtered):
        return _streaming_chain_inputs(tree.child)
    if not isinstance(tree, Join):
        return 0
    below = max(_streaming_chain_inputs(tree.left), _streaming_chain_inputs(tree.right))
    if not is_chain_join(tree):
        return below
    chain = Chain()
    flatten(tree, chain)
    return max(below, sum(chain_input.streaming for chain_input in chain.inputs))


class _Walk:
    def __init__(self, context: TreeContext) -> None:
        self._context = context
        self.outcomes: list[Outcome] = []
        self.reasons: list[str] = []

    def visit(self, tree: Tree, needed: frozenset[Column] | None = None) -> None:
        """Visits `tree`, of whose output the plan above reads `needed` (None: all of it)."""
        if isinstance(tree, Filtered):
            read = tree.reads if tree.reads is not None else needed
            self.visit(tree.child, _with_columns(read, tree.conjuncts))
        elif isinstance(tree, Fused):
            for input_tree in tree.inputs:
                self.visit(input_tree)
        elif isinstance(tree, Join) and is_chain_join(tree):
            number = 1 + sum(len(outcome.multi_joins) for outcome in self.outcomes)
            outcome = collapse(tree, self._context.settings, self._context.render, needed,
                               number)
            self.outcomes.append(outcome)
            plan = outcome.plan
            if plan is None:
                self.visit(tree.left, _with_columns(needed, tree.conjuncts))
                self.visit(tree.right, _with_columns(needed, tree.conjuncts))
            elif outcome.projected or not isinstance(plan, Join):
                # Spark's transformDown goes on below the rule's result: its joins above the
                # multi-joins are chains to collapse in turn.
                self.visit(plan)
            else:
                self.visit(plan.left)
                self.visit(plan.right)
        elif isinstance(tree, Join):
            if tree.kind not in CHAIN_KINDS and is_streaming(tree.left) and \
                    is_streaming(tree.right):
                self.reasons.append(
                    f"A streaming {_SPARK_JOIN_TYPES.get(tree.kind, tree.kind)} join keeps "
                    "Spark's binary operator: multi-joins are of INNER, LEFT OUTER, RIGHT OUTER "
                    "and FULL OUTER joins.")
            self.visit(tree.left, _with_columns(needed, tree.conjuncts))
            self.visit(tree.right, _with_columns(needed, tree.conjuncts))

    def verdict(self, root: Tree) -> Verdict:
        render = self._context.render
        fused = [(outcome.chain, multi_join) for outcome in self.outcomes
                 for multi_join in outcome.multi_joins if outcome.chain is not None]
        chains = [outcome.chain for outcome in self.outcomes if outcome.chain is not None]
        bounded, kept, unknowns = _state_kept(fused, self._context.settings.state_ttl)
        return Verdict(
            location=self._context.location,
            statement=self._context.statement,
            inputs=[name_of(named) for named in named_inputs(root)],
            streaming=[name_of(named) for named in named_inputs(root) if is_streaming(named)],
            fused_groups=_groups(fused),
            keys=[[[render(member) for _, member in key_class]
                   for key_class in multi_join.key_members()] for _, multi_join in fused],
            key_classes=[[render(member) for _, member in key_class]
                         for key_class in (key_classes(chains[0]) if chains else [])],
            residual_conditions=_residuals(fused, render),
            bounded=bounded,
            state_kept=kept,
            reasons=self.reasons + [reason for outcome in self.outcomes
                                    for reason in ([outcome.reason] if outcome.reason else [])
                                    + outcome.notes],
            warnings=self._context.warnings + [w for o in self.outcomes for w in o.warnings],
            unknowns=_unique(self._context.unknowns + _column_unknowns(chains) + unknowns +
                             _outer_unknowns(self.outcomes) +
                             _type_unknowns(fused, self._context.schema_given)),
            notes=self._context.notes,
            streaming_chain_inputs=_streaming_chain_inputs(root),
        )


def _with_columns(needed: frozenset[Column] | None,
                  conjuncts: list[exp.Expr]) -> frozenset[Column] | None:
    return None if needed is None else needed.union(*map(columns, conjuncts))


def _groups(fused: list[tuple[Chain, MultiJoin]]) -> list[list[str]]:
    """The inputs of each multi-join, by name; a later one of a split chain first takes the
    output of the one before it, `(multi-join n)`."""
    groups: list[list[str]] = []
    for chain, multi_join in fused:
        earlier = [f"(multi-join {len(groups)})"] if multi_join.earlier else []
        groups.append(earlier + [chain.inputs[i].name for i in multi_join.inputs])
    return groups


def _residuals(fused: list[tuple[Chain, MultiJoin]], render: Callable[[exp.Expr], str]
               ) -> list[str]:
    """The conditions between two or more inputs of fused chains that no key implies."""
    found = []
    for chain, multi_join in fused:
        if multi_join.earlier:
            continue
        for conjunct in chain.conjuncts:
            expression = conjunct.expression
            if len(chain.inputs_of(expression)) >= 2 and \
                    not _implied_by_key(expression, multi_join.key):
                found.append(render(expression))
    return _unique(found)


def _implied_by_key(conjunct: exp.Expr, key: list[KeyClass]) -> bool:
    """Whether `conjunct` equates two members of one key class, which the multi-join enforces."""
    if not isinstance(conjunct, exp.EQ):
        return False
    sides = {conjunct.this.sql(), conjunct.expression.sql()}
    return any(sides <= {member.sql() for _, member in key_class} for key_class in key)


def _state_kept(fused: list[tuple[Chain, MultiJoin]], state_ttl: bool
                ) -> tuple[dict[str, bool | None], dict[str, str], list[str]]:
    """Per input of a multi-join, whether time bounds limit its rows and how long they are
    kept; with `state_ttl`, an input of inner joins that none limits is kept until its TTL."""
    bounded: dict[str, bool | None] = {}
    kept: dict[str, str] = {}
    unknown: dict[str, list[str]] = {}
    for chain, multi_join in fused:
        for i, offset in zip(multi_join.inputs, multi_join.offsets):
            chain_input = chain.inputs[i]
            name = chain_input.name
            if offset is not None and chain_input.event_time is not None:
                bounded[name] = True
                time = f"{name}.{chain_input.event_time[1]}"
                kept[name] = f"until the watermark passes {time}" + (
                    f" {'+' if offset < 0 else '-'} {_duration(abs(offset))}" if offset else "")
            elif chain_input.event_time_unknown and chain_input.event_time is None:
                bounded[name] = None
                kept[name] = "not known here"
                unknown.setdefault(chain_input.event_time_unknown, []).append(name)
            elif state_ttl and not chain.outer_order:
                bounded[name] = False
                kept[name] = f"until its state TTL ({STATE_TTL_KEY}) passes"
            else:
                bounded[name] = False
                kept[name] = "for good: " + ("no interval condition bounds it"
                                             if chain_input.event_time else "it has no watermark")
    return bounded, kept, [f"{', '.join(names)}: {what}; whether a watermark bounds "
                           f"{'their' if len(names) > 1 else 'its'} rows in the multi-join is "
                           "not known here." for what, names in unknown.items()]


def _duration(millis: int) -> str:
    for unit, size in (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000),
                       ("second", 1000)):
        if millis >= size and millis % size == 0:
            count = millis // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{millis} ms"


def _column_unknowns(chains: list[Chain]) -> list[str]:
    columns = _unique([column for chain in chains for conjunct in chain.conjuncts
                       for column in unresolved(conjunct.expression)])
    return [f"Which input {column} comes from is not known without a schema: qualify it "
            "(input.column) or pass schema=; conditions on it count for no key."
            for column in columns]


def _outer_unknowns(outcomes: list[Outcome]) -> list[str]:
    found = []
    for outcome in outcomes:
        if outcome.chain is None or not outcome.unbounded:
            continue
        unknown: dict[str, list[str]] = {}
        for chain_input in outcome.chain.inputs:
            if chain_input.event_time_unknown:
                unknown.setdefault(chain_input.event_time_unknown, []).append(chain_input.name)
        found.extend(f"{', '.join(names)}: {what}; an outer chain fuses only where a watermark "
                     "bounds every input, which the advisor cannot tell for "
                     f"{'these' if len(names) > 1 else 'it'}." for what, names in unknown.items())
    return found


def _type_unknowns(fused: list[tuple[Chain, MultiJoin]], schema_given: bool) -> list[str]:
    if not fused or schema_given:
        return []
    return ["The key's type is not known without a schema: the rule keeps Spark's joins for a "
            "key not compared by its bytes."]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
