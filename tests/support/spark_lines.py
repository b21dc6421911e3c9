"""What the tests expect of Spark where its lines differ, asked of the running Spark."""

from __future__ import annotations

from pyspark.sql import SparkSession

ROW_CHECKSUM_KEY = "spark.sql.streaming.stateStore.rowChecksum.enabled"


def several_event_times_error(spark: SparkSession) -> str:
    """What Spark's error for a stream with several event-time columns says: from 4.3 its error
    condition, before it a message of no condition."""
    helper = spark._jvm.org.apache.spark.SparkThrowableHelper  # type: ignore[attr-defined]
    if helper.isValidErrorClass("MULTIPLE_EVENT_TIME_COLUMNS"):
        return "MULTIPLE_EVENT_TIME_COLUMNS"
    return "More than one event time columns are available"


def has_row_checksums(spark: SparkSession) -> bool:
    """Whether Spark can checksum state rows (from 4.2); 4.1 does not know the setting."""
    return spark.conf.isModifiable(ROW_CHECKSUM_KEY)
