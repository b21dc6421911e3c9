"""The names the benchmark reads from a streaming query's progress (StreamingQueryProgress as
JSON) and from its plan: the one place they are spelled, so that a renamed metric breaks here.

Spark's own fields (the engine's phases, the stateful operators' rows and times, RocksDB's
store metrics) sit next to the multi-join's (its operator's name, its node in the plan, its
key reads).
"""

from __future__ import annotations

# The multi-join's operator as the progress's stateOperators name it, and its node in the
# physical plan (EXPLAIN's spark-multijoin section names the operator too, even where nothing
# fused, but never with its inputs).
MULTI_JOIN_OPERATOR = "multiJoin"
MULTI_JOIN_NODE = "StreamingMultiJoin input0"

# Where a micro-batch's time goes, from its progress: the engine's phases (wall ms, durationMs);
# the breakdown's "other" is the trigger's time outside them.
TRIGGER = "triggerExecution"
ADD_BATCH = "addBatch"
ENGINE_PHASES = ("latestOffset", "getBatch", "queryPlanning", "walCommit", ADD_BATCH,
                 "commitOffsets")

# The stateful operators' own metrics and their stores' (summed over partitions: task ms, more
# than the wall time where partitions run in parallel). Left out: rocksdbFilesCopied, which
# repeats the last snapshot upload's count in every later batch.
STATE_METRICS = ("numStateStoreInstances", "allUpdatesTimeMs", "allRemovalsTimeMs",
                 "commitTimeMs")
ROCKSDB_METRICS = ("rocksdbLoadLatencyMs", "rocksdbChangeLogWriterCommitLatencyMs",
                   "rocksdbCommitFileSyncLatencyMs", "rocksdbCommitCheckpointLatency",
                   "rocksdbGetCount", "rocksdbGetLatency", "rocksdbPutCount",
                   "rocksdbPutLatency")
# The multi-join's reads of stored rows, one RocksDB get per key, which Spark's store counts
# among its gets too: as the registry MultiJoinMetrics names them (tests/test_benchmark.py checks).
MULTI_JOIN_METRICS = ("numKeyReads", "keyReadTimeMs")
STORE_METRICS = ROCKSDB_METRICS + MULTI_JOIN_METRICS

# The breakdown table's state columns, and their heads.
BREAKDOWN_STATE_COLUMNS = (
    ("numStateStoreInstances", "store instances"), ("allUpdatesTimeMs", "updates ms"),
    ("commitTimeMs", "commit ms"), ("rocksdbLoadLatencyMs", "load ms"),
    ("rocksdbChangeLogWriterCommitLatencyMs", "changelog commit ms"),
    ("rocksdbCommitCheckpointLatency", "checkpoint ms"), ("rocksdbGetCount", "gets"),
    ("rocksdbGetLatency", "get ms"), ("numKeyReads", "key reads"),
    ("keyReadTimeMs", "key read ms"))


def data_batches(progress: list[dict]) -> list[dict]:
    """The micro-batches that read any rows."""
    return [p for p in progress if p["numInputRows"] > 0]


def trigger_ms(p: dict) -> float:
    return p["durationMs"][TRIGGER]


def phase_ms(p: dict, phase: str) -> float:
    return p["durationMs"].get(phase, 0)


def state_rows(p: dict) -> int:
    """The rows in every stateful operator's state after the micro-batch."""
    return sum(op["numRowsTotal"] for op in p["stateOperators"])


def state_metric(p: dict, metric: str) -> float:
    """`metric` summed over the micro-batch's stateful operators: an operator's own field, or
    one of its custom metrics (0 where it has not that metric)."""
    return sum(op.get(metric, op.get("customMetrics", {}).get(metric, 0))
               for op in p["stateOperators"])


def output_rows(progress: list[dict]) -> int:
    return sum(p["sink"]["numOutputRows"] for p in progress)


def ran_multi_join(progress: list[dict]) -> bool:
    """Whether a multi-join kept state in any of the micro-batches."""
    return any(op["operatorName"] == MULTI_JOIN_OPERATOR
               for p in progress for op in p["stateOperators"])
