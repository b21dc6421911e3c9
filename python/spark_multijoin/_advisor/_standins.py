"""Stand-in relations for what the SQL reads but does not define, and the Spark SQL that reads
them.

Each relation read by name becomes a temporary view with the columns the SQL reads of it
(`_reads`): a stream of JSON files from an empty folder where it is read as a stream, a batch
read of the same folder otherwise (not an empty local relation, which Spark's optimizer would
fold the joins over). `schema=` gives its columns and types; otherwise each column takes the
type its uses suggest: TIMESTAMP for an event time (a watermark's column, a column compared with
or added to an interval), STRING or DOUBLE where compared with such a literal, BIGINT else.
The report says which inputs were typed so.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from sqlglot import exp
from sqlglot.dialects.spark import Spark

from spark_multijoin._advisor._reads import Placed, Read
from spark_multijoin._advisor._sql import WATERMARK

Key = tuple[str, bool]
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)
_RANK = {"TIMESTAMP": 3, "STRING": 2, "DOUBLE": 1, "BIGINT": 0}


def view_names(keys: Iterable[Key]) -> dict[Key, str]:
    """A temporary view's name per stand-in: the table's, with `__static` where the SQL reads
    the same table as a stream too (dots become underscores)."""
    keys = list(keys)
    streamed = {name for name, streaming in keys if streaming}
    return {(name, streaming): name.replace(".", "_") + (
        "__static" if not streaming and name in streamed else "") for name, streaming in keys}


def rename_reads(reads: Iterable[Read], names: Mapping[Key, str]) -> None:
    """Points each read at its stand-in, keeping the name the query gives it as its alias, so
    that Spark's attributes are qualified as the query wrote them."""
    for read in reads:
        table = read.table
        if not table.alias:
            table.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
        table.set("this", exp.to_identifier(names[read.key]))
        table.set("db", None)
        table.set("catalog", None)


def column_types(queries: Iterable[exp.Query], placed: Placed) -> dict[Key, dict[str, str]]:
    """Per stand-in, each column's type as its uses suggest (see the module's doc)."""
    classes = _Classes()
    evidence: dict[tuple[Key, str], str] = {column: "TIMESTAMP" for column in placed.timestamps}
    for query in queries:
        for column in query.find_all(exp.Column):
            parent = column.parent
            if isinstance(parent, (exp.Add, exp.Sub)) and parent.find(exp.Interval) and \
                    id(column) in placed.nodes:
                _suggest(evidence, placed.nodes[id(column)], "TIMESTAMP")
        for comparison in query.find_all(*_COMPARISONS):
            sides = [comparison.this] + ([comparison.args["low"], comparison.args["high"]]
                                         if isinstance(comparison, exp.Between)
                                         else [comparison.expression])
            columns = [placed.nodes[id(side)] for side in sides
                       if isinstance(side, exp.Column) and id(side) in placed.nodes]
            for column in columns[1:]:
                classes.union(columns[0], column)
            for side in sides:
                suggested = _literal_type(side)
                for column in columns if suggested else ():
                    _suggest(evidence, column, suggested)
    by_class: dict[tuple[Key, str], str] = {}
    for column, suggested in evidence.items():
        _suggest(by_class, classes.find(column), suggested)
    return {key: {column: by_class.get(classes.find((key, column)), "BIGINT")
                  for column in columns} for key, columns in placed.columns.items()}


def _literal_type(side: exp.Expr) -> str | None:
    if side.find(exp.Interval):
        return "TIMESTAMP"
    if isinstance(side, exp.Literal):
        return "STRING" if side.is_string else "DOUBLE" if "." in side.name else "BIGINT"
    return None


def _suggest(types: dict, column: tuple[Key, str], suggested: str) -> None:
    if _RANK[suggested] >= _RANK[types.get(column, "BIGINT")]:
        types[column] = suggested


class _Classes:
    """Columns compared with each other, which take one type (union-find)."""

    def __init__(self) -> None:
        self._parent: dict[tuple[Key, str], tuple[Key, str]] = {}

    def find(self, column: tuple[Key, str]) -> tuple[Key, str]:
        while self._parent.get(column, column) != column:
            column = self._parent[column]
        return column

    def union(self, one: tuple[Key, str], other: tuple[Key, str]) -> None:
        self._parent[self.find(one)] = self.find(other)


def ddl(columns: Mapping[str, str]) -> str:
    return ", ".join(f"`{name}` {data_type}" for name, data_type in columns.items()) or \
        "`value` BIGINT"


class _WatermarkGenerator(Spark.Generator):  # type: ignore[name-defined,misc]
    """Spark's SQL, with the `WATERMARK column DELAY OF interval` clause that `_sql` keeps in a
    relation's meta written back before its alias."""

    def table_sql(self, expression: exp.Table, sep: str = " AS ") -> str:
        return super().table_sql(expression, _watermarked(expression, sep))

    def subquery_sql(self, expression: exp.Subquery, sep: str = " AS ") -> str:
        return super().subquery_sql(expression, _watermarked(expression, sep))


def _watermarked(relation: exp.Expr, sep: str) -> str:
    watermark = relation.meta.get(WATERMARK)
    if watermark is None:
        return sep
    if not relation.alias:
        relation.set("alias", exp.TableAlias(this=exp.to_identifier(relation.alias_or_name)))
    return f" WATERMARK {watermark.column} DELAY OF {watermark.delay}{sep}"


def spark_sql(query: exp.Expr) -> str:
    """`query` as Spark SQL."""
    return _WatermarkGenerator(dialect=Spark()).generate(query)
