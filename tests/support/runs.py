"""Running a join over file streams with the extension off and on, and as a batch query.

`start_stream` starts a query and returns at once, so that a test can run Spark's chain and the
multi-join over the same files at the same time; `finish` waits for it and collects what it
emitted. Each query takes its confs when it starts (Spark clones the session for it).

Spark's chain is the reference, run with the multi-join disabled: its answer depends neither on
the state store nor on the number of partitions, and on one partition of Spark's in-memory
(HDFS-backed) store it runs several times faster than on RocksDB. The multi-join runs as users
run it, on RocksDB; tests of its in-memory layout run it under `session_conf(STATE_STORES[...])`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from spark_multijoin._session_conf import ENABLED_KEY, MAX_TABLES_KEY
from spark_multijoin.testing import Inputs
from support.metrics import progress_key

# Builds the query from one DataFrame per input (streaming or batch alike).
QueryBuilder = Callable[[list[DataFrame]], DataFrame]


@dataclass
class StreamRun:
    rows: Counter
    plan: str
    progress: list[dict]
    # The key of the state rows in a progress's `stateOperators` entry.
    state_rows_key: str

    @property
    def multi_join_count(self) -> int:
        return len(re.findall(r"StreamingMultiJoin input0", self.plan))

    @property
    def symmetric_join_count(self) -> int:
        return len(re.findall(r"StreamingSymmetricHashJoin ", self.plan))

    def state_rows(self, operator: str) -> list[int]:
        """The state rows of each `operator` entry in the last progress."""
        return [entry[self.state_rows_key] for entry in self.progress[-1]["stateOperators"]
                if entry["operatorName"] == operator]

    def state_metric_total(self, metric: str) -> int:
        """The progress key `metric` (support.metrics.progress_key) of every stateful operator,
        summed over all micro-batches."""
        return sum(entry[metric] for p in self.progress for entry in p["stateOperators"])


def batch_rows_memory_key(spark: SparkSession) -> str:
    """The internal conf that bounds a micro-batch's rows kept in memory (tests only)."""
    return spark._jvm.org.apache.spark.sql.multijoin.MultiJoinConf.BATCH_ROWS_MEMORY().key()


