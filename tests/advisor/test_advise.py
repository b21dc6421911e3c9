"""`advise` on what test_advisor_equals_explain does not reach: how SQL is read (streaming
inputs, SDP statements, SET, views, USING), the stand-ins it plans over, and what the advisor
says it cannot know. The advisor plans on the tests' session (the `spark` fixture), as it reuses
an active session with the extension; each expectation follows from the rule as
docs/what-fuses.md states it."""

from __future__ import annotations

import pytest

from spark_multijoin import advise
from spark_multijoin._advisor import SqlError, advise_sources

pytestmark = pytest.mark.one_line  # the advisor is the same Python on every line

CHAIN = ("SELECT * FROM {a} JOIN {b} ON a.k = b.k JOIN {c} ON c.k = a.k "
         "JOIN {d} ON d.k = b.k")


def chain(a: str = "a", b: str = "b", c: str = "c", d: str = "d") -> str:
    return CHAIN.format(a=a, b=b, c=c, d=d)


def test_without_stream_reads_or_names_every_input_is_streaming(spark):
    (verdict,) = advise(chain())
    assert verdict.streaming == ["a", "b", "c", "d"]
    assert verdict.fused_groups == [["a", "b", "c", "d"]]
    assert verdict.spark_sql.startswith("SELECT * FROM a AS a JOIN b AS b ON a.k = b.k")


def test_inputs_read_with_stream_or_named_are_streaming_the_others_static(spark):
    (verdict,) = advise(chain(a="STREAM(a) a", b="STREAM b", d="STREAM(d) AS d"))
    assert verdict.streaming == ["a", "b", "d"]
    assert verdict.fused_groups == [["a", "b", "d"]]
    assert verdict.reasons[0].endswith("Joined by Spark's joins: c is static.")
    (named,) = advise(chain(), streaming=["a", "B", "d"])
    assert named.streaming == ["a", "b", "d"] and named.fused_groups == [["a", "b", "d"]]


def test_pipeline_statements_set_and_views_across_sources(spark):
    sources = [
        ("views.sql", "CREATE TEMPORARY VIEW paid AS SELECT p.k, p.v FROM STREAM(payments) p "
                      "WHERE p.v > 0"),
        ("flows.sql", "SET spark.multi-join.max-tables = 3;\n"
                      "CREATE STREAMING TABLE facts;\n"
                      "CREATE FLOW facts_flow AS INSERT INTO facts BY NAME "
                      + chain(a="STREAM(a) a", b="paid b", c="STREAM(c) c", d="STREAM(d) d")
                      + ";\nSET multi-join.enabled = false;\n"
                      + chain(*(f"STREAM({name}) {name}" for name in "abcd"))),
    ]
    views, table, flow, disabled = advise_sources(sources)
    assert (views.statement, views.defines_view, views.verdicts) == \
        ("CREATE TEMPORARY VIEW paid", True, [])
    assert (table.location, table.statement, table.verdicts) == \
        ("flows.sql:2", "CREATE STREAMING TABLE facts", [])
    (verdict,) = flow.verdicts
    assert flow.statement == "CREATE FLOW facts_flow"
    # The view read as b is inlined. The rule reports the key group; max-tables 3 makes one
    # multi-join of it, with d joined by Spark's join.
    assert verdict.fused_groups == [["a", "b", "c", "d"]]
    assert verdict.explain.count("StreamingMultiJoin 1073741824: ") == 1
    (off,) = disabled.verdicts
    assert off.fused_groups == [] and "multi-join.enabled is false" in off.reasons[0]


def test_using_joins_take_the_left_sides_column(spark):
    (inner,) = advise("SELECT * FROM a JOIN b USING (k) JOIN c USING (k)")
    assert inner.fused_groups == [["a", "b", "c"]]
    assert inner.keys == [[["a.k", "b.k", "c.k"]]]
    # After a FULL OUTER join, USING's column is the COALESCE of both sides: no input's key.
    (full,) = advise("SELECT * FROM a FULL JOIN b USING (k) JOIN c USING (k)")
    assert full.fused_groups == []


def test_what_sql_cannot_tell_it_says_and_a_schema_tells(spark):
    (unqualified,) = advise("SELECT * FROM a JOIN b ON ka = kb JOIN c ON kc = ka")
    assert unqualified.fused_groups == []
    assert any("Which input ka comes from is not known" in u for u in unqualified.unknowns)
    schema = {name: {f"k{name}": "INT"} for name in "abc"}
    (placed,) = advise("SELECT * FROM a JOIN b ON ka = kb JOIN c ON kc = ka", schema=schema)
    assert placed.fused_groups == [["a", "b", "c"]]
    assert not any("typed by how it uses them" in u for u in placed.unknowns)
    (fused,) = advise(chain())
    assert fused.bounded == {"a": None, "b": None, "c": None, "d": None}
    assert any("whether a watermark bounds their rows" in u for u in fused.unknowns)
    assert any("typed by how it uses them: a (k BIGINT)" in u for u in fused.unknowns)


