"""Debezium's change events as change rows: each message's envelope (`op`, `before`, `after`)
unpacked into rows of the table's columns, so that the user writes one call per input."""

from __future__ import annotations

from typing import Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from spark_multijoin.changelog._columns import (
    Shaped,
    checked_frame,
    column,
    columns,
    field_type,
    integers,
    not_taken,
    same_name,
)
from spark_multijoin.changelog._declare import CHANGE_TYPE_COLUMN, _names

OPS = ("c", "r", "u", "d")

# Where a default row version is read, in the order tried: PostgreSQL's log position orders
# every change; the envelope's time in milliseconds is what every connector has.
DEFAULT_VERSIONS = ("source.lsn", "ts_ms")


def shape_debezium(df: DataFrame, row_id: str | Sequence[str],
                   row_version: str | Sequence[str] | None = None,
                   full_before: bool = False) -> Shaped:
    df = checked_frame(df)
    if not isinstance(full_before, bool):
        raise TypeError(f"full_before takes True or False, not {full_before!r}")
    same = same_name(df)
    if field_type(df.schema, "op", same) is None:
        raise ValueError("df has no column `op`: debezium takes Debezium's envelope as columns "
                         "(`op`, `before`, `after`, `source`, `ts_ms`), the messages' values "
                         "parsed")
    table = _table(df, same)
    ids = columns(table, same, "row_id", row_id, "the table (Debezium's `after`)")
    versions = _versions(df, same, row_version)
    names = [name for name, _ in versions]
    not_taken([f.name for f in table.fields], [CHANGE_TYPE_COLUMN, *names], "the table")
    # A filter, not a column, carries the error: a column the query does not read could be
    # pruned away with its error, a filter cannot.
    changes = (df.where(_applicable(ids, full_before))
               .select(F.explode(_changes()).alias("_change"),
                       *[path_column.alias(name) for name, path_column in versions]))
    image = F.col("_change").getField("image")
    rows = changes.select(*[image.getField(f.name).alias(f.name) for f in table.fields],
                          F.col("_change").getField("kind").alias(CHANGE_TYPE_COLUMN), *names)
    return Shaped(rows, ids, names, (), "debezium", full_changelog=full_before)


def _table(df: DataFrame, same: Callable[[str, str], bool]) -> StructType:
    """The table's columns: the fields of `after`, which `before` must share."""
    images = {}
    for side in ("before", "after"):
        kind = field_type(df.schema, side, same)
        if not isinstance(kind, StructType):
            shown = "missing" if kind is None else kind.simpleString()
            raise TypeError(f"df's `{side}` is {shown}, not a struct of the table's columns: "
                            "parse the messages' values (e.g. with from_json and the table's "
                            "schema) first")
        images[side] = kind
    if images["before"].fieldNames() != images["after"].fieldNames():
        raise ValueError("df's `before` and `after` have different fields: "
                         f"{images['before'].fieldNames()} and {images['after'].fieldNames()}")
    return images["after"]


def _versions(df: DataFrame, same: Callable[[str, str], bool],
              row_version: str | Sequence[str] | None) -> list[tuple[str, Column]]:
    """Each row version's column in the change rows (`source.lsn` as `_source_lsn`), and the
    column of `df` it is read from."""
    if row_version is None:
        found = [path for path in DEFAULT_VERSIONS
                 if field_type(df.schema, path, same) is not None]
        if not found:
            raise ValueError("row_version: df has neither `source.lsn` nor `ts_ms`, where a "
                             "Debezium message's version is read by default; name the "
                             "columns that order a row's changes")
        paths = found[:1]
    else:
        paths = _names("row_version", row_version)
    typed = []
    for path in paths:
        kind = field_type(df.schema, path, same)
        if kind is None:
            raise ValueError(f"row_version: df has no column or struct field `{path}`")
        typed.append((path, kind))
    integers("row_version", typed)
    return [("_" + path.replace(".", "_"), column(path)) for path in paths]


def _applicable(ids: list[str], full_before: bool) -> Column:
    """False for a tombstone, true for a message to apply, and an error for one that cannot be
    applied: dropped, it would leave the join's rows silently wrong."""
    op, before, after = F.col("op"), F.col("before"), F.col("after")
    removes = ["d", "u"] if full_before else ["d"]
    problem = (F.when(~op.isin(*OPS), F.lit("is none of c, r, u, d"))
               .when(op.isin("c", "r", "u") & after.isNull(), F.lit("has no `after`"))
               .when(op.isin(*removes) & before.isNull(),
                     F.lit("has no `before`" + (" (full_before=True)" if full_before else ""))))
    message = F.concat(F.lit("debezium: a message with op '"), op, F.lit("' "), problem,
                       F.lit(" (row id "), _shown_id(ids),
                       F.lit("), so it cannot be applied; filter it out if expected"))
    return (F.when(op.isNull(), F.lit(False))
            .when(problem.isNotNull(), F.raise_error(message))
            .otherwise(F.lit(True)))


def _shown_id(ids: list[str]) -> Column:
    """The row id's values as `id=5, region=eu`, from whichever image the message has."""
    shown = [F.coalesce(F.col("after").getField(name), F.col("before").getField(name))
             .cast("string") for name in ids]
    return F.concat_ws(", ", *[F.concat(F.lit(f"{name}="), F.coalesce(value, F.lit("null")))
                               for name, value in zip(ids, shown)])


def _changes() -> Column:
    """A message's change rows: each a change type and the row image it puts or removes."""
    op, before, after = F.col("op"), F.col("before"), F.col("after")

    def change(kind: str, image: Column) -> Column:
        return F.struct(F.lit(kind).alias("kind"), image.alias("image"))

    return (F.when(op.isin("c", "r"), F.array(change("insert", after)))
            .when((op == "u") & before.isNull(), F.array(change("upsert", after)))
            .when(op == "u", F.array(change("update_preimage", before),
                                     change("update_postimage", after)))
            .otherwise(F.array(change("delete", before))))
