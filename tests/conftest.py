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
    )
    session = configure_spark_with_multijoin(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
