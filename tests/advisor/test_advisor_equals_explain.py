"""The advisor prints what EXPLAIN shows: for the docs' SQL examples, the rule suite's shapes in
SQL and random SQL chains, the query as written is run through `spark.sql` over real relations
of the tests' session, and the advisor's verdict on the same SQL (planned over its stand-ins, on
a session of its own) must show the same spark-multijoin section of `df.explain(extended=True)`,
with every verdict line of it among the reasons and warnings it prints and every multi-join among
its fused groups. Nothing is rewritten between the two.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError

from spark_multijoin import Verdict, advise, fusion_report
from spark_multijoin._advisor import advise_sources
from spark_multijoin._advisor._sql import statements
from spark_multijoin._session_conf import ENABLED_KEY, MAX_TABLES_KEY
from support.generators import SQL_INPUTS, SqlChain, random_sql_chain, sql_input_schema
from support.runs import session_conf

pytestmark = pytest.mark.one_line  # the advisor is the same Python on every line

ROOT = Path(__file__).resolve().parents[2]
HEADING = "== Extended Information (spark-multijoin) ==\n"
RANDOM_QUERIES = 15
UNSUPPORTED_OPERATION_CHECK = "spark.sql.streaming.unsupportedOperationCheck"

# The docs' inputs, as the examples read them.
DOCS_SCHEMA = {
    "orders": {"order_id": "BIGINT", "customer": "BIGINT", "amount": "DOUBLE",
               "order_time": "TIMESTAMP"},
    "payments": {"order_id": "BIGINT", "method": "STRING", "paid": "DOUBLE",
                 "pay_time": "TIMESTAMP"},
    "shipments": {"order_id": "BIGINT", "carrier": "STRING", "ship_time": "TIMESTAMP"},
    "reviews": {"order_id": "BIGINT", "stars": "INT"},
    "customers": {"customer": "BIGINT", "segment": "STRING"},
}


@pytest.fixture(scope="module")
def relations(spark, tmp_path_factory):
    """Views s<i> (a stream of JSON files) and b<i> (a table of the same) for the random and the
    suite's queries, and streams of the docs' inputs."""
    root = tmp_path_factory.mktemp("advisor_inputs")
    views = {f"s{i}": (sql_input_schema(i), True) for i in range(SQL_INPUTS)}
    views.update({f"b{i}": (sql_input_schema(i), False) for i in range(SQL_INPUTS)})
    views.update({name: (", ".join(f"{c} {t}" for c, t in columns.items()), True)
                  for name, columns in DOCS_SCHEMA.items()})
    for name, (schema, streaming) in views.items():
        reader = spark.readStream if streaming else spark.read
        reader.schema(schema).json(str(root)).createOrReplaceTempView(name)
    yield
    for name in views:
        spark.catalog.dropTempView(name)


def explained(spark, sql: str, conf: dict[str, object]) -> tuple[str, dict]:
    """`df.explain(extended=True)`'s text for `sql` as written, under `conf`, and the rule's
    report on it (`fusion_report`), which EXPLAIN shows where Spark can plan the query
    physically (not where Spark's own join would refuse it, with MULTIPLE_EVENT_TIME_COLUMNS)."""
    # Batch planning of a streaming query stops at that check before it reaches the hook.
    confs = {**conf, UNSUPPORTED_OPERATION_CHECK: False}
    with session_conf(spark, confs):
        frame = spark.sql(sql)
        try:
            text = spark._jvm.PythonSQLUtils.explainString(frame._jdf.queryExecution(),
                                                           "extended")
        except Py4JJavaError:
            text = ""  # Spark has no batch plan for some streaming sources
        return text, fusion_report(frame)


def assert_advisor_shows_explain(verdict: Verdict, explain: tuple[str, dict]) -> bool:
    """Whether EXPLAIN showed the rule's section (else the rule's report is the reference)."""
    text, report = explain
    context = f"\n{text}\n{verdict!r}"
    assert verdict.explain == report["explain"], context
    shows = HEADING in text
    if shows:
        assert HEADING + verdict.explain in text, context
    lines = verdict.explain.splitlines()
    shown = sorted([f"  - {reason}" for reason in verdict.reasons] +
                   [f"  WARNING: {warning}" for warning in verdict.warnings])
    assert shown == sorted(line for line in lines if line.startswith(("  - ", "  WARNING: "))), \
        context
    multi_joins = [line for line in lines if line.startswith("  StreamingMultiJoin ")]
    assert len(multi_joins) == len(verdict.fused_groups), context
    for line, group in zip(multi_joins, verdict.fused_groups):
        assert f": {', '.join(group)} on " in line, context
    return shows


def _conf(chain: SqlChain) -> dict[str, object]:
    return {ENABLED_KEY: not chain.hinted, MAX_TABLES_KEY: chain.max_tables}


def test_the_advisor_shows_explain_on_random_sql_chains(spark, relations):
    rng = random.Random(0)
    shown = 0
    for _ in range(RANDOM_QUERIES):
        chain = random_sql_chain(rng)
        conf = _conf(chain)
        (verdict,) = advise(chain.sql, conf={k: v for k, v in conf.items() if v is not None},
                            schema=chain.schema())
        shown += assert_advisor_shows_explain(verdict, explained(spark, chain.sql, conf))
    assert shown >= RANDOM_QUERIES // 2


WITHIN = "{t} BETWEEN {p} - INTERVAL 10 SECONDS AND {p} + INTERVAL 20 SECONDS"
WATERMARKED = "STREAM(s{i}) WATERMARK t{i} DELAY OF INTERVAL 10 SECONDS AS a{i}"

# Shapes of CollapseStreamingJoinChainsSuite and of the docs, in SQL: views to create first (the
# advisor reads their statements too), then the query.
SUITE_SHAPES = [
    ([], "SELECT * FROM STREAM(s0) a0 JOIN STREAM(s1) a1 ON a0.k0 = a1.k1 "
         "JOIN STREAM(s2) a2 ON a1.k1 = a2.k2 JOIN STREAM(s3) a3 ON a2.k2 = a3.k3"),
    ([], "SELECT * FROM STREAM s0 JOIN STREAM s1 ON s0.k0 = s1.k1 AND s0.v0 = s1.v1 "
         "JOIN STREAM s2 ON s1.k1 = s2.k2 AND s1.v1 = s2.v2"),
    ([], "SELECT * FROM (STREAM(s0) a0 JOIN STREAM(s1) a1 ON a0.k0 = a1.k1) "
         "JOIN (STREAM(s2) a2 JOIN STREAM(s3) a3 ON a2.k2 = a3.k3) ON a0.k0 = a2.k2"),
    ([], "WITH pair AS (SELECT * FROM STREAM(s0) a0 JOIN STREAM(s1) a1 ON a0.k0 = a1.k1) "
         "SELECT * FROM pair JOIN STREAM(s2) a2 ON pair.k1 = a2.k2 AND a2.v2 < pair.v0 + pair.v1"),
    (["CREATE TEMPORARY VIEW paid AS SELECT k1 AS order1, v1 AS amount1 FROM STREAM(s1) "
      "WHERE v1 > 0"],
     "SELECT * FROM STREAM(s0) a0 JOIN paid ON paid.order1 = a0.k0 "
     "JOIN STREAM(s2) a2 ON a2.k2 = paid.order1"),
    ([], "SELECT * FROM STREAM(s3) a3 JOIN STREAM(s0) a0 ON a3.v3 = a0.v0 "
         "JOIN STREAM(s1) a1 ON a1.k1 = a0.k0 JOIN b4 ON b4.k4 = a1.k1 "
         "JOIN STREAM(s2) a2 ON a2.k2 = a0.k0"),
    ([], "SELECT * FROM STREAM(s0) a0 JOIN STREAM(s1) a1 ON a0.k0 = a1.k1 "
         "JOIN STREAM(s2) a2 ON a0.k0 = a2.k2 LEFT JOIN STREAM(s3) a3 ON a0.k0 = a3.k3"),
    ([], f"SELECT * FROM {WATERMARKED.format(i=0)} LEFT JOIN {WATERMARKED.format(i=1)} "
         f"ON a0.k0 = a1.k1 AND {WITHIN.format(t='a1.t1', p='a0.t0')} "
         f"LEFT JOIN {WATERMARKED.format(i=2)} ON a1.k1 = a2.k2 "
         f"AND {WITHIN.format(t='a2.t2', p='a0.t0')}"),
    ([], f"SELECT * FROM {WATERMARKED.format(i=0)} LEFT JOIN {WATERMARKED.format(i=1)} "
         f"ON a0.k0 = a1.k1 LEFT JOIN {WATERMARKED.format(i=2)} ON a0.k0 = a2.k2 "
         f"AND {WITHIN.format(t='a2.t2', p='a0.t0')}"),
    ([], f"SELECT * FROM {WATERMARKED.format(i=0)} JOIN {WATERMARKED.format(i=1)} "
         f"ON a0.k0 = a1.k1 AND {WITHIN.format(t='a1.t1', p='a0.t0')} "
         f"FULL JOIN {WATERMARKED.format(i=2)} ON a1.k1 = a2.k2 "
         f"AND {WITHIN.format(t='a2.t2', p='a1.t1')} AND (a0.v0 IS NULL OR a2.v2 > a0.v0)"),
    # a3's inner join makes a2's LEFT JOIN inner, whose condition then rejects a1's padded rows.
    ([], f"SELECT * FROM {WATERMARKED.format(i=0)} LEFT JOIN {WATERMARKED.format(i=1)} "
         f"ON a0.k0 = a1.k1 AND {WITHIN.format(t='a1.t1', p='a0.t0')} "
         f"LEFT JOIN {WATERMARKED.format(i=2)} ON a1.k1 = a2.k2 "
         f"AND {WITHIN.format(t='a2.t2', p='a1.t1')} "
         f"JOIN {WATERMARKED.format(i=3)} ON a2.k2 = a3.k3 "
         f"AND {WITHIN.format(t='a3.t3', p='a2.t2')}"),
    ([], "SELECT /*+ MULTI_JOIN(a0, a1, a2) */ * FROM STREAM(s0) a0 "
         "JOIN STREAM(s1) a1 ON a0.k0 = a1.k1 JOIN STREAM(s2) a2 ON a2.k2 = a0.k0 "
         "JOIN STREAM(s3) a3 ON a3.k3 = a0.k0"),
    ([], "SELECT /*+ STATE_TTL(a0, '1 day'), STATE_TTL(a3, '12 hours') */ * FROM STREAM(s0) a0 "
         "LEFT JOIN STREAM(s1) a1 ON a0.k0 = a1.k1 JOIN STREAM(s2) a2 ON a2.k2 = a0.k0 "
         "JOIN STREAM(s3) a3 ON a3.k3 = a0.k0"),
    ([], "SELECT * FROM STREAM(s0) a0 LEFT SEMI JOIN STREAM(s1) a1 ON a0.k0 = a1.k1"),
    # docs/what-fuses.md's and docs/operations.md's hints, their conditions filled in.
    ([], "SELECT /*+ MULTI_JOIN(orders, payments, shipments) */ * FROM orders "
         "JOIN payments ON payments.order_id = orders.order_id "
         "JOIN shipments ON shipments.order_id = orders.order_id"),
    ([], "SELECT /*+ STATE_TTL(c, '1 day'), STATE_TTL(o, '12 hours') */ * FROM orders o "
         "JOIN payments p ON p.order_id = o.order_id JOIN shipments s ON s.order_id = o.order_id "
         "JOIN customers c ON c.customer = o.customer"),
]


@pytest.mark.parametrize("enabled", [True, False], ids=["enabled", "hint-only"])
def test_the_advisor_shows_explain_on_the_suites_shapes(spark, relations, enabled):
    schema = {**SqlChain.schema(), **DOCS_SCHEMA}
    shown = 0
    for views, query in SUITE_SHAPES:
        for view in views:
            spark.sql(view)
        try:
            explain = explained(spark, query, {ENABLED_KEY: enabled})
        finally:
            for view in views:
                spark.catalog.dropTempView(view.split()[3])
        advice = advise_sources([("<sql>", ";\n".join(views + [query]))],
                                conf={ENABLED_KEY: enabled}, schema=schema)
        shown += assert_advisor_shows_explain(advice[-1].verdicts[0], explain)
    assert shown >= len(SUITE_SHAPES) // 2


def _docs_sources() -> list[tuple[str, str]]:
    advisor_md = (ROOT / "docs" / "advisor.md").read_text()
    sql = advisor_md.split("```sql\n", 1)[1].split("```", 1)[0]
    pipeline = sorted((ROOT / "examples" / "sdp_pipeline" / "transformations").glob("*.sql"))
    return [("docs/advisor.md", sql)] + [(path.name, path.read_text()) for path in pipeline]


@pytest.mark.parametrize("source", _docs_sources(), ids=lambda source: source[0])
def test_the_advisor_shows_explain_on_the_docs_examples(spark, relations, source):
    advice = advise_sources([source], schema=DOCS_SCHEMA)
    found = statements(source[1], source[0], "spark", {})
    for statement, advised in zip(found, advice):
        if not advised.verdicts:
            continue
        # The query as the file writes it, after its CREATE ... AS or INSERT ... BY NAME.
        query = statement.text[statement.text.upper().index("SELECT"):]
        assert assert_advisor_shows_explain(advised.verdicts[0],
                                            explained(spark, query, {ENABLED_KEY: True}))
