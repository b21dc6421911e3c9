"""The Flink peer's SQL text and configuration, and the benchmark's Flink table and checks, without
Flink (milliseconds: the peer itself runs only in `scripts/benchmark --flink`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from multijoin_bench.core.report import flink_markdown, summary_markdown
from multijoin_bench.core.workload import Workload
from multijoin_bench.flink import launch as flink
from multijoin_bench.flink import peer as flink_peer


def test_sql_joins_every_input_on_input_0s_key_into_a_blackhole():
    sql = flink_peer.statements({"schemas": ["k int, v0 int", "k int, v1 int", "k int, v2 int"],
                                 "folders": ["/d/input0", "/d/input1", "/d/input2"]})
    assert sql["ddl"][1] == (
        "CREATE TEMPORARY TABLE input1 (`k` INT, `v1` INT) WITH ('connector' = 'filesystem', "
        "'path' = '/d/input1', 'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601')")
    assert sql["ddl"][3] == ("CREATE TEMPORARY TABLE join_sink (`k` INT, `v0` INT, `v1` INT, "
                             "`v2` INT) WITH ('connector' = 'blackhole')")
    assert sql["join"] == (
        "INSERT INTO join_sink SELECT t0.`k`, t0.`v0`, t1.`v1`, t2.`v2` FROM input0 t0 "
        "INNER JOIN input1 t1 ON t0.`k` = t1.`k` INNER JOIN input2 t2 ON t0.`k` = t2.`k`")
    assert sql["scan"] == ("INSERT INTO scan_sink SELECT `k` FROM input0 UNION ALL "
                           "SELECT `k` FROM input1 UNION ALL SELECT `k` FROM input2")
    assert sql["count"].startswith("SELECT COUNT(*) FROM (SELECT t0.`k`")
    assert flink_peer.MULTI_JOIN_KEY == "table.optimizer.multi-join.enabled"


def test_sql_with_given_joins_keeps_every_column_and_each_on_clause():
    schemas = ["k0 int, t0 timestamp", "k1 int, t1 timestamp", "k2 int, t2 timestamp"]
    joins = [["LEFT", "t0.`k0` = t1.`k1` AND t1.`t1` > t0.`t0`"], ["INNER", "t0.`k0` = t2.`k2`"]]
    sql = flink_peer.statements({"schemas": schemas, "joins": joins,
                                 "folders": ["/d/input0", "/d/input1", "/d/input2"]})
    assert sql["join"] == (
        "INSERT INTO join_sink SELECT t0.`k0`, t0.`t0`, t1.`k1`, t1.`t1`, t2.`k2`, t2.`t2` "
        "FROM input0 t0 LEFT JOIN input1 t1 ON t0.`k0` = t1.`k1` AND t1.`t1` > t0.`t0` "
        "INNER JOIN input2 t2 ON t0.`k0` = t2.`k2`")
    assert "(`k0` INT, `t0` TIMESTAMP(3), `k1` INT" in sql["ddl"][3]
    assert sql["ddl"][4] == ("CREATE TEMPORARY TABLE scan_sink (`k0` INT) WITH "
                             "('connector' = 'blackhole')")
    assert sql["scan"] == ("INSERT INTO scan_sink SELECT `k0` FROM input0 UNION ALL "
                           "SELECT `k1` FROM input1 UNION ALL SELECT `k2` FROM input2")


def test_only_the_rocksdb_mode_changes_the_state_backend_and_multi_join_modes_enable_it():
    configs = {mode: flink_peer.job_config(mode, 2, "/s/rocksdb") for mode in flink_peer.MODES}
    assert configs["multi_join_rocksdb"] == {
        "parallelism.default": "2", "table.optimizer.multi-join.enabled": "true",
        "state.backend.rocksdb.localdir": "/s/rocksdb", "pipeline.name": "flink-peer",
        "state.backend.type": "rocksdb"}
    assert configs["multi_join"] == {key: value for key, value
                                     in configs["multi_join_rocksdb"].items()
                                     if key != "state.backend.type"}
    for mode in ("scan_only", "binary_joins"):
        assert configs[mode][flink_peer.MULTI_JOIN_KEY] == "false"
        assert flink_peer.STATE_BACKEND_KEY not in configs[mode]
    assert flink_peer.job_config("multi_join_rocksdb_dedup", 2, "/s/rocksdb") == {
        **configs["multi_join_rocksdb"], "table.exec.source.cdc-events-duplicate": "true"}


def test_spark_types_map_to_flink_types():
    assert flink_peer.flink_columns("k0 int, v0 bigint, t0 timestamp") == [
        ("k0", "INT"), ("v0", "BIGINT"), ("t0", "TIMESTAMP(3)")]


def test_benchmark_table_has_flink_columns_only_when_flink_ran():
    spark_only = {"workload": "fanout", "chain": {"wall_seconds": 9.0},
                  "multi_join": {"wall_seconds": 3.5}, "multi_join_micro_batches_seconds": 3.0,
                  "multi_join_micro_batches_best_seconds": 2.5,
                  "multi_join_one_trigger_seconds": 1.25,
                  "multi_join_one_trigger_best_seconds": 1.0}
    assert flink_markdown([spark_only]) == []
    mode = {"seconds": 2.5}
    with_flink = dict(spark_only, flink={"output_rows": 1000, "multi_join": {"seconds": 2.25},
                                         "multi_join_rocksdb": {"seconds": 3.5},
                                         "binary_joins": {"seconds": 4.0},
                                         "scan_only": {"seconds": 1.5}, "other": mode})
    # Flink's best run over the multi-join's, in micro-batches (2.5 s) and in one trigger (1.0 s).
    with_flink["flink_ratios"] = flink.ratios(with_flink)
    assert with_flink["flink_ratios"] == {
        "multi_join_over_micro_batches": 0.9, "multi_join_over_one_trigger": 2.25,
        "multi_join_rocksdb_over_micro_batches": 1.4, "multi_join_rocksdb_over_one_trigger": 3.5,
        "binary_joins_over_micro_batches": 1.6, "binary_joins_over_one_trigger": 4.0}
    lines = flink_markdown([spark_only, with_flink])
    assert lines[1].startswith(
        "| workload | output rows | Spark's chain s | multi-join, micro-batches s |")
    assert "| Flink MultiJoin s | Flink MultiJoin, RocksDB s | Flink scan only s |" in lines[1]
    assert lines[1].count("|") == lines[2].count("|") == lines[3].count("|")
    assert lines[3] == "| fanout | 1,000 | 9.00 | 3.00 | 4.00 | 2.25 | 3.50 | 1.50 | 0.75 | 2.50 |"
    assert lines[-3].startswith("| workload | Flink MultiJoin, micro-batches | ")
    assert lines[-3].count("|") == lines[-2].count("|") == lines[-1].count("|")
    assert lines[-1] == "| fanout | 0.90x | 2.25x | 1.40x | 3.50x | 1.60x | 4.00x |"

    # On Spark's in-memory store too: set against Flink's heap modes only (MultiJoin, binary).
    in_memory = dict(with_flink, in_memory_store={"micro_batches_best_seconds": 1.25,
                                                  "one_trigger_best_seconds": 0.5})
    in_memory["flink_ratios"] = flink.ratios(in_memory)
    assert in_memory["flink_ratios"] == {
        **with_flink["flink_ratios"],
        "multi_join_over_in_memory_micro_batches": 1.8,
        "multi_join_over_in_memory_one_trigger": 4.5,
        "binary_joins_over_in_memory_micro_batches": 3.2,
        "binary_joins_over_in_memory_one_trigger": 8.0}
    lines = flink_markdown([with_flink, in_memory])
    assert lines[-4].count("|") == lines[-2].count("|") == lines[-1].count("|") == 12
    assert "| Flink MultiJoin, micro-batches, multi-join in-memory |" in lines[-4]
    assert lines[-2] == ("| fanout | 0.90x | 2.25x | - | - | 1.40x | 3.50x | 1.60x | 4.00x | - "
                         "| - |")
    assert lines[-1] == ("| fanout | 0.90x | 2.25x | 1.80x | 4.50x | 1.40x | 3.50x | 1.60x | "
                         "4.00x | 3.20x | 8.00x |")


def test_benchmark_fails_where_flink_ran_another_state_backend(monkeypatch):
    peer = {"output_rows": 10, **{mode: {"seconds": 1.0, "multi_join_in_plan": "multi" in mode,
                                          "rocksdb_used": mode == "multi_join_rocksdb"}
                                   for mode in flink_peer.MODES}}
    monkeypatch.setattr(flink, "run_peer", lambda workload, folder, times: peer)
    workload = Workload("w", "", [], [], None)
    assert flink.peer_result(workload, Path("/d"), {"output_rows": 10}) is peer
    peer["multi_join_rocksdb"]["rocksdb_used"] = False
    with pytest.raises(SystemExit, match="state backends"):
        flink.peer_result(workload, Path("/d"), {"output_rows": 10})


def test_the_headline_sets_flink_against_the_multi_join_like_for_like():
    spark_only = {"workload": "fanout",
                  "chain": {"wall_seconds": 9.0, "state_rows_peak": 1000,
                            "state_bytes_on_disk": 8_000},
                  "multi_join": {"wall_seconds": 3.5, "state_rows_peak": 40,
                                 "state_bytes_on_disk": 1_000},
                  "multi_join_micro_batches_seconds": 3.0}
    lines = summary_markdown([spark_only])
    # 1000 / 40 rows, 8000 / 1000 bytes, 9.0 / 3.0 seconds; no chain on join state format 4.
    assert lines[2] == "| fanout | 25.0x / - | 8.0x / - | 3.00x / - |" and lines[-1] == ""
    # Flink on the heap against the in-memory store, in RocksDB against RocksDB; - where the
    # multi-join did not run on the in-memory store.
    rocksdb_only = dict(spark_only, flink_ratios={
        "multi_join_over_micro_batches": 0.9, "multi_join_over_one_trigger": 2.25,
        "multi_join_rocksdb_over_micro_batches": 1.4, "multi_join_rocksdb_over_one_trigger": 3.5})
    in_memory = dict(rocksdb_only, flink_ratios={
        **rocksdb_only["flink_ratios"], "multi_join_over_in_memory_micro_batches": 1.8,
        "multi_join_over_in_memory_one_trigger": 4.5})
    lines = summary_markdown([spark_only, rocksdb_only, in_memory])
    assert "| Flink MultiJoin (heap) over multi-join (in-memory), micro-batches / one trigger |" \
        in lines[0]
    assert lines[0].count("|") == lines[1].count("|") == lines[2].count("|") == 7
    spark = "| fanout | 25.0x / - | 8.0x / - | 3.00x / - |"
    assert lines[2:5] == [f"{spark} - / - | - / - |", f"{spark} - / - | 1.40x / 3.50x |",
                          f"{spark} 1.80x / 4.50x | 1.40x / 3.50x |"]
