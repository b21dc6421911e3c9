"""Flink SQL as a sqlglot dialect (`dialect="flink"`), for the advisor's migration aid.

sqlglot has no Flink dialect. Flink SQL is Calcite's, but what a streaming join job writes is
close to Spark SQL (backquoted names, `STRING`, `INTERVAL '1' HOUR`, `/*+ ... */` hints), so the
dialect extends sqlglot's Spark one with what Flink's DDL adds: `WATERMARK FOR column AS
expression` in a table's schema, metadata columns (`METADATA [FROM 'key'] [VIRTUAL]`), `ROW<...>`
and `BYTES` types, and connector options as `WITH ('key' = 'value', ...)`. Query hints
(`MULTI_JOIN(a, b)`, `STATE_TTL('a' = '1d')`) parse as Spark's do: functions in a hint.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

__all__ = ["Flink", "MetadataColumnConstraint"]


class MetadataColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """A Flink metadata column's `METADATA [FROM 'key'] [VIRTUAL]`: its value comes from the
    connector (a Kafka record's timestamp, say), not from the record's payload."""

    arg_types = {"this": False, "virtual": False}


class Flink(Spark):
    """Flink SQL, as far as streaming join jobs need it; sqlglot registers it as `flink`."""

    class Tokenizer(Spark.Tokenizer):
        KEYWORDS = {
            **Spark.Tokenizer.KEYWORDS,
            "BYTES": TokenType.VARBINARY,
            # Flink's TIMESTAMP has no time zone (Spark's TIMESTAMP_NTZ); TIMESTAMP_LTZ has.
            "TIMESTAMP": TokenType.TIMESTAMP,
            # Flink's row type is written ROW<name type, ...>, Spark's STRUCT<...>.
            "ROW": TokenType.STRUCT,
        }

    class Parser(Spark.Parser):
        CONSTRAINT_PARSERS = {
            **Spark.Parser.CONSTRAINT_PARSERS,
            "WATERMARK": lambda self: self.expression(
                exp.WatermarkColumnConstraint(
                    this=self._match(TokenType.FOR) and self._parse_column(),
                    expression=self._match(TokenType.ALIAS) and self._parse_disjunction(),
                )
            ),
            "METADATA": lambda self: self.expression(
                MetadataColumnConstraint(
                    this=self._match(TokenType.FROM) and self._parse_string(),
                    virtual=self._match_text_seq("VIRTUAL") or None,
                )
            ),
        }
        SCHEMA_UNNAMED_CONSTRAINTS = {*Spark.Parser.SCHEMA_UNNAMED_CONSTRAINTS, "WATERMARK"}

    class Generator(Spark.Generator):
        WITH_PROPERTIES_PREFIX = "WITH"
        SUPPORTS_TEMPORAL_PRECISION = True
        TYPE_MAPPING = {
            **Spark.Generator.TYPE_MAPPING,
            exp.DType.TIMESTAMP: "TIMESTAMP",
            exp.DType.TIMESTAMPLTZ: "TIMESTAMP_LTZ",
            exp.DType.VARBINARY: "BYTES",
            exp.DType.STRUCT: "ROW",
        }
        # sqlglot finds a generator method by its expression's registered name; this
        # expression is not sqlglot's, so it is dispatched here.
        TRANSFORMS = {
            **Spark.Generator.TRANSFORMS,
            MetadataColumnConstraint: lambda self, e: self.metadata_sql(e),
        }

        def computedcolumnconstraint_sql(self, expression: exp.ComputedColumnConstraint) -> str:
            return f"AS {self.sql(expression, 'this')}"

        def metadata_sql(self, expression: MetadataColumnConstraint) -> str:
            key = self.sql(expression, "this")
            virtual = " VIRTUAL" if expression.args.get("virtual") else ""
            return f"METADATA{f' FROM {key}' if key else ''}{virtual}"

        def version_sql(self, expression: exp.Version) -> str:
            return f"FOR SYSTEM_TIME {expression.text('kind')} {self.sql(expression, 'expression')}"
