"""Flink as a peer in the benchmark: the same join over the same JSON files, in Flink SQL.

    python -m multijoin_bench.flink.peer SPEC.json OUT.json

Run by launch.py in a subprocess of its own (PyFlink starts its own JVM, which never
shares one with Spark's); it imports neither Spark nor the rest of the benchmark. SPEC.json
names the inputs (folders of JSON files, one per micro-batch, with Spark schema strings), the
parallelism and the number of timed runs; OUT.json receives, per mode, the seconds of each run
and the best:

- `multi_join`: Flink's MultiJoin operator (FLIP-516), `table.optimizer.multi-join.enabled`;
- `multi_join_rocksdb`: the same with the embedded RocksDB state backend
  (`state.backend.type: rocksdb`), as the multi-join keeps its state in RocksDB;
- `binary_joins`: the same query with that key off (Flink's default), a chain of binary joins;
- `scan_only`: every input read into a blackhole sink, no join: what any Flink job here costs
  (starting the local mini-cluster, planning, reading the files).

Each is an `INSERT INTO` a blackhole sink in streaming mode over the filesystem JSON source (a
bounded source, so the job ends), no checkpointing, Flink's default state backend (hashmap, on
the heap) but in `multi_join_rocksdb`. A run is timed from `execute_sql` (planning and job
submission) to the job's end; the job's own net runtime is recorded too. Every run points
RocksDB's local directory at a fresh scratch folder, which only RocksDB creates: whether it
exists after the job tells which state backend ran. The output rows, which a blackhole sink
cannot count, are counted once, untimed, by a batch-mode `COUNT(*)` of the same join.

By default every join is an inner join on one key `k` (the keyed workloads). SPEC.json's
`joins` gives each later input's join kind and ON clause instead: the time-bounded workloads'
joins (outer_star's LEFT, time_bounded's inner) carry their interval condition as a plain
predicate, as Flink's MultiJoin runs no interval joins. Flink then keeps every row, where
Spark's joins evict by the watermark; on their data, whose rows come in event-time order with
none late, the answer is the same. Event time as Spark sees it (a watermark that advances per
micro-batch file) has no equivalent in one bounded Flink job reading all files at once, whose
splits are read in no set order: with watermarks, rows would come late and be dropped.
The SQL text is built by pure functions, tested without Flink.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from multijoin_bench.flink.tuning import Tuning

MULTI_JOIN_KEY = "table.optimizer.multi-join.enabled"
STATE_BACKEND_KEY = "state.backend.type"
ROCKSDB_DIR_KEY = "state.backend.rocksdb.localdir"
# The CDC peer's mode of this suffix drops changes delivered twice (cdc_peer.py).
CDC_DUPLICATES_KEY = "table.exec.source.cdc-events-duplicate"
DEDUP = "_dedup"
# In the order they run, alternating.
MODES = ("scan_only", "binary_joins", "multi_join", "multi_join_rocksdb")

_FLINK_TYPES = {"int": "INT", "bigint": "BIGINT", "long": "BIGINT", "string": "STRING",
                "double": "DOUBLE", "timestamp": "TIMESTAMP(3)"}


def flink_type(kind: str) -> str:
    """A Spark type name as Flink's; Flink's own names (BIGINT, STRING) map to themselves."""
    return _FLINK_TYPES[kind.lower()]


def flink_columns(spark_schema: str) -> list[tuple[str, str]]:
    """A Spark DDL schema string ("k int, v0 int") as (name, Flink type) pairs."""
    columns = []
    for column in spark_schema.split(","):
        name, kind = column.split()
        columns.append((name, flink_type(kind)))
    return columns


def source_ddl(index: int, spark_schema: str, folder: str) -> str:
    columns = ", ".join(f"`{name}` {kind}" for name, kind in flink_columns(spark_schema))
    # The files carry timestamps as Python's isoformat writes them: 2026-01-01T00:00:30.5
    return (f"CREATE TEMPORARY TABLE input{index} ({columns}) WITH ('connector' = 'filesystem', "
            f"'path' = '{folder}', 'format' = 'json', "
            "'json.timestamp-format.standard' = 'ISO-8601')")


def sink_ddl(name: str, columns: list[tuple[str, str]]) -> str:
    body = ", ".join(f"`{column}` {kind}" for column, kind in columns)
    return f"CREATE TEMPORARY TABLE {name} ({body}) WITH ('connector' = 'blackhole')"


def join_columns(schemas: list[str],
                 joins: list[list[str]] | None = None) -> list[tuple[str, str]]:
    """The join's output. Without `joins` (inner joins on k): k once, then every input's other
    columns (Spark's USING (k)); with them, every column of every input."""
    if joins:
        return [column for schema in schemas for column in flink_columns(schema)]
    columns = [("k", dict(flink_columns(schemas[0]))["k"])]
    for schema in schemas:
        columns += [(name, kind) for name, kind in flink_columns(schema) if name != "k"]
    return columns


def join_select(schemas: list[str], joins: list[list[str]] | None = None) -> str:
    """input0 t0 JOIN input1 t1 ON ... JOIN ...: by default every join inner, on input 0's k, as
    the multi-join needs; `joins` gives each later input's join kind and ON clause instead (as
    [kind, condition] over t0, t1, ...)."""
    if not joins:
        joins = [["INNER", f"t0.`k` = t{i}.`k`"] for i in range(1, len(schemas))]
        fields = ["t0.`k`"] + [f"t{i}.`{name}`" for i, schema in enumerate(schemas)
                               for name, _ in flink_columns(schema) if name != "k"]
    else:
        fields = [f"t{i}.`{name}`" for i, schema in enumerate(schemas)
                  for name, _ in flink_columns(schema)]
    joined = "".join(f" {kind} JOIN input{i} t{i} ON {condition}"
                     for i, (kind, condition) in enumerate(joins, start=1))
    return f"SELECT {', '.join(fields)} FROM input0 t0{joined}"


def scan_select(schemas: list[str]) -> str:
    """Every input's first column (its key), unioned: reads every row, joins nothing."""
    return " UNION ALL ".join(f"SELECT `{flink_columns(schema)[0][0]}` FROM input{i}"
                              for i, schema in enumerate(schemas))


def statements(spec: dict) -> dict[str, list[str]]:
    """DDL shared by every job, and each mode's INSERT."""
    schemas, joins = spec["schemas"], spec.get("joins")
    ddl = [source_ddl(i, schema, folder)
           for i, (schema, folder) in enumerate(zip(schemas, spec["folders"]))]
    ddl.append(sink_ddl("join_sink", join_columns(schemas, joins)))
    ddl.append(sink_ddl("scan_sink", [flink_columns(schemas[0])[0]]))
    return {
        "ddl": ddl,
        "join": f"INSERT INTO join_sink {join_select(schemas, joins)}",
        "scan": f"INSERT INTO scan_sink {scan_select(schemas)}",
        "count": f"SELECT COUNT(*) FROM ({join_select(schemas, joins)})",
    }


def job_config(mode: str, parallelism: int, rocksdb_dir: str) -> dict[str, str]:
    """A mode's Flink configuration. RocksDB's local directory is set in every mode (the hashmap
    backend ignores it), so that every run can tell which backend ran."""
    config = {"parallelism.default": str(parallelism),
              MULTI_JOIN_KEY: "true" if mode.startswith("multi_join") else "false",
              ROCKSDB_DIR_KEY: rocksdb_dir, "pipeline.name": "flink-peer"}
    if uses_rocksdb(mode):
        config[STATE_BACKEND_KEY] = "rocksdb"
    if mode.endswith(DEDUP):
        config[CDC_DUPLICATES_KEY] = "true"
    return config


def uses_rocksdb(mode: str) -> bool:
    return "_rocksdb" in mode


def environment(streaming: bool, config: dict[str, str], cluster: dict[str, str] | None = None):
    """A table environment with `config`; `cluster` goes to the local mini-cluster as well,
    which reads its own options (its REST port, say) only from the environment's settings."""
    from pyflink.common import Configuration
    from pyflink.table import EnvironmentSettings, TableEnvironment

    builder = EnvironmentSettings.new_instance()
    builder = builder.in_streaming_mode() if streaming else builder.in_batch_mode()
    if cluster:
        options = Configuration()
        for key, value in {**config, **cluster}.items():
            options.set_string(key, value)
        builder = builder.with_configuration(options)
    env = TableEnvironment.create(builder.build())
    for key, value in config.items():
        env.get_config().set(key, value)
    return env


def timed_run(mode: str, parallelism: int, ddl: list[str], insert: str,
              explain: tuple = (), tuning: Tuning | None = None) -> dict:
    """`insert` as one streaming job of `mode` after `ddl`, timed from submission to its end;
    its plan (with the ExplainDetails `explain`), and whether RocksDB ran. With `tuning`, the
    job runs with those settings (tuning.py), and the memory its task manager got is read."""
    from multijoin_bench.flink import rest

    with tempfile.TemporaryDirectory() as scratch:
        rocksdb_dir = Path(scratch) / "rocksdb"
        config, cluster, port = job_config(mode, parallelism, str(rocksdb_dir)), None, 0
        if tuning:
            port = rest.free_port()
            config.update(tuning.job_config(mode, Path(scratch) / "checkpoints"))
            cluster = {**rest.cluster_config(port), **tuning.cluster_config()}
        env = environment(True, config, cluster)
        for statement in ddl:
            env.execute_sql(statement)
        plan = env.explain_sql(insert, *explain)
        started = time.perf_counter()
        result = env.execute_sql(insert)
        got = rest.taskmanager_memory(port) if tuning else None
        result.wait()
        wall = time.perf_counter() - started
        net = result.get_job_client().get_job_execution_result().result().get_net_runtime()
        return {"seconds": round(wall, 2), "net_runtime_seconds": round(net / 1000, 2),
                "plan": plan, "rocksdb_used": rocksdb_dir.exists(), "taskmanager": got}


def _run(spec: dict, sql: dict, mode: str) -> dict:
    insert = sql["scan"] if mode == "scan_only" else sql["join"]
    run = timed_run(mode, spec["parallelism"], sql["ddl"], insert)
    return {"seconds": run["seconds"], "net_runtime_seconds": run["net_runtime_seconds"],
            "multi_join_in_plan": "MultiJoin" in run["plan"], "rocksdb_used": run["rocksdb_used"]}


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    sql = statements(spec)

    # The output rows, once and untimed (a blackhole sink counts nothing); it also warms up
    # the JVM and the planner before any timed run.
    # Batch mode keeps no state: RocksDB's directory stays Flink's default, the temp folder.
    config = job_config("binary_joins", spec["parallelism"], tempfile.gettempdir())
    counter = environment(False, config)
    for statement in sql["ddl"]:
        counter.execute_sql(statement)
    with counter.execute_sql(sql["count"]).collect() as rows:
        output_rows = int(next(iter(rows))[0])

    runs: dict[str, list[dict]] = {mode: [] for mode in spec.get("modes") or MODES}
    for _ in range(spec["times"]):  # alternating, so that every mode sees the machine alike
        for mode in runs:
            runs[mode].append(_run(spec, sql, mode))
    out = {"output_rows": output_rows, "parallelism": spec["parallelism"],
           "state_backend": "Flink's default (hashmap, on the heap); embedded RocksDB in "
                            "multi_join_rocksdb", "checkpointing": False,
           "sql": {"join": sql["join"], "scan": sql["scan"]}}
    for mode, mode_runs in runs.items():
        best = min(mode_runs, key=lambda run: run["seconds"])
        out[mode] = {"seconds": best["seconds"],
                     "net_runtime_seconds": min(r["net_runtime_seconds"] for r in mode_runs),
                     "runs_seconds": [r["seconds"] for r in mode_runs],
                     "multi_join_in_plan": all(r["multi_join_in_plan"] for r in mode_runs),
                     "rocksdb_used": all(r["rocksdb_used"] for r in mode_runs)}
    Path(sys.argv[2]).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
