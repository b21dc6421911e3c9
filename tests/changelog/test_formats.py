"""The change rows each format's call makes of its input, before they are declared: small inputs
written by hand, and the change rows each should give written out beside them from the format's
rules (Debezium's envelope, an upsert stream's deletes), not from the code."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from pyspark.sql import functions as F

from spark_multijoin import changelog
from spark_multijoin.changelog._debezium import shape_debezium
from spark_multijoin.changelog._formats import (shape_delta_cdf, shape_insert_only,
                                                shape_upsert)

# The formats are the same Python and DataFrame functions on every line.
pytestmark = pytest.mark.one_line

TABLE = "struct<id: int, name: string>"
ENVELOPE = (f"op string, before {TABLE}, after {TABLE}, "
            "source struct<db: string, lsn: bigint>, ts_ms bigint")


def rows(df, *names):
    """`df`'s rows as a multiset of tuples of `names`, in that order."""
    return Counter(tuple(row[name] for name in names) for row in df.collect())


def envelope(op, before, after, lsn=None, ts_ms=None):
    return (op, before, after, ("inventory", lsn), ts_ms)


# --- Debezium -------------------------------------------------------------------------------

def test_debezium_unpacks_each_op_into_change_rows_of_the_table(spark):
    messages = [
        envelope("r", None, (2, "b"), lsn=5),
        envelope("c", None, (1, "a"), lsn=10),
        envelope("u", (1, "a"), (1, "A"), lsn=20),
        envelope("u", None, (2, "B"), lsn=21),      # no old image: REPLICA IDENTITY DEFAULT
        envelope("d", (1, "A"), None, lsn=30),
        envelope(None, None, None),                 # the tombstone after a delete
        (None, None, None, None, None),             # a null message value, parsed
    ]
    shaped = shape_debezium(spark.createDataFrame(messages, ENVELOPE), "id")
    assert shaped.changes.columns == ["id", "name", "_change_type", "_source_lsn"]
    assert (shaped.row_id, shaped.row_version, shaped.format) == (["id"], ["_source_lsn"],
                                                                  "debezium")
    assert rows(shaped.changes, *shaped.changes.columns) == Counter([
        (2, "b", "insert", 5),
        (1, "a", "insert", 10),
        (1, "a", "update_preimage", 20),
        (1, "A", "update_postimage", 20),
        (2, "B", "upsert", 21),
        (1, "A", "delete", 30),
    ])


def test_debezium_versions_by_ts_ms_without_an_lsn(spark):
    schema = f"op string, before {TABLE}, after {TABLE}, source struct<db: string>, ts_ms bigint"
    messages = [("c", None, (7, "x"), ("inventory",), 1000),
                ("d", (7, "x"), None, ("inventory",), 1001)]
    shaped = shape_debezium(spark.createDataFrame(messages, schema), "id")
    assert shaped.row_version == ["_ts_ms"]
    assert rows(shaped.changes, "id", "_change_type", "_ts_ms") == Counter(
        [(7, "insert", 1000), (7, "delete", 1001)])


def test_debezium_takes_the_row_version_it_is_given(spark):
    messages = [envelope("c", None, (1, "a"), lsn=10, ts_ms=99)]
    shaped = shape_debezium(spark.createDataFrame(messages, ENVELOPE), ["id"],
                            row_version=["ts_ms", "source.lsn"])
    assert shaped.row_version == ["_ts_ms", "_source_lsn"]
    assert rows(shaped.changes, "id", "_ts_ms", "_source_lsn") == Counter([(1, 99, 10)])


@pytest.mark.parametrize("message, error", [
    (envelope("t", None, None, lsn=1), "op 't' is none of c, r, u, d (row id id=null)"),
    (envelope("x", None, (3, "c"), lsn=1), "op 'x' is none of c, r, u, d (row id id=3)"),
    (envelope("u", (4, "d"), None, lsn=1), "op 'u' has no `after` (row id id=4)"),
    (envelope("c", None, None, lsn=1), "op 'c' has no `after` (row id id=null)"),
    (envelope("d", None, None, lsn=1), "op 'd' has no `before` (row id id=null)"),
])
def test_debezium_fails_on_a_message_it_cannot_apply(spark, message, error):
    """A message dropped would leave the join's rows wrong without a word: the query fails,
    naming the op and the row id, even among good messages, and even where it reads no change
    column (the error is in a filter, which no pruning takes away)."""
    good = envelope("c", None, (1, "a"), lsn=1)
    shaped = shape_debezium(spark.createDataFrame([good, message, good], ENVELOPE), "id")
    with pytest.raises(Exception, match=re.escape(error)):
        shaped.changes.select("name").collect()


def test_debezium_with_full_before_is_a_full_changelog_and_needs_before(spark):
    """With `before` whole, an update's old image says the key the old version is under; an
    update without it would leave that version there, so it fails."""
    good = envelope("u", (1, "a"), (1, "b"), lsn=1)
    messages = spark.createDataFrame([good, envelope("u", None, (2, "B"), lsn=2)], ENVELOPE)
    assert not shape_debezium(messages, "id").full_changelog
    shaped = shape_debezium(messages, "id", full_before=True)
    assert shaped.full_changelog
    with pytest.raises(Exception, match=re.escape(
            "op 'u' has no `before` (full_before=True) (row id id=2)")):
        shaped.changes.select("name").collect()
    with pytest.raises(TypeError, match="full_before takes True or False"):
        shape_debezium(messages, "id", full_before="yes")


def test_debezium_refuses_bad_arguments(spark):
    messages = spark.createDataFrame([envelope("c", None, (1, "a"), lsn=1, ts_ms=2)], ENVELOPE)
    with pytest.raises(ValueError, match="row_id: the table .* no column `key`"):
        shape_debezium(messages, "key")
    with pytest.raises(ValueError, match="row_version: df has no column or struct field"):
        shape_debezium(messages, "id", row_version="source.scn")
    with pytest.raises(TypeError, match="row_version: the row version `source.db` is string"):
        shape_debezium(messages, "id", row_version="source.db")
    with pytest.raises(ValueError, match="df has no column `op`"):
        shape_debezium(messages.drop("op"), "id")
    with pytest.raises(TypeError, match="df's `before` is string"):
        shape_debezium(messages.withColumn("before", F.lit("{}")), "id")
    with pytest.raises(ValueError, match="row_version: df has neither `source.lsn` nor `ts_ms`"):
        shape_debezium(messages.drop("source", "ts_ms"), "id")
    with pytest.raises(TypeError, match="df takes a DataFrame"):
        shape_debezium([("c", None, None)], "id")


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
    assert shaped.full_changelog  # whole pre-images, in commit order
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

def test_each_call_declares_the_current_rows(spark, tmp_path):
    """Each format's current rows are the table's columns, without the change columns."""
    def stream(schema):
        return spark.readStream.schema(schema).json(str(tmp_path))
    upserts = stream(UPSERTS)
    assert changelog.debezium(stream(ENVELOPE), "id").columns == ["id", "name"]
    assert changelog.upsert(upserts, "key").columns == ["key", "name", "qty"]
    assert changelog.delta_cdf(stream(DELTA), "id").columns == ["id", "name"]
    assert changelog.insert_only(upserts, "key").columns == upserts.columns
    with pytest.raises(Exception, match="not a stream"):
        changelog.delta_cdf(spark.createDataFrame([], DELTA), "id")
