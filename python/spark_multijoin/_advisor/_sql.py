"""Reading SQL text into sqlglot expressions, one per statement, with the Spark syntax sqlglot's
Spark dialect does not parse: `STREAM(name)` and `STREAM name` reads, the `WATERMARK column DELAY
OF interval` clause of a relation, Spark Declarative Pipelines' `CREATE FLOW name AS INSERT INTO
... BY NAME query`, and `SET key = value` (whose keys sqlglot reads as arithmetic).

A streaming read becomes a plain `exp.Table` marked in its `meta`, and a watermark clause a mark
on the relation it follows, so that sqlglot's scope and qualify utilities see ordinary tables.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError
from sqlglot.parser import Parser
from sqlglot.tokens import Token, Tokenizer, TokenType

STREAMING = "spark_multijoin.streaming"
WATERMARK = "spark_multijoin.watermark"
WRITTEN_NAME = "spark_multijoin.written_name"


@dataclass(frozen=True)
class Watermark:
    """A `WATERMARK column DELAY OF interval` clause: the event-time column it names (its alias
    where it gives one) and the delay as written."""

    column: str
    delay: str


@dataclass(frozen=True)
class Statement:
    """One statement of a SQL source, with the confs `SET` statements before it set."""

    source: str
    line: int
    text: str
    expression: exp.Expr
    conf: dict[str, str]

    @property
    def location(self) -> str:
        return f"{self.source}:{self.line}"


class SqlError(ValueError):
    """A statement the advisor cannot parse, with where it is."""


def statements(sql: str, source: str, dialect: str, conf: dict[str, str]) -> list[Statement]:
    """The statements of `sql` that are not `SET`, each with the confs in effect where it is:
    `conf`, then the `SET key = value` statements above it, in order."""
    dialect_instance = Dialect.get_or_raise(dialect)
    tokenizer_class, parser_class = _streaming_classes(type(dialect_instance))
    tokens = tokenizer_class(dialect=dialect_instance).tokenize(sql)
    found: list[Statement] = []
    conf = dict(conf)
    for chunk in _split(tokens):
        text = sql[chunk[0].start:chunk[-1].end + 1]
        setting = _SET.match(text)
        if setting:
            conf[_unquoted(setting.group("key"))] = _unquoted(setting.group("value"))
            continue
        try:
            parsed = parser_class(dialect=dialect_instance).parse(chunk, sql)
        except ParseError as error:
            raise SqlError(f"{source}:{chunk[0].line}: {error}") from error
        found.extend(Statement(source, chunk[0].line, text, expression, dict(conf))
                     for expression in parsed if expression is not None)
    return found


_SET = re.compile(r"^\s*SET\s+(?P<key>[^\s=]+)\s*=\s*(?P<value>.*?)\s*$", re.IGNORECASE | re.DOTALL)


def _unquoted(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"`" \
        else value


def _split(tokens: list[Token]) -> list[list[Token]]:
    chunks: list[list[Token]] = [[]]
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            chunks.append([])
        else:
            chunks[-1].append(token)
    return [chunk for chunk in chunks if chunk]


@functools.cache
def _streaming_classes(dialect_class: type[Dialect]) -> tuple[type[Tokenizer], type[Parser]]:
    """The dialect's tokenizer and parser, extended with Spark's streaming syntax. Subclasses of
    the tokenizer and parser, not of the dialect, so that no new dialect is registered."""
    base_tokenizer = dialect_class.tokenizer_class
    tokenizer = type("StreamingTokenizer", (base_tokenizer,), {
        # As in sqlglot's Databricks dialect: STREAM starts a streaming read, and can still be
        # an identifier elsewhere.
        "KEYWORDS": {**base_tokenizer.KEYWORDS, "STREAM": TokenType.STREAM},
    })
    parser = type("StreamingParser", (_StreamingSyntax, dialect_class.parser_class), {})
    return tokenizer, parser


class _StreamingSyntax(Parser):
    """Parser methods for Spark's streaming syntax, mixed into a dialect's parser."""

    _pending_watermark: Watermark | None = None

    def _parse_stream(self) -> Any:
        """`STREAM name` or `STREAM(name)`, with what may follow a table: a plain table marked
        as read as a stream. Falls back to sqlglot (STREAM as a name) when no table follows."""
        index = self._index
        if not self._match(TokenType.STREAM):
            return None
        wrapped = self._match(TokenType.L_PAREN)
        table = self._try_parse(self._parse_table_parts)
        if table is None or (wrapped and not self._match(TokenType.R_PAREN)):
            self._retreat(index)
            return None
        table.meta[STREAMING] = True
        alias = self._parse_table_alias(alias_tokens=self.TABLE_ALIAS_TOKENS)
        if alias:
            table.set("alias", alias)
        return table

    def _parse_table(self, *args: Any, **kwargs: Any) -> Any:
        # A relation's watermark clause is read with its alias, after any relation nested in
        # it: keep an enclosing relation's pending clause while this one is parsed.
        enclosing, self._pending_watermark = self._pending_watermark, None
        relation = super()._parse_table(*args, **kwargs)
        if relation is not None and self._pending_watermark is not None:
            relation.meta[WATERMARK] = self._pending_watermark
        self._pending_watermark = enclosing
        return relation

    def _parse_table_alias(self, alias_tokens: Any = None) -> Any:
        watermark = self._parse_watermark()
        if watermark is not None:
            self._pending_watermark = watermark
        return super()._parse_table_alias(alias_tokens)

    def _parse_watermark(self) -> Watermark | None:
        """`WATERMARK column [AS name] DELAY OF interval`, as Spark 4's relations take it."""
        index = self._index
        if not self._match_text_seq("WATERMARK"):
            return None
        column = self._parse_assignment()
        if self._match(TokenType.ALIAS):
            column = self._parse_id_var()
        if column is None or not self._match_text_seq("DELAY", "OF"):
            self._retreat(index)
            return None
        delay = self._parse_bitwise()
        if delay is None:
            self._retreat(index)
            return None
        return Watermark(column.name, delay.sql())

    def _parse_create(self) -> Any:
        if self._match_text_seq("FLOW"):
            return self._parse_flow()
        return super()._parse_create()

    def _parse_flow(self) -> exp.Create:
        """SDP's `CREATE FLOW name [COMMENT '...'] AS INSERT INTO target BY NAME query`."""
        name = self._parse_table_parts()
        if self._match_text_seq("COMMENT"):
            self._parse_string()
        self._match(TokenType.ALIAS)
        return exp.Create(this=name, kind="FLOW", expression=self._parse_statement())
