"""The CDC benchmark's pure parts, without Spark: the changes the generator makes (fractions, one
row per key per input in cdc_left10, the same changes for a seed), the files and spec.json that
Flink's peer reads, and the figures the report makes of a run's progress. The run itself, on
Delta: benchmarks/tests/test_benchmark_cdc_delta.py."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from multijoin_bench.cdc.report import cdc_markdown
from multijoin_bench.cdc.run import merged_peer, percentile, record
from multijoin_bench.cdc.workloads import (DELETES, UPDATES, cdc_workload, changes,
                                          spec_parameters, write)

pytestmark = pytest.mark.one_line


def replay(name: str, count: int) -> tuple[list[tuple[int, dict]], dict]:
    counts: dict = {}
    return list(changes(cdc_workload(name, count, 1_000), counts)), counts


@pytest.mark.parametrize("name", ["cdc_left10", "cdc_star", "cdc_skew"])
def test_changes_after_the_first_load_keep_the_pinned_fractions(name):
    events, counts = replay(name, 40_000)
    later = Counter(event["op"] for _, event in events[counts["first_load"]:])
    assert sum(later.values()) == 40_000 - counts["first_load"] > 10_000
    assert later == Counter({op: counts[op] for op in "cud"})
    total = sum(later.values())
    assert abs(later["u"] / total - UPDATES) < 0.02
    assert abs(later["d"] / total - DELETES) < 0.01
    assert all(event["op"] == "c" for _, event in events[:counts["first_load"]])


@pytest.mark.parametrize("name", ["cdc_left10", "cdc_star", "cdc_skew"])
def test_each_change_applies_to_the_row_as_the_changes_before_left_it(name):
    """An insert of an absent row id, an update or delete of a live one whose `before` is its
    last image; LSNs increase; in cdc_left10 the join key is the row id (one row per key per
    input)."""
    workload = cdc_workload(name, 20_000, 1_000)
    current: list[dict] = [{} for _ in workload.tables]
    last_lsn = -1
    for i, event in changes(workload):
        table = workload.tables[i]
        image = event["after"] or event["before"]
        row_id = image[table.row_id]
        if event["op"] == "c":
            assert row_id not in current[i] and event["before"] is None
        else:
            assert current[i].get(row_id) == event["before"]
        if event["op"] == "d":
            del current[i][row_id]
        else:
            current[i][row_id] = event["after"]
        if name == "cdc_left10":
            assert image[table.key] == row_id
        assert event["source"]["lsn"] > last_lsn
        last_lsn = event["source"]["lsn"]


def test_the_same_seed_gives_the_same_changes():
    assert replay("cdc_star", 5_000) == replay("cdc_star", 5_000)


def test_the_files_and_spec_are_the_peer_contract(tmp_path):
    workload = cdc_workload("cdc_left10", 3_500, 1_000)
    spec = write(workload, tmp_path / "a")
    assert set(spec) == {"workload", "tables", "select", "changes", "parameters"}
    assert json.loads((tmp_path / "a" / "spec.json").read_text()) == spec
    assert [t["name"] for t in spec["tables"]] == [f"t{i}" for i in range(10)]
    for table in spec["tables"]:
        assert set(table) == {"name", "folder", "columns", "primary_key"}
        assert {kind for _, kind in table["columns"]} <= {"BIGINT", "INT", "STRING", "DOUBLE"}
        files = sorted(Path(table["folder"]).glob("part-*.json"))
        assert [f.name for f in files] == [f"part-{n:05d}.json" for n in range(4)]
        assert [os.stat(f).st_mtime for f in files] == sorted(os.stat(f).st_mtime for f in files)
        lsns = [json.loads(line)["source"]["lsn"] for f in files
                for line in f.read_text().splitlines()]
        assert lsns == sorted(lsns)
    lines = sum(len(Path(t["folder"], f).read_text().splitlines())
                for t in spec["tables"] for f in os.listdir(t["folder"]))
    assert lines == spec["changes"] == 3_500
    write(workload, tmp_path / "b")
    for table in ("t0", "t9"):
        for part in ("part-00000.json", "part-00003.json"):
            assert (tmp_path / "a" / table / part).read_bytes() == \
                (tmp_path / "b" / table / part).read_bytes()


def test_latency_percentiles_are_over_changes_not_batches():
    # One batch of 10 changes took 100 ms, one of 990 took 1,000 ms.
    assert percentile([(100, 10), (1_000, 990)], 0.5) == 1_000
    assert percentile([(100, 10), (1_000, 990)], 0.01) == 100
    assert percentile([], 0.5) is None


def _progress(batch: int, rows: int, ms: int) -> dict:
    return {"batchId": batch, "numInputRows": rows, "sink": {"numOutputRows": rows * 2},
            "durationMs": {"triggerExecution": ms, "addBatch": ms - 10}, "stateOperators": []}


def test_the_report_sets_the_runs_against_each_other(monkeypatch):
    monkeypatch.setattr("multijoin_bench.core.metrics.key",
                        lambda metric: getattr(metric, "field", metric))
    progress = [_progress(0, 1_000, 500), _progress(1, 1_000, 1_500)]
    fast = record(progress, True, 2.0, 1_000_000, sink_counts=True)
    slow = record(progress, False, 10.0, 3_000_000, sink_counts=False)
    assert (fast["changes_per_second"], fast["latency_ms_p50"], fast["output_rows"]) == \
        (1_000, 500, 4_000)
    runs = {"multi_join": fast, "multi_join_delta": fast, "recipe": slow,
            "final_tables": {"multi_join_vs_batch": [0, 0], "batch_rows": 7}}
    result = {"workload": "cdc_left10", "parameters": {"changes": 2_000}, "select": "SELECT 1",
              "cap_seconds": 600, "batch_sizes": {"1000": runs}}
    table = cdc_markdown([result]).splitlines()
    assert table[2] == "| cdc_left10 | 1,000 | 5.00x | yes, at 10 min | same / - | - | - | - |"
    # Against Flink: the noop run's changes/s, and the compacted state run's SST files.
    result["flink"] = {"multi_join_rocksdb": {"throughput_changes_per_second": 500,
                                              "state": {"state_bytes": 4_000_000}}}
    result["compacted_state"] = {"finished": True, "state_sst_bytes": 2_000_000}
    table = cdc_markdown([result]).splitlines()
    assert table[2] == ("| cdc_left10 | 1,000 | 5.00x | yes, at 10 min | same / - | 2.00x | "
                        "0.50x (2.0 / 4.0) | - |")
    # And against Flink's MultiJoin that drops duplicates as the changelog join does.
    result["flink"]["multi_join_rocksdb_dedup"] = {"state": {"state_bytes": 8_000_000}}
    assert cdc_markdown([result]).splitlines()[2].endswith("| 0.50x (2.0 / 4.0) | "
                                                           "0.25x (2.0 / 8.0) |")


def test_the_report_lists_both_engines_settings_and_what_flink_got(monkeypatch):
    monkeypatch.setattr("multijoin_bench.core.metrics.key",
                        lambda metric: getattr(metric, "field", metric))
    result = {"workload": "cdc_star", "parameters": {}, "select": "SELECT 1", "cap_seconds": 60,
              "batch_sizes": {}}
    assert "| cdc_star | not recorded | not recorded | not recorded |" in cdc_markdown([result])
    result["spark_settings"] = {"spark.driver.memory": "6g"}
    result["flink"] = {"settings": {"managed_memory_mb": 256, "cluster": {"a": "b"}},
                       "multi_join_rocksdb": {"taskmanager_got": {"managed": 268435456}},
                       "jvm_max_heap_bytes": 1073741824}
    assert ('| cdc_star | `{"spark.driver.memory": "6g"}` | `{"managed_memory_mb": 256}` | '
            '`{"managed": 268435456, "jvm_max_heap_bytes": 1073741824}` |') in \
        cdc_markdown([result])


def test_flinks_modes_run_again_replace_only_themselves():
    recorded = {"runs": 2, "multi_join_rocksdb": {"seconds": 9}, "scan_only": {"seconds": 1}}
    again = {"runs": 1, "multi_join_rocksdb_dedup": {"seconds": 12}}
    assert merged_peer(recorded, again) == {"runs": 1, "multi_join_rocksdb": {"seconds": 9},
                                            "scan_only": {"seconds": 1},
                                            "multi_join_rocksdb_dedup": {"seconds": 12}}
    assert merged_peer(recorded, {"not_available": "not finished in 2 caps"}) == recorded
    assert merged_peer({"not_available": "not finished in 2 caps"}, again) == again


def test_the_wide_recipe_runs_where_each_inputs_row_id_is_its_join_key():
    from multijoin_bench.cdc.recipe import wide_fits

    specs = {name: {"parameters": spec_parameters(workload := cdc_workload(name, 1_000, 100)),
                    "tables": [{"name": t.name, "primary_key": [t.row_id]}
                               for t in workload.tables]}
             for name in ("cdc_left10", "cdc_star", "cdc_skew")}
    assert {name: wide_fits(spec) for name, spec in specs.items()} == \
        {"cdc_left10": True, "cdc_star": False, "cdc_skew": False}


def test_skew_customers_follow_the_pinned_zipf_and_changes_keep_the_table_shares():
    """At the pinned sizes the hottest customer holds 10,000 or more of the first load's orders,
    as the distribution says; an order keeps its customer; later changes pick tables by the
    pinned shares."""
    from multijoin_bench.cdc.skew import TABLE_SHARES, customer_of, zipf_cumulative

    # The recipe runs where every table joins on one key, not on cdc_skew.
    assert [spec_parameters(cdc_workload(name, 1_000, 100))["one_join_key"]
            for name in ("cdc_left10", "cdc_star", "cdc_skew")] == [True, True, False]
    full = cdc_workload("cdc_skew", 1_000_000, 10_000).parameters
    assert (full["orders"], full["customers"]) == (50_000, 10_000)
    assert full["hottest_customer_first_load_orders"] >= 10_000
    cumulative = zipf_cumulative(10_000)
    assert abs(full["hottest_customer_first_load_orders"] / 50_000 - cumulative[0]) < 0.01
    drawn = Counter(customer_of(order, cumulative) for order in range(50_000))
    assert drawn[0] > drawn[1] > drawn[9] > 0
    events, counts = replay("cdc_skew", 40_000)
    later = Counter(table for table, _ in events[counts["first_load"]:])
    total = sum(later.values())
    assert all(abs(later[i] / total - share) < 0.02 for i, share in enumerate(TABLE_SHARES))
    customers = {}
    for table, event in events:
        if table == 0:
            image = event["after"] or event["before"]
            assert customers.setdefault(image["order_id"], image["customer_id"]) == \
                image["customer_id"]
