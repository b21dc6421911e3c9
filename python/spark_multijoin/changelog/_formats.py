"""One call per input for each format of changes users have: Delta's change data feed, Debezium,
upsert streams and append-only inputs. Each shapes its input into change rows (`shape_*`, which
runs nothing and needs no JVM class of ours, so it is tested alone) and declares them."""

from __future__ import annotations

from functools import reduce
from typing import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from spark_multijoin.changelog._columns import (
    Shaped,
    checked_frame,
    column,
    columns,
    declared,
    ids_apart,
    integers,
    not_taken,
    same_name,
)
from spark_multijoin.changelog._debezium import shape_debezium
from spark_multijoin.changelog._declare import CHANGE_TYPE_COLUMN

# The columns a stream read of Delta's change data feed adds to the table's.
DELTA_COLUMNS = (CHANGE_TYPE_COLUMN, "_commit_version", "_commit_timestamp")

# The row version `insert_only` gives every row.
INSERT_ONLY_VERSION = "_row_version"


def delta_cdf(df: DataFrame, row_id: str | Sequence[str], *,
              row_version: str | Sequence[str] = "_commit_version") -> DataFrame:
    """`df`, a stream read of a Delta table's change data feed
    (`spark.readStream.option("readChangeFeed", "true").table(...)`), declared a changelog.

    Its rows are the change rows as they are: `_change_type` is already one of Delta's
    `insert`, `update_preimage`, `update_postimage`, `delete`. `row_version` defaults to
    `_commit_version`; `_commit_version` and `_commit_timestamp` are left out of the current
    rows. `row_id` is the table's primary key. A ValueError names a column `df` lacks. The
    feed's pre-images and deletes are whole rows and come in commit order, so it is declared a
    full changelog (`declare`).
    """
    return declared(shape_delta_cdf(df, row_id, row_version))


def shape_delta_cdf(df: DataFrame, row_id: str | Sequence[str],
                    row_version: str | Sequence[str] = "_commit_version") -> Shaped:
    df = checked_frame(df)
    same = same_name(df)
    missing = [name for name in DELTA_COLUMNS
               if not any(same(f.name, name) for f in df.schema.fields)]
    if missing:
        raise ValueError(f"df has no column `{missing[0]}`: delta_cdf takes a read of a Delta "
                         "table's change data feed (option readChangeFeed)")
    ids = columns(df.schema, same, "row_id", row_id)
    versions = columns(df.schema, same, "row_version", row_version)
    integers("row_version", [(v, df.schema[v].dataType) for v in versions])
    consumed = tuple(name for name in DELTA_COLUMNS[1:] if name not in versions)
    ids_apart(ids, [*versions, *DELTA_COLUMNS])
    return Shaped(df, ids, versions, consumed, "delta", full_changelog=True)


def debezium(df: DataFrame, row_id: str | Sequence[str], *,
             row_version: str | Sequence[str] | None = None,
             full_before: bool = False) -> DataFrame:
    """`df`, a stream of Debezium change events, declared a changelog of the table they change.

    `df` has Debezium's envelope as columns (the message value parsed, e.g. with `from_json`):
    `op`, `before` and `after` (structs of the table's columns), and `source` (a struct) and
    `ts_ms` for the row version. Each message becomes change rows of the table's columns and
    `_change_type`: `c` and `r` an `insert` of `after`; `u` an `update_preimage` of `before`
    and an `update_postimage` of `after`, or, without `before` (no REPLICA IDENTITY FULL),
    an `upsert` of `after`; `d` a `delete` of `before`. A tombstone (null `op`, as for a null
    message value) is dropped. `row_id` names columns of the table.

    A message that cannot be applied stops the query: an `op` none of `c`, `r`, `u`, `d` (a
    truncate's `t`, a `m` message), or a `c`, `r` or `u` without `after`, or a `d` without
    `before`, fails with an error (`raise_error`) naming the `op` and the row id's values;
    filter such messages out first if they are expected.

    `row_version` names columns of `df` or fields of its structs, compared in order; it
    defaults to `source.lsn` where `source` has it (PostgreSQL), else to `ts_ms` (the
    connector's time in milliseconds: two changes of a row within one millisecond are then
    unordered, so give a finer version where the database has one). They are integers.

    `full_before=True` says that `before` is always the whole old row (PostgreSQL's REPLICA
    IDENTITY FULL, MySQL's `binlog_row_image=FULL`) and that each row's messages arrive in
    order (a topic keyed by the row id, as Debezium writes it), as Flink's `debezium-json`
    format assumes: the input is then declared a full changelog (`declare`), and a `u`
    without `before` fails the query. Leave it off where `before` may hold only the key.
    """
    return declared(shape_debezium(df, row_id, row_version, full_before))


