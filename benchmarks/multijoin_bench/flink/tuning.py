"""Flink set up as its users set it up, for the CDC peer (cdc_peer.py), so that a ratio against it
measures the engines and not their settings:

- managed memory equal to the bounded RocksDB memory Spark's side gets, set in the local
  mini-cluster's own configuration (its task manager reads it there, not from the table
  environment's), and the JVM's maximum heap equal to Spark's driver's (JVM_ARGS, which
  PyFlink's gateway, the mini-cluster's JVM, starts with);
- checkpoints on, as Spark's side makes its state and offsets durable at every micro-batch:
  every second, or at Spark's median batch interval where that is longer; incremental on
  RocksDB, as Flink's docs advise for large state;
- mini-batch (`table.exec.mini-batch.*`) in the modes whose plans hold an operator that uses it
  (binary joins, and the ChangelogNormalize that drops duplicates), its latency a quarter of the
  latency bound the run is held to; Flink's MultiJoin has no mini-batch path, so the setting
  would change nothing there, and is left out so that the printed settings say what ran;
- object reuse on;
- RocksDB's SST files compressed with LZ4, Spark's RocksDB state store's default, rather than
  Flink's default of Snappy, so that the state both engines hold is measured the same way.

Pure functions, tested without Flink. The run records `describe()` together with what the task
manager reports it got (cdc_peer.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from multijoin_bench.flink.peer import DEDUP, uses_rocksdb

MIN_CHECKPOINT_INTERVAL_MS = 1000
# Flink's docs' example size; the latency bound, not the size, is what ends a mini-batch here.
MINI_BATCH_SIZE = 5000
# Spark's RocksDB state store compresses with LZ4 unless told otherwise.
ROCKSDB_COMPRESSION = {"state.backend.rocksdb.compression.per.level": "LZ4_COMPRESSION"}
# The latency bound of a run that searches none (a backlog read as fast as it goes).
DEFAULT_LATENCY_BOUND_MS = 1000


@dataclass(frozen=True)
class Tuning:
    """One run's settings: memory as Spark's side has it, the checkpoint interval and the
    latency bound."""

    managed_memory_mb: int
    heap: str  # as Spark's driver memory is written: "6g"
    checkpoint_interval_ms: int = MIN_CHECKPOINT_INTERVAL_MS
    latency_bound_ms: int = DEFAULT_LATENCY_BOUND_MS

    def cluster_config(self) -> dict[str, str]:
        """What the local mini-cluster reads at its start."""
        return {"taskmanager.memory.managed.size": f"{self.managed_memory_mb}m"}

    def jvm_args(self) -> str:
        """The gateway JVM's options (the JVM_ARGS of its process)."""
        return f"-Xmx{self.heap}"

    def job_config(self, mode: str, checkpoints: Path) -> dict[str, str]:
        """The table environment's settings for `mode`, checkpointing to `checkpoints`."""
        config = {"pipeline.object-reuse": "true",
                  "execution.checkpointing.interval": f"{self.checkpoint_interval_ms} ms",
                  "execution.checkpointing.incremental": str(uses_rocksdb(mode)).lower(),
                  "execution.checkpointing.dir": checkpoints.resolve().as_uri()}
        if uses_rocksdb(mode):
            config.update(ROCKSDB_COMPRESSION)
        if mini_batches(mode):
            config.update({"table.exec.mini-batch.enabled": "true",
                           "table.exec.mini-batch.allow-latency":
                               f"{self.mini_batch_latency_ms()} ms",
                           "table.exec.mini-batch.size": str(MINI_BATCH_SIZE)})
        return config

    def mini_batch_latency_ms(self) -> int:
        return max(1, self.latency_bound_ms // 4)

    def describe(self, modes: list[str]) -> dict:
        """The settings as the results print them, per mode the mini-batch it ran with."""
        return {**asdict(self), "jvm_args": self.jvm_args(),
                "cluster": self.cluster_config(), "object_reuse": True,
                "incremental_checkpoints": {mode: uses_rocksdb(mode) for mode in modes},
                "rocksdb_compression": {mode: ("LZ4" if uses_rocksdb(mode) else None)
                                        for mode in modes},
                "mini_batch": {mode: ({"allow_latency_ms": self.mini_batch_latency_ms(),
                                       "size": MINI_BATCH_SIZE} if mini_batches(mode) else None)
                               for mode in modes}}


def checkpoint_interval_ms(spark_median_batch_ms: float | None) -> int:
    """Checkpoints at Spark's median batch interval, or every second where that is shorter."""
    return max(MIN_CHECKPOINT_INTERVAL_MS, round(spark_median_batch_ms or 0))


def managed_memory_mb(spark_settings: dict[str, str]) -> int:
    """The bounded RocksDB memory of Spark's side, from its session settings."""
    return int(spark_settings["spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB"])


def mini_batches(mode: str) -> bool:
    """Whether `mode`'s plan holds an operator Flink runs in mini-batches: a binary join, or the
    ChangelogNormalize that drops duplicates."""
    return mode.startswith("binary_joins") or mode.endswith(DEDUP)
