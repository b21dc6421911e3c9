"""`--dialect flink`: Flink SQL jobs (tests/advisor/flink) translated to Spark SQL and advised.

Per job, the translated Spark SQL must be read by the advisor, and its verdicts must equal the
advisor's on a Spark SQL equivalent of the job written here by hand, with its own schema. No
Spark here: the advisor today needs none."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import sqlglot

from spark_multijoin import advise
from spark_multijoin._advisor import advise_sources
from spark_multijoin._advisor._flink_advice import FlinkStatementAdvice
from spark_multijoin._advisor._flink_translate import spark_duration
from spark_multijoin._cli import main

pytestmark = pytest.mark.one_line  # the advisor is the same Python on every line

JOBS = Path(__file__).parent / "flink"


@pytest.fixture(autouse=True)
def _on_the_tests_session(spark):
    """The advisor plans on the running session (so these run among the tests that run Spark,
    on every line)."""


def tables(**columns: str) -> dict[str, dict[str, str]]:
    """Columns as `name type, ...` (a `;` for a comma inside a type)."""
    return {name: dict(column.replace(";", ",").split() for column in text.split(","))
            for name, text in columns.items()}


# Per job: the Spark SQL a user would write for it, and the tables' columns.
SPARK = {
    "01_multijoin_docs.sql": (
        "SET `multi-join.enabled` = true;\n"
        "SELECT u.user_id, u.name, o.order_id, p.payment_id, s.location FROM STREAM(users) u "
        "JOIN STREAM(orders) o ON o.user_id = u.user_id "
        "JOIN STREAM(payments) p ON p.user_id = u.user_id "
        "JOIN STREAM(shipments) s ON s.user_id = p.user_id",
        tables(users="user_id string, name string, cash int",
               orders="order_id string, user_id string, product string",
               payments="payment_id string, user_id string, price int",
               shipments="location string, user_id string")),
    "02_multijoin_hint_partial.sql": (
        "SET `multi-join.enabled` = false;\n"
        "SELECT /*+ MULTI_JOIN(t1, t2, t3) */ * FROM STREAM(t1) JOIN STREAM(t2) ON t1.id = t2.id "
        "JOIN STREAM(t3) ON t1.id = t3.id JOIN STREAM(t4) ON t1.id = t4.id",
        tables(**{name: "id bigint, name string, age int" for name in ("t1", "t2", "t3", "t4")})),
    "03_hints_ttl_watermarks.sql": (
        "SET `multi-join.enabled` = false;\n"
        "INSERT INTO order_facts SELECT /*+ MULTI_JOIN(o, p, s), "
        "STATE_TTL(o, '1 day', p, '12 hours', s, '90 minutes') */ o.order_id, p.paid, s.carrier "
        "FROM STREAM(orders) WATERMARK order_time DELAY OF INTERVAL 5 SECONDS AS o "
        "JOIN STREAM(payments) WATERMARK pay_time DELAY OF INTERVAL 10 SECONDS AS p "
        "ON p.order_id = o.order_id "
        "JOIN STREAM(shipments) WATERMARK ship_time DELAY OF INTERVAL 0 SECONDS AS s "
        "ON s.order_id = o.order_id",
        tables(orders="order_id bigint, customer string, amount decimal(10;2), "
                      "order_time timestamp",
               payments="order_id bigint, paid decimal(10;2), pay_time timestamp",
               shipments="order_id bigint, carrier string, ship_time timestamp")),
    "04_interval_join_docs.sql": (
        "SELECT * FROM STREAM(orders) WATERMARK order_time DELAY OF INTERVAL 1 MINUTE AS o, "
        "STREAM(shipments) WATERMARK ship_time DELAY OF INTERVAL 1 MINUTE AS s "
        "WHERE o.id = s.order_id AND o.order_time BETWEEN s.ship_time - INTERVAL '4' HOUR "
        "AND s.ship_time",
        tables(orders="id int, order_time timestamp",
               shipments="order_id int, ship_time timestamp")),
    "05_interval_chain.sql": (
        "SELECT c.user_id, c.url, v.page, b.item "
        "FROM STREAM(clicks) WATERMARK click_time DELAY OF INTERVAL 5 SECONDS c "
        "JOIN STREAM(views) WATERMARK view_time DELAY OF INTERVAL 5 SECONDS v "
        "ON v.user_id = c.user_id AND v.view_time BETWEEN c.click_time - INTERVAL '1' HOUR "
        "AND c.click_time + INTERVAL '1' HOUR "
        "JOIN STREAM(buys) WATERMARK buy_time DELAY OF INTERVAL 5 SECONDS b "
        "ON b.user_id = v.user_id AND b.buy_time BETWEEN v.view_time "
        "AND v.view_time + INTERVAL '30' MINUTE",
        tables(clicks="user_id bigint, url string, click_time timestamp",
               views="user_id bigint, page string, view_time timestamp",
               buys="user_id bigint, item string, buy_time timestamp")),
    "06_no_shared_key.sql": (
        "SELECT a.v, c.w FROM STREAM(a) JOIN STREAM(b) ON a.k = b.k JOIN STREAM(c) ON c.j = b.j",
        tables(a="k bigint, v string", b="k bigint, j bigint", c="j bigint, w string")),
    "07_left_outer_watermarked.sql": (
        "SELECT o.order_id, p.pay_time, s.ship_time "
        "FROM STREAM(orders) WATERMARK order_time DELAY OF INTERVAL 10 SECONDS o "
        "LEFT JOIN STREAM(payments) WATERMARK pay_time DELAY OF INTERVAL 10 SECONDS p "
        "ON p.order_id = o.order_id "
        "AND p.pay_time BETWEEN o.order_time AND o.order_time + INTERVAL '1' HOUR "
        "LEFT JOIN STREAM(shipments) WATERMARK ship_time DELAY OF INTERVAL 10 SECONDS s "
        "ON s.order_id = o.order_id "
        "AND s.ship_time BETWEEN o.order_time AND o.order_time + INTERVAL '1' HOUR",
        tables(orders="order_id bigint, order_time timestamp",
               payments="order_id bigint, pay_time timestamp",
               shipments="order_id bigint, ship_time timestamp")),
    "08_view_and_cte.sql": (
        "CREATE TEMPORARY VIEW big_orders AS SELECT order_id, amount FROM STREAM(orders) "
        "WHERE amount > 100;\n"
        "INSERT INTO ledger WITH paid AS (SELECT order_id, paid FROM STREAM(payments) "
        "WHERE paid > 0) SELECT o.order_id, o.amount, p.paid, r.refunded FROM big_orders o "
        "JOIN paid p ON p.order_id = o.order_id JOIN STREAM(refunds) r ON r.order_id = p.order_id",
        tables(orders="order_id bigint, amount int", payments="order_id bigint, paid int",
               refunds="order_id bigint, refunded int")),
    "09_bounded_and_temporal.sql": (
        "SELECT o.order_id, p.paid, s.carrier, r.rate, m.promo FROM STREAM(orders) o "
        "JOIN STREAM(payments) p ON p.order_id = o.order_id "
        "JOIN STREAM(shipments) s ON s.order_id = o.order_id "
        "JOIN promos m ON m.order_id = o.order_id JOIN rates r ON r.currency = o.currency",
        tables(orders="order_id bigint, currency string, order_time timestamp, proc timestamp",
               payments="order_id bigint, paid int", shipments="order_id bigint, carrier string",
               rates="currency string, rate double", promos="order_id bigint, promo string")),
    "10_statement_set.sql": (
        "INSERT INTO out1 SELECT a.k FROM STREAM(a) JOIN STREAM(b) ON a.k = b.k "
        "JOIN STREAM(c) ON c.k = b.k;\n"
        "INSERT INTO out2 SELECT a.k FROM STREAM(a) JOIN STREAM(b) ON a.k = b.k "
        "JOIN STREAM(c) ON c.j = a.j",
        tables(**{name: "k bigint, j bigint" for name in "abc"})),
    "11_filesystem_batch_mode.sql": (
        "SELECT * FROM STREAM(events) e JOIN labels l ON l.id = e.id "
        "JOIN STREAM(notes) n ON n.id = e.id JOIN STREAM(extra) x ON x.id = n.id;\n"
        "SELECT * FROM events e JOIN notes n ON n.id = e.id JOIN extra x ON x.id = n.id",
        tables(events="id bigint, v string", labels="id bigint, label string",
               notes="id bigint, note string", extra="id bigint, x string")),
}


def flink_advice(job: str) -> list[FlinkStatementAdvice]:
    path = JOBS / job
    return advise_sources([(str(path), path.read_text())], dialect="flink")


def judged(advice) -> list[tuple[bool, list]]:
    """Each judged statement's verdicts, without where the statement is or its SQL's text."""
    return [(one.defines_view, [dataclasses.replace(verdict, location="", spark_sql="")
                                for verdict in one.verdicts]) for one in advice]


def test_the_corpus_has_a_spark_equivalent_for_every_job():
    assert len(SPARK) >= 10
    assert sorted(SPARK) == sorted(path.name for path in JOBS.glob("*.sql"))


@pytest.mark.parametrize("job", sorted(SPARK))
def test_a_translated_job_is_judged_as_its_spark_equivalent(job):
    advice = flink_advice(job)
    advised = [one for one in advice if one.advised]
    for one in advised:  # the Spark SQL shown is read on its own, with the job's schema
        assert advise_sources([("shown", one.spark_sql)], streaming=[], schema=SPARK[job][1])
    sql, schema = SPARK[job]
    expected = advise_sources([("spark", sql)], schema=schema)
    assert judged(advised) == judged(expected)
    assert any(verdict.inputs for one in advised for verdict in one.verdicts)


def test_what_fuses_in_the_corpus():
    fused = {job: [verdict.fused_groups for one in flink_advice(job) for verdict in one.verdicts]
             for job in ("02_multijoin_hint_partial.sql", "06_no_shared_key.sql",
                         "11_filesystem_batch_mode.sql")}
    assert fused == {"02_multijoin_hint_partial.sql": [[["t1", "t2", "t3"]]],
                     "06_no_shared_key.sql": [[]],
                     "11_filesystem_batch_mode.sql": [[["e", "n", "x"]], []]}


def test_what_is_not_carried_over_is_said():
    notes = [note for one in flink_advice("09_bounded_and_temporal.sql") for note in one.notes]
    assert any("OPTIONS hint" in note for note in notes)
    assert any("temporal join" in note for note in notes)
    assert any(note.startswith("Hint LOOKUP(") for note in notes)
    (setting,) = [one for one in flink_advice("03_hints_ttl_watermarks.sql")
                  if "parallelism" in one.statement]
    assert setting.notes == ("parallelism.default: Spark's rule has no such setting; not "
                             "carried over",)
    (function,) = [one for one in flink_advice("06_no_shared_key.sql")
                   if one.statement == "CREATE TEMPORARY FUNCTION clean"]
    assert function.notes == ("not a query or a table; not read by the advisor",)


def test_advise_dialect_flink_prints_the_spark_sql_it_ran(capsys):
    job = JOBS / "03_hints_ttl_watermarks.sql"
    assert main(["advise", "--dialect", "flink", "--require-fusion", str(job)]) == 0
    out = capsys.readouterr().out
    assert f"{job}:31  INSERT INTO order_facts\n" in out
    assert "  multi-join  o, p, s on p.order_id = o.order_id = s.order_id\n" in out
    assert "  Spark SQL   INSERT INTO order_facts\n" in out
    assert "STATE_TTL(o, '1 day', p, '12 hours', s, '90 minutes')" in out
    assert "FROM STREAM(orders) WATERMARK order_time DELAY OF INTERVAL '5' SECOND AS o" in out
    assert "  Spark SQL   SET `multi-join.enabled` = false\n" in out
    assert main(["advise", "--dialect", "flink", "--require-fusion",
                 str(JOBS / "06_no_shared_key.sql")]) == 1


def test_flink_ddl_reads_and_writes_back():
    ddl = ("CREATE TABLE t (id BIGINT, r ROW<a INT>, b BYTES, "
           "ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL, p AS PROCTIME(), "
           "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND, PRIMARY KEY (id) NOT ENFORCED) "
           "WITH ('connector' = 'kafka')")
    written = sqlglot.parse_one(ddl, read="flink").sql("flink")
    assert sqlglot.parse_one(written, read="flink") == sqlglot.parse_one(ddl, read="flink")
    assert "ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL" in written
    assert "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND" in written
    assert written.endswith("WITH ('connector'='kafka')")


@pytest.mark.parametrize("flink, spark_form", [
    ("1d", "1 day"), ("12 h", "12 hours"), ("90min", "90 minutes"),
    ("3600000", "3600000 milliseconds"), ("10 s", "10 seconds")])
def test_durations(flink, spark_form):
    assert spark_duration(flink) == spark_form


def test_a_duration_that_is_none_is_refused():
    with pytest.raises(ValueError, match="not a Flink duration"):
        spark_duration("soon")


def test_the_spark_sql_shown_is_spark_sql(spark):
    """Spark's own parser reads every statement the advisor ran for the corpus, and the
    hand-written equivalents (the WATERMARK clause and STREAM reads are Spark 4 SQL)."""
    parser = spark._jsparkSession.sessionState().sqlParser()
    shown = [one.spark_sql for job in sorted(SPARK) for one in flink_advice(job) if one.spark_sql]
    written = [text for sql, _ in SPARK.values() for text in sql.split(";\n")]
    for text in shown + written:
        parser.parsePlan(text)


def test_errors_say_which_flink_statement(tmp_path, capsys):
    job = tmp_path / "job.sql"
    job.write_text("SET 'table.exec.state.ttl' = '1 h';\n\nSELECT * FROM a JOIN (b\n")
    assert main(["advise", "--dialect", "flink", str(job)]) == 2
    assert f"{job}:3: " in capsys.readouterr().err
    job.write_text("SET 'table.exec.state.ttl' = 'soon';\nSELECT * FROM a")
    (setting, _) = advise_sources([("job.sql", job.read_text())], dialect="flink")
    assert setting.notes == ("not a Flink duration: 'soon'; not carried over",)


def test_advise_takes_the_flink_dialect():
    job = (JOBS / "02_multijoin_hint_partial.sql").read_text()
    (verdict,) = advise(job, dialect="flink")
    assert verdict.fused_groups == [["t1", "t2", "t3"]]


def test_flink_confs_are_taken_as_the_rules():
    path = JOBS / "10_statement_set.sql"
    sources = [(str(path), path.read_text())]
    on, _ = [one.verdicts[0] for one in advise_sources(sources, dialect="flink") if one.advised]
    off = advise_sources(sources, dialect="flink",
                         conf={"table.optimizer.multi-join.enabled": False})
    assert on.fused_groups == [["a", "b", "c"]]
    assert [verdict.fused_groups for one in off for verdict in one.verdicts] == [[], []]
    assert not any("is not set" in note for one in off for note in one.notes)
    with pytest.raises(ValueError, match="parallelism.default: Spark's rule has no such"):
        advise_sources(sources, dialect="flink", conf={"parallelism.default": 4})
