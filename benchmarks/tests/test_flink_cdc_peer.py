"""The CDC benchmark's Flink peer: its SQL text, plan checks, staging, the reference it is
checked against, and when it may say the changes have gone through, without Flink; and, where
PyFlink is installed, one tiny run of both joins and both backends checked against it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from multijoin_bench.flink import cdc_check as flink_cdc_check
from multijoin_bench.flink import cdc_peer as flink_cdc_peer
from multijoin_bench.flink import cdc_state as flink_cdc_state
from multijoin_bench.flink import launch as flink
from multijoin_bench.flink.tuning import Tuning

SELECT = ("SELECT t0.k, t0.v0, t1.v1, t2.v2 FROM t0 LEFT JOIN t1 ON t0.k = t1.k "
          "LEFT JOIN t2 ON t0.k = t2.k")
COLUMNS = {"t0": [["k", "BIGINT"], ["v0", "STRING"]], "t1": [["k", "BIGINT"], ["v1", "INT"]],
           "t2": [["k", "BIGINT"], ["v2", "DOUBLE"]]}


def change(op: str, before: dict | None, after: dict | None, lsn: int) -> str:
    return json.dumps({"before": before, "after": after, "op": op, "source": {"lsn": lsn},
                       "ts_ms": 1_700_000_000_000 + lsn})


def write_fixture(folder: Path) -> Path:
    """Three tables in the CDC workloads' layout: a first load, then a second file of updates,
    a row moved to another key (a delete and a create, as Debezium writes it), deletes and a
    late insert."""
    first = {"t0": [{"k": k, "v0": f"a{k}"} for k in (1, 2, 3, 4)],
             "t1": [{"k": k, "v1": 10 * k} for k in (1, 2, 3, 4)],
             "t2": [{"k": k, "v2": k / 2} for k in (1, 2, 3)]}
    second = {
        "t0": [change("u", {"k": 1, "v0": "a1"}, {"k": 1, "v0": "b1"}, 20),
               change("d", {"k": 4, "v0": "a4"}, None, 21)],
        "t1": [change("u", {"k": 2, "v1": 20}, {"k": 2, "v1": 22}, 22),
               change("d", {"k": 3, "v1": 30}, None, 23),
               change("c", None, {"k": 5, "v1": 30}, 24)],
        "t2": [change("d", {"k": 2, "v2": 1.0}, None, 25),
               change("c", None, {"k": 5, "v2": 2.5}, 26),
               change("u", {"k": 3, "v2": 1.5}, {"k": 3, "v2": 3.25}, 27)]}
    tables = []
    for name, rows in first.items():
        table = folder / name
        table.mkdir(parents=True)
        inserts = [change("c", None, row, lsn) for lsn, row in enumerate(rows)]
        (table / "part-00000.json").write_text("\n".join(inserts) + "\n")
        (table / "part-00001.json").write_text("\n".join(second[name]) + "\n")
        tables.append({"name": name, "folder": str(table.resolve()), "columns": COLUMNS[name],
                       "primary_key": ["k"]})
    changes = sum(len(rows) + len(second[name]) for name, rows in first.items())
    spec = folder / "spec.json"
    spec.write_text(json.dumps({"workload": "tiny", "tables": tables, "select": SELECT,
                                "changes": changes, "parameters": {}}))
    return spec


# Keys 1, 2, 3 are left in t0 after the changes: 1 updated, 2 lost its t2 row, 3 its t1 row
# (moved to key 5) and has its t2 row updated.
EXPECTED = Counter([(1, "b1", 10, 0.5), (2, "a2", 22, None), (3, "a3", None, 3.25)])


def test_the_reference_applies_each_tables_changes_in_order_and_joins_in_sqlite(tmp_path):
    spec = json.loads(write_fixture(tmp_path).read_text())
    assert sorted(flink_cdc_check.final_snapshot(spec["tables"][1])) == [
        (1, 10), (2, 22), (4, 40), (5, 30)]
    assert flink_cdc_check.reference_rows(spec) == EXPECTED


def test_updates_that_change_a_primary_key_are_counted(tmp_path):
    spec = json.loads(write_fixture(tmp_path).read_text())
    assert [flink_cdc_check.key_changes(table) for table in spec["tables"]] == [0, 0, 0]
    moved = Path(spec["tables"][1]["folder"]) / "part-00002.json"
    moved.write_text(change("u", {"k": 4, "v1": 40}, {"k": 6, "v1": 40}, 30) + "\n")
    assert flink_cdc_check.key_changes(spec["tables"][1]) == 1


def test_a_changelog_applied_is_compared_row_for_row():
    log = [(1, (1, "a")), (1, (2, "b")), (-1, (1, "a")), (1, (1, "c")), (-1, (3, "x"))]
    rows = flink_cdc_check.apply_changelog(log)
    assert rows == Counter({(2, "b"): 1, (1, "c"): 1, (3, "x"): -1})
    out = flink_cdc_check.compare(rows, Counter([(2, "b"), (1, "c")]))
    assert out == {"rows": 2, "matches": False, "missing": [], "extra": [],
                   "retracted_unseen": [[3, "x"]]}
    assert flink_cdc_check.compare(Counter([(2, "b")]), Counter([(2, "b")]))["matches"]


def test_sources_read_debezium_json_with_the_specs_primary_key():
    table = {"name": "items", "columns": [["order_id", "BIGINT"], ["item", "INT"],
                                          ["price", "DOUBLE"]],
             "primary_key": ["order_id", "item"]}
    assert flink_cdc_peer.source_ddl(table, "/s/items") == (
        "CREATE TEMPORARY TABLE `items` (`order_id` BIGINT, `item` INT, `price` DOUBLE, "
        "PRIMARY KEY (`order_id`, `item`) NOT ENFORCED) WITH ('connector' = 'filesystem', "
        "'path' = '/s/items', 'format' = 'debezium-json')")
    assert flink_cdc_peer.source_ddl(table, "/s/items", "1 s").endswith(
        "'format' = 'debezium-json', 'source.monitor-interval' = '1 s')")


def test_statements_insert_the_specs_select_and_scan_every_table(tmp_path):
    spec = json.loads(write_fixture(tmp_path).read_text())
    folders = {name: f"/s/{name}" for name in COLUMNS}
    sql = flink_cdc_peer.statements(spec, folders, [("k", "BIGINT"), ("v0", "STRING")])
    assert [statement.split(" (")[0] for statement in sql["ddl"]] == [
        "CREATE TEMPORARY TABLE `t0`", "CREATE TEMPORARY TABLE `t1`",
        "CREATE TEMPORARY TABLE `t2`", "CREATE TEMPORARY TABLE join_sink",
        "CREATE TEMPORARY TABLE scan_sink"]
    assert sql["ddl"][3] == ("CREATE TEMPORARY TABLE join_sink (`k` BIGINT, `v0` STRING) "
                             "WITH ('connector' = 'blackhole')")
    assert sql["join"] == f"INSERT INTO join_sink {SELECT}"
    assert sql["scan"] == ("INSERT INTO scan_sink SELECT CAST(`k` AS STRING) FROM `t0` UNION ALL "
                           "SELECT CAST(`k` AS STRING) FROM `t1` UNION ALL "
                           "SELECT CAST(`k` AS STRING) FROM `t2`")


def test_staging_keeps_each_tables_changes_in_file_name_order(tmp_path):
    spec = json.loads(write_fixture(tmp_path / "in").read_text())
    folders, changes = flink_cdc_peer.stage(spec["tables"], tmp_path / "staged")
    assert changes == spec["changes"]
    staged = (Path(folders["t1"]) / "part-00000.json").read_text().splitlines()
    assert [json.loads(line)["op"] for line in staged] == ["c", "c", "c", "c", "u", "d", "c"]


PLAN = """== Abstract Syntax Tree ==
LogicalSink(table=[default_catalog.default_database.join_sink], fields=[k, v0, v1])

