"""What a statement reads, from its SQL alone: the relations it reads by name that the sources
do not define as views (each becomes a stand-in, see `_standins`), the columns it reads of each,
and which of its inputs are streaming.

Columns are placed where the SQL puts them: `alias.column` on the relation of that alias, an
unqualified column on the only relation in scope (or on the one `schema=` gives it), a column of
a view, CTE or derived table that it selects with `*` on the relation under the star. What the
SQL does not say (an unqualified column among several relations) is placed on the first and
noted, so that the report can say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from sqlglot import exp

from spark_multijoin._advisor._sql import STREAMING, WATERMARK, Statement, Watermark


@dataclass(eq=False)
class Read:
    """A relation read by name that the sources do not define as a view: `name` as written,
    `alias` as the query names it."""

    table: exp.Table
    name: str
    alias: str
    streaming: bool
    watermark: Watermark | None

    @property
    def key(self) -> tuple[str, bool]:
        return self.name, self.streaming


@dataclass
class Placed:
    """Where each column a statement reads comes from: per stand-in (`Read.key`), its columns;
    per column node of the SQL, the stand-in column it reads; and what was assumed."""

    columns: dict[tuple[str, bool], dict[str, None]] = field(default_factory=dict)
    nodes: dict[int, tuple[tuple[str, bool], str]] = field(default_factory=dict)
    timestamps: set[tuple[tuple[str, bool], str]] = field(default_factory=set)
    assumed: list[str] = field(default_factory=list)

    def add(self, read: Read, column: str) -> tuple[tuple[str, bool], str]:
        self.columns.setdefault(read.key, {})[column.lower()] = None
        return read.key, column.lower()


def query_of(expression: exp.Expr) -> exp.Query | None:
    """The query a statement runs: itself, or that of its CREATE ... AS, INSERT or FLOW."""
    if isinstance(expression, exp.Query):
        return expression
    if isinstance(expression, (exp.Create, exp.Insert)):
        inner = expression.expression
        return query_of(inner) if inner is not None else None
    return None


def defines_view(statement: Statement) -> bool:
    """Whether `statement` defines a view (not a materialized one) by a query."""
    created = statement.expression
    if not isinstance(created, exp.Create) or created.kind != "VIEW" or \
            created.expression is None:
        return False
    properties = created.args.get("properties")
    return properties is None or not any(
        isinstance(p, exp.MaterializedProperty) for p in properties.expressions)


def view_name(statement: Statement) -> str:
    return statement.expression.this.name.lower()


def items_of(select: exp.Select) -> list[exp.Expr]:
    """The relations of a select's FROM and JOIN clauses, those of parenthesized joins too."""
    from_ = select.args.get("from_")
    found = [from_.this] if from_ is not None else []
    found += [join.this for join in select.args.get("joins") or []]
    return [leaf for item in found for leaf in _flattened(item)]


def _flattened(item: exp.Expr) -> list[exp.Expr]:
    if isinstance(item, exp.Subquery) and isinstance(item.this, exp.Table) and \
            item.this.args.get("joins"):
        inner = item.this
        return [inner] + [leaf for join in inner.args["joins"] for leaf in _flattened(join.this)]
    return [item]


