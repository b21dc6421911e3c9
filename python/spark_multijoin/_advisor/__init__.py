"""The offline fusion advisor: what spark-multijoin's rule would do with SQL text, without a JVM.

sqlglot parses the statements (with Spark's streaming syntax, see `_sql`), qualifies them and
gives their scopes; `_relations` makes join trees of them as Spark's optimizer leaves them for
the rule, `_optimizer` changes them as Spark's optimizer does first, and `_verdict` and
`_collapse` decide as the rule does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from sqlglot import exp

from spark_multijoin._advisor._chains import (
    CHECKPOINT_FORMAT_KEY,
    ENABLED_KEY,
    HINT,
    MAX_TABLES_KEY,
    PROVIDER_KEY,
    ROCKSDB_PROVIDER,
    STATE_TTL_KEY,
    Settings,
)
from spark_multijoin._advisor._expressions import render
from spark_multijoin._advisor._optimizer import optimize
from spark_multijoin._advisor._relations import (
    Definitions,
    StatementTrees,
    StreamingInputs,
    defines_view,
    statement_trees,
)
from spark_multijoin._advisor._tree import leaves
from spark_multijoin._advisor._sql import STREAMING, SqlError, Statement, statements
from spark_multijoin._advisor._verdict import TreeContext, Verdict, verdict_of

__all__ = ["SqlError", "StatementAdvice", "Verdict", "advise", "advise_sources"]


@dataclass(frozen=True)
class StatementAdvice:
    """The verdicts on one statement's join trees (none: the statement joins nothing, or defines
    a view, whose joins are judged where a statement reads it, as Spark inlines it there)."""

    location: str
    statement: str
    verdicts: list[Verdict]
    defines_view: bool = False


def advise(sql: str, *, streaming: Iterable[str] | None = None, dialect: str = "spark",
           conf: Mapping[str, object] | None = None,
           schema: Mapping[str, Mapping[str, str]] | None = None) -> list[Verdict]:
    """What spark-multijoin's rule would do with the joins of `sql`, one verdict per join tree.

    `sql` holds statements separated by `;`: queries, `INSERT`, `CREATE ... AS` (views are
    inlined where later statements read them, as Spark inlines them), and Spark Declarative
    Pipelines' `CREATE STREAMING TABLE`, `CREATE MATERIALIZED VIEW` and `CREATE FLOW`; `SET
    key = value` sets a conf for the statements after it.

    An input is streaming when it is read with `STREAM(name)` or `STREAM name`, or named (table
    or alias) in `streaming`; with neither, every input is. `conf` holds the rule's confs
    (`multi-join.enabled`, unlike in Spark, is taken as true unless set; `multi-join.max-tables`,
    `multi-join.state-ttl`) and the state store's (`spark.sql.streaming.stateStore.providerClass`
    and `.checkpointFormatVersion`). `schema` (table -> column -> type), as sqlglot takes it,
    places the columns a query does not qualify. Where no provider is set, the state store is
    taken to be RocksDB, as `configure_spark_with_multijoin` sets it.
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
        from spark_multijoin._advisor._flink_advice import advise_flink_sources
        return advise_flink_sources(sources, streaming=streaming, conf=conf, schema=schema)
    base_conf = {key: str(value).lower() if isinstance(value, bool) else str(value)
                 for key, value in (conf or {}).items()}
    found = [statement for name, sql in sources
             for statement in statements(sql, name, dialect, base_conf)]
    definitions = Definitions.of(found)
    names = frozenset(name.lower() for name in streaming or ())
    uses_stream = any(table.meta.get(STREAMING) for statement in found
                      for table in statement.expression.find_all(exp.Table))
    policy = StreamingInputs(names, everything=streaming is None and not uses_stream)
    advice = []
    for statement in found:
        if defines_view(statement):
            advice.append(StatementAdvice(statement.location, _title(statement), [], True))
            continue
        trees = statement_trees(statement, definitions, policy, schema, dialect)
        advice.append(StatementAdvice(statement.location, _title(statement),
                                      _verdicts(statement, trees, schema is not None)))
    return advice


def _verdicts(statement: Statement, trees: StatementTrees, schema_given: bool) -> list[Verdict]:
    names = {leaf.uid: leaf.name for tree in trees.trees for leaf in leaves(tree)}

    def shown(expression: exp.Expr) -> str:
        return render(expression, names)

    settings, hint_warnings = _settings(statement.conf, trees)
    verdicts = []
    for tree in trees.trees:
        optimized, notes = optimize(tree, shown)
        context = TreeContext(statement.location, _title(statement), settings, shown,
                              schema_given, notes, list(hint_warnings), list(trees.problems))
        verdicts.append(verdict_of(optimized, context))
    return verdicts


def _settings(conf: Mapping[str, str], trees: StatementTrees) -> tuple[Settings, list[str]]:
    """The rule's settings for one statement, and the warnings its hint gets."""
    conf = {_conf_key(key): value for key, value in conf.items()}
    enabled = conf.get(ENABLED_KEY, "true").strip().lower() != "false"
    max_tables = conf.get(MAX_TABLES_KEY)
    if max_tables is not None and (not max_tables.strip().isdigit() or int(max_tables) < 3):
        raise ValueError(f"{MAX_TABLES_KEY} must be a whole number of at least 3: {max_tables}")
    warnings = [f"Hint {HINT}({name}): no input of the query is named {name}, so the hint does "
                f"not apply to it. Named inputs: {', '.join(trees.named_leaves)}"
                for name in trees.hint_names if name not in trees.named_leaves]
    named = None if enabled else frozenset().union(
        *(trees.named_leaves[name] for name in trees.hint_names if name in trees.named_leaves))
    return Settings(int(max_tables) if max_tables else None,
                    bool(conf.get(STATE_TTL_KEY, "").strip()), named,
                    _store_problem(conf)), warnings


def _store_problem(conf: Mapping[str, str]) -> str | None:
    """As the rule's `StateLayout.forSession`, in its words: why the session's state store keeps
    every streaming join as Spark planned it, or None. No provider set: RocksDB, whose verdicts
    are those of Spark's in-memory store too."""
    version = conf.get(CHECKPOINT_FORMAT_KEY, "1").strip()
    provider = conf.get(PROVIDER_KEY, ROCKSDB_PROVIDER).strip()
    if provider.endswith(".HDFSBackedStateStoreProvider") and version != "1":
        return ("Spark's in-memory state store supports only state store checkpoint format "
                f"version 1, and {CHECKPOINT_FORMAT_KEY} is {version}. Set {PROVIDER_KEY} to "
                f"{ROCKSDB_PROVIDER} for a new query.")
    if provider.endswith((".RocksDBStateStoreProvider", ".HDFSBackedStateStoreProvider")):
        return None
    return ("the multi-join keeps its state in RocksDB or in Spark's in-memory state store, and "
            f"{PROVIDER_KEY} is '{provider}'. Set it to {ROCKSDB_PROVIDER} (the Python helper "
            "configure_spark_with_multijoin does this) for a new query.")


def _conf_key(key: str) -> str:
    # The rule's confs also go by their spark.-prefixed alias (SparkConf takes only those).
    return key[len("spark."):] if key.startswith("spark.multi-join.") else key


_TITLE = re.compile(
    r"^\s*((?:CREATE|INSERT)\b[\s\S]*?)(?:\s+(?:AS\b|BY\s+NAME\b|SELECT\b|WITH\b|\(|COMMENT\b)|"
    r"\s*\(|\s*$)", re.IGNORECASE)


def _title(statement: Statement) -> str:
    """What the statement does, in its own first words: `CREATE STREAMING TABLE t`, `SELECT`."""
    match = _TITLE.match(statement.text)
    if match:
        return " ".join(match.group(1).split())
    return statement.text.split(None, 1)[0].upper() if statement.text.strip() else ""
