"""The outer-tree checks of the rule's outerJoinTree: whether a chain with outer joins can run as
one multi-join of all its inputs as a tree, and the eviction offsets it then has."""

from __future__ import annotations

from typing import Callable

from sqlglot import exp

from spark_multijoin._advisor._bounds import JoinTree, eviction_offsets
from spark_multijoin._advisor._chains import (
    MAX_TABLES_KEY,
    Chain,
    KeyClass,
    Settings,
    key_classes,
)
from spark_multijoin._advisor._expressions import null_when_any_column_is_null

Render = Callable[[exp.Expr], str]


def outer_join_tree(chain: Chain, key: list[KeyClass], settings: Settings,
                     render: Render) -> str | tuple[JoinTree, list[int | None]]:
    """As the rule's outerJoinTree: the tree and eviction offsets, or the rule it breaks."""
    count = len(chain.inputs)
    if settings.max_tables is not None and settings.max_tables < count:
        return f"{MAX_TABLES_KEY} = {settings.max_tables} would split it"
    problem = _full_outer_problem(chain, render) or _padded_side_problem(chain, render) or \
        _inner_key_problem(chain, key, render)
    if problem:
        return problem
    inner = [i for i in range(count) if i not in chain.outer_order]
    join_order = inner + chain.outer_order
    parents: list[int | None] = [None] * count
    for place, outer in enumerate(chain.outer_order):
        joined_before = join_order[:len(inner) + place]
        on_clause = [c.expression for c in chain.conjuncts if c.outer_input == outer]
        problem = _outer_key_problem(chain, outer, on_clause, joined_before, key, render)
        if problem:
            return problem
        reads = set().union(*map(chain.inputs_of, on_clause)) - {outer}
        parents[outer] = next((i for i in reversed(joined_before) if i in reads), inner[0])
    tree = JoinTree(tuple(parents), tuple(chain.outer_order), frozenset(chain.full_outer))
    offsets = eviction_offsets([i.event_time for i in chain.inputs],
                               [i.leaf_uids for i in chain.inputs], chain.conjuncts, tree)
    if None in offsets:
        return UNBOUNDED
    return tree, offsets


UNBOUNDED = ("an outer join's null-padded rows come out once the watermark shows a row can no "
             "longer match, which needs watermarks and interval conditions bounding every "
             "input's event time (a state TTL cannot stand in for them: null-padded rows would "
             "depend on the rows it drops)")


def _full_outer_problem(chain: Chain, render: Render) -> str | None:
    if chain.joined_above_full_outer:
        return ("an inner join, a filter or a LEFT OUTER join applies above a FULL OUTER join; "
                "only FULL OUTER joins may follow one")
    for conjunct in chain.conjuncts:
        if conjunct.outer_input in chain.full_outer and \
                not null_when_any_column_is_null(conjunct.expression):
            return (f"the FULL OUTER join of {chain.inputs[conjunct.outer_input].name} has a "
                    "condition that can hold where a column it reads is null: "
                    f"{render(conjunct.expression)}")
    return None


def _padded_side_problem(chain: Chain, render: Render) -> str | None:
    for conjunct in chain.conjuncts:
        if conjunct.outer_input is None and \
                chain.inputs_of(conjunct.expression) & set(chain.outer_order):
            return f"{render(conjunct.expression)} uses the null-padded side of an outer join"
    return None


def _inner_key_problem(chain: Chain, key: list[KeyClass], render: Render) -> str | None:
    """Why the inner inputs do not share the key through the inner joins' conditions, if so."""
    inner = [i for i in range(len(chain.inputs)) if i not in chain.outer_order]
    if len(inner) < 2:
        return None
    inner_chain = Chain(inputs=[chain.inputs[i] for i in inner],
                        conjuncts=[c for c in chain.conjuncts if c.outer_input is None])
    spanning = [{member.sql() for _, member in key_class}
                for key_class in key_classes(inner_chain)
                if len({i for i, _ in key_class}) == len(inner)]
    for members in key:
        inner_members = {member.sql() for i, member in members if i in inner}
        if not any(inner_members <= spanned for spanned in spanning):
            return (f"the inner joins do not equate the key "
                    f"({', '.join(render(m) for _, m in members)}) among the inner inputs "
                    "themselves")
    return None


def _outer_key_problem(chain: Chain, outer: int, on_clause: list[exp.Expr],
                       joined_before: list[int], key: list[KeyClass],
                       render: Render) -> str | None:
    """Why `outer`'s ON clause does not equate its key to an input joined before it, if so."""
    for members in key:
        def member_of(side: exp.Expr, inputs: set[int]) -> bool:
            return any(i in inputs and member.sql() == side.sql() for i, member in members)
        if not any(isinstance(c, exp.EQ) and (
                (member_of(c.this, {outer}) and member_of(c.expression, set(joined_before))) or
                (member_of(c.expression, {outer}) and member_of(c.this, set(joined_before))))
                for c in on_clause):
            return (f"the ON clause of {chain.inputs[outer].name} does not equate its key "
                    f"({', '.join(render(m) for _, m in members)}) to that of an input joined "
                    "before it")
    return None
