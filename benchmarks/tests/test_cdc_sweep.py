"""The CDC sweep's parts that need no engine: the markers' rows, what a stage measured and whether
it holds a bound, the next rate, the Flink source's DDL and the report."""

from __future__ import annotations

import random

import pytest

from multijoin_bench.cdc import markers
from multijoin_bench.cdc.paced import MARKER_BASE
from multijoin_bench.cdc.sweep import peer_bounds
from multijoin_bench.cdc.sweep_report import sweep_markdown
from multijoin_bench.cdc.workloads import NAMES, cdc_workload
from multijoin_bench.flink.cdc_sweep import kafka_source_ddl


@pytest.mark.parametrize("name", NAMES)
def test_a_marker_joins_no_row_of_the_other_tables(name):
    workload = cdc_workload(name, 2_000, 500)
    marker = workload.marker(MARKER_BASE + 7)
    assert set(marker) == {column for column, _ in workload.tables[0].columns}
    assert marker[workload.tables[0].row_id] == MARKER_BASE + 7
    # Every column the other tables join on holds a value no row of theirs has: ids and join
    # keys of the workloads' rows are small, non-negative numbers.
    on = [column for column in marker if column != workload.tables[0].row_id
          and isinstance(marker[column], int) and column.endswith("_id")]
    assert all(marker[column] < 0 for column in on)


def stage(start: float, seconds: float, latencies: list[float | None]) -> tuple[dict, dict]:
    """A stage whose markers, evenly released, took `latencies` (None: never arrived)."""
    released = [(MARKER_BASE + i, start + seconds * i / len(latencies))
                for i in range(len(latencies))]
    arrived = {row_id: at + latency for (row_id, at), latency in zip(released, latencies)
               if latency is not None}
    return ({"rate": 1000, "offered_rate": 990.0, "seconds": seconds, "start": start,
             "markers": released}, arrived)


def test_a_stage_is_measured_over_its_last_third():
    # The first two thirds are slow (a warm-up), the last third fast.
    record, arrived = stage(100.0, 30.0, [9.0] * 200 + [0.5] * 100)
    point = markers.measure(record, arrived)
    assert point["measured_markers"] == 100
    assert point["p99_ms"] == pytest.approx(500, abs=1)
    assert markers.holds(point, 1000) and not markers.holds(point, 400)


def test_a_stage_with_a_missing_marker_holds_no_bound():
    record, arrived = stage(0.0, 30.0, [0.1] * 299 + [None])
    point = markers.measure(record, arrived)
    assert point["missing_markers"] == 1
    assert not any(markers.holds(point, bound) for bound in markers.BOUNDS_MS)


def test_the_percentile_is_the_nearest_rank():
    values = list(range(1, 101))
    random.Random(3).shuffle(values)
    assert markers.percentile(values, 0.99) == 99
    assert markers.percentile(values, 0.5) == 50
    assert markers.percentile([], 0.99) is None


def point(rate: float, p99_ms: float) -> dict:
    return {"rate": rate, "offered_rate": rate, "missing_markers": 0, "p99_ms": p99_ms}


def capacity_sweep(capacity: float, bounds: tuple[int, ...] = markers.BOUNDS_MS,
                   p99_below: float = 200) -> list[dict]:
    """The sweep's points against an engine whose p99 is `p99_below` ms below `capacity` and
    grows past every bound above it."""
    points = [point(2000, p99_below if 2000 <= capacity else 60_000)]
    rate = markers.next_rate(points, bounds) or 0
    while rate and len(points) < 40:
        points.append(point(rate, p99_below if rate <= capacity else 60_000))
        rate = markers.next_rate(points, bounds) or 0
    return points


@pytest.mark.parametrize("capacity", [700, 5_000, 33_333])
def test_the_sweep_closes_in_on_the_highest_rate_that_holds(capacity):
    points = capacity_sweep(capacity)
    best = markers.best_rates(points)["1000"]
    assert best is not None and best <= capacity
    failed_above = min(p["rate"] for p in points if p["rate"] > best)
    assert failed_above / best <= markers.RATE_STEP
    assert len(points) < 20


