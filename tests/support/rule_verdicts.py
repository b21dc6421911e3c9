"""What the running rule does with a SQL query: its multi-joins and what it says, read through
py4j from the plan it makes, so that the advisor's verdict can be compared with it.

The query is optimized with the multi-join disabled (Spark's plan, as the rule gets it), then
`CollapseStreamingJoinChains.rewrite` makes the rule's plan and verdicts with it enabled, as
CollapseStreamingJoinChainsSuite does; with the MULTI_JOIN hint (and the conf off) the optimized
plan is already the rule's. Nothing runs: a streaming query is only analyzed and optimized.

Inputs are told apart by their columns: each input of a test query has columns of its own, and
`owner` maps a column name to the input's name in the query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from pyspark.sql import SparkSession

from spark_multijoin._config import ENABLED_KEY, MAX_TABLES_KEY
from support.runs import session_conf

_UNSUPPORTED_OPERATION_CHECK = "spark.sql.streaming.unsupportedOperationCheck"


@dataclass
class RuleVerdict:
    """Per multi-join, its inputs, each as the names of the inputs whose columns it outputs (one
    name, or several for a join or an earlier multi-join), and its key, one set of column names
    per key column; the messages of the rule's verdicts (`notes`, and `warnings` for those it logs
    as a WARNING), with each input a message describes by its columns named instead (None where a
    description spans several inputs, as that of a multi-join's output)."""

    fused: list[frozenset[frozenset[str]]]
    keys: list[frozenset[frozenset[str]]]
    notes: list[str | None]
    warnings: list[str | None]


def rule_verdict(spark: SparkSession, sql: str, owner: Callable[[str], str], *,
                 enabled: bool = True, max_tables: int | None = None,
                 conf: Mapping[str, object] | None = None) -> RuleVerdict:
    confs: dict[str, object] = {**(conf or {}), ENABLED_KEY: False, MAX_TABLES_KEY: max_tables,
                                _UNSUPPORTED_OPERATION_CHECK: False}
    with session_conf(spark, confs):
        plan = spark.sql(sql)._jdf.queryExecution().optimizedPlan()
    verdicts: list[Any] = []
    if enabled:
        rule = spark._jvm.io.github.sparkmultijoin.optimizer.CollapseStreamingJoinChains
        with session_conf(spark, {**confs, ENABLED_KEY: True}):
            rewritten = rule.rewrite(plan)
        plan = rewritten._1()
        verdicts = list(_iterate(rewritten._2()))
    multi_joins = [node for node in _nodes(plan) if node.nodeName() == "MultiJoin"]
    fused = [frozenset(frozenset(owner(a.name()) for a in _iterate(child.output()))
                       for child in _iterate(node.children())) for node in multi_joins]
    keys = [_key(node) for node in multi_joins]
    return RuleVerdict(fused, keys,
                       [_named(v.message(), owner) for v in verdicts if not v.isWarning()],
                       [_named(v.message(), owner) for v in verdicts if v.isWarning()])


def _key(multi_join: Any) -> frozenset[frozenset[str]]:
    """Per key column, the names of the columns its members read, over the multi-join's inputs."""
    per_input = [list(_iterate(input_keys)) for input_keys in _iterate(multi_join.keys())]
    return frozenset(
        frozenset(attribute.name() for keys in per_input
                  for attribute in _iterate(keys[position].references().toSeq()))
        for position in range(len(per_input[0])))


def _named(message: str, owner: Callable[[str], str]) -> str | None:
    """`message` with each input described by its columns (`[k0, v0]`) named instead."""
    unknown = False

    def name(match: re.Match) -> str:
        nonlocal unknown
        owners = {owner(column.strip()) for column in match.group(1).split(",")}
        if len(owners) != 1:
            unknown = True
        return owners.pop()

    named = re.sub(r"\[([\w#]+(?:, [\w#]+)*)\]", name, message)
    return None if unknown else named


def _nodes(plan: Any) -> list[Any]:
    found = [plan]
    for child in _iterate(plan.children()):
        found.extend(_nodes(child))
    return found


def _iterate(sequence: Any) -> list[Any]:
    """A Scala Seq's elements, through py4j."""
    return [sequence.apply(i) for i in range(sequence.size())]
