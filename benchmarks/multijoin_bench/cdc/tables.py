"""The CDC workloads' files as Spark reads them (workloads.py writes them): each table's
Debezium envelopes as a stream, the changelog join of the spec's SELECT over them, the batch join
of the tables' final rows, and the comparison of two tables' rows.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F


def row_type(table: dict) -> str:
    """A table's row as a Spark struct type (the spec's types are Spark's too)."""
    return "struct<" + ", ".join(f"`{name}`: {kind}" for name, kind in table["columns"]) + ">"


def envelope_schema(table: dict) -> str:
    row = row_type(table)
    return f"before {row}, after {row}, op string, source struct<lsn: bigint>, ts_ms bigint"


def envelopes(spark: SparkSession, table: dict, files_per_trigger: int) -> DataFrame:
    """The table's envelopes as a stream, `files_per_trigger` files a micro-batch."""
    return (spark.readStream.schema(envelope_schema(table))
            .option("maxFilesPerTrigger", files_per_trigger).json(table["folder"]))


def changelog_join(spark: SparkSession, spec: dict, files_per_trigger: int) -> DataFrame:
    """The spec's SELECT over each table declared a Debezium changelog: the join's change
    stream. The files hold each row's changes in order with whole `before` images, as Flink's
    `debezium-json` format, which reads the same files, assumes too."""
    from spark_multijoin import changelog

    for table in spec["tables"]:
        declared = changelog.debezium(envelopes(spark, table, files_per_trigger),
                                      row_id=table["primary_key"], full_before=True)
        declared.createOrReplaceTempView(table["name"])
    return spark.sql(spec["select"])


def final_rows(spark: SparkSession, table: dict) -> DataFrame:
    """The table's rows after all its changes: each row id's change with the highest LSN, unless
    it deleted the row (a batch read of every file)."""
    row_id = table["primary_key"][0]
    changes = spark.read.schema(envelope_schema(table)).json(table["folder"])
    last = (changes.groupBy(F.coalesce(F.col(f"after.`{row_id}`"), F.col(f"before.`{row_id}`")))
            .agg(F.max(F.struct(F.col("source.lsn").alias("lsn"), "op", "after")).alias("c")))
    return last.where("c.op <> 'd'").select("c.after.*")


def snapshot_join(spark: SparkSession, spec: dict) -> DataFrame:
    """The batch query the changelog join must equal at the end: the spec's SELECT over each
    table's final rows."""
    for table in spec["tables"]:
        final_rows(spark, table).createOrReplaceTempView(table["name"])
    return spark.sql(spec["select"])


def delta_rows(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.format("delta").load(path)


def differing_rows(a: DataFrame, b: DataFrame) -> tuple[int, int]:
    """Rows of `a` not in `b` and of `b` not in `a`, as multisets, by `a`'s columns."""
    b = b.select(*a.columns)
    return a.exceptAll(b).count(), b.exceptAll(a).count()


def null_safe_match(left: DataFrame, right: DataFrame, columns: list[str]) -> Column:
    return reduce(lambda a, b: a & b, [left[c].eqNullSafe(right[c]) for c in columns])
