"""What the tests expect of Spark where its lines differ, asked of the running Spark."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

ROW_CHECKSUM_KEY = "spark.sql.streaming.stateStore.rowChecksum.enabled"
CHECKPOINT_FORMAT_KEY = "spark.sql.streaming.stateStore.checkpointFormatVersion"


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


def takes_checkpoint_format_v2(spark: SparkSession) -> bool:
    """Whether the multi-join runs with state store checkpoint format v2 (from Spark 4.2; on 4.1
    the chain keeps Spark's joins, saying why)."""
    return not spark.version.startswith("4.1.")


def skip_without_checkpoint_format_v2(spark: SparkSession, confs: dict) -> None:
    """Skips a test of the multi-join's state under `confs` if they ask for checkpoint format v2
    on a line where the multi-join does not take it."""
    if confs.get(CHECKPOINT_FORMAT_KEY) == 2 and not takes_checkpoint_format_v2(spark):
        pytest.skip(f"the multi-join takes checkpoint format v2 from Spark 4.2, not on "
                    f"{spark.version}")
