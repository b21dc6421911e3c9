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
from pyspark.sql.streaming import StreamingQuery

PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"
IN_MEMORY_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
# Spark's join state format: a query records it in its checkpoint's offset log on its first
# batch and keeps it on restarts, so each format runs on a checkpoint of its own.
JOIN_FORMAT_KEY = "spark.sql.streaming.join.stateFormatVersion"


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
    with settings(spark, {PROVIDER_KEY: provider_class}):
        yield


@contextmanager
def settings(spark: SparkSession, values: dict[str, str | None]) -> Iterator[None]:
    """The session's settings `values` in the block (None: left as they are), restored after."""
    chosen = {key: value for key, value in values.items() if value is not None}
    previous = {key: spark.conf.get(key, None) for key in chosen}
    for key, value in chosen.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


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
    """The bytes of the files under `folder`, skipping those deleted while it counts (a running
    query's maintenance deletes old files)."""
    total = 0
    for path in folder.rglob("*"):
        try:
            total += path.stat().st_size if path.is_file() else 0
        except FileNotFoundError:
            pass
    return total


def capped_wait(query: StreamingQuery, cap_seconds: float,
                each_second: Callable[[], None] = lambda: None) -> bool:
    """Waits for `query` up to `cap_seconds`, calling `each_second` about every second, and stops
    it then; whether it finished."""
    deadline = time.monotonic() + cap_seconds
    while query.isActive and time.monotonic() < deadline:
        query.awaitTermination(1)
        each_second()
    finished = not query.isActive
    if not finished:
        query.stop()
    return finished
