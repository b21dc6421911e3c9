"""What the analysis of changelog joins refuses, each with an error that names what to fix: the
queries run no micro-batch, as analysis or the query's start refuses them."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_multijoin import changelog, fusion_report

# Analysis of changelog joins is one rule on every line, which plans no micro-batch here.
pytestmark = pytest.mark.one_line

ORDERS = "oid int, cid int, amount int, v long, _change_type string"
CUSTOMERS = "cid int, name string, v long, _change_type string"


def _stream(spark: SparkSession, folder: Path, schema: str) -> DataFrame:
    folder.mkdir(parents=True, exist_ok=True)
    return spark.readStream.schema(schema).json(str(folder))


@pytest.fixture
def inputs(spark: SparkSession, tmp_path: Path) -> tuple[DataFrame, DataFrame, DataFrame]:
    orders = changelog.declare(_stream(spark, tmp_path / "o", ORDERS), "oid", "v").alias("o")
    customers = changelog.declare(_stream(spark, tmp_path / "c", CUSTOMERS), "cid", "v")
    plain = _stream(spark, tmp_path / "p", "cid int, note string")
    return orders, customers.alias("c"), plain


def _on(orders: DataFrame, other: DataFrame, how: str = "left") -> DataFrame:
    return orders.join(other, F.col("o.cid") == other["cid"], how)


def test_a_join_of_changelogs_is_one_changelog_join(inputs) -> None:
    orders, customers, _ = inputs
    joined = _on(orders, customers)
    assert joined.columns == ["oid", "cid", "amount", "cid", "name", "_change_type"]
    assert joined.schema["_change_type"].metadata["spark_multijoin.row_id"] == ["oid", "cid"]
    verdicts = fusion_report(joined)["verdicts"]
    assert [v["code"] for v in verdicts] == ["CHANGELOG_JOINED"]
    assert "(changelog, row id cid, LEFT OUTER)" in verdicts[0]["message"]


@pytest.mark.parametrize("build, says", [
    (lambda o, c, p: _on(o, p), r"its side \[cid, note\] is not a changelog"),
    (lambda o, c, p: _on(o, p.alias("notes")), "its side notes is not a changelog"),
    (lambda o, c, p: _on(o, c).groupBy("o.cid").count(), "Aggregate cannot read the changes"),
    (lambda o, c, p: _on(o, c).dropDuplicates(["name"]), "cannot read the changes"),
    (lambda o, c, p: _on(o, c).select("name", "amount"), "leaves out `oid`"),
    (lambda o, c, p: _on(o, c, "left_semi"), "INNER, LEFT, RIGHT or FULL OUTER"),
    (lambda o, c, p: o.join(c, F.col("o.amount") > c["cid"]), "no equality"),
    (lambda o, c, p: _on(o, c).where(F.rand() > 0.5), "not deterministic"),
    (lambda o, c, p: _on(o, c).where("_change_type = 'insert'"), "reads the change type"),
])
def test_refused_with_what_to_do(inputs, build, says: str) -> None:
    orders, customers, plain = inputs
    with pytest.raises(AnalysisException, match=says):
        build(orders, customers, plain)


def test_a_declaration_names_the_missing_column(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(AnalysisException, match="no column `id` for its row id"):
        changelog.declare(_stream(spark, tmp_path / "o", ORDERS), "id", "v")
    with pytest.raises(AnalysisException, match="row version `_change_type`"):
        changelog.declare(_stream(spark, tmp_path / "o", ORDERS), "oid", "_change_type")


def test_a_declaration_names_the_input_as_the_query_does(spark: SparkSession) -> None:
    """A table read under its name, or an alias: the error names it, and the format once."""
    orders = spark.createDataFrame([(1, 2, 3, 1, "insert")], ORDERS).alias("orders")
    with pytest.raises(AnalysisException, match="The changelog `orders` is not a stream"):
        changelog.declare(orders, "oid", "v")
    with pytest.raises(AnalysisException,
                       match="The debezium changelog `orders` is not a stream"):
        changelog.declare(orders, "oid", "v", format="debezium")
    with pytest.raises(AnalysisException, match=r"The changelog is not a stream"):
        changelog.declare(spark.createDataFrame([(1, 2, 3, 1, "insert")], ORDERS), "oid", "v")


def test_a_changelog_written_without_a_join_is_refused(inputs, tmp_path: Path) -> None:
    orders, _, _ = inputs
    (tmp_path / "o" / "b0.json").write_text('{"oid": 1, "v": 1, "_change_type": "insert"}\n')
    with pytest.raises(Exception, match="written or read without a join"):
        orders.writeStream.format("console").start().processAllAvailable()
