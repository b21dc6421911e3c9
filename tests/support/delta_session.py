"""The session of the tests that write Delta tables: the Kafka example's, with Delta's jars, in a
process whose first session it is (a process's jars are fixed by its first session)."""

from __future__ import annotations

from typing import Iterator

import pytest
from pyspark import SparkContext
from pyspark.sql import SparkSession

from examples.kafka_delta.pipeline import spark_session


def delta_spark_session(name: str) -> Iterator[SparkSession]:
    """Yields a session with Delta's jars, for a module fixture; skips where there can be none."""
    if SparkContext._active_spark_context is not None:  # type: ignore[attr-defined]
        pytest.skip("a session without Delta's jars runs in this process already; scripts/test "
                    "runs the Delta tests in pytests of their own")
    try:
        session = spark_session(name)
    except SystemExit as missing:  # the jars are not fetched
        pytest.skip(str(missing))
    yield session
    session.stop()
