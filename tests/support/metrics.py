"""The operator's metrics, from its registry (MultiJoinMetrics), through the JVM.

Tests name a metric by its field in the registry, not by the key a progress reports it under,
so that renaming a metric there cannot leave a test reading a key that is no longer reported.
docs/metrics.md's table is the registry's (scripts/docs_tables.py writes it).
"""

from __future__ import annotations

from pyspark.sql import SparkSession

def _registry(spark: SparkSession):
    return spark._jvm.io.github.sparkmultijoin.execution.MultiJoinMetrics


def progress_key(spark: SparkSession, metric: str) -> str:
    """The key that reports `metric`, a field of MultiJoinMetrics such as "NUM_NULL_PADDED_ROWS",
    in a progress's `stateOperators` entry (a custom metric's: in the entry's `customMetrics`)."""
    return getattr(_registry(spark), metric)().progressKey().get()

