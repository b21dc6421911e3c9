"""The advisor on Flink SQL jobs: `advise_sources(..., dialect="flink")` and `spark-multijoin
advise --dialect flink`.

Each Flink statement is translated to Spark SQL (`_flink_translate`), and the translated job is
given to the advisor as Spark SQL, with the declared tables' columns as its `schema=`. Its advice
comes back per Flink statement, with the Spark SQL that was advised and what was not carried
over; the report shows both under the advisor's own report of the statement.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import TokenType

from spark_multijoin._advisor._flink import Flink
from spark_multijoin._advisor._flink_translate import (
    RUNTIME_MODE,
    FlinkTable,
    spark_conf,
    spark_sql,
    table_of,
    translate_query,
)
from spark_multijoin._advisor._report import report
from spark_multijoin._advisor._spark_advice import StatementAdvice, advise_spark_sources
from spark_multijoin._advisor._sql import SqlError

__all__ = ["FlinkStatementAdvice", "advise_flink_sources", "flink_report"]

_ENABLED_KEYS = ("multi-join.enabled", "spark.multi-join.enabled")
_ENABLED_NOT_SET = (
    "table.optimizer.multi-join.enabled is not set: Flink, by default, fuses only what a "
    "MULTI_JOIN hint names; the advisor takes multi-join.enabled as true (set it, in the job or "
    "with --conf, to see what the hints alone fuse)")
_SET = re.compile(r"^\s*SET\s+'?(?P<key>[^\s'=]+)'?\s*=\s*'?(?P<value>.*?)'?\s*$",
                  re.IGNORECASE | re.DOTALL)
_STATEMENT_SET = re.compile(r"^\s*(?:(?:EXECUTE\s+)?STATEMENT\s+SET\s+BEGIN|BEGIN\s+STATEMENT\s+"
                            r"SET)\b\s*|^\s*END\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class FlinkStatementAdvice(StatementAdvice):
    """The advice on one Flink statement: the advisor's on the Spark SQL it was translated to
    (`spark_sql`, empty where none was advised), what of it was not carried over (`notes`), and
    for a `CREATE TABLE`, how the table is read (`declares`)."""

    spark_sql: str = ""
    notes: tuple[str, ...] = ()
    declares: str = ""
    advised: bool = False


@dataclass
class _Item:
    location: str
    title: str
    spark: str = ""
    advised: bool = False
    notes: list[str] = dataclasses.field(default_factory=list)
    declares: str = ""


class _Job:
    """The statements of a Flink job, read in order: the tables and views declared so far and
    the runtime mode decide how a later statement's reads are translated."""

    def __init__(self, conf: dict[str, str]) -> None:
        self.tables: dict[str, FlinkTable] = {}
        self.views: set[str] = set()
        self.streaming_mode = True
        self.enabled_set = any(key in _ENABLED_KEYS for key in conf)

    def read(self, source: str, sql: str) -> list[_Item]:
        items = []
        for line, text in _statements(sql):
            location = f"{source}:{line}"
            setting = _SET.match(text)
            item = self._setting(location, text, setting) if setting else \
                self._statement(location, text, _parsed(location, text))
            items.append(item)
        return items

    def _setting(self, location: str, text: str, setting: re.Match[str]) -> _Item:
        key, value = setting.group("key"), setting.group("value")
        item = _Item(location, " ".join(text.split()))
        if key == RUNTIME_MODE:
            self.streaming_mode = value.strip().lower() != "batch"
            read = "streams" if self.streaming_mode else "no stream"
            item.declares = f"the statements after it read {read}"
            return item
        try:
            mapped = spark_conf(key, value)
        except ValueError as error:
            mapped, item.notes = None, [f"{error}; not carried over"]
        if mapped is None:
            item.notes = item.notes or [
                f"{key}: Spark's rule has no such setting; not carried over"]
        else:
            # Spark's SET takes a key with a hyphen only in backquotes.
            item.spark = f"SET `{mapped[0]}` = {mapped[1]}"
            self.enabled_set = self.enabled_set or mapped[0] in _ENABLED_KEYS
        return item

    def _statement(self, location: str, text: str, statement: exp.Expr) -> _Item:
        if isinstance(statement, exp.Create) and statement.kind == "TABLE" and \
                not statement.expression:
            table = table_of(statement)
            self.tables[table.name] = table
            return _Item(location, f"CREATE TABLE {table.name}", notes=table.notes,
                         declares=_declares(table))
        if isinstance(statement, exp.Create) and statement.kind == "VIEW":
            self.views.add(statement.this.name.lower())
            statement = exp.Create(this=statement.this, kind="VIEW",
                                   expression=statement.expression,
                                   properties=exp.Properties(expressions=[exp.TemporaryProperty()]))
        elif isinstance(statement, exp.Create) and statement.kind == "TABLE":
            statement = exp.Create(this=statement.this, kind="TABLE",
                                   expression=statement.expression)
        elif not isinstance(statement, (exp.Insert, exp.Query)):
            title = " ".join(re.split(r"\s+(?:AS|WITH)\b|\(", text, maxsplit=1,
                                      flags=re.IGNORECASE)[0].split())
            return _Item(location, title,
                         notes=["not a query or a table; not read by the advisor"])
        translation = translate_query(statement, self.tables, self.views, self.streaming_mode)
        item = _Item(location, "", spark_sql(translation.expression), True, translation.notes)
        if not self.enabled_set:
            item.notes.append(_ENABLED_NOT_SET)
            self.enabled_set = True
        return item