def test_a_mini_batch_peer_searches_only_the_bound_its_mini_batch_is_set_from():
    assert peer_bounds("flink_binary_joins_rocksdb@2000") == (2000,)
    assert peer_bounds("ours_rocksdb") == markers.BOUNDS_MS
    # Between 1 s and 2 s at every rate it holds, so that every bound has a highest rate.
    every = capacity_sweep(700, p99_below=1500)
    own = capacity_sweep(700, (2000,), p99_below=1500)
    assert markers.best_rates(own, (2000,)) == {"2000": markers.best_rates(every)["2000"]}
    assert len(own) < len(every)
    text = sweep_markdown([{"workload": "cdc_skew", "peers": {"flink_binary_joins@2000": {
        "initial_load": {"seconds": 3.0}, "best_rates": {"2000": 650.0}, "points": []}}}])
    assert "| not searched | 650 | not searched |" in text


def test_the_flink_source_reads_its_topic_from_the_start_as_debezium():
    ddl = kafka_source_ddl({"name": "t0", "columns": [["k", "BIGINT"], ["v0", "STRING"]],
                            "primary_key": ["k"], "topic": "cdc-t0"}, "127.0.0.1:9")
    assert "PRIMARY KEY (`k`) NOT ENFORCED" in ddl
    for option in ("'connector' = 'kafka'", "'topic' = 'cdc-t0'", "'format' = 'debezium-json'",
                   "'scan.startup.mode' = 'earliest-offset'"):
        assert option in ddl


def test_the_report_says_where_a_flink_peer_holds_a_bound_at_a_higher_rate():
    def run(rates: dict) -> dict:
        return {"initial_load": {"seconds": 3.0}, "best_rates": rates, "points": []}

    text = sweep_markdown([{"workload": "cdc_left10", "peers": {
        "ours_rocksdb": run({"1000": 5000.0, "2000": 9000.0, "5000": 9000.0}),
        "flink_multi_join_rocksdb": run({"1000": 7000.0, "2000": 8000.0, "5000": None})}}])
    assert "At p99 ≤ 1 s, Flink MultiJoin, RocksDB holds 7,000 changes/s, more than ours " \
           "(5,000)" in text
    assert "At p99 ≤ 2 s" not in text
    assert "none held" in text


@pytest.mark.parametrize("probes, warned", [((1.0, 1.05), False), ((0.5, 1.0), True),
                                            ((None, 1.0), True), ((None, None), False)])
def test_the_report_warns_where_peers_ran_on_machines_of_unlike_speed(probes, warned):
    peers = {peer: {"initial_load": {"seconds": 3.0}, "best_rates": {}, "points": [],
                    **({"machine": {"probe_cpu_s": probe}} if probe else {})}
             for peer, probe in zip(("ours_rocksdb", "flink_multi_join_rocksdb"), probes)}
    text = sweep_markdown([{"workload": "cdc_left10", "peers": peers}])
    assert ("machines of unlike speed" in text) == warned


def test_the_report_gives_the_engine_the_cores_the_broker_and_producer_left():
    def point(rate: float, p99_ms: float, machine: float) -> dict:
        return {"rate": rate, "offered_rate": rate, "missing_markers": 0, "p99_ms": p99_ms,
                "cpu": {"machine_cores": machine, "broker_cores": 0.25, "producer_cores": 0.1}}

    def run(*points: dict, bounds=("1000", "2000", "5000")) -> dict:
        return {"initial_load": {"seconds": 1.0}, "best_rates": dict.fromkeys(bounds),
                "points": list(points)}

    peers = {"ours_rocksdb": run(point(2000, 900, 1.5), point(3000, 4000, 1.9),
                                 point(4500, 9000, 2.0)),
             # Held nothing: its lowest stage. Its own bound only: 1 s.
             "flink_binary_joins@1000": run(point(2000, 1500, 1.0), point(1000, 1100, 0.8),
                                            bounds=("1000",)),
             "ours_in_memory": run({"rate": 2000, "offered_rate": 2000, "missing_markers": 0,
                                    "p99_ms": 100})}
    text = sweep_markdown([{"workload": "cdc_star", "peers": peers}])
    assert "| cdc_star | changelog join, RocksDB | 3,000 | 1.90 | 0.25 | 0.10 | 1.55 |" in text
    assert "mini-batch for 1 s | 1,000 | 0.80 | 0.25 | 0.10 | 0.45 |" in text
    assert "| cdc_star | changelog join, in memory | | not measured in this run | | | |" in text


