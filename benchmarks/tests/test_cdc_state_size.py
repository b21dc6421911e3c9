"""The state the CDC sweep's peers hold when they stop, measured one way (cdc/state_size.py), and
the logical bytes of the rows the changes leave; without an engine."""

from __future__ import annotations

import itertools

from multijoin_bench.cdc.model import Live, Table
from multijoin_bench.cdc.state_size import logical_bytes, row_bytes, spark_state
from multijoin_bench.cdc.workloads import cdc_workload, changes
from multijoin_bench.core import metrics


def test_row_bytes_count_8_a_number_and_a_string_s_utf8_length():
    table = Table("t", [("id", "BIGINT"), ("name", "STRING")], "id", "id",
                  lambda row_id, key, version: {"id": row_id, "name": "é" * (row_id % 2)})
    # Half the rows hold "é" (2 bytes), half "": 8 + 1 on average.
    assert row_bytes(table) == 9.0
    assert logical_bytes([table], {"t": 10}) == {"tables": {"t": {"rows": 10, "bytes": 90}},
                                                 "bytes": 90}


def test_the_live_rows_are_what_the_changes_leave():
    workload = cdc_workload("cdc_star", 4_000, 4_000)
    live: list[Live] = []
    events = list(itertools.islice(changes(workload, {}, live), 3_000))
    net = [0] * len(workload.tables)
    for table, event in events:
        net[table] += (event["op"] == "c") - (event["op"] == "d")
    assert [len(rows.ids) for rows in live] == net


def test_our_state_is_the_last_reporting_batch_s_operators_and_sst_only_on_rocksdb(monkeypatch):
    # The names the registry gives, as the jar's registry spells them.
    registry = metrics.Registry("multiJoin", {"NUM_TOTAL_STATE_ROWS": "numRowsTotal",
                                              "STATE_MEMORY": "memoryUsedBytes"})
    monkeypatch.setattr(metrics, "registry", lambda: registry)

    def operator(rows: int, memory: int, sst: int | None) -> dict:
        return {"numRowsTotal": rows, "memoryUsedBytes": memory,
                "customMetrics": {} if sst is None else {"rocksdbSstFileSize": sst}}

    progress = [{"stateOperators": [operator(1, 10, 100)]},
                {"stateOperators": [operator(5, 50, 500), operator(2, 20, 200)]},
                {"stateOperators": []}]
    assert spark_state(progress) == {"rows": 7, "memory_bytes": 70, "sst_bytes": 700}
    in_memory = [{"stateOperators": [operator(5, 50, None), operator(2, 20, None)]}]
    assert spark_state(in_memory)["sst_bytes"] is None
    assert "not_read" in spark_state([{"stateOperators": []}])
