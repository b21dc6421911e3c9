"""The one SparkSession every test uses: local Spark with spark-multijoin installed; the choice of
the tests that run Spark or of those that do not (`--runs-spark`); and, on an older Spark line,
leaving out the tests marked `one_line` (tests/support/line_share.py).

A plugin, which the conftest.py of tests/ and of benchmarks/tests/ both load: a run of either
folder, or of both, has the same session and the same choice of tests."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from spark_multijoin import configure_spark_with_multijoin
from support import driver_jvm
from support.line_share import runs_one_line_tests, runs_shared_test


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--runs-spark", choices=("yes", "no"),
        help="only the tests that run Spark (those using the spark fixture), or only the others: "
             "scripts/test runs the first on every Spark line and the second once")


def pytest_configure(config: pytest.Config) -> None:
    driver_jvm.use_for_this_venv()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = config.getoption("--runs-spark")
    keep = [item for item in items
            if wanted is None or ("spark" in getattr(item, "fixturenames", ())) == (wanted == "yes")]
    if not runs_one_line_tests():
        keep = [item for item in keep if item.get_closest_marker("one_line") is None]
    keep = [item for item in keep if item.get_closest_marker("line_shared") is None
            or runs_shared_test(item.nodeid)]
    config.hook.pytest_deselected(items=[item for item in items if item not in keep])
    items[:] = keep


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
    driver_jvm.finish_writing()
