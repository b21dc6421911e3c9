"""The advisor decides as the running rule does: random SQL chains (see `random_sql_chain`) go
through both `advise` and Spark with the extension (analysis and optimization only, nothing runs),
and the advisor's multi-joins (their inputs and keys), the reasons it gives and the unbounded
inputs it warns of must be the rule's.

Nothing here is expected output written by hand: the rule's plan and notes are the reference.
"""

from __future__ import annotations

import random
import re

import pytest

from spark_multijoin import Verdict, advise
from spark_multijoin._advisor import advise_sources
from spark_multijoin._advisor._chains import CHECKPOINT_FORMAT_KEY, PROVIDER_KEY, STATE_TTL_KEY
from spark_multijoin._config import ENABLED_KEY, MAX_TABLES_KEY
from support.generators import SQL_INPUTS, SqlChain, random_sql_chain, sql_input_schema
from support.rule_verdicts import RuleVerdict, rule_verdict

QUERIES_PER_SEED = 40


@pytest.fixture(scope="module")
def sql_inputs(spark, tmp_path_factory):
    """Views s<i> (a stream of JSON files) and b<i> (a table of the same), for i < SQL_INPUTS."""
    root = tmp_path_factory.mktemp("advisor_inputs")
    for i in range(SQL_INPUTS):
        folder = root / f"input{i}"
        folder.mkdir()
        spark.readStream.schema(sql_input_schema(i)).json(str(folder)) \
            .createOrReplaceTempView(f"s{i}")
        spark.read.schema(sql_input_schema(i)).json(str(folder)).createOrReplaceTempView(f"b{i}")
    yield
    for i in range(SQL_INPUTS):
        spark.catalog.dropTempView(f"s{i}")
        spark.catalog.dropTempView(f"b{i}")


@pytest.mark.parametrize("seed", range(3))
def test_the_advisor_decides_as_the_rule_on_random_sql_chains(spark, sql_inputs, seed):
    rng = random.Random(seed)
    for _ in range(QUERIES_PER_SEED):
        chain = random_sql_chain(rng)
        expected = rule_verdict(spark, chain.sql, chain.owner, enabled=not chain.hinted,
                                max_tables=chain.max_tables)
        verdicts = advise(chain.sql, conf=_conf(chain),
                          schema=chain.schema() if rng.random() < 0.5 else None)
        assert_same_decisions(verdicts, expected, chain)


WITHIN = "{t} BETWEEN {p} - INTERVAL 10 SECONDS AND {p} + INTERVAL 20 SECONDS"
WATERMARKED = "STREAM(s{i}) WATERMARK t{i} DELAY OF INTERVAL 10 SECONDS AS a{i}"