== Optimized Physical Plan ==
Sink(table=[default_catalog.default_database.join_sink], fields=[k, v0, v1], changelogMode=[NONE])
+- MultiJoin(commonJoinKey=[k], joinTypes=[INNER, LEFT], changelogMode=[I,UB,UA,D])
   :- Exchange(distribution=[hash[k]], changelogMode=[I,UB,UA,D])
   :  +- TableSourceScan(table=[[default_catalog, default_database, t0]], fields=[k, v0], changelogMode=[I,UB,UA,D])
   +- Exchange(distribution=[hash[k]], changelogMode=[I,UB,UA,D])
      +- TableSourceScan(table=[[default_catalog, default_database, t1]], fields=[k, v1], changelogMode=[I,UB,UA,D])

== Optimized Execution Plan ==
Sink(table=[default_catalog.default_database.join_sink], fields=[k, v0, v1])
"""


def test_the_plan_names_its_operators_and_each_modes_join():
    operators = flink_cdc_peer.plan_operators(PLAN)
    assert operators == [["Sink", "NONE"], ["MultiJoin", "I,UB,UA,D"],
                         ["Exchange", "I,UB,UA,D"], ["TableSourceScan", "I,UB,UA,D"],
                         ["Exchange", "I,UB,UA,D"], ["TableSourceScan", "I,UB,UA,D"]]
    assert flink_cdc_peer.plan_problems("multi_join_rocksdb", operators) == []
    assert flink_cdc_peer.plan_problems("binary_joins", operators) == [
        "not binary joins", "mini-batch is not as tuning.py sets it for the mode"]
    binary = [["Join", "I,UA,D"], ["DropUpdateBefore", "I,UA,D"],
              ["MiniBatchAssigner", "I,UB,UA,D"], ["TableSourceScan", "I,UB,UA,D"]]
    assert flink_cdc_peer.plan_problems("binary_joins_rocksdb", binary) == []
    upserts = [["Join", "I,UA,D"], ["ChangelogNormalize", "I,UB,UA,D"],
               ["TableSourceScan", "I,UA,D"]]
    assert flink_cdc_peer.plan_problems("multi_join", upserts) == [
        "no MultiJoin in the plan", "sources' changelog ['I,UA,D'], not [I,UB,UA,D]",
        "a ChangelogNormalize re-derives the changelog"]
    # Dropping duplicates is what a ChangelogNormalize after each source is for.
    deduplicated = [["MultiJoin", "I,UB,UA,D"], ["ChangelogNormalize", "I,UB,UA,D"],
                    ["MiniBatchAssigner", "I,UB,UA,D"],
                    ["TableSourceScan", "I,UB,UA,D"]]
    assert flink_cdc_peer.plan_problems("multi_join_rocksdb_dedup", deduplicated) == []
    assert flink_cdc_peer.plan_problems("multi_join_rocksdb_dedup", operators) == [
        "no ChangelogNormalize drops duplicates",
        "mini-batch is not as tuning.py sets it for the mode"]
    upsert_join = [["MultiJoin", "I,UA,D"], ["DropUpdateBefore", "I,UA,D"],
                   ["TableSourceScan", "I,UB,UA,D"]]
    assert flink_cdc_peer.plan_problems("multi_join", upsert_join) == []
    assert flink_cdc_peer.plan_problems("multi_join", upsert_join, key_changes=2) == [
        "drops update-befores, but 2 updates change a primary key"]


def test_modes_may_be_given_comma_separated_and_unknown_ones_fail():
    tuning = ["--managed-memory-mb", "256", "--heap", "6g", "--checkpoint-interval-ms", "1000"]
    args = flink_cdc_peer.parse_args(["s.json", "o.json", "--modes", "multi_join,scan_only",
                                      "binary_joins_rocksdb", *tuning])
    assert args.modes == ["multi_join", "scan_only", "binary_joins_rocksdb"]
    with pytest.raises(SystemExit):
        flink_cdc_peer.parse_args(["s.json", "o.json", "--modes", "multijoin", *tuning])


def test_the_benchmark_runs_the_peer_as_a_module_in_a_process_of_its_own():
    tuning = Tuning(256, "6g", 1500, 2000)
    assert flink.cdc_peer_command(Path("/w/spec.json"), Path("/o.json"), tuning, 1,
                                  ["multi_join", "scan_only"], check=True) == [
        sys.executable, "-m", "multijoin_bench.flink.cdc_peer", "/w/spec.json", "/o.json",
        "--runs", "1", "--managed-memory-mb", "256", "--heap", "6g",
        "--checkpoint-interval-ms", "1500", "--latency-bound-ms", "2000",
        "--modes", "multi_join,scan_only", "--check"]
    command = flink.cdc_peer_command(Path("s"), Path("o"), tuning)
    assert command[command.index("--runs") + 1] == "2"
    # What the command says is what the peer reads.
    args = flink_cdc_peer.parse_args(command[3:])
    assert (args.managed_memory_mb, args.heap, args.checkpoint_interval_ms,
            args.latency_bound_ms) == (256, "6g", 1500, 2000)


def test_the_changes_have_gone_through_once_every_vertex_read_what_its_inputs_wrote():
    inputs = {"src0": [], "src1": [], "join": ["src0", "src1"]}
    counts = {"src0": (0, 6), "src1": (0, 5), "join": (11, 20)}
    assert flink_cdc_state.settled(inputs, counts, changes=11)
    assert not flink_cdc_state.settled(inputs, counts, changes=12)
    assert not flink_cdc_state.settled(inputs, dict(counts, join=(10, 20)), changes=11)
    tasks = {"src0": {"state_size": 7}, "join": {"state_size": 900}}
    assert flink_cdc_state.operator_bytes(inputs, {"join": "MultiJoin -> Sink"}, tasks) == {
        "MultiJoin -> Sink": 900}


def test_one_tiny_run_of_each_join_and_backend_matches_the_batch_join(tmp_path):
    pytest.importorskip("pyflink")
    spec, out = write_fixture(tmp_path), tmp_path / "out.json"
    modes = "scan_only,binary_joins,multi_join_rocksdb"
    subprocess.run([sys.executable, "-m", "multijoin_bench.flink.cdc_peer", str(spec), str(out),
                    "--modes", modes, "--runs", "1", "--check", "--managed-memory-mb", "64",
                    "--heap", "1g", "--checkpoint-interval-ms", "1000"], check=True,
                   cwd=flink.PACKAGE_PARENT, stdin=subprocess.DEVNULL, timeout=900)
    result = json.loads(out.read_text())
    for mode in ("binary_joins", "multi_join_rocksdb"):
        assert result[mode]["check"] == {"rows": 3, "matches": True, "missing": [],
                                         "extra": [], "retracted_unseen": []}, mode
        assert result[mode]["plan_problems"] == [], mode
        assert result[mode]["state"]["state_bytes"] > 0, mode
        assert result[mode]["rocksdb_used"] == mode.endswith("_rocksdb"), mode
        assert result[mode]["state"]["rocksdb_used"] == mode.endswith("_rocksdb"), mode
    assert result["scan_only"]["throughput_changes_per_second"] > 0
