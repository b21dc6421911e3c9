"""What every format checks of its input's columns before it shapes change rows, so that a bad
argument fails at the call naming the argument, not later in the JVM or in a running query."""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ByteType, DataType, IntegerType, LongType, ShortType, StructType

from spark_multijoin.changelog._declare import CHANGE_TYPE_COLUMN, _names, declare

# The types `Changelogs.declare` takes for a row version.
_INTEGERS = (ByteType, ShortType, IntegerType, LongType)


class Shaped(NamedTuple):
    """A format's change rows, before `declare`, with what `declare` takes for them: the change
    type is always `CHANGE_TYPE_COLUMN`."""

    changes: DataFrame
    row_id: list[str]
    row_version: list[str]
    consumed: tuple[str, ...]
    format: str
    full_changelog: bool = False


def declared(shaped: Shaped) -> DataFrame:
    return declare(shaped.changes, shaped.row_id, shaped.row_version,
                   change_type=CHANGE_TYPE_COLUMN, consumed=shaped.consumed,
                   format=shaped.format, full_changelog=shaped.full_changelog)


def checked_frame(df: object) -> DataFrame:
    if not isinstance(df, DataFrame):
        raise TypeError(f"df takes a DataFrame, not {type(df).__name__}")
    return df


def same_name(df: DataFrame) -> Callable[[str, str], bool]:
    """Whether two column names name one column, as the session resolves them."""
    if df.sparkSession.conf.get("spark.sql.caseSensitive", "false").lower() == "true":
        return lambda a, b: a == b
    return lambda a, b: a.lower() == b.lower()


def field_type(schema: StructType, path: str, same: Callable[[str, str], bool]) -> DataType | None:
    """The type of the column, or field of a struct column (`source.lsn`), at `path`."""
    kind: DataType = schema
    for part in path.split("."):
        if not isinstance(kind, StructType):
            return None
        found = [f for f in kind.fields if same(f.name, part)]
        if not found:
            return None
        kind = found[0].dataType
    return kind


def columns(schema: StructType, same: Callable[[str, str], bool], argument: str,
            value: object, where: str = "df") -> list[str]:
    """The names in `value` (the argument `argument`), spelled as `schema` spells them."""
    names = _names(argument, value)  # type: ignore[arg-type]
    spelled = []
    for name in names:
        found = [f.name for f in schema.fields if same(f.name, name)]
        if not found:
            raise ValueError(f"{argument}: {where} has no column `{name}`; its columns are "
                             + ", ".join(f"`{f.name}`" for f in schema.fields))
        spelled.append(found[0])
    return spelled


def integers(argument: str, versions: Sequence[tuple[str, DataType]]) -> None:
    for name, kind in versions:
        if not isinstance(kind, _INTEGERS):
            raise TypeError(f"{argument}: the row version `{name}` is {kind.simpleString()}; "
                            "a row version is of integers (cast it to bigint)")


def not_taken(names: Sequence[str], taken: Sequence[str], what: str) -> None:
    """Refuses a column the format adds to the change rows that the input has already."""
    clash = [name for name in taken if any(n.lower() == name.lower() for n in names)]
    if clash:
        raise ValueError(f"{what} has a column `{clash[0]}`, which the change rows use for "
                         "their change type or row version: rename it first")


def ids_apart(row_id: Sequence[str], change_columns: Sequence[str]) -> None:
    """A row id that is also a change column would leave the current rows without it."""
    lowered = {name.lower() for name in change_columns}
    clash = [name for name in row_id if name.lower() in lowered]
    if clash:
        raise ValueError(f"row_id: `{clash[0]}` is a change column (the change type, a row "
                         "version or a column the format consumes), not part of the row")


def column(path: str) -> Column:
    """The column, or field of a struct column, at `path`, whatever characters its names have."""
    first, *rest = path.split(".")
    result = F.col("`" + first.replace("`", "``") + "`")
    for part in rest:
        result = result.getField(part)
    return result
