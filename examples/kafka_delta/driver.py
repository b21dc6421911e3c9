"""The streaming driver: runs the query into the Delta table on a checkpoint until told to stop.

Everything it shares with whoever watches it goes through files in its work folder, so that a
driver killed at any moment (the exactly-once test kills its whole process group) leaves what a
restarted one needs:

- `progress.jsonl`: each micro-batch's progress, one JSON a line, appended by every run; the
  producer reads the query's watermark from it, and the checks the rows dropped as late.
- `runs.txt`: a line per query started, once it is running.
- `stop`: once this file exists, the driver processes everything the topics hold, then stops.
- `plan.txt`: the physical plan of the last micro-batch, once stopped.

The producer runs beside the driver in a `ProducerThread`, which creates the stop file once it
is done. The CDC example on Kafka (examples/cdc_kafka_pipeline.py) keeps the same files with
`Files`, runs its query with `run_kafka_query` and its producer in a `ProducerThread`.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from pyspark.sql import SparkSession
from pyspark.errors import StreamingQueryException
from pyspark.sql.streaming import StreamingQuery

from .broker import KafkaBroker, running_broker
from .events import seconds_of
from .pipeline import offsets_read, read_progress, spark_session, streaming_facts

POLL_SECONDS = 0.2


@contextmanager
def example_run(work: Path, topics: dict[str, int],
                app_name: str) -> Iterator[tuple["Files", KafkaBroker, SparkSession]]:
    """A one-command example's run: its work folder made anew, its broker with `topics`, and a
    Spark session, stopped after; says how long it took."""
    shutil.rmtree(work, ignore_errors=True)
    files = Files(work)
    started = time.monotonic()
    with running_broker(work / "broker", topics) as broker:
        spark = spark_session(app_name)
        try:
            yield files, broker, spark
        finally:
            spark.stop()
    print(f"done in {time.monotonic() - started:.0f} s")


class Files:
    """The work folder's files (see the module's doc)."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.table = work / "table"
        self.checkpoint = work / "checkpoint"
        self.progress = work / "progress.jsonl"
        self.runs = work / "runs.txt"
        self.stop = work / "stop"
        self.plan = work / "plan.txt"

    def watermark(self) -> float | None:
        """The latest watermark a driver reported, in seconds after the events' START."""
        return self._latest("watermark")

    def offsets_read(self) -> dict[tuple[str, int], int]:
        """Per topic and partition, the offset a driver has read up to."""
        return offsets_read(read_progress(self.progress))

    def _latest(self, statistic: str) -> float | None:
        times = [p["eventTime"][statistic] for p in read_progress(self.progress)
                 if statistic in p.get("eventTime", {})]
        return max(map(seconds_of, times)) if times else None

    def run_count(self) -> int:
        """How many times a query started."""
        return len(self.runs.read_text().splitlines()) if self.runs.exists() else 0


def start(spark: SparkSession, bootstrap: str, files: Files,
          max_offsets: int | None) -> StreamingQuery:
    return (streaming_facts(spark, bootstrap, max_offsets).writeStream.format("delta")
            .outputMode("append").option("checkpointLocation", str(files.checkpoint))
            .queryName("order_facts").start(str(files.table)))


class ProgressWriter:
    """Appends the query's new progress lines to progress.jsonl, each batch once per run."""

    def __init__(self, query: StreamingQuery, files: Files) -> None:
        self._query = query
        self._files = files
        self._written: set[int] = set()
        # A line a killed driver left cut short ends here, so that this run's lines stay whole.
        if files.progress.exists() and not files.progress.read_bytes().endswith(b"\n"):
            with files.progress.open("a") as out:
                out.write("\n")

    def write(self) -> None:
        lines = []
        for progress in self._query.recentProgress:
            entry = json.loads(progress.json)
            if entry["batchId"] not in self._written:
                self._written.add(entry["batchId"])
                lines.append(json.dumps(entry) + "\n")
        if lines:
            with self._files.progress.open("a") as out:
                out.write("".join(lines))


def run_until_stopped(spark: SparkSession, bootstrap: str, files: Files,
                      max_offsets: int | None = None) -> None:
    """Runs the query until the stop file appears, then until it has processed everything the
    topics hold (the final events' batch and the batch their watermark runs), then stops it."""
    run_kafka_query(lambda: start(spark, bootstrap, files, max_offsets), files)


def run_kafka_query(started: Callable[[], StreamingQuery], files: Files) -> None:
    """`run_query` for a query that reads Kafka; raises the query's failure. The CDC example on
    Kafka (examples/cdc_kafka_pipeline.py) runs its query with it too."""
    query = run_query(started, files, "running")
    if query.exception() is not None:
        raise query.exception()


def run_query(started: Callable[[], StreamingQuery], files: Files, note: str) -> StreamingQuery:
    """Runs the query that `started` starts until it fails or is told to stop, noting its start
    in runs.txt and its progress in progress.jsonl; returns it stopped."""
    query = started()
    progress = ProgressWriter(query, files)
    with files.runs.open("a") as runs:
        runs.write(f"{query.id} {note}\n")
    try:
        while query.isActive and not files.stop.exists():
            time.sleep(POLL_SECONDS)
            progress.write()
        if query.isActive:
            query.processAllAvailable()
            files.plan.write_text(query._jsq.explainInternal(False))
    except StreamingQueryException:
        pass  # the caller reads query.exception()
    finally:
        query.stop()
        progress.write()
    return query


class ProducerThread(threading.Thread):
    """Runs `produce` (a producer's run) beside the driver, then creates the stop file, also when
    it fails, so that the driver does not wait for changes that will not come."""

    def __init__(self, produce: Callable[[], Any], files: Files) -> None:
        super().__init__(name="producer", daemon=True)
        self._produce = produce
        self._files = files
        self.produced: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.produced = self._produce()
        except BaseException as error:  # raised by finish()
            self.error = error
        finally:
            self._files.stop.touch()

    def finish(self, timeout_seconds: float | None = None) -> Any:
        """What `produce` returned, once it has; raises what it raised."""
        self.join(timeout_seconds)
        if self.error is not None:
            raise self.error
        if self.is_alive() or self.produced is None:
            raise RuntimeError(f"the producer did not finish within {timeout_seconds} s")
        return self.produced
