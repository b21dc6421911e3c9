"""Flink as the peer of the CDC benchmark: the same join of the same Debezium change files, in
Flink SQL (its MultiJoin and its binary joins, each on the heap and in RocksDB).

    python -m multijoin_bench.flink.cdc_peer SPEC.json OUT.json [--modes M ...] [--runs N] [--check]
    (from the repository's root)

PyFlink starts its own JVM, so this imports neither Spark nor the rest of the benchmark; the SQL
text is built by pure functions, tested without Flink. SPEC.json is a CDC workload's spec (its
tables, each a folder of Debezium JSON files with columns and a primary key, one SELECT over the
tables, the number of changes). Every table is Flink's filesystem connector with
'format' = 'debezium-json' and the spec's `PRIMARY KEY (...) NOT ENFORCED`: the source reports
the format's changelog (inserts, both halves of each update, deletes), which the plan must show.
A blackhole sink needs no update's before-image, and the key tells Flink that an update keeps
its row's key, so the planner drops the before-images after the sources and joins upserts: right
as long as no update changes a primary key (Debezium writes a key change as a delete and a
create), which the run checks in the files. Each mode is a streaming `INSERT INTO` a blackhole
sink of the spec's SELECT:

- `multi_join`, `multi_join_rocksdb`: Flink's MultiJoin (`table.optimizer.multi-join.enabled`),
  on the heap (hashmap, Flink's default) and on the embedded RocksDB backend;
- `binary_joins`, `binary_joins_rocksdb`: the same with that key off, one join per JOIN;
- `multi_join_rocksdb_dedup`: the MultiJoin in RocksDB with `table.exec.source.cdc-events-duplicate`
  on, Flink's guard against a change delivered twice (after a connector's restart): a
  ChangelogNormalize after each source keeps each key's last row and drops what would not
  change it. The changelog join keeps that guard always (its row versions and tombstones), so
  this is the like-for-like mode for state;
- `scan_only`: every table's changes read into a blackhole, no join: what any job here costs.

Flink's file source hands a folder's files to its readers in no set order (its split assigner
keeps them in a hash set), so a key's update in a later file could be read before its insert.
Each table's files are therefore staged, untimed, as one file (their bytes in name order, as
Spark reads them): one reader reads it front to back, as from one Kafka partition, and keeps
each key's changes in order through the shuffle by key.

Settings: every job runs as Flink's users run it (tuning.py): managed memory and heap equal to
Spark's side's, checkpoints on, mini-batch where the plan has an operator that uses it, object
reuse; the output lists them with the memory the task manager reports it got.

Time: each mode runs `--runs` times, alternating with the others, timed from `execute_sql`
(planning, the local mini-cluster's start, submission) to the job's end, checkpointing as
tuning.py says, after one untimed scan that warms up the JVM; throughput is the spec's changes
over the best run's seconds. Flink runs no micro-batches: there is no per-batch time to report.

State bytes (cdc_state.py): a bounded job that ends drops its operators'
state, and its final checkpoint holds none. So each join mode runs once more with the sources
monitoring their folders (the job never ends) and checkpointing every second; once every
change has gone through (the REST API's record counts add up and stand still), the first
checkpoint triggered after that is read back: the join operators' checkpointed bytes, full
snapshots on both backends (not incremental). That is RocksDB's SST files, and the heap's
serialized state (the heap itself holds more, as Java objects). RocksDB's local directory is
measured at the same moment, for reference.

`--check` runs each join mode once more into Python, applies the changelog that comes out
and compares it with the batch join of the tables' final snapshots
(cdc_check.py); meant for small inputs. Its collecting sink needs the
before-images, so its plan keeps them: on files without key changes, the same rows. Latency (a
change's arrival to its row out) is left for later: latency.py paces generated rows, not
files.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from pathlib import Path

from multijoin_bench.flink import cdc_check as flink_cdc_check
from multijoin_bench.flink import cdc_state as flink_cdc_state
from multijoin_bench.flink.peer import (DEDUP, environment, flink_type, sink_ddl, timed_run,
                                        uses_rocksdb)
from multijoin_bench.flink.tuning import DEFAULT_LATENCY_BOUND_MS, Tuning, mini_batches

MODES = ("scan_only", "binary_joins", "multi_join", "binary_joins_rocksdb", "multi_join_rocksdb",
         "multi_join_rocksdb_dedup")
JOIN_MODES = MODES[1:]
# What a Debezium source emits: inserts, updates as their two halves, deletes.
SOURCE_CHANGELOG = "I,UB,UA,D"
SCAN_SINK = [("key", "STRING")]


def source_ddl(table: dict, folder: str, monitor_interval: str | None = None) -> str:
    """A table of the spec as a filesystem source of Debezium JSON in `folder`; with
    `monitor_interval`, a source that keeps watching the folder and never ends."""
    columns = [f"`{name}` {flink_type(kind)}" for name, kind in table["columns"]]
    key = ", ".join(f"`{name}`" for name in table["primary_key"])
    options = {"connector": "filesystem", "path": folder, "format": "debezium-json"}
    if monitor_interval:
        options["source.monitor-interval"] = monitor_interval
    settings = ", ".join(f"'{name}' = '{value}'" for name, value in options.items())
    return (f"CREATE TEMPORARY TABLE `{table['name']}` ({', '.join(columns)}, "
            f"PRIMARY KEY ({key}) NOT ENFORCED) WITH ({settings})")


def scan_select(tables: list[dict]) -> str:
    """Every table's first key column, unioned: reads every change, joins nothing."""
    return " UNION ALL ".join(f"SELECT CAST(`{table['primary_key'][0]}` AS STRING) "
                              f"FROM `{table['name']}`" for table in tables)