# Shapes of the rule's suite and of the docs, in SQL: (views to create first, query, names of
# inputs 0, 1, ... as the query names them). The views' statements go to the advisor too.
FIXED_QUERIES = [
    ([], "SELECT * FROM STREAM(s0) a0 JOIN STREAM(s1) a1 ON a0.k0 = a1.k1 "
         "JOIN STREAM(s2) a2 ON a1.k1 = a2.k2 JOIN STREAM(s3) a3 ON a2.k2 = a3.k3",
     ["a0", "a1", "a2", "a3"]),
    ([], "SELECT * FROM STREAM s0 JOIN STREAM s1 ON s0.k0 = s1.k1 AND s0.v0 = s1.v1 "
         "JOIN STREAM s2 ON s1.k1 = s2.k2 AND s1.v1 = s2.v2",
     ["s0", "s1", "s2"]),
    ([], "SELECT * FROM (STREAM(s0) a0 JOIN STREAM(s1) a1 ON a0.k0 = a1.k1) "
         "JOIN (STREAM(s2) a2 JOIN STREAM(s3) a3 ON a2.k2 = a3.k3) ON a0.k0 = a2.k2",
     ["a0", "a1", "a2", "a3"]),
    ([], "WITH pair AS (SELECT * FROM STREAM(s0) a0 JOIN STREAM(s1) a1 ON a0.k0 = a1.k1) "
         "SELECT * FROM pair JOIN STREAM(s2) a2 ON pair.k1 = a2.k2 AND a2.v2 < pair.v0 + pair.v1",
     ["a0", "a1", "a2"]),
    (["CREATE TEMPORARY VIEW paid AS SELECT k1 AS order1, v1 AS amount1 FROM STREAM(s1) "
      "WHERE v1 > 0"],
     "SELECT * FROM STREAM(s0) a0 JOIN paid ON paid.order1 = a0.k0 "
     "JOIN STREAM(s2) a2 ON a2.k2 = paid.order1",
     ["a0", "paid", "a2"]),
    ([], "SELECT * FROM STREAM(s3) a3 JOIN STREAM(s0) a0 ON a3.v3 = a0.v0 "
         "JOIN STREAM(s1) a1 ON a1.k1 = a0.k0 JOIN b4 ON b4.k4 = a1.k1 "
         "JOIN STREAM(s2) a2 ON a2.k2 = a0.k0",
     ["a0", "a1", "a2", "a3", "b4"]),
    ([], "SELECT * FROM STREAM(s0) a0 JOIN STREAM(s1) a1 ON a0.k0 = a1.k1 "
         "JOIN STREAM(s2) a2 ON a0.k0 = a2.k2 LEFT JOIN STREAM(s3) a3 ON a0.k0 = a3.k3",
     ["a0", "a1", "a2", "a3"]),
    ([], f"SELECT * FROM {WATERMARKED.format(i=0)} LEFT JOIN {WATERMARKED.format(i=1)} "
         f"ON a0.k0 = a1.k1 AND {WITHIN.format(t='a1.t1', p='a0.t0')} "
         f"LEFT JOIN {WATERMARKED.format(i=2)} ON a1.k1 = a2.k2 "
         f"AND {WITHIN.format(t='a2.t2', p='a0.t0')}",
     ["a0", "a1", "a2"]),
    ([], f"SELECT * FROM {WATERMARKED.format(i=0)} LEFT JOIN {WATERMARKED.format(i=1)} "
         f"ON a0.k0 = a1.k1 LEFT JOIN {WATERMARKED.format(i=2)} ON a0.k0 = a2.k2 "
         f"AND {WITHIN.format(t='a2.t2', p='a0.t0')}",
     ["a0", "a1", "a2"]),
    ([], f"SELECT * FROM {WATERMARKED.format(i=0)} JOIN {WATERMARKED.format(i=1)} "
         f"ON a0.k0 = a1.k1 AND {WITHIN.format(t='a1.t1', p='a0.t0')} "
         f"FULL JOIN {WATERMARKED.format(i=2)} ON a1.k1 = a2.k2 "
         f"AND {WITHIN.format(t='a2.t2', p='a1.t1')} AND (a0.v0 IS NULL OR a2.v2 > a0.v0)",
     ["a0", "a1", "a2"]),
    # a3's inner join makes a2's LEFT JOIN inner, whose condition then rejects a1's padded rows.
    ([], f"SELECT * FROM {WATERMARKED.format(i=0)} LEFT JOIN {WATERMARKED.format(i=1)} "
         f"ON a0.k0 = a1.k1 AND {WITHIN.format(t='a1.t1', p='a0.t0')} "
         f"LEFT JOIN {WATERMARKED.format(i=2)} ON a1.k1 = a2.k2 "
         f"AND {WITHIN.format(t='a2.t2', p='a1.t1')} "
         f"JOIN {WATERMARKED.format(i=3)} ON a2.k2 = a3.k3 "
         f"AND {WITHIN.format(t='a3.t3', p='a2.t2')}",
     ["a0", "a1", "a2", "a3"]),
    ([], f"SELECT * FROM {WATERMARKED.format(i=0)} LEFT JOIN {WATERMARKED.format(i=1)} "
         f"ON a0.k0 = a1.k1 AND {WITHIN.format(t='a1.t1', p='a0.t0')} "
         f"LEFT JOIN {WATERMARKED.format(i=2)} ON a0.k0 = a2.k2 "
         f"AND {WITHIN.format(t='a2.t2', p='a0.t0')} "
         f"JOIN {WATERMARKED.format(i=3)} ON a2.k2 = a3.k3 "
         f"AND {WITHIN.format(t='a3.t3', p='a2.t2')} AND (a1.v1 IS NULL OR a3.v3 > a1.v1)",
     ["a0", "a1", "a2", "a3"]),
    ([], "SELECT /*+ MULTI_JOIN(a0, a1, a2) */ * FROM STREAM(s0) a0 "
         "JOIN STREAM(s1) a1 ON a0.k0 = a1.k1 JOIN STREAM(s2) a2 ON a2.k2 = a0.k0 "
         "JOIN STREAM(s3) a3 ON a3.k3 = a0.k0",
     ["a0", "a1", "a2", "a3"]),
    ([], "SELECT * FROM STREAM(s0) a0 LEFT SEMI JOIN STREAM(s1) a1 ON a0.k0 = a1.k1",
     ["a0", "a1"]),
]


