"""A statement's relations as the rule sees them after Spark's optimizer: join trees of inputs.

sqlglot qualifies the query (tables and columns) and gives its scopes. From them this module
builds a tree of `Join`s and `Filtered` nodes (a WHERE, or a derived table, view or CTE that only
selects and filters: Spark inlines those, and the rule sees through them) over `Leaf` inputs (a
relation read by name, or a derived table the rule cannot see through, such as an aggregation,
whose own joins make a tree of their own). Every column a condition reads is resolved to the
leaf it comes from, through the aliases of the selects in between, so conditions read leaves'
columns directly, as the rule's do once it has inlined the projections between joins.

A resolved column is an `exp.Column` qualified by its leaf's `uid`; a column whose leaf cannot be
known without a schema (unqualified in a query over several inputs, or from `SELECT *` over
several) is qualified by `_expressions.UNRESOLVED` and named as written.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Mapping

from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify_columns import qualify_columns
from sqlglot.optimizer.qualify_tables import qualify_tables
from sqlglot.optimizer.scope import Scope, build_scope

from spark_multijoin._advisor._chains import STATE_TTL_HINT, STATE_TTL_HINT_READ
from spark_multijoin._advisor._expressions import columns
from spark_multijoin._advisor._sql import STREAMING, WATERMARK, WRITTEN_NAME, Statement, Watermark
from spark_multijoin._advisor._scopes import Env, LeafEnv, SelectEnv, SourcesEnv, resolved
from spark_multijoin._advisor._tree import (
    Filtered, Join, Leaf, Tree, conjuncts_of, is_deterministic, joins, leaves)

@dataclass
class Definitions:
    """What the statements define, which later reads of the names resolve to: views (inlined by
    Spark, as the rule sees them) and tables (read as they are stored, so without a watermark
    unless the read adds one)."""

    views: dict[str, Statement] = field(default_factory=dict)
    tables: set[str] = field(default_factory=set)

    @staticmethod
    def of(statements: list[Statement]) -> Definitions:
        definitions = Definitions()
        for statement in statements:
            created = statement.expression
            if not isinstance(created, exp.Create) or not isinstance(created.this, exp.Table):
                continue
            name = created.this.name.lower()
            if defines_view(statement):
                definitions.views[name] = statement
            elif created.kind != "FLOW":
                definitions.tables.add(name)
        return definitions


def defines_view(statement: Statement) -> bool:
    """Whether `statement` defines a view (not a materialized one) by a query."""
    created = statement.expression
    if not isinstance(created, exp.Create) or created.kind != "VIEW" or \
            created.expression is None:
        return False
    properties = created.args.get("properties")
    return properties is None or not any(
        isinstance(p, exp.MaterializedProperty) for p in properties.expressions)


@dataclass
class StreamingInputs:
    """Which reads are streaming: `STREAM` reads and the names in `names`; where the SQL has no
    STREAM read and no names are given, every input."""

    names: frozenset[str]
    everything: bool

    def __call__(self, table: exp.Table, alias: str) -> bool:
        return self.everything or bool(table.meta.get(STREAMING)) or \
            table.name.lower() in self.names or alias.lower() in self.names


@dataclass
class StatementTrees:
    """The join trees of one statement, the MULTI_JOIN hint's names and the leaves each name
    covers, and what could not be analyzed."""

    trees: list[Tree]
    hint_names: list[str]
    named_leaves: dict[str, frozenset[str]]
    problems: list[str]


def statement_trees(statement: Statement, definitions: Definitions, streaming: StreamingInputs,
                    schema: Mapping[str, Mapping[str, str]] | None, dialect: str
                    ) -> StatementTrees:
    builder = _Builder(definitions, streaming, schema, dialect)
    query = _query_of(statement.expression)
    if query is not None:
        builder.add_root(query)
    return StatementTrees(builder.roots, builder.hint_names, builder.named_leaves,
                          builder.problems)


def _query_of(expression: exp.Expr) -> exp.Expr | None:
    """The query a statement runs: itself, or that of its CREATE ... AS, INSERT or FLOW."""
    if isinstance(expression, exp.Query):
        return expression
    if isinstance(expression, (exp.Create, exp.Insert)):
        inner = expression.expression
        return _query_of(inner) if inner is not None else None
    return None


def _projects_and_filters(select: exp.Select) -> bool:
    """Whether a select only projects and filters, which Spark inlines into the joins around it
    (a deterministic one is then seen through by the rule)."""
    clauses = ("group", "having", "qualify", "distinct", "limit", "offset", "order", "laterals",
               "windows", "sort", "cluster", "distribute", "pivots", "sample", "connect")
    if select.args.get("from_") is None or any(select.args.get(arg) for arg in clauses):
        return False
    return not any(item.find(exp.AggFunc, exp.Window, exp.Query) for item in select.expressions)


def _join_kind(join: exp.Join) -> str:
    if join.kind in ("SEMI", "ANTI"):
        return f"LEFT {join.kind}"
    return join.side or "INNER"


class _Builder:
    """Builds the join trees of one statement (see the module's doc)."""

    def __init__(self, definitions: Definitions, streaming: StreamingInputs,
                 schema: Mapping[str, Mapping[str, str]] | None, dialect: str) -> None:
        self.roots: list[Tree] = []
        self.hint_names: list[str] = []
        self.named_leaves: dict[str, frozenset[str]] = {}
        self.problems: list[str] = []
        self._definitions = definitions
        self._streaming = streaming
        self._schema = dict(schema or {})
        self._dialect = dialect
        self._uids = (f"_{n}" for n in itertools.count())
        self._names_used: dict[str, int] = {}
        self._inlining: list[str] = []

    def add_root(self, query: exp.Expr) -> None:
        scope = self._scope(query)
        if scope is None:
            return
        tree, _ = self._relation(scope, "(query)", None, stream_read=False)
        self._add_root(tree)

    def _add_root(self, tree: Tree) -> None:
        if joins(tree):
            self.roots.append(tree)

    def _scope(self, query: exp.Expr) -> Scope | None:
        """`query` qualified by sqlglot (its own columns, and USING expanded as Spark reads it),
        as scopes."""
        query = query.copy()
        for node in query.find_all(exp.Table, exp.Subquery):
            if node.alias_or_name:
                node.meta.setdefault(WRITTEN_NAME, node.alias_or_name)
        query = normalize_identifiers(query, dialect=self._dialect)
        query = qualify_tables(query, dialect=self._dialect)
        for select in list(query.find_all(exp.Select)):
            self._expand_using(select)
        try:
            query = qualify_columns(query, self._schema, dialect=self._dialect)
        except OptimizeError as error:
            self.problems.append(f"sqlglot could not qualify every column: {error}")
        return build_scope(query)

    def _expand_using(self, select: exp.Select) -> None:
        """`JOIN r USING (c)` as `ON l.c = r.c`, where l.c is the left side's column c as Spark
        takes it: from the earlier USING join that made it (the left one of an inner or LEFT
        join, the right one of a RIGHT join, their COALESCE for a FULL join, which is no input's
        column), or from the left side's only relation."""
        from_ = select.args.get("from_")
        if from_ is None:
            return
        left_aliases = [from_.this.alias_or_name]
        made: dict[str, exp.Expr | None] = {}
        for join in select.args.get("joins") or []:
            right_alias = join.this.alias_or_name
            equalities = []
            for identifier in join.args.get("using") or []:
                name = identifier.name
                left = made.get(name, exp.column(name, table=left_aliases[0])
                                if len(left_aliases) == 1 else None)
                right = exp.column(name, table=right_alias)
                equalities.append(exp.EQ(this=left.copy() if left else exp.column(name),
                                         expression=right))
                made[name] = right if join.side == "RIGHT" else left if join.side != "FULL" \
                    else exp.Coalesce(this=left, expressions=[right]) if left else None
            if equalities:
                join.set("using", None)
                join.set("on", exp.and_(*equalities))
            left_aliases.append(right_alias)

    def _relation(self, scope: Scope, written: str, watermark: Watermark | None,
                  stream_read: bool) -> tuple[Tree, Env]:
        """The tree of a query (a derived table, CTE, view or the statement's own): its joins
        where Spark inlines it, else one leaf whose joins make a tree of their own."""
        query = scope.expression
        if watermark is None and isinstance(query, exp.Select) and _projects_and_filters(query):
            tree, sources = self._select(scope, stream_read)
            tree.alias = written
            return tree, SelectEnv(query, sources)
        leaf = self._opaque(scope, written, watermark, stream_read)
        return leaf, LeafEnv(leaf)

    def _select(self, scope: Scope, stream_read: bool) -> tuple[Filtered, dict[str, Env]]:
        select = scope.expression
        self._take_hint(select)
        sources: dict[str, Env] = {}
        tree = self._item(select.args["from_"].this, scope, sources, stream_read)
        for join in select.args.get("joins") or []:
            tree = self._join(join, tree, scope, sources, stream_read)
        where = select.args.get("where")
        conjuncts = self._conditions(where.this if where else None, sources)
        deterministic = all(map(is_deterministic, conjuncts)) and \
            all(map(is_deterministic, select.expressions))
        reads = None if any(item.is_star for item in select.expressions) else frozenset(
            column for item in select.expressions
            for column in columns(resolved(item.unalias(), sources)))
        renames = any(not isinstance(item.unalias(), exp.Column) or
                      item.unalias().name.lower() != item.alias_or_name.lower()
                      for item in select.expressions if not item.is_star)
        return Filtered(tree, conjuncts, deterministic, reads=reads, renames=renames), sources

    def _join(self, join: exp.Join, left: Tree, scope: Scope, sources: dict[str, Env],
              stream_read: bool) -> Join:
        right = self._item(join.this, scope, sources, stream_read)
        if join.method == "NATURAL":
            self.problems.append(f"the columns of a NATURAL JOIN are not known without a schema "
                                 f"({join.sql(dialect=self._dialect)}): it is taken as a join "
                                 "on no condition")
        return Join(_join_kind(join), left, right,
                    self._conditions(join.args.get("on"), sources))

    def _conditions(self, condition: exp.Expr | None,
                    sources: Mapping[str, Env]) -> list[exp.Expr]:
        found = []
        for conjunct in conjuncts_of(condition):
            if conjunct.find(exp.Query):
                self.problems.append("a subquery in a condition becomes a semi or anti join, "
                                     f"which the advisor does not follow: {conjunct.sql()}")
            else:
                found.append(resolved(conjunct, sources))
        return found

    def _take_hint(self, select: exp.Select) -> None:
        hint = select.args.get("hint")
        for function in hint.expressions if hint else []:
            if isinstance(function, exp.Func) and function.name.upper() == "MULTI_JOIN":
                self.hint_names.extend(argument.name.lower() for argument in function.expressions)
            elif isinstance(function, exp.Func) and function.name.upper() == STATE_TTL_HINT:
                self.problems.append(STATE_TTL_HINT_READ)

    def _item(self, item: exp.Expr, scope: Scope, sources: dict[str, Env],
              stream_read: bool) -> Tree:
        """A relation of a FROM clause, its columns made known to `sources` by its alias."""
        if isinstance(item, exp.Subquery) and isinstance(item.this, exp.Table) and \
                item.this.args.get("joins"):
            return self._parenthesized_join(item, scope, sources, stream_read)
        alias = item.alias_or_name
        written = self._unique(item.meta.get(WRITTEN_NAME) or alias)
        source = scope.sources.get(alias)
        stream_read = stream_read or bool(item.meta.get(STREAMING))
        watermark = item.meta.get(WATERMARK)
        if isinstance(source, Scope):
            tree, env = self._relation(source, written, watermark, stream_read)
        elif isinstance(item, exp.Table) and not item.db and \
                item.name.lower() in self._definitions.views:
            tree, env = self._view(item, written, stream_read)
        else:
            leaf = self._leaf_of(item, written, stream_read)
            tree, env = leaf, LeafEnv(leaf)
        sources[alias] = env
        self._name(alias, tree)
        if isinstance(item, exp.Table):
            self._name(item.name, tree)
        return tree

    def _parenthesized_join(self, item: exp.Subquery, scope: Scope, sources: dict[str, Env],
                            stream_read: bool) -> Tree:
        """`(a JOIN b ON ...) [alias]`: a join tree of its own, whose relations are in the
        enclosing select's scope."""
        first = item.this.copy()
        first.set("joins", None)
        inner_sources: dict[str, Env] = {}
        tree = self._item(first, scope, inner_sources, stream_read)
        for join in item.this.args["joins"]:
            tree = self._join(join, tree, scope, inner_sources, stream_read)
        sources.update(inner_sources)
        if item.alias:
            sources[item.alias] = SourcesEnv(list(inner_sources.values()))
            self._name(item.alias, tree)
        return tree

    def _view(self, item: exp.Table, written: str, stream_read: bool) -> tuple[Tree, Env]:
        """A view these statements define, inlined as Spark inlines it."""
        name = item.name.lower()
        query = _query_of(self._definitions.views[name].expression)
        scope = self._scope(query) if query is not None and name not in self._inlining else None
        if scope is None:
            leaf = self._leaf_of(item, written, stream_read)
            return leaf, LeafEnv(leaf)
        self._inlining.append(name)
        try:
            return self._relation(scope, written, item.meta.get(WATERMARK), stream_read)
        finally:
            self._inlining.pop()

    def _leaf_of(self, item: exp.Expr, written: str, stream_read: bool) -> Leaf:
        """A relation read by name (or a VALUES list, a table function...)."""
        watermark: Watermark | None = item.meta.get(WATERMARK)
        uid = next(self._uids)
        if not isinstance(item, exp.Table):
            return Leaf(uid, written, streaming=False, covers=frozenset([uid]))
        stored = item.name.lower() in self._definitions.tables
        streaming = stream_read or self._streaming(item, item.alias_or_name)
        return Leaf(uid, written, streaming=streaming,
                    event_time=watermark.column.lower() if watermark else None,
                    event_time_unknown=None if watermark or stored else
                    "defined outside this SQL and read without a WATERMARK clause",
                    covers=frozenset([uid]))

    def _opaque(self, scope: Scope, written: str, watermark: Watermark | None,
                stream_read: bool) -> Leaf:
        """A derived table the rule does not look into: one leaf, whose joins make a tree of
        their own. Its event time is the watermark clause's column, or a column it selects
        unchanged from a leaf's event time."""
        query = scope.expression
        outputs: dict[str, exp.Expr] = {}
        if isinstance(query, exp.Select) and query.args.get("from_") is not None:
            tree, sources = self._select(scope, stream_read)
            outputs = {item.alias_or_name.lower(): resolved(item.unalias(), sources)
                       for item in query.expressions if not item.is_star}
            inner = [tree]
        else:
            inner = [self._relation(branch, "(union)", None, stream_read)[0]
                     for branch in scope.union_scopes]
        for tree in inner:
            self._add_root(tree)
        under = [leaf for tree in inner for leaf in leaves(tree)]
        uid = next(self._uids)
        leaf = Leaf(uid, written, streaming=any(leaf.streaming for leaf in under),
                    covers=frozenset([uid]).union(*(leaf.covers for leaf in under)))
        if watermark is not None:
            leaf.event_time = watermark.column.lower()
            return leaf
        timed = {(leaf.uid, leaf.event_time) for leaf in under if leaf.event_time}
        passed = [name for name, expression in outputs.items() if isinstance(expression, exp.Column)
                  and (expression.table, expression.name) in timed]
        leaf.event_time = passed[0] if len(passed) == 1 else None
        if any(leaf.event_time_unknown for leaf in under):
            leaf.event_time_unknown = "a derived table over inputs defined outside this SQL"
        elif timed and not outputs:
            leaf.event_time_unknown = "a derived table over an input with a watermark"
        return leaf

    def _name(self, name: str, tree: Tree) -> None:
        """Records the leaves `name` covers, for the MULTI_JOIN hint."""
        covered = frozenset().union(*(leaf.covers for leaf in leaves(tree)))
        key = name.lower()
        self.named_leaves[key] = self.named_leaves.get(key, frozenset()) | covered

    def _unique(self, name: str) -> str:
        """`name`, or `name#2`, `name#3`... where the statement reads it again (a CTE or view
        read twice, its relations with it)."""
        seen = self._names_used.get(name, 0) + 1
        self._names_used[name] = seen
        return name if seen == 1 else f"{name}#{seen}"