def statements(spec: dict, folders: dict[str, str], output: list[tuple[str, str]],
               monitor_interval: str | None = None) -> dict:
    """The DDL every job shares (sources over `folders`, the sinks, the join's sink with the
    SELECT's `output` columns) and each kind of job's INSERT."""
    ddl = [source_ddl(table, folders[table["name"]], monitor_interval) for table in spec["tables"]]
    ddl += [sink_ddl("join_sink", output), sink_ddl("scan_sink", SCAN_SINK)]
    return {"ddl": ddl, "join": f"INSERT INTO join_sink {spec['select']}",
            "scan": f"INSERT INTO scan_sink {scan_select(spec['tables'])}"}


def plan_operators(plan: str) -> list[list[str]]:
    """[operator, changelog mode] for each node of the optimized physical plan, top down."""
    section = plan.split("== Optimized Physical Plan ==", 1)[-1].split("\n== ", 1)[0]
    operators = []
    for line in section.splitlines():
        match = re.match(r"[\s:|+-]*(\w+)\(", line)
        if match:
            changelog = re.search(r"changelogMode=\[([^\]]*)\]", line)
            operators.append([match.group(1), changelog.group(1) if changelog else ""])
    return operators


def plan_problems(mode: str, operators: list[list[str]], key_changes: int = 0) -> list[str]:
    """Where a mode's plan is not what its name says, the sources' changelog not Debezium's, or
    the plan drops the before-images that `key_changes` updates (of a primary key) need."""
    names = [name for name, _ in operators]
    problems = []
    if mode.startswith("multi_join") and "MultiJoin" not in names:
        problems.append("no MultiJoin in the plan")
    if mode.startswith("binary_joins") and ("MultiJoin" in names or "Join" not in names):
        problems.append("not binary joins")
    sources = sorted({changelog for name, changelog in operators if name == "TableSourceScan"})
    if sources != [SOURCE_CHANGELOG]:
        problems.append(f"sources' changelog {sources}, not [{SOURCE_CHANGELOG}]")
    if "ChangelogNormalize" in names and not mode.endswith(DEDUP):
        problems.append("a ChangelogNormalize re-derives the changelog")
    if mode.endswith(DEDUP) and "ChangelogNormalize" not in names:
        problems.append("no ChangelogNormalize drops duplicates")
    if key_changes and "DropUpdateBefore" in names:
        problems.append(f"drops update-befores, but {key_changes} updates change a primary key")
    if mini_batches(mode) != ("MiniBatchAssigner" in names):
        problems.append("mini-batch is not as tuning.py sets it for the mode")
    return problems


def stage(tables: list[dict], scratch: Path) -> tuple[dict[str, str], int]:
    """Each table's JSON files, in name order, as one file under `scratch` (the module's
    docstring says why); the folders by table, and the number of change records."""
    folders, changes = {}, 0
    for table in tables:
        folder = scratch / table["name"]
        folder.mkdir(parents=True)
        with open(folder / "part-00000.json", "wb") as out:
            for path in sorted(Path(table["folder"]).glob("*.json")):
                data = path.read_bytes()
                if data and not data.endswith(b"\n"):
                    data += b"\n"
                out.write(data)
                changes += data.count(b"\n")
        folders[table["name"]] = str(folder)
    return folders, changes


def output_columns(spec: dict, folders: dict[str, str]) -> list[tuple[str, str]]:
    """The SELECT's columns and their types, as Flink resolves them, for the sink's DDL."""
    env = environment(True, {"parallelism.default": "1"})
    for table in spec["tables"]:
        env.execute_sql(source_ddl(table, folders[table["name"]]))
    columns = env.sql_query(spec["select"])._j_table.getResolvedSchema().getColumns()
    return [(column.getName(), column.getDataType().getLogicalType().copy(True)
             .asSerializableString()) for column in columns]


def summary(mode: str, runs: list[dict], changes: int, key_changes: int) -> dict:
    best = min(runs, key=lambda run: run["seconds"])
    got = next((run["taskmanager"] for run in runs if run.get("taskmanager")), None)
    operators = plan_operators(best["plan"])
    problems = plan_problems(mode, operators, key_changes) if mode != "scan_only" else []
    if any(run["rocksdb_used"] != uses_rocksdb(mode) for run in runs):
        problems.append("the state backend is not the mode's")
    return {"seconds": best["seconds"], "throughput_changes_per_second": round(
                changes / best["seconds"]),
            "net_runtime_seconds": min(run["net_runtime_seconds"] for run in runs),
            "runs_seconds": [run["seconds"] for run in runs], "per_batch_seconds": None,
            "rocksdb_used": all(run["rocksdb_used"] for run in runs),
            "plan_operators": operators, "plan_problems": problems, "taskmanager_got": got}


