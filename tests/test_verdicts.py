"""The verdicts from Python: the templates read from the jars, and `fusion_report`, which asks
the rule in the JVM, on a chain that fuses and one that does not."""

from __future__ import annotations

import json
import zipfile

import pytest

from spark_multijoin._session_conf import ENABLED_KEY
from spark_multijoin._jars import bundled_jars
from spark_multijoin._fusion_report import (
    TEMPLATES_RESOURCE,
    fill_template,
    fusion_report,
    verdict_templates,
)
from support.runs import session_conf

SCHEMA = "id INT, v INT"


def test_every_jar_carries_the_same_templates_and_python_reads_them():
    files = {line: zipfile.ZipFile(jar).read(TEMPLATES_RESOURCE) for line, jar in
             bundled_jars().items()}
    assert len(set(files.values())) == 1, sorted(files)
    templates = verdict_templates()
    assert templates == {code: entry["message"] for code, entry in
                         json.loads(next(iter(files.values()))).items()}
    assert {"COLLAPSED", "NO_SHARED_KEY", "OUTER_ABOVE_FULL_OUTER", "UNBOUNDED_INPUT"} <= \
        set(templates)
    assert fill_template("STORE_UNSUPPORTED", {"reason": "because"}) == \
        templates["STORE_UNSUPPORTED"].replace("<reason>", "because")
    with pytest.raises(KeyError, match="reason"):
        fill_template("STORE_UNSUPPORTED", {})


@pytest.fixture()
def views(spark, tmp_path):
    """Streams orders, payments and shipments (JSON files, none yet), as temp views."""
    names = ["orders", "payments", "shipments"]
    for name in names:
        (tmp_path / name).mkdir()
        spark.readStream.schema(SCHEMA).json(str(tmp_path / name)).createOrReplaceTempView(name)
    yield
    for name in names:
        spark.catalog.dropTempView(name)


def explained(spark, df, capsys) -> str:
    """The spark-multijoin section of `df.explain()`'s output."""
    capsys.readouterr()
    df.explain()
    printed = capsys.readouterr().out
    heading = "== Extended Information (spark-multijoin) =="
    assert heading in printed, printed
    return printed.split(heading, 1)[1].strip()


def reported(spark, capsys, third_join: str) -> tuple:
    """orders o JOIN payments p ON id, then shipments s ON `third_join`, with the multi-join on:
    the frame, its fusion report and its EXPLAIN section."""
    df = spark.sql("SELECT * FROM STREAM(orders) o JOIN STREAM(payments) p ON o.id = p.id "
                   f"JOIN STREAM(shipments) s ON {third_join}")
    with session_conf(spark, {ENABLED_KEY: True}):
        return df, fusion_report(df), explained(spark, df, capsys)


def test_fusion_report_of_a_chain_that_fuses_names_its_inputs_as_written(spark, views, capsys):
    _, report, section = reported(spark, capsys, "s.id = o.id")
    [collapsed] = report["verdicts"]
    assert collapsed["code"] == "COLLAPSED" and not collapsed["warning"]
    [group] = collapsed["args"]["groups"]
    assert [i["name"] for i in group["inputs"]] == ["o", "p", "s"]
    assert len(group["operatorIds"]) == 1 and collapsed["args"]["joinedBySpark"] == []
    assert report["explain"].strip() == section
    assert collapsed["message"] in section


def test_fusion_report_of_a_chain_that_does_not_fuse_says_why(spark, views, capsys):
    df, report, section = reported(spark, capsys, "s.v = p.v")
    codes = [verdict["code"] for verdict in report["verdicts"]]
    assert codes == ["NO_SHARED_KEY", "TOO_FEW_STREAMING_INPUTS"], report
    kept = report["verdicts"][0]
    assert [i["name"] for i in kept["args"]["inputs"]] == ["o", "p", "s"]
    assert kept["message"].startswith(verdict_templates()["NO_SHARED_KEY"].split("<")[0])
    assert report["explain"].strip() == section
    assert all(verdict["message"] in section for verdict in report["verdicts"])
    with session_conf(spark, {ENABLED_KEY: False}):
        assert [v["code"] for v in fusion_report(df)["verdicts"]] == ["CONF_DISABLED"]
