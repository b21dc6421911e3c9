"""Flink's settings in the CDC peer (flink/tuning.py): the memory Spark's side has, checkpoints
on, mini-batch only where Flink's plan has an operator that uses it, object reuse; without
Flink."""

from __future__ import annotations

from pathlib import Path

from multijoin_bench.flink.cdc_peer import JOIN_MODES
from multijoin_bench.flink.tuning import (Tuning, checkpoint_interval_ms, managed_memory_mb,
                                          mini_batches)
from multijoin_bench.scale.run import BOUNDED_MEMORY


def test_managed_memory_is_spark_side_rocksdb_memory_and_goes_to_the_mini_cluster():
    tuning = Tuning(managed_memory_mb(BOUNDED_MEMORY), "6g")
    assert tuning.managed_memory_mb == 256
    assert tuning.cluster_config() == {"taskmanager.memory.managed.size": "256m"}
    # The table environment's settings do not reach a local cluster's task manager.
    assert not any("memory" in key for key in tuning.job_config("multi_join_rocksdb", Path("c")))
    assert tuning.jvm_args() == "-Xmx6g"


def test_checkpoints_every_second_or_at_spark_median_batch_interval_incremental_on_rocksdb():
    assert checkpoint_interval_ms(580) == 1000
    assert checkpoint_interval_ms(1491.4) == 1491
    assert checkpoint_interval_ms(None) == 1000
    tuning = Tuning(256, "6g", checkpoint_interval_ms(1491))
    for mode in JOIN_MODES:
        config = tuning.job_config(mode, Path("/tmp/checkpoints"))
        assert config["execution.checkpointing.interval"] == "1491 ms"
        assert config["execution.checkpointing.incremental"] == str(
            "_rocksdb" in mode).lower()
        assert config["execution.checkpointing.dir"] == "file:///tmp/checkpoints"
        assert config["pipeline.object-reuse"] == "true"
        # RocksDB's files compressed as Spark's RocksDB store compresses its own by default.
        assert config.get("state.backend.rocksdb.compression.per.level") == (
            "LZ4_COMPRESSION" if "_rocksdb" in mode else None)


def test_mini_batch_where_flink_applies_it_a_quarter_of_the_latency_bound():
    assert [mode for mode in JOIN_MODES if mini_batches(mode)] == [
        "binary_joins", "binary_joins_rocksdb", "multi_join_rocksdb_dedup"]
    tuning = Tuning(256, "6g", latency_bound_ms=2000)
    binary = tuning.job_config("binary_joins", Path("c"))
    assert (binary["table.exec.mini-batch.enabled"],
            binary["table.exec.mini-batch.allow-latency"]) == ("true", "500 ms")
    assert int(binary["table.exec.mini-batch.size"]) > 0
    assert not any("mini-batch" in key for key in tuning.job_config("multi_join", Path("c")))


def test_the_printed_settings_say_what_each_mode_ran_with():
    described = Tuning(256, "6g", 1200, 1000).describe(["multi_join", "binary_joins_rocksdb"])
    assert described["managed_memory_mb"] == 256 and described["jvm_args"] == "-Xmx6g"
    assert described["checkpoint_interval_ms"] == 1200 and described["object_reuse"]
    assert described["incremental_checkpoints"] == {"multi_join": False,
                                                   "binary_joins_rocksdb": True}
    assert described["mini_batch"] == {"multi_join": None,
                                       "binary_joins_rocksdb": {"allow_latency_ms": 250,
                                                                "size": 5000}}