def timed_runs(sql: dict, modes: list[str], runs: int, parallelism: int,
               tuning: Tuning) -> dict[str, list]:
    """Each mode's timed runs with `tuning`, after one untimed scan that warms up the JVM."""
    from pyflink.table import ExplainDetail

    timed_run("scan_only", parallelism, sql["ddl"], sql["scan"], tuning=tuning)
    results: dict[str, list[dict]] = {mode: [] for mode in modes}
    for _ in range(runs):  # alternating, so that every mode sees the machine alike
        for mode in modes:
            insert = sql["scan"] if mode == "scan_only" else sql["join"]
            results[mode].append(timed_run(mode, parallelism, sql["ddl"], insert,
                                           (ExplainDetail.CHANGELOG_MODE,), tuning))
            print(f"flink {mode}: {results[mode][-1]['seconds']} s", flush=True)
    return results


def run_modes(spec: dict, folders: dict[str, str], modes: list[str], runs: int,
              parallelism: int, check: bool, tuning: Tuning) -> dict:
    output = output_columns(spec, folders)
    sql = statements(spec, folders, output)
    results = timed_runs(sql, modes, runs, parallelism, tuning)
    key_changes = sum(flink_cdc_check.key_changes(table) for table in spec["tables"])
    out = {mode: summary(mode, mode_runs, spec["changes"], key_changes)
           for mode, mode_runs in results.items()}
    watching = statements(spec, folders, output, flink_cdc_state.MONITOR_INTERVAL)
    for mode in (mode for mode in modes if mode != "scan_only"):
        out[mode]["state"] = flink_cdc_state.measure(
            mode, parallelism, watching["ddl"], watching["join"], spec["changes"], tuning)
        print(f"flink {mode}: state {out[mode]['state']['state_bytes']} bytes", flush=True)
        if check:
            out[mode]["check"] = flink_cdc_check.check(spec, mode, parallelism,
                                                       sql["ddl"][:len(spec["tables"])])
    return {"sql": {"ddl": sql["ddl"], "join": sql["join"], "scan": sql["scan"]},
            "key_changing_updates": key_changes, **out}


def jvm_max_heap() -> int:
    """The heap the JVM that ran the jobs (PyFlink's gateway, the mini-cluster's) got."""
    from pyflink.java_gateway import get_gateway

    return int(get_gateway().jvm.java.lang.Runtime.getRuntime().maxMemory())


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("spec", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--modes", nargs="+", default=list(MODES),
                        help=f"any of {', '.join(MODES)} (space or comma separated)")
    parser.add_argument("--runs", type=int, default=2, help="timed runs of each mode")
    parser.add_argument("--parallelism", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--check", action="store_true",
                        help="compare each join mode's result with the batch join (small inputs)")
    parser.add_argument("--managed-memory-mb", type=int, required=True,
                        help="the task manager's managed memory: Spark's bounded RocksDB memory")
    parser.add_argument("--heap", required=True,
                        help="the JVM's maximum heap, as Spark's driver memory (6g); the caller "
                             "starts this process with JVM_ARGS=-Xmx<heap> (launch.py)")
    parser.add_argument("--checkpoint-interval-ms", type=int, required=True)
    parser.add_argument("--latency-bound-ms", type=int, default=DEFAULT_LATENCY_BOUND_MS,
                        help="the latency the run is held to; mini-batches take a quarter")
    args = parser.parse_args(argv)
    args.modes = [mode for item in args.modes for mode in item.split(",") if mode]
    unknown = sorted(set(args.modes) - set(MODES))
    if unknown:
        parser.error(f"unknown modes {unknown}: choose from {', '.join(MODES)}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    tuning = Tuning(args.managed_memory_mb, args.heap, args.checkpoint_interval_ms,
                    args.latency_bound_ms)
    spec = json.loads(args.spec.read_text())
    with tempfile.TemporaryDirectory() as scratch:
        folders, records = stage(spec["tables"], Path(scratch))
        if records != spec["changes"]:
            raise SystemExit(f"{args.spec}: {records} change records in the files, "
                             f"{spec['changes']} in the spec")
        out = {"workload": spec["workload"], "changes": spec["changes"],
               "parallelism": args.parallelism, "runs": args.runs,
               "settings": tuning.describe(args.modes),
               "staged": "each table's files as one file, in name order",
               "latency": "not measured for Flink yet",
               **run_modes(spec, folders, args.modes, args.runs, args.parallelism, args.check,
                           tuning), "jvm_max_heap_bytes": jvm_max_heap()}
    args.out.write_text(json.dumps(out, indent=2))
    failed = {mode: out[mode]["plan_problems"] for mode in args.modes
              if out[mode]["plan_problems"] or not out[mode].get("check", {}).get("matches", True)}
    if failed:
        raise SystemExit(f"Flink's modes not as named, or results not the batch join's: {failed}")


if __name__ == "__main__":
    main()
