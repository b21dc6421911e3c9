"""The one SparkSession every test uses: local Spark with spark-multijoin installed."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from spark_multijoin import configure_spark_with_multijoin


@pytest.fixture(scope="session")
def spark() -> SparkSession:
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("spark-multijoin-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        # The tests run many short queries: the JVM's quick compiler alone warms up sooner than
        # it loses (about 15% off a streaming test here).
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
    )
    session = configure_spark_with_multijoin(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
