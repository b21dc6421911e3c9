"""Column resolution: what each relation in scope outputs, by name, as its leaves' columns.

`_relations` keeps one `Env` per relation in scope while it builds a statement's join trees, and
resolves every condition through them with `resolved`, so that conditions read leaves' columns
as the rule's do once it has inlined the projections between joins.
"""

from __future__ import annotations

from typing import Mapping

from sqlglot import exp

from spark_multijoin._advisor._expressions import unresolved_column
from spark_multijoin._advisor._tree import Leaf


class Env:
    """Resolves the output columns of a relation, by name, to its leaves' columns."""

    def resolve(self, name: str) -> exp.Expr:
        raise NotImplementedError


class LeafEnv(Env):
    def __init__(self, leaf: Leaf) -> None:
        self._leaf = leaf

    def resolve(self, name: str) -> exp.Expr:
        return self._leaf.column(name)


class SourcesEnv(Env):
    """The output of a parenthesized join (`(a JOIN b) ab`): a column of one of its relations,
    which without a schema is known only where there is one."""

    def __init__(self, sources: list[Env]) -> None:
        self._sources = sources

    def resolve(self, name: str) -> exp.Expr:
        if len(self._sources) == 1:
            return self._sources[0].resolve(name)
        return unresolved_column(name)


class SelectEnv(Env):
    """The output of a select Spark inlines: each column the expression it selects."""

    def __init__(self, select: exp.Select, sources: dict[str, Env]) -> None:
        self._select = select
        self._sources = sources

    def resolve(self, name: str) -> exp.Expr:
        stars: list[exp.Expr] = []
        for item in self._select.expressions:
            if item.is_star:
                stars.append(item)
            elif item.alias_or_name.lower() == name.lower():
                return resolved(item.this if isinstance(item, exp.Alias) else item,
                                self._sources)
        qualified = [star.table for star in stars if isinstance(star, exp.Column)]
        starred = [self._sources.get(table) for table in qualified] + (
            list(self._sources.values()) if len(qualified) < len(stars) else [])
        if len(starred) == 1 and starred[0] is not None:
            return starred[0].resolve(name)
        return unresolved_column(name)


def resolved(expression: exp.Expr, sources: Mapping[str, Env]) -> exp.Expr:
    """`expression` with each column replaced by the leaf column it reads, through `sources`
    (by alias); an unqualified column is known only where there is one source."""
    def resolve(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Column) or node.is_star:
            return node
        if node.table:
            source = sources.get(node.table)
            return source.resolve(node.name).copy() if source else unresolved_column(node.sql())
        if len(sources) == 1:
            return next(iter(sources.values())).resolve(node.name).copy()
        return unresolved_column(node.name)
    return expression.copy().transform(resolve)
