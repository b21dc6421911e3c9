"""Declaring a streaming DataFrame a changelog: the one call into the JVM every format makes."""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import DataFrame

# The change types a changelog input's rows carry: Delta's change data feed's words (and Spark
# 4.3's `Changelog`), plus `upsert`, a row's new version with no old image (upsert streams,
# Debezium updates without `before`).
CHANGE_TYPES = ("insert", "update_preimage", "update_postimage", "delete", "upsert")

CHANGE_TYPE_COLUMN = "_change_type"


def _names(argument: str, value: str | Sequence[str]) -> list[str]:
    names = [value] if isinstance(value, str) else list(value)
    if not names or not all(isinstance(name, str) and name for name in names):
        raise TypeError(f"{argument} takes a column name or a non-empty list of them, "
                        f"not {value!r}")
    return names


def declare(df: DataFrame, row_id: str | Sequence[str], row_version: str | Sequence[str], *,
            change_type: str = CHANGE_TYPE_COLUMN, consumed: Sequence[str] = (),
            format: str = "changelog", full_changelog: bool = False) -> DataFrame:
    """`df`, a stream of change rows, declared a changelog input of a multi-join.

    Each row is a change of the row whose identity is `row_id` (the primary key): its
    `change_type` column says which (`CHANGE_TYPES`), its `row_version` columns (integers,
    compared in order) order the changes of one identity. The returned DataFrame has `df`'s
    columns but the change columns (`change_type`, `row_version` and `consumed`): it reads as
    the input's current rows, which a join of it keeps up to date. `format` names where the
    changes come from, for EXPLAIN and the errors.

    `full_changelog=True` says that the changes are a full changelog, as Delta's change data
    feed is: every removal (`update_preimage`, `delete`) carries the row's whole old image, and
    a row's changes arrive in version order (a change may come again, but none comes first
    after a newer one of its row). An input joined on a key outside its row id then skips the
    ordering by row id, as its removals say under which key the old version is; an `upsert`
    change of it fails the query. Declared wrongly, the join's answer can be wrong.
    """
    if not isinstance(full_changelog, bool):
        raise TypeError(f"full_changelog takes True or False, not {full_changelog!r}")
    jvm = df.sparkSession._jvm  # type: ignore[attr-defined]
    declared = jvm.io.github.sparkmultijoin.Changelogs.declare(
        df._jdf, _names("row_id", row_id), _names("row_version", row_version),
        change_type, list(consumed), format, full_changelog)
    return DataFrame(declared, df.sparkSession)
