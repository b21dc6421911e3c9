"""One chain collapsed, as the rule's `collapse`: which streaming inputs fuse into multi-joins on
which key, how an outer chain's inputs form a tree, how long each input's rows are kept; or the
rule's reason for keeping Spark's joins."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from sqlglot import exp

from spark_multijoin._advisor._bounds import Conjunct, JoinTree, eviction_offsets
from spark_multijoin._advisor._chains import (
    HINT,
    MAX_TABLES_KEY,
    Chain,
    ChainInput,
    KeyClass,
    Settings,
    continues_chain,
    flatten,
    key_classes,
    outer_joins_made_inner,
)
from spark_multijoin._advisor._expressions import (
    Column,
    columns,
    leaves_read,
)
from spark_multijoin._advisor._outer import UNBOUNDED, outer_join_tree
from spark_multijoin._advisor._tree import Fused, Join, Tree, is_streaming, leaves, name_of

Render = Callable[[exp.Expr], str]


@dataclass
class MultiJoin:
    """One multi-join: its inputs (indices into the chain), its key, per input the offset from
    the watermark at or below which its rows are evicted (None: kept for good), and the inputs of
    the earlier multi-joins whose output it also takes (where max-tables splits a chain)."""

    inputs: list[int]
    key: list[KeyClass]
    offsets: list[int | None]
    earlier: list[int] = field(default_factory=list)

    def key_members(self) -> list[KeyClass]:
        """Per key column, the member each input is looked up by, as the rule takes it: the
        first of the class over it (over any of theirs, for the output of earlier multi-joins)."""
        takers = ([set(self.earlier)] if self.earlier else []) + [{i} for i in self.inputs]
        return [[next(member for member in key_class if member[0] in taker) for taker in takers]
                for key_class in self.key]


@dataclass
class Outcome:
    """What the rule does with one chain: its multi-joins, or the reason it keeps Spark's joins,
    and what it says besides."""

    chain: Chain | None
    multi_joins: list[MultiJoin] = field(default_factory=list)
    reason: str | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # An outer chain kept as Spark planned it because an input is not bounded in event time.
    unbounded: bool = False
    # What replaces the chain's top join in Spark's plan, and whether a projection sits above it
    # (the rule's withOutputOf: where the columns come out in another order, or are computed).
    plan: Tree | None = None
    projected: bool = False


def collapse(join: Join, settings: Settings, render: Render,
             needed: frozenset[Column] | None, number: int) -> Outcome:
    """The rule's `collapse` of the chain `join` starts; `needed` are the columns of its output
    that the plan above it reads (None: all); its multi-joins are numbered from `number`."""
    if not continues_chain(join):
        return Outcome(None, reason="A streaming join stays as Spark planned it: its condition "
                       "is not deterministic: " + " AND ".join(map(render, join.conjuncts)))
    chain = Chain()
    made_inner: list[str] = []
    flatten(outer_joins_made_inner(join, made_inner), chain)
    outcome = _collapse_chain(chain, join, settings, render, needed, number)
    if outcome.multi_joins:
        outcome.notes += made_inner
    return outcome


def _collapse_chain(chain: Chain, join: Join, settings: Settings, render: Render,
                    needed: frozenset[Column] | None, number: int) -> Outcome:
    """`collapse` of the flattened `chain` of `join`."""
    groups = _fused_groups(chain, settings, render)
    if isinstance(groups, str):
        return Outcome(chain, reason=groups)
    if chain.outer_order:
        return _outer(chain, groups[0][1], settings, render, number)
    outcome = Outcome(chain)
    plans = [_split(chain, group, key, settings, outcome, number)
             for group, key in groups]
    joined = _joined_above(chain, [group for group, _ in groups], plans, needed)
    if isinstance(joined, str):
        return Outcome(chain, reason=joined)
    outcome.plan = joined
    outcome.projected = chain.aliased or \
        [leaf.uid for leaf in leaves(joined)] != [leaf.uid for leaf in leaves(join)]
    others = [i for i in range(len(chain.inputs)) if not any(i in g for g, _ in groups)]
    if others:
        outcome.notes.append(_collapsed_note(chain, groups, others, settings))
    return outcome


def _collapsed_note(chain: Chain, groups: list[tuple[list[int], list[KeyClass]]],
                    others: list[int], settings: Settings) -> str:
    """The rule's note on a chain it collapsed, where Spark's joins join some of its inputs:
    which, and why each stays out."""
    fused = "; ".join(f"{', '.join(chain.inputs[i].name for i in group)} on {len(key)} key "
                      "column(s)" for group, key in groups)
    why = ", ".join(f"{chain.inputs[i].name} " + (
        "does not share the key of three or more streaming inputs"
        if chain.inputs[i].streaming else "is static") for i in others)
    hint = f" (by the {HINT} hint)" if settings.named is not None else ""
    return (f"Collapsed a chain of {len(chain.inputs)} joins into {len(groups)} multi-join(s) of "
            f"streaming inputs: {fused}. Joined by Spark's joins: {why}.{hint}")


@dataclass
class _Part:
    """What Spark's joins join above the multi-joins: an input or a group's multi-join, with
    its plan."""

    name: str
    plan: Tree

    @property
    def uids(self) -> list[str]:
        return [leaf.uid for leaf in leaves(self.plan)]


def _joined_above(chain: Chain, groups: list[list[int]], plans: list[Tree],
                  needed: frozenset[Column] | None) -> Tree | str:
    """As the rule's joinedAbove: the first group's multi-join, then the static inputs, the
    other groups' multi-joins and the streaming inputs left, each joined by Spark's join as
    soon as a condition links it to what is below (else the next in that order); or why one of
    those stream-stream joins could not run (eventTimeProblem): a side carries more than one
    event-time column that it or the plan above reads."""
    grouped = {i for group in groups for i in group}
    rest = [i for i in range(len(chain.inputs)) if i not in grouped]
    below = _Part("", plans[0])
    parts = [_Part(chain.inputs[i].name, chain.inputs[i].tree) for i in rest
             if not chain.inputs[i].streaming] + \
        [_Part(name_of(plan), plan) for plan in plans[1:]] + \
        [_Part(chain.inputs[i].name, chain.inputs[i].tree) for i in rest
         if chain.inputs[i].streaming]
    pending = [c.expression for c in chain.conjuncts
               if not any(chain.inputs_of(c.expression) <= set(group) for group in groups)]
    while parts:
        following = next((p for p in parts if _linked(below, p, pending)), parts[0])
        read = None if needed is None else needed.union(*map(columns, pending))
        problem = _event_time_problem(below, following, read)
        if problem:
            return problem
        placed = [c for c in pending if leaves_read(c) <= set(below.uids + following.uids)]
        below = _Part("", Join("INNER", below.plan, following.plan, placed))
        pending = [c for c in pending if c not in placed]
        parts.remove(following)
    return below.plan


def _event_time_problem(below: _Part, following: _Part,
                        read: frozenset[Column] | None) -> str | None:
    if not (is_streaming(below.plan) and is_streaming(following.plan)):
        return None
    for side in (below, following):
        seen = [leaf.event_time for leaf in leaves(side.plan) if leaf.event_time and
                (read is None or (leaf.uid, leaf.event_time) in read)]
        if len(seen) > 1:
            return ("A chain of streaming joins stays as Spark planned it: its inputs outside a "
                    "multi-join are joined by Spark's stream-stream join, which would see the "
                    f"event-time columns {', '.join(seen)} on one side and takes only one. Drop "
                    f"all but one of them before {following.name} is joined, or join it on the "
                    "key.")
    return None


def _linked(below: _Part, part: _Part, pending: list[exp.Expr]) -> bool:
    return any(leaves_read(c) <= set(below.uids) | set(part.uids) and
               leaves_read(c) & set(below.uids) and leaves_read(c) & set(part.uids)
               for c in pending)


def _fused_groups(chain: Chain, settings: Settings,
                  render: Render) -> str | list[tuple[list[int], list[KeyClass]]]:
    """The streaming inputs each multi-join takes, with the classes of its key, or why none:
    with outer joins every input, on a key spanning them all; with inner joins only, the inputs
    of the class with members over the most streaming inputs (three or more), then of the next
    among those left, and so on. Only the inputs the MULTI_JOIN hint names, where the hint is
    what enables the rule."""
    count = len(chain.inputs)
    named = [settings.named is None or bool(chain_input.covers & settings.named)
             for chain_input in chain.inputs]
    if chain.outer_order and not all(named):
        return (f"A chain of streaming joins with outer joins stays as Spark planned it: the "
                f"{HINT} hint does not name all its inputs ({chain.names}).")
    streaming = [i for i in range(count) if chain.inputs[i].streaming and named[i]]
    if len(streaming) < 3:
        return ("A streaming join of two inputs stays as Spark planned it: Spark's join of two "
                f"inputs already keeps only input rows ({chain.names}).")
    if chain.outer_order and len(streaming) < count:
        return (f"A chain of streaming joins with outer joins and a static input stays as Spark "
                f"planned it ({chain.names}).")
    classes = key_classes(chain)
    left = set(range(count)) if chain.outer_order else set(streaming)
    groups: list[tuple[list[int], list[KeyClass]]] = []
    while not (chain.outer_order and groups):
        group = max(({i for i, _ in key_class} & left for key_class in classes),
                    key=len, default=set())
        if len(group) < 3 or (chain.outer_order and len(group) < count):
            break
        key = [[(i, member) for i, member in key_class if i in group]
               for key_class in classes if group <= {i for i, _ in key_class}]
        groups.append((sorted(group), key))
        left -= group
    if groups:
        return groups
    return (f"A chain of {count} streaming joins stays as Spark planned it: no common key, the "
            "equi-join conditions do not make one key equal across three or more streaming "
            f"inputs ({chain.names}). Conditions: " +
            " AND ".join(render(c.expression) for c in chain.conjuncts))


def _split(chain: Chain, group: list[int], key: list[KeyClass], settings: Settings,
           outcome: Outcome, number: int) -> Tree:
    """The multi-joins of an inner group, numbered on from `number` and the ones `outcome`
    has: one, or with max-tables below its size, one of the first max-tables inputs, then the
    next ones max-tables - 1 at a time over the one before (a last one left over is joined by
    Spark's join). Their plan."""
    size = settings.max_tables or len(chain.inputs)
    chunks = [group[:size]] + [group[start:start + size - 1]
                               for start in range(size, len(group), size - 1)]
    earlier: list[int] = []
    plan: Tree | None = None
    for chunk in chunks:
        trees = [chain.inputs[i].tree for i in chunk]
        if len(chunk) == 1:
            outcome.notes.append(f"{chain.inputs[chunk[0]].name} is joined to the multi-joins "
                                 f"by Spark's join: {MAX_TABLES_KEY} = {size} leaves it over.")
            uids = {leaf.uid for leaf in leaves(plan)} | chain.inputs[chunk[0]].leaf_uids
            plan = Join("INNER", plan, trees[0],
                        [c.expression for c in chain.conjuncts if leaves_read(c.expression)
                         and leaves_read(c.expression) <= uids and
                         not leaves_read(c.expression) <= {leaf.uid for leaf in leaves(plan)}])
            continue
        offsets = _inner_offsets(chain, earlier, chunk)
        outcome.multi_joins.append(MultiJoin(chunk, key, offsets, earlier))
        if not settings.state_ttl:  # the session's TTL bounds every input of inner joins
            outcome.warnings.extend(_unbounded_warnings(chain, earlier, chunk, offsets))
        plan = Fused(([plan] if plan is not None else []) + trees,
                     number + len(outcome.multi_joins) - 1)
        earlier = earlier + chunk
    return plan


def _inner_offsets(chain: Chain, earlier: list[int], chunk: list[int]) -> list[int | None]:
    """The eviction offsets of a multi-join of inner joins over `chunk`, and over the output of
    the multi-joins of `earlier` where there are any, with the conditions it can check."""
    taken = [chain.inputs[i] for i in chunk]
    if earlier:
        taken = [_combined([chain.inputs[i] for i in earlier])] + taken
    uids = frozenset().union(*(chain_input.leaf_uids for chain_input in taken))
    conjuncts = [Conjunct(c.expression, None) for c in chain.conjuncts
                 if c.outer_input is None and chain.inputs_of(c.expression)
                 and all(chain.inputs[i].leaf_uids <= uids for i in chain.inputs_of(c.expression))]
    offsets = eviction_offsets([t.event_time for t in taken], [t.leaf_uids for t in taken],
                               conjuncts, JoinTree.inner(len(taken)))
    return offsets[1:] if earlier else offsets


def _combined(inputs: list[ChainInput]) -> ChainInput:
    """The output of a multi-join as the input of the next: its event-time column is the one
    column with a watermark among its inputs'."""
    times = [chain_input.event_time for chain_input in inputs if chain_input.event_time]
    return ChainInput(inputs[0].tree, "(multi-join)",
                      frozenset().union(*(chain_input.leaf_uids for chain_input in inputs)),
                      frozenset(), True, times[0] if len(times) == 1 else None, None)


def _unbounded_warnings(chain: Chain, earlier: list[int], chunk: list[int],
                        offsets: list[int | None]) -> list[str]:
    """Where some input of a multi-join has event times (the output of the earlier multi-joins
    too), its state is meant to be bounded: which inputs no interval condition bounds (the
    rule's WARNING)."""
    inputs = [chain.inputs[i] for i in chunk]
    taken = inputs + ([_combined([chain.inputs[i] for i in earlier])] if earlier else [])
    if not any(chain_input.event_time for chain_input in taken):
        return []
    warnings = []
    for chain_input, offset in zip(inputs, offsets):
        if offset is not None:
            continue
        why = ("it has no event-time column with a watermark" if chain_input.event_time is None
               else f"no interval condition bounds {chain_input.event_time[1]} against every "
               "other input's event time, directly or through other inputs")
        warnings.append(f"Input {chain_input.name} of a streaming multi-join is unbounded: {why}, "
                        "so its rows are kept in state for good.")
    return warnings


def _outer(chain: Chain, key: list[KeyClass], settings: Settings, render: Render,
           number: int) -> Outcome:
    """A chain with outer joins: one multi-join of all its inputs as a tree, or why not."""
    count = len(chain.inputs)
    tree_or_problem = outer_join_tree(chain, key, settings, render)
    if isinstance(tree_or_problem, str):
        return Outcome(chain, reason=f"A chain of {count} streaming joins with outer joins stays "
                       f"as Spark planned it: {tree_or_problem} ({chain.names}).",
                       unbounded=tree_or_problem == UNBOUNDED)
    _, offsets = tree_or_problem
    return Outcome(chain, [MultiJoin(list(range(count)), key, offsets)],
                   plan=Fused([chain_input.tree for chain_input in chain.inputs], number))