@contextmanager
def session_conf(spark: SparkSession, settings: dict[str, object]) -> Iterator[None]:
    """Sets confs (None unsets) for the block, then restores them."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    try:
        _set_confs(spark, settings)
        yield
    finally:
        _set_confs(spark, previous)


def _set_confs(spark: SparkSession, settings: dict[str, object]) -> None:
    for key, value in settings.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


_PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"
_REFERENCE_PROVIDER = ("org.apache.spark.sql.execution.streaming.state."
                       "HDFSBackedStateStoreProvider")


CHECKPOINT_FORMAT_KEY = "spark.sql.streaming.stateStore.checkpointFormatVersion"


# The session's state store for the multi-join: the session's own (RocksDB, as the Python helper
# sets it), also with state store checkpoint format v2 (checkpoint ids in the commit log), or
# Spark's in-memory store, Spark's default, which takes multi-join state layout 4.
STATE_STORES: dict[str, dict[str, object]] = {
    "rocksdb": {},
    "rocksdb-checkpoint-v2": {CHECKPOINT_FORMAT_KEY: 2},
    "in-memory": {_PROVIDER_KEY: _REFERENCE_PROVIDER},
}


def multi_join_conf(spark: SparkSession, *, enabled: bool | None,
                    max_tables: int | None = None, batch_rows_memory: str | None = None,
                    shuffle_partitions: int = 2) -> dict[str, object]:
    """The confs a test query runs with."""
    return {ENABLED_KEY: enabled, MAX_TABLES_KEY: max_tables,
            batch_rows_memory_key(spark): batch_rows_memory,
            "spark.sql.shuffle.partitions": shuffle_partitions}


def reference_conf(spark: SparkSession) -> dict[str, object]:
    """The confs Spark's chain runs with as the reference (see the module's doc)."""
    return {**multi_join_conf(spark, enabled=False, shuffle_partitions=1),
            _PROVIDER_KEY: _REFERENCE_PROVIDER}


_query_counter = iter(range(1_000_000))


class RunningStream:
    """A query started into a memory sink, processing every input file present to the end."""

    def __init__(self, spark: SparkSession, frame: DataFrame, checkpoint: Path) -> None:
        self._spark = spark
        self._name = f"multijoin_test_{next(_query_counter)}"
        self._query: StreamingQuery = (
            frame.writeStream.format("memory").queryName(self._name).outputMode("append")
            .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())

    def finish(self) -> StreamRun:
        try:
            self._query.awaitTermination()
            plan = self._query._jsq.explainInternal(False)
            progress = [json.loads(p.json) for p in self._query.recentProgress]
        finally:
            self._query.stop()
        rows = Counter(map(tuple, self._spark.table(self._name).collect()))
        self._spark.sql(f"DROP VIEW IF EXISTS {self._name}")
        return StreamRun(rows, plan, progress, progress_key(self._spark, "NUM_TOTAL_STATE_ROWS"))


def start_stream(spark: SparkSession, inputs: Inputs, build: QueryBuilder, *, enabled: bool,
                 checkpoint: Path, max_tables: int | None = None,
                 batch_rows_memory: str | None = None, shuffle_partitions: int = 2,
                 files_per_trigger: int = 1) -> RunningStream:
    """Starts the query over all input files present; `finish()` waits for its answer."""
    with session_conf(spark, multi_join_conf(
            spark, enabled=enabled, max_tables=max_tables, batch_rows_memory=batch_rows_memory,
            shuffle_partitions=shuffle_partitions)):
        return RunningStream(spark, build(inputs.streams(spark, files_per_trigger)), checkpoint)


def run_stream(spark: SparkSession, inputs: Inputs, build: QueryBuilder, **options) -> StreamRun:
    """Runs the query over all input files present, to the end (see `start_stream`)."""
    return start_stream(spark, inputs, build, **options).finish()


def start_reference(spark: SparkSession, inputs: Inputs, build: QueryBuilder, checkpoint: Path,
                    files_per_trigger: int = 1) -> RunningStream:
    """Starts Spark's chain as the reference (see the module's doc)."""
    with session_conf(spark, reference_conf(spark)):
        return RunningStream(spark, build(inputs.streams(spark, files_per_trigger)), checkpoint)


def run_chain_and_multi(spark: SparkSession, inputs: Inputs, build: QueryBuilder, folder: Path,
                        chain_in_one_trigger: bool = False,
                        **multi_options) -> tuple[StreamRun, StreamRun]:
    """Spark's chain (the reference) and the multi-join over the same files, at the same time,
    to the end; `multi_options` go to the multi-join. Without watermarks the chain's answer
    does not depend on how the files are split into micro-batches: `chain_in_one_trigger`
    takes them all at once."""
    chain = start_reference(spark, inputs, build, folder / "chain",
                            files_per_trigger=10 ** 6 if chain_in_one_trigger else 1)
    multi = start_stream(spark, inputs, build, enabled=True, checkpoint=folder / "multi",
                         **multi_options)
    return chain.finish(), multi.finish()


def run_to_parquet(spark: SparkSession, inputs: Inputs, build: QueryBuilder, *, enabled: bool,
                   checkpoint: Path, output: Path, max_tables: int | None = None,
                   shuffle_partitions: int = 2) -> dict:
    """Processes every input file present into a parquet sink, which, unlike the memory sink,
    a query can resume from its checkpoint; returns the last progress."""
    with session_conf(spark, multi_join_conf(spark, enabled=enabled, max_tables=max_tables,
                                             shuffle_partitions=shuffle_partitions)):
        query = (build(inputs.streams(spark)).writeStream.format("parquet")
                 .option("path", str(output)).option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
    try:
        query.awaitTermination()
        return query.lastProgress
    finally:
        query.stop()


def committed_checkpoint_ids(checkpoint: Path) -> dict[str, list[list[str]]]:
    """Per stateful operator id, the state store checkpoint ids of each partition that the last
    entry of the commit log records (state store checkpoint format v2; none under v1)."""
    commits = [int(path.name) for path in (checkpoint / "commits").iterdir()
               if path.name.isdigit()]
    entry = (checkpoint / "commits" / str(max(commits))).read_text().splitlines()[1]
    return json.loads(entry).get("stateUniqueIds") or {}


def batch_rows(spark: SparkSession, inputs: Inputs, build: QueryBuilder) -> Counter:
    return Counter(map(tuple, build(inputs.tables(spark)).collect()))


def explain(frame: DataFrame) -> str:
    """The physical plan of `frame`, as `frame.explain()` prints it."""
    modes = frame.sparkSession._jvm.org.apache.spark.sql.execution.ExplainMode
    return frame._jdf.queryExecution().explainString(modes.fromString("simple"))
