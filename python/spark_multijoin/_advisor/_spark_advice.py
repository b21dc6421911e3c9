"""The advisor on SQL that sqlglot reads as Spark's (or transpiles to it): each statement's
reads, their stand-ins, and the statement planned over them, for the rule's verdicts.

`StatementAdvice` is what it answers per statement; the Flink advisor (`_flink_advice`) answers
with a subclass of it, over the Spark SQL it translates a Flink job to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from sqlglot import exp

from spark_multijoin._advisor._planning import Planner, advisor_session
from spark_multijoin._advisor._reads import Reads, defines_view, items_of, query_of, view_name
from spark_multijoin._advisor._sql import STREAMING, WATERMARK, SqlError, Statement, statements
from spark_multijoin._advisor._standins import (
    column_types, ddl, rename_reads, spark_sql, view_names)
from spark_multijoin._advisor._verdict import StatementInputs, Verdict, verdict_of

__all__ = ["StatementAdvice", "advise_spark_sources"]


@dataclass(frozen=True)
class StatementAdvice:
    """The verdict on one statement's joins (none: the statement joins nothing, or defines a
    view, whose joins are judged where a statement reads it, as Spark inlines it there)."""

    location: str
    statement: str
    verdicts: list[Verdict]
    defines_view: bool = False


def advise_spark_sources(sources: Sequence[tuple[str, str]], *,
                         streaming: Iterable[str] | None = None, dialect: str = "spark",
                         conf: Mapping[str, object] | None = None,
                         schema: Mapping[str, Mapping[str, str]] | None = None
                         ) -> list[StatementAdvice]:
    """`advise_sources` on SQL of a dialect sqlglot reads (Flink's is translated first, see
    `_flink_advice`)."""
    base_conf = {key: str(value).lower() if isinstance(value, bool) else str(value)
                 for key, value in (conf or {}).items()}
    found = [statement for name, sql in sources
             for statement in statements(sql, name, dialect, base_conf)]
    pipeline = _Pipeline(found, streaming, schema or {})
    if not any(pipeline.joins(statement) for statement in found):
        return [pipeline.unplanned(statement) for statement in found]
    planner = Planner(advisor_session())
    try:
        pipeline.register(planner)
        return [pipeline.advice(statement, planner) for statement in found]
    finally:
        planner.close()


class _Pipeline:
    """The statements of the sources, what they read, and their stand-ins."""

    def __init__(self, found: list[Statement], streaming: Iterable[str] | None,
                 schema: Mapping[str, Mapping[str, str]]) -> None:
        self.queries = {id(s): query_of(s.expression) for s in found}
        self.views = {view_name(s): self.queries[id(s)] for s in found if defines_view(s)}
        self.tables = {s.expression.this.name.lower() for s in found
                       if isinstance(s.expression, exp.Create) and not defines_view(s)
                       and isinstance(s.expression.this, exp.Table) and s.expression.kind != "FLOW"}
        names = frozenset(name.lower() for name in streaming or ())
        everything = streaming is None and not any(
            table.meta.get(STREAMING) for s in found for table in s.expression.find_all(exp.Table))
        self.reads = Reads(self.views, lambda table: everything or bool(
            table.meta.get(STREAMING)) or table.name.lower() in names or
            table.alias_or_name.lower() in names, schema)
        ordered = sorted(found, key=lambda s: not defines_view(s))
        self.assumed = {id(s): self.reads.read_query(self.queries[id(s)]) for s in ordered
                        if self.queries[id(s)] is not None}
        self.types = _with_schema(column_types(filter(None, self.queries.values()),
                                               self.reads.placed), schema)
        self.schema_given = {name.lower() for name in schema}
        self.names = view_names(self.types)
        rename_reads(self.reads.of_table.values(), self.names)

    def joins(self, statement: Statement) -> bool:
        query = self.queries[id(statement)]
        return not defines_view(statement) and query is not None and \
            query.find(exp.Join) is not None

    def unplanned(self, statement: Statement) -> StatementAdvice:
        return StatementAdvice(statement.location, _title(statement), [], defines_view(statement))


    def register(self, planner: Planner) -> None:
        """The stand-ins, then the views (each once those it reads are there)."""
        for key, columns in self.types.items():
            planner.stand_in(self.names[key], ddl(columns), streaming=key[1])
        pending = list(self.views.items())
        while pending:
            failed = []
            for name, query in pending:
                try:
                    planner.view(name, spark_sql(query))
                except SqlError as error:
                    failed.append((name, query, error))
            if len(failed) == len(pending):
                raise failed[0][2]
            pending = [(name, query) for name, query, _ in failed]

    def advice(self, statement: Statement, planner: Planner) -> StatementAdvice:
        if not self.joins(statement):
            return self.unplanned(statement)
        query = self.queries[id(statement)]
        planner.configure(statement.conf)
        sql = spark_sql(query)
        inputs = self._inputs(statement, query)
        inputs.spark_sql = sql
        verdict = verdict_of(planner.fusion_report(planner.run(sql, statement.location)), inputs)
        return StatementAdvice(statement.location, _title(statement), [verdict])

    def _inputs(self, statement: Statement, query: exp.Query) -> StatementInputs:
        """What the SQL tells of the inputs the statement joins (see `StatementInputs`)."""
        selects = [select for select in query.find_all(exp.Select) if select.args.get("joins")]
        items = {item.alias_or_name: item for select in selects for item in items_of(select)}
        streams = [name for name, item in items.items() if self.reads.streaming(item)]
        unknown = {name for stream in streams for name in self._unwatermarked(items[stream])}
        chain = max((sum(self.reads.streaming(item) for item in items_of(select))
                     for select in selects), default=0)
        return StatementInputs(statement.location, _title(statement), list(items), streams,
                               unknown, chain, self.assumed.get(id(statement), []) +
                               self._typed(query))

    def _unwatermarked(self, item: exp.Expr) -> list[str]:
        """If `item` reads, as a stream, a relation defined outside the SQL without a WATERMARK
        clause on it or on a query over it: its name and theirs (the rule may name it by
        either)."""
        if item.meta.get(WATERMARK) is not None:
            return []
        reads = [read.alias for read in self.reads.under(item) if read.streaming and
                 read.watermark is None and read.name not in self.tables]
        return [item.alias_or_name] + reads if reads else []

    def _typed(self, query: exp.Query) -> list[str]:
        """The stand-ins the statement reads whose columns the advisor typed itself."""
        keys = dict.fromkeys(read.key for table in query.find_all(exp.Table)
                             for read in self.reads.under(table))
        typed = [f"{name} ({ddl(self.types[key]).replace('`', '')})" for key in keys
                 for name in [key[0]] if name not in self.schema_given]
        if not typed:
            return []
        return ["Without a schema (schema=), the advisor planned over stand-ins with the "
                "columns the SQL reads, typed by how it uses them: " + "; ".join(typed) +
                ". A key of another type can fuse otherwise (the rule keeps Spark's joins for a "
                "key not compared by its bytes)."]


def _with_schema(types: dict, schema: Mapping[str, Mapping[str, str]]) -> dict:
    given = {name.lower(): {column.lower(): data_type for column, data_type in columns.items()}
             for name, columns in schema.items()}
    return {key: given.get(key[0], columns) for key, columns in types.items()}


_TITLE = re.compile(
    r"^\s*((?:CREATE|INSERT)\b[\s\S]*?)(?:\s+(?:AS\b|BY\s+NAME\b|SELECT\b|WITH\b|\(|COMMENT\b)|"
    r"\s*\(|\s*$)", re.IGNORECASE)


def _title(statement: Statement) -> str:
    """What the statement does, in its own first words: `CREATE STREAMING TABLE t`, `SELECT`."""
    match = _TITLE.match(statement.text)
    if match:
        return " ".join(match.group(1).split())
    return statement.text.split(None, 1)[0].upper() if statement.text.strip() else ""
