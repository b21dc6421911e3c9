"""Running a streaming query to the end of its files, and timing runs."""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from pyspark.sql import DataFrame, SparkSession

PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"
IN_MEMORY_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


def run_to_end(frame: DataFrame, checkpoint: Path) -> list[dict]:
    """Runs `frame` to the end of its inputs on a new checkpoint under `checkpoint`; its
    progress, per batch. A new folder each run, not the last run's emptied: the state store's
    maintenance may still write to the last one after its query stopped. The benchmark deletes
    them all when it starts."""
    checkpoint.mkdir(parents=True, exist_ok=True)
    location = tempfile.mkdtemp(prefix="run_", dir=checkpoint)
    query = (frame.writeStream.format("noop").option("checkpointLocation", location)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return [json.loads(p.json) for p in query.recentProgress]


@contextmanager
def provider(spark: SparkSession, provider_class: str | None) -> Iterator[None]:
    """The queries started in the block keep their state with `provider_class` (None: the
    session's)."""
    previous = spark.conf.get(PROVIDER_KEY)
    spark.conf.set(PROVIDER_KEY, provider_class or previous)
    try:
        yield
    finally:
        spark.conf.set(PROVIDER_KEY, previous)


def seconds(run: Callable[[], None]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def timed_runs(run: Callable[[], None], times: int) -> list[float]:
    return [seconds(run) for _ in range(times)]


def median_seconds(run: Callable[[], None], times: int = 3) -> float:
    return round(statistics.median(timed_runs(run, times)), 2)


def median_and_best(runs: list[float]) -> tuple[float, float]:
    return round(statistics.median(runs), 2), round(min(runs), 2)


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b else None


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