def upsert(df: DataFrame, row_id: str | Sequence[str], *,
           row_version: str | Sequence[str] = ("partition", "offset"),
           deleted: Column | str | None = None) -> DataFrame:
    """`df`, an upsert stream, declared a changelog: each row is its `row_id`'s new version,
    as in a compacted Kafka topic whose key is the row id and whose null value is a delete.

    Each row comes out with `_change_type` `delete` where `deleted` (a boolean Column or SQL
    expression on `df`) is true, else `upsert`. `deleted` defaults to: every column but the
    row id and the row version is null, so `df` should hold only those and the value's
    columns. `row_version` defaults to Kafka's `partition` and `offset`, which order a key's
    messages while the key stays in one partition; they are left out of the current rows.
    """
    return declared(shape_upsert(df, row_id, row_version, deleted))


def shape_upsert(df: DataFrame, row_id: str | Sequence[str],
                 row_version: str | Sequence[str] = ("partition", "offset"),
                 deleted: Column | str | None = None) -> Shaped:
    df = checked_frame(df)
    same = same_name(df)
    ids = columns(df.schema, same, "row_id", row_id)
    versions = columns(df.schema, same, "row_version", row_version)
    integers("row_version", [(v, df.schema[v].dataType) for v in versions])
    ids_apart(ids, versions)
    not_taken(df.columns, [CHANGE_TYPE_COLUMN], "df")
    condition = _deleted(df, [*ids, *versions], deleted)
    # A null condition (an expression on null values) reads as not deleted, as `when` has it.
    kind = F.when(condition, F.lit("delete")).otherwise(F.lit("upsert"))
    return Shaped(df.withColumn(CHANGE_TYPE_COLUMN, kind), ids, versions, (), "upsert")


def _deleted(df: DataFrame, change_columns: list[str], deleted: Column | str | None) -> Column:
    if deleted is None:
        values = [name for name in df.columns if name not in change_columns]
        if not values:
            raise ValueError("deleted: df has no column but the row id and the row version, "
                             "so a delete looks like any row; pass deleted")
        return reduce(lambda a, b: a & b, [column(name).isNull() for name in values])
    if isinstance(deleted, str):
        condition = F.expr(deleted)
    elif isinstance(deleted, Column):
        condition = deleted
    else:
        raise TypeError(f"deleted takes a Column or a SQL expression, not "
                        f"{type(deleted).__name__}")
    try:
        kind = df.select(condition.alias("deleted")).schema["deleted"].dataType
    # Whatever fails here fails to analyze the expression on df. Not only AnalysisException:
    # PySpark's converter can itself fail (py4j's error then carries Spark's), and on 4.3 the
    # converter's logging raises a TypeError where another thread swapped the logger class.
    except Exception as error:  # noqa: BLE001
        raise ValueError(f"deleted: {deleted!r} is no expression on df: {error}") from error
    if not isinstance(kind, BooleanType):
        raise TypeError(f"deleted: {deleted!r} is {kind.simpleString()}, not boolean")
    return condition


def insert_only(df: DataFrame, row_id: str | Sequence[str]) -> DataFrame:
    """`df`, an append-only stream of rows identified by `row_id`, declared a changelog.

    Each row comes out as an `insert` at row version 0 (the column `_row_version`): a row
    with an identity already seen is a duplicate delivery, and is ignored.
    """
    return declared(shape_insert_only(df, row_id))


def shape_insert_only(df: DataFrame, row_id: str | Sequence[str]) -> Shaped:
    df = checked_frame(df)
    ids = columns(df.schema, same_name(df), "row_id", row_id)
    not_taken(df.columns, [CHANGE_TYPE_COLUMN, INSERT_ONLY_VERSION], "df")
    changes = df.withColumns({CHANGE_TYPE_COLUMN: F.lit("insert"),
                              INSERT_ONLY_VERSION: F.lit(0).cast("bigint")})
    return Shaped(changes, ids, [INSERT_ONLY_VERSION], (), "insert-only")
