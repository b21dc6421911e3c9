"""The examples the README shows run, and check their own answers against Spark's.

They run in the tests' session (each example's `main()` only builds a session and prints what
`run_example` returns), with the confs they set restored afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_multijoin._config import ENABLED_KEY
from support.modules import load_module
from support.runs import session_conf

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["orders_pipeline", "time_bounded_orders"])
def test_example_runs_and_agrees_with_spark(spark, tmp_path, name):
    with session_conf(spark, {ENABLED_KEY: None}):
        report = load_module(EXAMPLES / f"{name}.py").run_example(spark, tmp_path)
    assert report.same, "\n".join(report.lines)
    assert "StreamingMultiJoin" in report.plan
    assert any("same rows: True" in line for line in report.lines)