@pytest.mark.parametrize("views, query, names", FIXED_QUERIES)
def test_the_advisor_decides_as_the_rule_on_the_suites_shapes_in_sql(spark, sql_inputs, views,
                                                                      query, names):
    hinted = "MULTI_JOIN" in query
    chain = SqlChain(query, names, hinted, None, subquery_inputs=[])
    for view in views:
        spark.sql(view)
    try:
        expected = rule_verdict(spark, query, chain.owner, enabled=not hinted)
    finally:
        for view in views:
            spark.catalog.dropTempView(re.search(r"VIEW (\w+)", view).group(1))
    advice = advise_sources([("<sql>", ";\n".join(views + [query]))], conf=_conf(chain),
                            schema=chain.schema())
    assert_same_decisions(advice[-1].verdicts, expected, chain)


# The state store's confs, as the rule reads them for the whole plan: the in-memory store takes
# every chain, with a TTL too (which never keeps a chain as planned, and bounds the inputs of
# inner joins that no interval condition bounds); another provider, or checkpoint format v2 on
# the in-memory store, none; RocksDB takes every chain on either checkpoint format. Without a
# provider the advisor takes the store to be RocksDB, the session's here.
IN_MEMORY = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
STORE_CONFS = [
    {PROVIDER_KEY: IN_MEMORY},
    {PROVIDER_KEY: IN_MEMORY, STATE_TTL_KEY: "1h"},
    {PROVIDER_KEY: "com.example.MyStateStoreProvider"},
    {CHECKPOINT_FORMAT_KEY: "2"},
    {PROVIDER_KEY: IN_MEMORY, CHECKPOINT_FORMAT_KEY: "2"},
    {STATE_TTL_KEY: "1h"},
]


@pytest.mark.parametrize("store_conf", STORE_CONFS, ids=lambda conf: ",".join(
    f"{key.rsplit('.', 1)[-1]}={value.rsplit('.', 1)[-1]}" for key, value in conf.items()))
def test_the_advisor_reads_the_state_store_confs_as_the_rule(spark, sql_inputs, store_conf):
    for _, query, names in (FIXED_QUERIES[0], FIXED_QUERIES[7], INNER_WITH_UNBOUNDED):
        chain = SqlChain(query, names, False, None, subquery_inputs=[])
        expected = rule_verdict(spark, query, chain.owner, conf=store_conf)
        verdicts = advise(query, conf={**_conf(chain), **store_conf}, schema=chain.schema())
        assert_same_decisions(verdicts, expected, chain)


# a2 has an event time that no interval condition bounds: unbounded, unless a TTL bounds it.
INNER_WITH_UNBOUNDED = (
    [], f"SELECT * FROM {WATERMARKED.format(i=0)} JOIN {WATERMARKED.format(i=1)} "
        f"ON a0.k0 = a1.k1 AND {WITHIN.format(t='a1.t1', p='a0.t0')} "
        f"JOIN {WATERMARKED.format(i=2)} ON a0.k0 = a2.k2",
    ["a0", "a1", "a2"])


