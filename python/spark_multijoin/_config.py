"""A typed view of the extension's configs on a SparkSession."""

from __future__ import annotations

from pyspark.sql import SparkSession

ENABLED_KEY = "multi-join.enabled"
MAX_TABLES_KEY = "multi-join.max-tables"
STATE_TTL_KEY = "multi-join.state-ttl"


class MultiJoinConfig:
    """The `multi-join.*` configs of one SparkSession, readable and settable.

    Values go through `spark.conf`, so Spark validates them: a bad value raises an error that
    names the key and what is allowed. A streaming query reads them when it starts.
    """

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark

    def _optional(self, key: str) -> str | None:
        """The value of a conf without a default, or None where it is unset."""
        value = self._spark.conf.get(key, None)
        return None if value in (None, "", "<undefined>") else value

    @property
    def enabled(self) -> bool:
        """Whether chains of streaming joins on one key run as one StreamingMultiJoin."""
        return self._spark.conf.get(ENABLED_KEY, "false").strip().lower() == "true"

    @enabled.setter
    def enabled(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError(f"{ENABLED_KEY} takes True or False, not {value!r}")
        self._spark.conf.set(ENABLED_KEY, value)

    @property
    def max_tables(self) -> int | None:
        """The most inputs one multi-join takes (longer chains are split); None for no limit."""
        value = self._optional(MAX_TABLES_KEY)
        return None if value is None else int(value)

    @max_tables.setter
    def max_tables(self, value: int | None) -> None:
        if value is None:
            self._spark.conf.unset(MAX_TABLES_KEY)
        elif isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f"{MAX_TABLES_KEY} takes an integer of at least 3 or None, not {value!r}")
        else:
            self._spark.conf.set(MAX_TABLES_KEY, value)

    @property
    def state_ttl(self) -> str | None:
        """How long a multi-join keeps an input row in processing time, or None for no TTL: a
        duration as `withWatermark` takes it ("1 day", "90 minutes") or as "1d", "30m". The
        inputs a STATE_TTL hint names take the hint's instead; with outer joins no input takes
        one. A TTL changes the answer: see docs/operations.md."""
        return self._optional(STATE_TTL_KEY)

    @state_ttl.setter
    def state_ttl(self, value: str | None) -> None:
        if value is None:
            self._spark.conf.unset(STATE_TTL_KEY)
        elif not isinstance(value, str):
            raise TypeError(f"{STATE_TTL_KEY} takes a duration such as '1 day', '90 minutes' "
                            f"or '1d', or None, not {value!r}")
        else:
            self._spark.conf.set(STATE_TTL_KEY, value)


def multi_join(spark: SparkSession) -> MultiJoinConfig:
    """The multi-join configs of `spark`: `multi_join(spark).enabled = True`."""
    return MultiJoinConfig(spark)
