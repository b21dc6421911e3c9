"""Running a join over file streams with the extension off and on, and as a batch query.

A test describes its inputs as rows per micro-batch; each batch becomes one JSON file per input,
and the streams read one file per trigger, so batch b of every input arrives together.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from pyspark.sql import DataFrame, SparkSession

_FIRST_BATCH_MTIME = 1_700_000_000

# Builds the query from one DataFrame per input (streaming or batch alike).
QueryBuilder = Callable[[list[DataFrame]], DataFrame]


@dataclass
class Inputs:
    """Input tables written as JSON files, one file per micro-batch."""

    root: Path
    schemas: list[str]
    batches: list[list[list[dict]]] = field(default_factory=list)  # [input][batch] -> rows

    def write(self) -> None:
        for input_index, input_batches in enumerate(self.batches):
            folder = self.root / f"input{input_index}"
            folder.mkdir(parents=True, exist_ok=True)
            for batch_index, rows in enumerate(input_batches):
                self.write_batch(input_index, batch_index, rows)

    def write_batch(self, input_index: int, batch_index: int, rows: list[dict]) -> None:
        folder = self.root / f"input{input_index}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(row) + "\n" for row in rows)
        path = folder / f"batch{batch_index:04d}.json"
        path.write_text(lines)
        # The file source takes files in modification-time order: make it the batch order.
        stamp = _FIRST_BATCH_MTIME + batch_index
        os.utime(path, (stamp, stamp))

    def streams(self, spark: SparkSession, files_per_trigger: int = 1) -> list[DataFrame]:
        return [
            spark.readStream.schema(schema).option("maxFilesPerTrigger", files_per_trigger)
            .json(str(self.root / f"input{index}"))
            for index, schema in enumerate(self.schemas)
        ]

    def tables(self, spark: SparkSession) -> list[DataFrame]:
        return [
            spark.read.schema(schema).json(str(self.root / f"input{index}"))
            for index, schema in enumerate(self.schemas)
        ]


@dataclass
class StreamRun:
    rows: Counter
    plan: str
    progress: list[dict]

    @property
    def multi_join_count(self) -> int:
        return len(re.findall(r"StreamingMultiJoin input0", self.plan))

    @property
    def symmetric_join_count(self) -> int:
        return len(re.findall(r"StreamingSymmetricHashJoin ", self.plan))

    def state_rows(self, operator: str) -> list[int]:
        """numRowsTotal of each `operator` entry in the last progress."""
        return [entry["numRowsTotal"] for entry in self.progress[-1]["stateOperators"]
                if entry["operatorName"] == operator]


@contextmanager
def session_conf(spark: SparkSession, **settings: object) -> Iterator[None]:
    """Sets confs (keys with _ for - and .) for the block, then restores them."""
    keys = {name: _conf_key(name) for name in settings}
    previous = {key: spark.conf.get(key, None) for key in keys.values()}
    try:
        for name, value in settings.items():
            if value is None:
                spark.conf.unset(keys[name])
            else:
                spark.conf.set(keys[name], value)
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _conf_key(name: str) -> str:
    return {
        "enabled": "multi-join.enabled",
        "max_tables": "multi-join.max-tables",
        "batch_rows_memory": "multi-join.batch-rows-memory",
        "shuffle_partitions": "spark.sql.shuffle.partitions",
    }[name]


_query_counter = iter(range(1_000_000))


def run_stream(spark: SparkSession, inputs: Inputs, build: QueryBuilder, *, enabled: bool,
               checkpoint: Path, max_tables: int | None = None,
               shuffle_partitions: int = 2, files_per_trigger: int = 1) -> StreamRun:
    """Runs the query over all input files present, to the end, into a memory sink."""
    name = f"multijoin_test_{next(_query_counter)}"
    with session_conf(spark, enabled=enabled, max_tables=max_tables,
                      shuffle_partitions=shuffle_partitions):
        query = (build(inputs.streams(spark, files_per_trigger)).writeStream.format("memory").queryName(name)
                 .outputMode("append").option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
    try:
        query.awaitTermination()
        plan = query._jsq.explainInternal(False)
        progress = [json.loads(p.json) for p in query.recentProgress]
    finally:
        query.stop()
    rows = Counter(map(tuple, spark.table(name).collect()))
    spark.sql(f"DROP VIEW IF EXISTS {name}")
    return StreamRun(rows, plan, progress)


def batch_rows(spark: SparkSession, inputs: Inputs, build: QueryBuilder) -> Counter:
    return Counter(map(tuple, build(inputs.tables(spark)).collect()))


def explain(frame: DataFrame) -> str:
    """The physical plan of `frame`, as `frame.explain()` prints it."""
    modes = frame.sparkSession._jvm.org.apache.spark.sql.execution.ExplainMode
    return frame._jdf.queryExecution().explainString(modes.fromString("simple"))
