"""The fusion advisor: what spark-multijoin's rule does with the joins of SQL text, read from
the rule itself.

sqlglot splits and parses the sources (with Spark's streaming syntax and SDP's statements, see
`_sql`), and transpiles other dialects to Spark's. `_reads` finds what each statement reads and
the columns it reads of it; `_standins` makes a stand-in relation of each; `_planning` plans
each statement on a local Spark session with the extension, and the rule's verdicts on the plan
make the statement's `Verdict` (`_verdict`). `_spark_advice` puts these together per statement;
`_flink_advice` translates Flink SQL to Spark SQL and advises that.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from spark_multijoin._advisor._flink_advice import advise_flink_sources
from spark_multijoin._advisor._spark_advice import StatementAdvice, advise_spark_sources
from spark_multijoin._advisor._sql import SqlError
from spark_multijoin._advisor._verdict import Verdict

__all__ = ["SqlError", "StatementAdvice", "Verdict", "advise", "advise_sources"]


def advise(sql: str, *, streaming: Iterable[str] | None = None, dialect: str = "spark",
           conf: Mapping[str, object] | None = None,
           schema: Mapping[str, Mapping[str, str]] | None = None) -> list[Verdict]:
    """What spark-multijoin's rule does with the joins of `sql`, one verdict per statement that
    joins.

    `sql` holds statements separated by `;`: queries, `INSERT`, `CREATE ... AS` (views are
    inlined where later statements read them, as Spark inlines them), and Spark Declarative
    Pipelines' `CREATE STREAMING TABLE`, `CREATE MATERIALIZED VIEW` and `CREATE FLOW`; `SET
    key = value` sets a conf for the statements after it.

    Each statement is planned on a local Spark session with the extension (see `_planning`), over
    stand-ins for the relations it reads: a stream where read with `STREAM(name)` or `STREAM
    name`, or named (table or alias) in `streaming` (with neither, every input is), a batch
    relation otherwise. `schema` (table -> column -> type) gives their columns; without it they
    take the columns the SQL reads, typed by how it uses them, and the verdicts say so. `conf`
    holds confs for the session (`multi-join.enabled`, unlike in Spark, is true unless set).
    """
    return [verdict for advice in advise_sources([("<sql>", sql)], streaming=streaming,
                                                  dialect=dialect, conf=conf, schema=schema)
            for verdict in advice.verdicts]


def advise_sources(sources: Sequence[tuple[str, str]], *, streaming: Iterable[str] | None = None,
                   dialect: str = "spark", conf: Mapping[str, object] | None = None,
                   schema: Mapping[str, Mapping[str, str]] | None = None
                   ) -> list[StatementAdvice]:
    """As `advise`, per statement, over several sources (file name, SQL) read as one pipeline:
    a view one defines is inlined where another reads it."""
    if dialect == "flink":  # Flink SQL is translated to Spark SQL, then advised as that.
        return advise_flink_sources(sources, streaming=streaming, conf=conf, schema=schema)
    return advise_spark_sources(sources, streaming=streaming, dialect=dialect, conf=conf,
                                schema=schema)
