"""What the benchmark reads from a streaming query's progress (StreamingQueryProgress as JSON).

The multi-join's names (its operator's, and its metrics' keys in a progress) are never spelled
here: they come from the registry the jar carries (execution/MultiJoinMetrics.scala, and
MultiJoin.OperatorName), through the JVM of the running Spark session, so that renaming one
there changes what the benchmark reads. Here a metric of the registry is named by its field
(`Registered("NUM_KEY_READS")`). Spark's own names (the engine's phases, RocksDB's store
metrics, the number of store instances), which no registry of ours declares, are spelled as
Spark spells them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pyspark.sql import SparkSession


@dataclass(frozen=True)
class Registered:
    """A metric of the multi-join's registry, by its field in MultiJoinMetrics."""

    field: str


@dataclass(frozen=True)
class Registry:
    """The names the registry gives: the operator's in a progress's `stateOperators`, and each
    metric's key there (or in `customMetrics`), by its field."""

    operator: str
    keys: dict[str, str]


def read_registry(spark: SparkSession) -> Registry:
    """The registry of the jar that `spark` runs, read through its JVM."""
    jvm = spark._jvm
    registry = jvm.io.github.sparkmultijoin.execution.MultiJoinMetrics
    fields = ("NUM_TOTAL_STATE_ROWS", "ALL_UPDATES_TIME_MS", "ALL_REMOVALS_TIME_MS",
              "COMMIT_TIME_MS", "STATE_MEMORY", "NUM_KEY_READS", "KEY_READ_TIME_MS")
    keys = {field: getattr(registry, field)().progressKey().get() for field in fields}
    return Registry(jvm.io.github.sparkmultijoin.logical.MultiJoin.OperatorName(), keys)


@functools.cache
def registry() -> Registry:
    """The registry of the running session's jar, read once per process (the benchmark runs one
    jar in one session)."""
    return read_registry(SparkSession.active())


def key(metric: str | Registered) -> str:
    """The key a progress reports `metric` under: Spark's own name as it is, or the registry's."""
    return registry().keys[metric.field] if isinstance(metric, Registered) else metric


# Where a micro-batch's time goes, from its progress: the engine's phases (wall ms, durationMs);
# the breakdown's "other" is the trigger's time outside them.
TRIGGER = "triggerExecution"
ADD_BATCH = "addBatch"
ENGINE_PHASES = ("latestOffset", "getBatch", "queryPlanning", "walCommit", ADD_BATCH,
                 "commitOffsets")

# The stateful operators' own metrics and their stores' (summed over partitions: task ms, more
# than the wall time where partitions run in parallel). Every stateful operator reports the
# registry's StatefulOperator metrics under the same keys, Spark's chain too. Left out:
# rocksdbFilesCopied, which repeats the last snapshot upload's count in every later batch.
TOTAL_STATE_ROWS = Registered("NUM_TOTAL_STATE_ROWS")
UPDATES_MS = Registered("ALL_UPDATES_TIME_MS")
REMOVALS_MS = Registered("ALL_REMOVALS_TIME_MS")
COMMIT_MS = Registered("COMMIT_TIME_MS")
STATE_MEMORY = Registered("STATE_MEMORY")
STATE_METRICS = ("numStateStoreInstances", UPDATES_MS, REMOVALS_MS, COMMIT_MS)
ROCKSDB_METRICS = ("rocksdbLoadLatencyMs", "rocksdbChangeLogWriterCommitLatencyMs",
                   "rocksdbCommitFileSyncLatencyMs", "rocksdbCommitCheckpointLatency",
                   "rocksdbGetCount", "rocksdbGetLatency", "rocksdbPutCount",
                   "rocksdbPutLatency")
# The multi-join's reads of stored rows, one RocksDB get per key, which Spark's store counts
# among its gets too.
KEY_READS = Registered("NUM_KEY_READS")
KEY_READ_MS = Registered("KEY_READ_TIME_MS")
STORE_METRICS = ROCKSDB_METRICS + (KEY_READS, KEY_READ_MS)

# The breakdown table's state columns, and their heads.
BREAKDOWN_STATE_COLUMNS = (
    ("numStateStoreInstances", "store instances"), (UPDATES_MS, "updates ms"),
    (COMMIT_MS, "commit ms"), ("rocksdbLoadLatencyMs", "load ms"),
    ("rocksdbChangeLogWriterCommitLatencyMs", "changelog commit ms"),
    ("rocksdbCommitCheckpointLatency", "checkpoint ms"), ("rocksdbGetCount", "gets"),
    ("rocksdbGetLatency", "get ms"), (KEY_READS, "key reads"), (KEY_READ_MS, "key read ms"))


def data_batches(progress: list[dict]) -> list[dict]:
    """The micro-batches that read any rows."""
    return [p for p in progress if p["numInputRows"] > 0]


def trigger_ms(p: dict) -> float:
    return p["durationMs"][TRIGGER]


def phase_ms(p: dict, phase: str) -> float:
    return p["durationMs"].get(phase, 0)


def state_rows(p: dict) -> int:
    """The rows in every stateful operator's state after the micro-batch."""
    return sum(op[key(TOTAL_STATE_ROWS)] for op in p["stateOperators"])


def state_metric(p: dict, metric: str | Registered) -> float:
    """`metric` summed over the micro-batch's stateful operators: an operator's own field, or
    one of its custom metrics (0 where it has not that metric)."""
    name = key(metric)
    return sum(op.get(name, op.get("customMetrics", {}).get(name, 0))
               for op in p["stateOperators"])


def output_rows(progress: list[dict]) -> int:
    return sum(p["sink"]["numOutputRows"] for p in progress)


def ran_multi_join(progress: list[dict]) -> bool:
    """Whether a multi-join's operator was among the micro-batches' stateful operators."""
    operator = registry().operator
    return any(op["operatorName"] == operator for p in progress for op in p["stateOperators"])
