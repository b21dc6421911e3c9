"""Flink SQL jobs translated to the Spark SQL the advisor reads, statement by statement.

A `CREATE TABLE` with connector options gives a table's columns (the advisor's `schema=`),
whether it is read as a stream, and its watermark; its reads become `STREAM(t) WATERMARK column
DELAY OF interval`. Flink's hints and settings become the rule's, where it has them; whatever is
not carried over is said in the statement's notes, never dropped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.dialects.spark import Spark

from spark_multijoin._advisor._flink import Flink

__all__ = ["FlinkTable", "Translation", "spark_conf", "spark_duration", "spark_sql", "table_of",
           "translate_query"]

# Flink's settings the rule has, with how their values are written for it.
_MULTI_JOIN_ENABLED = "table.optimizer.multi-join.enabled"
_STATE_TTL = "table.exec.state.ttl"
RUNTIME_MODE = "execution.runtime-mode"
# Join hints Spark takes as Flink writes them.
_SPARK_JOIN_HINTS = {"BROADCAST", "SHUFFLE_HASH", "SHUFFLE_MERGE"}
_UNITS = {
    "d": "day", "day": "day", "days": "day", "h": "hour", "hour": "hour", "hours": "hour",
    "m": "minute", "min": "minute", "minute": "minute", "minutes": "minute",
    "s": "second", "sec": "second", "secs": "second", "second": "second", "seconds": "second",
    "ms": "millisecond", "milli": "millisecond", "millis": "millisecond",
    "millisecond": "millisecond", "milliseconds": "millisecond",
}
# Connectors that only write.
_SINKS = {"print", "blackhole"}
_DURATION = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$", re.IGNORECASE)
_READ = "spark_multijoin.flink_read"


def spark_duration(text: str) -> str:
    """A Flink duration ('1d', '12 h', '90min', '3600000', in milliseconds without a unit) as
    the rule's STATE_TTL and state-ttl take it ('1 day'); ValueError where it is none."""
    match = _DURATION.match(text)
    unit = _UNITS.get((match.group(2) or "ms").lower()) if match else None
    if unit is None:
        raise ValueError(f"not a Flink duration: '{text}'")
    amount = int(match.group(1))
    return f"{amount} {unit}{'' if amount == 1 else 's'}"


def spark_conf(key: str, value: str) -> tuple[str, str] | None:
    """A Flink setting as the rule's conf, or None where the rule has no such setting. The rule's
    own confs (`multi-join.*`, `spark.*`) pass as they are."""
    if key == _MULTI_JOIN_ENABLED:
        return "multi-join.enabled", value.strip().lower()
    if key == _STATE_TTL:
        return "multi-join.state-ttl", spark_duration(value)
    if key.startswith(("multi-join.", "spark.")):
        return key, value
    return None


@dataclass(frozen=True)
class FlinkTable:
    """A table a Flink `CREATE TABLE` declares: its columns with Spark types, whether it is read
    as a stream (None) or why not, and its watermark as Spark's clause takes it."""

    name: str
    columns: dict[str, str]
    bounded: str | None
    watermark: tuple[str, str] | None
    notes: list[str] = field(default_factory=list)
    sink: bool = False


def _options(create: exp.Create) -> dict[str, str]:
    properties = create.args.get("properties")
    return {prop.this.name.lower(): prop.args["value"].name
            for prop in (properties.expressions if properties else [])
            if isinstance(prop, exp.Property) and isinstance(prop.this, exp.Literal)}


def _bounded(options: dict[str, str]) -> str | None:
    """Why a table with these connector options is read once rather than as a stream, or None
    (a stream: every connector that is not clearly bounded is taken as one)."""
    connector = options.get("connector", "").lower()
    mode = options.get("scan.bounded.mode", "unbounded").lower()
    if mode != "unbounded":
        return f"'scan.bounded.mode' is '{mode}'"
    if connector == "datagen" and "number-of-rows" in options:
        return "a datagen table with 'number-of-rows' is bounded"
    if connector == "filesystem" and "source.monitor-interval" not in options:
        return "a filesystem table without 'source.monitor-interval' reads its files once"
    if connector in ("jdbc", "hbase-2.2", "hbase-1.4", "mongodb", "elasticsearch-7"):
        return f"a {connector} table is scanned once or looked up"
    return None


def table_of(create: exp.Create) -> FlinkTable:
    """The table a Flink `CREATE TABLE name (...) WITH (...)` declares."""
    schema = create.this
    name = schema.this.name.lower()
    columns: dict[str, str] = {}
    notes: list[str] = []
    watermark_clause = None
    for element in schema.expressions:
        if isinstance(element, exp.WatermarkColumnConstraint):
            watermark_clause = element
        elif isinstance(element, exp.ColumnDef):
            columns[element.name.lower()] = _column_type(element, name, notes)
    watermark = _watermark(watermark_clause, name, notes) if watermark_clause else None
    options = _options(create)
    return FlinkTable(name, columns, _bounded(options), watermark, notes,
                      options.get("connector", "").lower() in _SINKS)


def _column_type(column: exp.ColumnDef, table: str, notes: list[str]) -> str:
    kind = column.args.get("kind")
    if kind is not None:
        return kind.sql(dialect="spark")
    computed = column.find(exp.ComputedColumnConstraint)
    value = computed.this if computed else None
    if isinstance(value, (exp.Cast, exp.TryCast)):
        return value.to.sql(dialect="spark")
    if isinstance(value, (exp.StrToTime, exp.UnixToTime)) or (
            isinstance(value, exp.Anonymous) and value.name.upper() in ("PROCTIME", "NOW")):
        return "timestamp"
    notes.append(f"{table}.{column.name}: a computed column whose type is not read here; it is "
                 "taken as a string")
    return "string"


