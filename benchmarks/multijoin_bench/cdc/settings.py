"""Both engines' settings in the CDC benchmark's results: Spark's session as run.py starts it,
and the Flink peer's tuning (flink/tuning.py) taken from it, so that Flink runs with the memory
Spark's side has and makes its state durable at about the same pace."""

from __future__ import annotations

from pyspark.sql import SparkSession

from multijoin_bench.flink.tuning import Tuning, checkpoint_interval_ms, managed_memory_mb
from multijoin_bench.scale.run import BOUNDED_MEMORY

SPARK_KEYS = ("spark.master", "spark.driver.memory", "spark.sql.shuffle.partitions",
              "spark.sql.streaming.stateStore.providerClass", *BOUNDED_MEMORY)
ROCKSDB_COMPRESSION_KEY = "spark.sql.streaming.stateStore.rocksdb.compression"


BACKLOG_TRIGGER = "availableNow, the batch size's files a micro-batch"
SWEEP_TRIGGER = "the default: a micro-batch of what arrived as soon as the last one ends"


def spark_settings(spark: SparkSession, trigger: str = BACKLOG_TRIGGER) -> dict:
    """The session's settings that bear on the comparison, how the runs commit and trigger."""
    return {**{key: spark.conf.get(key, None) for key in SPARK_KEYS},
            # Not a registered conf: unset, the store takes its default.
            ROCKSDB_COMPRESSION_KEY: spark.conf.get(ROCKSDB_COMPRESSION_KEY, "lz4 (the default)"),
            "checkpoint": "state and offsets at every micro-batch",
            "trigger": trigger}


def flink_tuning(spark: SparkSession, result: dict) -> Tuning:
    """Flink's settings against a workload's runs: managed memory as Spark's bounded RocksDB
    memory, the heap of Spark's driver, and checkpoints at the multi-join's median batch
    interval (the longest over the batch sizes, the fewer checkpoints) or every second."""
    medians = [runs["multi_join"]["batch_ms_p50"] for runs in result["batch_sizes"].values()
               if runs["multi_join"]["batch_ms_p50"] is not None]
    return Tuning(managed_memory_mb(BOUNDED_MEMORY), spark.conf.get("spark.driver.memory"),
                  checkpoint_interval_ms(max(medians, default=None)))