def test_stand_ins_take_the_types_the_sql_suggests(spark):
    """A column compared with a string is a STRING, one compared with an interval's bound a
    TIMESTAMP (the columns it is compared with too), any other a BIGINT."""
    (strings,) = advise("SELECT * FROM a JOIN b ON a.k = b.k JOIN c ON c.k = a.k WHERE a.k = 'x'")
    assert strings.fused_groups == [["a", "b", "c"]]
    assert any("a (k STRING); b (k STRING); c (k STRING)" in u for u in strings.unknowns)
    (timed,) = advise("SELECT * FROM a JOIN b ON a.k = b.k AND b.t BETWEEN a.t AND a.t + "
                      "INTERVAL 1 HOUR JOIN c ON c.k = a.k")
    assert any("a (k BIGINT, t TIMESTAMP); b (k BIGINT, t TIMESTAMP); c (k BIGINT)" in u
               for u in timed.unknowns), timed.unknowns


def test_interval_conditions_between_watermarked_inputs_bound_them(spark):
    timed = "STREAM({0}) WATERMARK t DELAY OF INTERVAL 1 MINUTE AS {0}"
    (verdict,) = advise(
        f"SELECT * FROM {timed.format('a')} JOIN {timed.format('b')} ON a.k = b.k "
        "AND b.t BETWEEN a.t AND a.t + INTERVAL 10 MINUTES "
        f"JOIN {timed.format('c')} ON c.k = a.k JOIN {timed.format('d')} ON d.k = a.k")
    assert verdict.bounded == {"a": False, "b": False, "c": False, "d": False}
    assert len(verdict.warnings) == 4  # c and d bound nothing, so nothing bounds a or b
    (bounded,) = advise(
        f"SELECT * FROM {timed.format('a')} JOIN {timed.format('b')} ON a.k = b.k "
        "AND b.t BETWEEN a.t AND a.t + INTERVAL 10 MINUTES "
        f"JOIN {timed.format('c')} ON c.k = a.k AND c.t BETWEEN a.t - INTERVAL 1 HOUR AND a.t")
    assert bounded.bounded == {"a": True, "b": True, "c": True}
    assert bounded.warnings == []


def test_an_outer_join_whose_padded_rows_a_filter_rejects_is_inner(spark):
    (verdict,) = advise("SELECT * FROM a LEFT JOIN b ON a.k = b.k JOIN c ON c.k = a.k "
                        "WHERE b.v > 1")
    # Spark's optimizer makes it inner before the rule sees it, and says nothing of it.
    assert verdict.fused_groups == [["a", "b", "c"]]


def test_an_outer_join_whose_padded_rows_a_later_inner_join_rejects_is_inner(spark):
    # d's join makes c's inner (Spark's optimizer), whose c.k = b.k then rejects b's padded rows.
    (verdict,) = advise("SELECT * FROM a LEFT JOIN b ON b.k = a.k LEFT JOIN c ON c.k = b.k "
                        "JOIN d ON d.k = c.k")
    assert verdict.fused_groups == [["a", "b", "c", "d"]]
    assert verdict.reasons[0].startswith("Collapsed a chain of 4 joins")
    assert verdict.reasons[1:] == ["The LEFT OUTER join that pads b with nulls runs as an INNER join: "
                               "a condition above it rejects those null-padded rows (Spark's "
                               "optimizer does the same where that condition is a filter right "
                               "above the join)."]


def test_the_hint_fuses_only_what_it_names_while_the_conf_is_off(spark):
    off = {"multi-join.enabled": False}
    (disabled,) = advise(chain(), conf=off)
    assert disabled.fused_groups == [] and "multi-join.enabled is false" in disabled.reasons[0]
    (hinted,) = advise(chain().replace("SELECT", "SELECT /*+ MULTI_JOIN(a, b, c, x) */"),
                       conf=off)
    assert hinted.fused_groups == [["a", "b", "c"]]


def test_a_chain_that_keeps_sparks_joins_misses_fusion(spark):
    (missed,) = advise("SELECT * FROM a JOIN b ON a.k = b.k JOIN c ON c.j = b.j")
    assert missed.misses_fusion and not missed.fuses
    (two,) = advise("SELECT * FROM a JOIN b ON a.k = b.k")
    assert not two.misses_fusion


def test_sql_it_cannot_parse_and_bad_confs_are_errors(spark):
    with pytest.raises(SqlError, match="<sql>:2"):
        advise("SELECT 1;\nSELECT * FROM a JOIN (b")
    with pytest.raises(ValueError, match="at least 3"):
        advise(chain(), conf={"multi-join.max-tables": 2})