def _declares(table: FlinkTable) -> str:
    if table.sink:
        return "a sink"
    read = f"read once ({table.bounded})" if table.bounded else "read as a stream"
    if table.watermark and not table.bounded:
        read += f", with WATERMARK {table.watermark[0]} DELAY OF {table.watermark[1]}"
    return f"{read}; {len(table.columns)} column(s) given to the advisor as its schema"


def _statements(sql: str) -> list[tuple[int, str]]:
    """The statements of a Flink SQL text with their first lines, split at semicolons outside
    strings and comments; a statement set's BEGIN and END are left out, its statements kept."""
    found: list[tuple[int, str]] = []
    chunk: list = []
    for token in [*Flink().tokenize(sql), None]:
        if token is not None and token.token_type != TokenType.SEMICOLON:
            chunk.append(token)
            continue
        if chunk:
            text = sql[chunk[0].start:chunk[-1].end + 1]
            bare = _STATEMENT_SET.sub("", text, count=1)
            lines = text[:len(text) - len(bare)].count("\n")
            if bare.strip():
                found.append((chunk[0].line + lines, bare))
        chunk = []
    return found


def _parsed(location: str, text: str) -> exp.Expr:
    try:
        return Flink().parse(text)[0]
    except (ParseError, IndexError) as error:
        raise SqlError(f"{location}: {error}") from error


def advise_flink_sources(sources: Sequence[tuple[str, str]], *,
                         streaming: Iterable[str] | None = None,
                         conf: Mapping[str, object] | None = None,
                         schema: Mapping[str, Mapping[str, str]] | None = None
                         ) -> list[StatementAdvice]:
    """As `advise_sources`, on Flink SQL: one advice per Flink statement, each a
    `FlinkStatementAdvice` with the Spark SQL the advisor read for it."""
    spark_conf_given = _spark_confs(conf or {})
    job = _Job(spark_conf_given)
    spark_sources, items, starts = [], [], {}
    for name, sql in sources:
        read = job.read(name, sql)
        spark_sources.append((name, _spark_text(name, read, starts)))
        items += read
    tables = {name: table.columns for name, table in job.tables.items()}
    try:
        advice = advise_spark_sources(spark_sources, streaming=list(streaming or ()),
                                      dialect="spark", conf=spark_conf_given,
                                      schema={**tables, **(schema or {})})
    except SqlError as error:
        raise SqlError(_located(str(error), starts)) from error
    advised = {location: item for location, item in starts.items() if item.advised}
    by_item = {id(advised[one.location]): one for one in advice if one.location in advised}
    return [_advice(item, by_item.get(id(item))) for item in items]


def _spark_text(name: str, items: list[_Item], starts: dict[str, _Item]) -> str:
    """The Spark SQL of a source's translated statements, each put in `starts` by the location
    the advisor gives it."""
    lines, line = [], 1
    for item in items:
        if item.spark:
            starts[f"{name}:{line}"] = item
            lines.append(item.spark + ";")
            line += item.spark.count("\n") + 1
    return "\n".join(lines)


def _located(message: str, starts: Mapping[str, _Item]) -> str:
    """An error of the advisor on the translated Spark SQL, placed at the Flink statement."""
    location, _, rest = message.partition(": ")
    item = starts.get(location)
    return f"{item.location}: in its Spark SQL: {rest}" if item else message


def _spark_confs(conf: Mapping[str, object]) -> dict[str, str]:
    confs = {}
    for key, value in conf.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        mapped = spark_conf(key, text)
        if mapped is None:
            raise ValueError(f"{key}: Spark's rule has no such setting")
        confs[mapped[0]] = mapped[1]
    return confs


def _advice(item: _Item, advice: StatementAdvice | None) -> FlinkStatementAdvice:
    if advice is None:
        return FlinkStatementAdvice(item.location, item.title, [], spark_sql=item.spark,
                                    notes=tuple(item.notes), declares=item.declares)
    fields = {field.name: getattr(advice, field.name) for field in dataclasses.fields(advice)}
    fields["location"] = item.location
    return FlinkStatementAdvice(**fields, spark_sql=item.spark, notes=tuple(item.notes),
                                advised=True)


def flink_report(advice: list[StatementAdvice]) -> str:
    """The advisor's report, each Flink statement's block followed by the Spark SQL it ran and
    what was not carried over."""
    blocks = []
    for one in advice:
        if not isinstance(one, FlinkStatementAdvice) or one.advised:
            block = report([one]).rsplit("\n\n", 1)[0]
        else:
            block = textwrap.fill(f"{one.location}  {one.statement}" + (
                f": {one.declares}" if one.declares else ""), width=100, subsequent_indent="  ",
                break_on_hyphens=False, break_long_words=False)
        if isinstance(one, FlinkStatementAdvice):
            block = "\n".join([block] + _extra(one.spark_sql, one.notes))
        blocks.append(block)
    summary = report(advice).rsplit("\n\n", 1)[1]
    return "\n\n".join(blocks) + "\n\n" + summary


def _extra(spark: str, notes: Iterable[str]) -> list[str]:
    lines = []
    for number, line in enumerate(spark.splitlines()):
        lines.append(f"  {'Spark SQL' if number == 0 else '':<11} {line}")
    lines += [textwrap.fill(note, width=100, initial_indent=f"  {'Flink':<11} ",
                            subsequent_indent=" " * 14, break_on_hyphens=False) for note in notes]
    return lines
