"""The change rows each format's call makes of its input, before they are declared: small inputs
written by hand, and the change rows each should give written out beside them from the format's
rules (an upsert stream's deletes), not from the code."""

from __future__ import annotations

from collections import Counter

import pytest
from py4j.java_gateway import JavaClass
from pyspark.sql import functions as F

from spark_multijoin import changelog
from spark_multijoin.changelog._formats import (shape_delta_cdf, shape_insert_only,
                                                shape_upsert)


def rows(df, *names):
    """`df`'s rows as a multiset of tuples of `names`, in that order."""
    return Counter(tuple(row[name] for name in names) for row in df.collect())


# --- upsert streams -------------------------------------------------------------------------

UPSERTS = "key string, name string, qty int, partition int, offset bigint"


def test_upsert_rows_are_upserts_and_an_all_null_value_a_delete(spark):
    df = spark.createDataFrame([("k1", "a", 1, 0, 1), ("k1", None, None, 0, 2),
                                ("k2", "b", None, 1, 1), ("k2", None, 0, 1, 2)], UPSERTS)
    shaped = shape_upsert(df, "key")
    assert (shaped.row_id, shaped.row_version, shaped.format) == (
        ["key"], ["partition", "offset"], "upsert")
    assert rows(shaped.changes, "key", "name", "qty", "_change_type", "partition", "offset") == \
        Counter([("k1", "a", 1, "upsert", 0, 1), ("k1", None, None, "delete", 0, 2),
                 ("k2", "b", None, "upsert", 1, 1), ("k2", None, 0, "upsert", 1, 2)])


@pytest.mark.parametrize("as_column", [False, True])
def test_upsert_deletes_where_it_is_told(spark, as_column):
    """A null `deleted` (here a null qty) reads as not deleted."""
    df = spark.createDataFrame([("k1", "a", 0, 0, 1), ("k2", None, None, 0, 2),
                                ("k3", "c", 3, 0, 3)], UPSERTS)
    shaped = shape_upsert(df, "key", deleted=F.col("qty") == 0 if as_column else "qty = 0")
    assert rows(shaped.changes, "key", "_change_type") == Counter(
        [("k1", "delete"), ("k2", "upsert"), ("k3", "upsert")])


def test_upsert_takes_the_row_version_it_is_given(spark):
    df = spark.createDataFrame([("k1", "a", 5), ("k1", None, 6)],
                               "key string, name string, seq int")
    shaped = shape_upsert(df, "key", row_version="seq")
    assert shaped.row_version == ["seq"]
    assert rows(shaped.changes, "key", "_change_type", "seq") == Counter(
        [("k1", "upsert", 5), ("k1", "delete", 6)])


def test_upsert_refuses_bad_arguments(spark):
    df = spark.createDataFrame([("k1", "a", 1, 0, 1)], UPSERTS)
    with pytest.raises(ValueError, match="row_id: df has no column `id`"):
        shape_upsert(df, "id")
    with pytest.raises(ValueError, match="row_version: df has no column `timestamp`"):
        shape_upsert(df, "key", row_version=("partition", "timestamp"))
    with pytest.raises(TypeError, match="row_version: the row version `name` is string"):
        shape_upsert(df, "key", row_version="name")
    with pytest.raises(ValueError, match="deleted: 'nope = 1' is no expression on df"):
        shape_upsert(df, "key", deleted="nope = 1")
    with pytest.raises(TypeError, match="deleted: 'qty' is int, not boolean"):
        shape_upsert(df, "key", deleted="qty")
    with pytest.raises(TypeError, match="deleted takes a Column or a SQL expression"):
        shape_upsert(df, "key", deleted=True)
    with pytest.raises(ValueError, match="deleted: df has no column but the row id"):
        shape_upsert(df.select("key", "partition", "offset"), "key")
    with pytest.raises(ValueError, match="row_id: `offset` is a change column"):
        shape_upsert(df, ["key", "offset"])
    with pytest.raises(ValueError, match="column `_change_type`"):
        shape_upsert(df.withColumn("_change_type", F.lit("x")), "key")
    with pytest.raises(TypeError, match="row_id takes a column name"):
        shape_upsert(df, [])


# --- Delta's change data feed and append-only inputs ----------------------------------------

DELTA = "id int, name string, _change_type string, _commit_version bigint, " \
        "_commit_timestamp timestamp"


def test_delta_cdf_rows_are_the_change_rows_as_they_are(spark):
    df = spark.createDataFrame([], DELTA)
    shaped = shape_delta_cdf(df, "id")
    assert shaped.changes is df
    assert (shaped.row_id, shaped.row_version, shaped.consumed, shaped.format) == (
        ["id"], ["_commit_version"], ("_commit_timestamp",), "delta")
    other = shape_delta_cdf(df.withColumn("seq", F.lit(1)), "id", row_version="seq")
    assert (other.row_version, other.consumed) == (["seq"],
                                                   ("_commit_version", "_commit_timestamp"))


def test_delta_cdf_refuses_bad_arguments(spark):
    df = spark.createDataFrame([], DELTA)
    with pytest.raises(ValueError, match="df has no column `_commit_timestamp`: .*readChangeFeed"):
        shape_delta_cdf(df.drop("_commit_timestamp"), "id")
    with pytest.raises(ValueError, match="row_id: df has no column `key`"):
        shape_delta_cdf(df, "key")
    with pytest.raises(TypeError, match="row_version: the row version `_commit_timestamp` is "
                                        "timestamp"):
        shape_delta_cdf(df, "id", row_version="_commit_timestamp")
    with pytest.raises(ValueError, match="row_id: `_commit_version` is a change column"):
        shape_delta_cdf(df, ["id", "_commit_version"])


def test_insert_only_rows_are_inserts_at_version_zero(spark):
    df = spark.createDataFrame([(1, "a"), (2, "b"), (1, "a")], "id int, name string")
    shaped = shape_insert_only(df, "id")
    assert (shaped.row_id, shaped.row_version, shaped.format) == (
        ["id"], ["_row_version"], "insert-only")
    assert rows(shaped.changes, "id", "name", "_change_type", "_row_version") == Counter(
        [(1, "a", "insert", 0), (2, "b", "insert", 0), (1, "a", "insert", 0)])
    with pytest.raises(ValueError, match="row_id: df has no column `key`"):
        shape_insert_only(df, "key")
    with pytest.raises(ValueError, match="column `_row_version`"):
        shape_insert_only(df.withColumn("_row_version", F.lit(1)), "id")


# --- declared -------------------------------------------------------------------------------

def test_each_call_declares_the_current_rows(spark):
    """Runs where the session's jar has `Changelogs`: each format's current rows are the
    table's columns, without the change columns."""
    if not isinstance(spark._jvm.io.github.sparkmultijoin.Changelogs, JavaClass):
        pytest.skip("the session's jar has no io.github.sparkmultijoin.Changelogs")
    upserts = spark.createDataFrame([], UPSERTS)
    assert changelog.upsert(upserts, "key").columns == ["key", "name", "qty"]
    assert changelog.delta_cdf(spark.createDataFrame([], DELTA), "id").columns == ["id", "name"]
    assert changelog.insert_only(upserts, "key").columns == upserts.columns