def test_the_report_shows_each_peer_s_state_measured_its_way_beside_the_logical_bytes():
    logical = {"bytes": 2_000_000}
    peers = {"ours_rocksdb": {"state": {"rows": 9, "memory_bytes": 1, "sst_bytes": 3_000_000}},
             "ours_in_memory": {"state": {"rows": 9, "memory_bytes": 5_000_000,
                                          "sst_bytes": None}},
             "flink_multi_join_rocksdb": {"state": {"id": 4, "state_size": 4_000_000,
                                                    "checkpointed_size": 10}},
             "flink_multi_join": {}}
    for run in peers.values():
        run.update({"initial_load": {"seconds": 1.0}, "best_rates": {}, "points": [],
                    "logical_state": logical})
    text = sweep_markdown([{"workload": "cdc_skew", "peers": peers}])
    assert "changelog join, RocksDB | 3.0 | RocksDB's live SST files | 2.0 |" in text
    assert "in memory | 5.0 | the store's memory | 2.0 |" in text
    assert "| 4.0 | latest checkpoint, full size | 2.0 |" in text
    assert "|  | not measured in this run | 2.0 |" in text


def test_the_report_lists_each_peers_memory_checkpoints_and_batching():
    flink = {"mode": "binary_joins_rocksdb", "settings": {
        "managed_memory_mb": 256, "heap": "6g", "checkpoint_interval_ms": 1433,
        "object_reuse": True, "incremental_checkpoints": {"binary_joins_rocksdb": True},
        "mini_batch": {"binary_joins_rocksdb": {"allow_latency_ms": 500, "size": 5000}}},
        "taskmanager_got": {"memory_configuration": {"managedMemory": 268435456}}}
    peers = {peer: {"initial_load": {"seconds": 1.0}, "best_rates": {}, "points": [],
                    "started": started}
             for peer, started in (("ours_rocksdb", {}), ("ours_in_memory", {}),
                                   ("flink_binary_joins_rocksdb@2000", flink))}
    spark = {"spark.driver.memory": "6g", "checkpoint": "every micro-batch", "trigger": "default",
             "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB": "256"}
    text = sweep_markdown([{"workload": "cdc_star", "spark_settings": spark, "peers": peers}])
    assert ("| changelog join, RocksDB | driver heap 6g, RocksDB 256 MB bounded |  | every "
            "micro-batch | default |") in text
    assert "| changelog join, in memory | driver heap 6g, state on the heap |" in text
    assert ("| managed 256 MB, heap 6g | managed 256 MB | every 1,433 ms, incremental | "
            "mini-batch: 500 ms or 5,000 rows, object reuse |") in text


def test_the_report_says_how_long_the_sweeps_took():
    peers = {peer: {"initial_load": {"seconds": 1.0}, "best_rates": {}, "points": [], **extra}
             for peer, extra in (("ours_rocksdb", {"sweep_seconds": 600}),
                                 ("flink_multi_join", {"sweep_seconds": 300}),
                                 ("ours_in_memory", {}))}
    text = sweep_markdown([{"workload": "cdc_star", "peers": peers}])
    assert ("- The sweeps of 2 of its peers took 15 minutes in all (1 ran before their time was "
            "recorded).") in text
