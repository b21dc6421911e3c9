"""The examples the docs show run, and check their own answers against Spark's; the advisor
reads the pipeline example's SQL files as its run fuses them.

They run in the tests' session (each example's `main()` only builds a session and prints what
`run_example` returns), with the confs they set restored afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_multijoin._advisor import advise_sources
from spark_multijoin._session_conf import ENABLED_KEY
from support.modules import load_module
from support.runs import session_conf

pytestmark = pytest.mark.one_line  # the examples are the same Python on every line

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["orders_pipeline", "time_bounded_orders"])
def test_example_runs_and_agrees_with_spark(spark, tmp_path, name):
    with session_conf(spark, {ENABLED_KEY: None}):
        report = load_module(EXAMPLES / f"{name}.py").run_example(spark, tmp_path)
    assert report.same, "\n".join(report.lines)
    assert "StreamingMultiJoin" in report.plan
    assert any("same rows: True" in line for line in report.lines)


def test_the_advisor_reads_the_pipeline_examples_sql_as_its_run_fuses_it(spark):
    """What examples/sdp_pipeline/run.py shows the pipeline's plans do (its run takes about 40
    seconds, too long for the suite): order_facts and order_status run as multi-joins, the
    flow's join of two streams as Spark's, and the materialized view joins nothing."""
    files = sorted((EXAMPLES / "sdp_pipeline" / "transformations").glob("*.sql"))
    advice = {a.statement: a.verdicts for a in
              advise_sources([(path.name, path.read_text()) for path in files])}
    assert advice["CREATE MATERIALIZED VIEW customer_totals"] == []
    assert advice["CREATE STREAMING TABLE reviewed_payments"] == []
    (facts,) = advice["CREATE STREAMING TABLE order_facts"]
    assert facts.fused_groups == [["o", "p", "s", "r"]]
    assert [reason.split(" of ")[0] for reason in facts.reasons] == ["Collapsed a chain"]
    (status,) = advice["CREATE STREAMING TABLE order_status"]
    assert status.fused_groups == [["o", "p", "s"]]
    assert status.bounded == {"o": True, "p": True, "s": True}
    (flow,) = advice["CREATE FLOW reviewed_payments_flow"]
    assert flow.fused_groups == [] and "join of two inputs" in flow.reasons[0]