class Reads:
    """The reads of every statement of the sources, and the columns placed on them."""

    def __init__(self, views: Mapping[str, exp.Query], streaming: Callable[[exp.Table], bool],
                 schema: Mapping[str, Mapping[str, str]]) -> None:
        self.views = views
        self.placed = Placed()
        self.of_table: dict[int, Read] = {}
        self._derived: dict[int, exp.Query] = {}
        self._streaming = streaming
        self._schema = {name.lower(): {c.lower() for c in columns}
                        for name, columns in schema.items()}

    def read_query(self, query: exp.Query) -> list[str]:
        """Takes the reads of `query` (a statement's or a view's) and places its columns;
        returns what it assumed."""
        before = len(self.placed.assumed)
        ctes = {cte.alias_or_name.lower(): cte.this for cte in query.find_all(exp.CTE)}
        for table in query.find_all(exp.Table):
            name = table.name.lower()
            defined = ctes.get(name) or (None if table.db else self.views.get(name))
            if defined is not None:
                self._derived[id(table)] = defined
            else:
                read = Read(table, name, table.alias_or_name, bool(self._streaming(table)),
                            table.meta.get(WATERMARK))
                self.of_table[id(table)] = read
                self.placed.columns.setdefault(read.key, {})
        for select in query.find_all(exp.Select):
            self._place_select(select)
        return self.placed.assumed[before:]

    def source(self, item: exp.Expr) -> Read | exp.Query | None:
        """What a relation of a FROM clause is: a stand-in, or the query of a view, CTE or
        derived table (None: something else, a VALUES list, a table function...)."""
        if isinstance(item, exp.Table):
            return self.of_table.get(id(item)) or self._derived.get(id(item))
        if isinstance(item, exp.Subquery):
            return item.this
        return None

    def under(self, item: exp.Expr, seen: frozenset[int] = frozenset()) -> list[Read]:
        """The stand-ins a relation reads, directly or through views, CTEs and subqueries."""
        source = self.source(item)
        if isinstance(source, Read):
            return [source]
        if source is None or id(source) in seen:
            return []
        return [read for table in source.find_all(exp.Table)
                for read in self.under(table, seen | {id(source)})]

    def streaming(self, item: exp.Expr) -> bool:
        """Whether a relation reads a streaming stand-in."""
        return any(read.streaming for read in self.under(item))

    def _place_select(self, select: exp.Select) -> None:
        sources = {item.alias_or_name.lower(): item for item in items_of(select)}
        for item in sources.values():
            watermark = item.meta.get(WATERMARK)
            if watermark is not None:
                self.place(item, watermark.column, timestamp=True)
        for column in select.find_all(exp.Column):
            # A hint's arguments name relations, not columns.
            if column.is_star or column.find_ancestor(exp.Select) is not select or \
                    column.find_ancestor(exp.Hint) is not None:
                continue
            table = column.table.lower()
            if table:
                if table in sources:
                    self._note(column, self.place(sources[table], column.name))
            elif sources:
                self._note(column, self._place_unqualified(column.name, sources))
        self._place_using(select)

    def _place_unqualified(self, name: str, sources: dict[str, exp.Expr]):
        if len(sources) > 1 and not any(alias == name.lower() for alias in sources):
            given = [alias for alias, item in sources.items() if isinstance(
                self.source(item), Read) and name.lower() in self._schema.get(
                self.source(item).name, ())]
            if given:
                return self.place(sources[given[0]], name)
            first = next(iter(sources))
            self.placed.assumed.append(
                f"Which input {name} comes from is not known without a schema: taken as "
                f"{first}'s (qualify it, input.column, or pass schema=).")
            return self.place(sources[first], name)
        return self.place(next(iter(sources.values())), name)

    def _place_using(self, select: exp.Select) -> None:
        items = items_of(select)
        for join in select.args.get("joins") or []:
            for identifier in join.args.get("using") or []:
                self.place(items[0], identifier.name)
                self.place(join.this, identifier.name)

    def _note(self, column: exp.Column, placed: tuple[tuple[str, bool], str] | None) -> None:
        if placed is not None:
            self.placed.nodes[id(column)] = placed

    def place(self, item: exp.Expr, name: str, timestamp: bool = False, depth: int = 0):
        """Places column `name` of relation `item` on the stand-in it comes from."""
        source = self.source(item)
        if isinstance(source, Read):
            placed = self.placed.add(source, name)
            if timestamp:
                self.placed.timestamps.add(placed)
            return placed
        if source is None or depth > 20:
            return None
        select = source if isinstance(source, exp.Select) else next(
            source.find_all(exp.Select), None)
        if select is None or any(projection.alias_or_name.lower() == name.lower()
                                 for projection in select.expressions):
            return None
        under = {item.alias_or_name.lower(): item for item in items_of(select)}
        starred = [under.get(star.table.lower()) if isinstance(star, exp.Column) else None
                   for star in select.expressions if star.is_star]
        candidates = [found for found in starred if found is not None] or list(under.values())
        if not starred or not candidates:
            return None
        return self.place(candidates[0], name, timestamp, depth + 1)