def _watermark(clause: exp.WatermarkColumnConstraint, table: str,
               notes: list[str]) -> tuple[str, str] | None:
    column = clause.this.name.lower()
    strategy = clause.expression
    if isinstance(strategy, exp.Column) and strategy.name.lower() == column:
        return column, "INTERVAL '0' SECOND"
    if isinstance(strategy, exp.Sub) and isinstance(strategy.this, exp.Column) and \
            strategy.this.name.lower() == column and isinstance(strategy.expression, exp.Interval):
        return column, strategy.expression.sql(dialect="spark")
    notes.append(f"{table}: WATERMARK FOR {column} AS {strategy.sql(dialect=Flink)} is not of "
                 f"the form {column} - INTERVAL ..., which Spark's watermark takes; not carried "
                 "over")
    return None


@dataclass
class Translation:
    """One query translated: the Spark expression, and what was not carried over."""

    expression: exp.Expr
    notes: list[str] = field(default_factory=list)


def translate_query(statement: exp.Expr, tables: dict[str, FlinkTable], views: set[str],
                    streaming_mode: bool) -> Translation:
    """A Flink query (or INSERT, CREATE VIEW ... AS) as Spark's: reads of declared tables become
    stream reads with their watermarks, tables not declared are taken as streams, and the hints
    become the rule's."""
    translation = Translation(statement.copy())
    spark = translation.expression
    targets = {id(node) for target in [spark.this] if isinstance(spark, (exp.Insert, exp.Create))
               for node in target.walk()}
    names = views | {cte.alias_or_name.lower() for cte in spark.find_all(exp.CTE)}
    for table in list(spark.find_all(exp.Table)):
        if id(table) not in targets and table.name.lower() not in names:
            _mark_read(table, tables, streaming_mode, translation.notes)
    for hint in list(spark.find_all(exp.Hint)):
        kept = _spark_hints(hint, translation.notes)
        if kept:
            hint.set("expressions", kept)
        else:
            hint.pop()
    return translation


def _mark_read(table: exp.Table, tables: dict[str, FlinkTable], streaming_mode: bool,
               notes: list[str]) -> None:
    name = table.name.lower()
    declared = tables.get(name)
    if any("OPTIONS" in comment.upper() for comment in table.comments or []):
        notes.append(f"{name}: dynamic table options (OPTIONS hint) are connector settings; "
                     "not carried over")
        table.comments = None
    if table.args.get("version") is not None:
        notes.append(f"{name}: a temporal join (FOR SYSTEM_TIME AS OF) looks up a version of the "
                     "table; Spark has none for streams, so it is read here as a static table")
        table.set("version", None)
        return
    if not streaming_mode or (declared is not None and declared.bounded):
        return
    if declared is None:
        notes.append(f"{name}: not declared in the files; taken as read as a stream")
    watermark = declared.watermark if declared else None
    table.meta[_READ] = watermark or ()


def _spark_hints(hint: exp.Hint, notes: list[str]) -> list[exp.Expr]:
    kept = []
    for function in hint.expressions:
        name = function.name.upper() if isinstance(function, exp.Func) else ""
        if name == "MULTI_JOIN":
            kept.append(exp.Anonymous(this="MULTI_JOIN", expressions=[
                exp.column(argument.name) for argument in function.expressions]))
        elif name == "STATE_TTL":
            kept.append(_state_ttl(function, notes))
        elif name in _SPARK_JOIN_HINTS:
            kept.append(function)
        else:
            notes.append(f"Hint {function.sql(dialect=Flink)}: Spark's rule has no such hint; "
                         "not carried over")
    return kept


def _state_ttl(function: exp.Expr, notes: list[str]) -> exp.Expr:
    """Flink's `STATE_TTL('o' = '1d', ...)` as the rule's `STATE_TTL(o, '1 day', ...)`."""
    arguments: list[exp.Expr] = []
    for pair in function.expressions:
        try:
            if not isinstance(pair, exp.EQ):
                raise ValueError("not of the form 'name' = 'duration'")
            duration = spark_duration(pair.expression.name)
        except ValueError as error:
            notes.append(f"Hint STATE_TTL: {pair.sql(dialect=Flink)}: {error}; not carried over")
            continue
        arguments += [exp.column(pair.this.name), exp.Literal.string(duration)]
    return exp.Anonymous(this="STATE_TTL", expressions=arguments)


class _SparkWithStreams(Spark.Generator):
    """Spark's generator, writing a read marked as a stream as `STREAM(t) [WATERMARK column
    DELAY OF interval] [AS alias]`, as the advisor's Spark SQL takes it. A CTE stays where
    Flink's query has it (Spark takes it there), rather than before an INSERT."""

    EXPRESSIONS_WITHOUT_NESTED_CTES: set[type[exp.Expr]] = set()

    def table_sql(self, expression: exp.Table, sep: str = " AS ") -> str:
        watermark = expression.meta.get(_READ)
        if watermark is None:
            return super().table_sql(expression, sep)
        text = f"STREAM({self.table_parts(expression)})"
        if watermark:
            text += f" WATERMARK {watermark[0]} DELAY OF {watermark[1]}"
        alias = self.sql(expression, "alias")
        return f"{text}{sep}{alias}" if alias else text


def spark_sql(expression: exp.Expr) -> str:
    """The Spark SQL of a translated statement, laid out to be read in the report."""
    return _SparkWithStreams(dialect=Spark(), pretty=True).generate(expression)