def assert_same_decisions(verdicts: list[Verdict], expected: RuleVerdict,
                          chain: SqlChain) -> None:
    context = f"\n{chain.sql}\nhinted={chain.hinted} max_tables={chain.max_tables}\n" + \
        "\n".join(map(repr, verdicts))
    groups = [(_inputs(verdict.fused_groups, number, chain), _key_inputs(key))
              for verdict in verdicts
              for number, key in enumerate(verdict.keys)]
    assert sorted(_canonical(g) for g, _ in groups) == \
        sorted(map(_canonical, expected.fused)), context
    assert set(groups) == {(fused, frozenset(frozenset(map(_input_number, columns))
                                             for columns in key))
                           for fused, key in zip(expected.fused, expected.keys)}, context
    if chain.hinted:
        return  # the rule's notes are logged by the optimizer, not returned
    joined = {"sub"} if chain.subquery_inputs else set()
    reasons = sorted(r for verdict in verdicts for r in _comparable(verdict.reasons, joined)
                     # The rule says nothing of a plan without a join it could collapse.
                     if expected.notes or "keeps Spark's binary operator" not in r)
    # A conf that keeps every chain as planned is the reason the advisor gives, and a warning.
    kept = [w for w in expected.warnings if w and w.startswith(_KEPT_AS_PLANNED)]
    assert reasons == sorted(_comparable(expected.notes + kept, joined)), context
    # The rule logs each warning once; it describes a multi-join's output by all its columns.
    warnings = {w for verdict in verdicts for w in verdict.warnings if "(multi-join " not in w}
    assert warnings == {w for w in expected.warnings if w is not None}, context


def _conf(chain: SqlChain) -> dict[str, object]:
    return {ENABLED_KEY: not chain.hinted, MAX_TABLES_KEY: chain.max_tables} \
        if chain.max_tables else {ENABLED_KEY: not chain.hinted}


def _canonical(group: frozenset[frozenset[str]]) -> tuple[tuple[str, ...], ...]:
    return tuple(sorted(tuple(sorted(entry)) for entry in group))


def _inputs(groups: list[list[str]], number: int, chain: SqlChain
            ) -> frozenset[frozenset[str]]:
    """The inputs of the advisor's multi-join `number`, each as the names of the inputs of the
    query it joins: one, or several for `(a JOIN b)`, `sub` or `(multi-join n)`."""
    def names(entry: str) -> frozenset[str]:
        earlier = re.fullmatch(r"\(multi-join (\d+)\)", entry)
        if earlier:
            return frozenset().union(*_inputs(groups, int(earlier.group(1)) - 1, chain))
        if entry == "sub" and chain.subquery_inputs:
            return frozenset(chain.subquery_inputs)
        return frozenset(re.findall(r"[\w#]+", entry)) - {"JOIN"}
    return frozenset(map(names, groups[number]))


def _key_inputs(key: list[list[str]]) -> frozenset[frozenset[int]]:
    """Per key column, the inputs (by number) of the columns its members read."""
    return frozenset(frozenset(_input_number(column) for member in members
                               for column in re.findall(r"\.(\w+)", member))
                     for members in key)


def _input_number(column: str) -> int:
    """Every column of input i ends in i (k3, order1), whatever view renames it."""
    return int(re.search(r"\d+$", column).group())


_KEPT_AS_PLANNED = "Streaming joins run as Spark planned them"

# What the advisor says that the rule does not log: that an input left over by max-tables joins
# by Spark's join, or that a tree has no stateful join at all.
_ADVISOR_ONLY = ("leaves it over", "Batch queries are never rewritten",
                 "No join here has streaming inputs on both sides")


# The SQL a reason quotes, which Catalyst and sqlglot each write their own way.
_SQL_IN_REASONS = [
    (r"it: .* uses the null-padded side", "it: <condition> uses the null-padded side"),
    (r"is null: .* \(", "is null: <condition> ("),
    (r"the key \(.*?\) (to that|among)", r"the key <members> \1"),
]


def _comparable(reasons: list[str | None], joined: set[str]) -> list[str]:
    """The reasons both tell the same way: about chains of inputs that are each one relation of
    the query (the rule describes a join of several by all their columns, which the test does
    not name; the advisor by `(a JOIN b)` or by the alias in `joined`), without the SQL they
    quote."""
    found = []
    for reason in reasons:
        reason = reason and reason.split(" Conditions: ")[0]
        if reason is None or re.search(r"\(\S+ JOIN |\(multi-join ", reason) or \
                any(re.search(rf"\b{name}\b", reason) for name in joined) or \
                any(words in reason for words in _ADVISOR_ONLY):
            continue
        for pattern, replacement in _SQL_IN_REASONS:
            reason = re.sub(pattern, replacement, reason)
        # The advisor gives the rule's note on a chain it collapsed where Spark's joins join
        # some of its inputs: why they stay out.
        if not reason.startswith("Collapsed ") or "Joined by Spark's joins" in reason:
            found.append(reason)
    return found
