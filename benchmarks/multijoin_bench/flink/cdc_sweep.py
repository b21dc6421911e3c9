"""Flink as the peer of the CDC sweep (cdc/sweep.py): the spec's SELECT over Kafka topics of
Debezium changes, running until its process is told to stop, its output into MarkerSink.java,
which notes when each latency marker reaches it.

    python -m multijoin_bench.flink.cdc_sweep SPEC.json --bootstrap HOST:PORT --mode MODE
        --connector-jar JAR --arrivals DIR --ready FILE --managed-memory-mb N --heap 6g
        --checkpoint-interval-ms N --latency-bound-ms N

SPEC.json is the sweep's spec (sweep.py): the tables (columns, primary key, topic), the SELECT,
the output column of the join key and where markers start. Each table is Flink's Kafka
connector with 'format' = 'debezium-json' and its primary key, read from the earliest offset;
the job is the SELECT turned into a changelog stream into the JVM sink, every change kind kept
(as Spark's side emits them). Settings as the CDC peer's (tuning.py), its parallelism too. The
plan must be the mode's (cdc_peer.plan_problems); the process writes it, with the settings and
the memory the task manager got, to FILE once the job runs, then waits to be stopped (SIGTERM);
then it writes the state of its latest checkpoint (rest.latest_checkpoint) to `stopped.json`
beside FILE.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

from multijoin_bench.flink import rest
from multijoin_bench.flink.cdc_peer import plan_operators, plan_problems
from multijoin_bench.flink.peer import flink_type, job_config
from multijoin_bench.flink.tuning import Tuning

GROUP_ID = "multijoin-sweep"
STOPPED = "stopped.json"  # beside the ready file: the job's state when it was stopped


def kafka_source_ddl(table: dict, bootstrap: str) -> str:
    columns = [f"`{name}` {flink_type(kind)}" for name, kind in table["columns"]]
    key = ", ".join(f"`{name}`" for name in table["primary_key"])
    options = {"connector": "kafka", "topic": table["topic"],
               "properties.bootstrap.servers": bootstrap, "properties.group.id": GROUP_ID,
               "scan.startup.mode": "earliest-offset", "format": "debezium-json"}
    settings = ", ".join(f"'{name}' = '{value}'" for name, value in options.items())
    return (f"CREATE TEMPORARY TABLE `{table['name']}` ({', '.join(columns)}, "
            f"PRIMARY KEY ({key}) NOT ENFORCED) WITH ({settings})")


def marker_sink_jar(scratch: Path) -> Path:
    """MarkerSink.java compiled against PyFlink's jars, as a jar (pipeline.jars takes jars)."""
    import pyflink

    lib = Path(pyflink.__file__).parent / "lib"
    classes = scratch / "classes"
    subprocess.run(["javac", "-cp", f"{lib}/*", "-d", str(classes),
                    str(Path(__file__).parent / "MarkerSink.java")], check=True)
    jar = scratch / "marker-sink.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    return jar


def start(spec: dict, args: argparse.Namespace, tuning: Tuning, scratch: Path) -> dict:
    """Submits the job; its plan, its problems and the task manager's memory."""
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors import Sink
    from pyflink.java_gateway import get_gateway
    from pyflink.table import ExplainDetail, StreamTableEnvironment

    port = rest.free_port()
    config = {**job_config(args.mode, args.parallelism, str(scratch / "rocksdb")),
              **tuning.job_config(args.mode, scratch / "checkpoints"),
              **rest.cluster_config(port), **tuning.cluster_config(),
              "pipeline.jars": ";".join(jar.resolve().as_uri() for jar in
                                        (args.connector_jar, marker_sink_jar(scratch)))}
    options = Configuration()
    for key, value in config.items():
        options.set_string(key, value)
    stream_env = StreamExecutionEnvironment.get_execution_environment(options)
    env = StreamTableEnvironment.create(stream_env)
    for key, value in config.items():
        env.get_config().set(key, value)
    for table in spec["tables"]:
        env.execute_sql(kafka_source_ddl(table, args.bootstrap))
    table = env.sql_query(spec["select"])
    plan = table.explain(ExplainDetail.CHANGELOG_MODE)
    field = table.get_schema().get_field_names().index(spec["output_key"])
    sink = get_gateway().jvm.multijoinbench.MarkerSink(str(args.arrivals), field,
                                                      spec["marker_base"])
    env.to_changelog_stream(table).sink_to(Sink(sink))
    stream_env.execute_async("cdc-sweep")
    operators = plan_operators(plan)
    return {"mode": args.mode, "parallelism": args.parallelism,
            "settings": tuning.describe([args.mode]),
            "plan_operators": operators, "plan_problems": plan_problems(args.mode, operators),
            "taskmanager_got": rest.taskmanager_memory(port), "rest_port": port}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("spec", type=Path)
    for name in ("--bootstrap", "--mode", "--heap"):
        parser.add_argument(name, required=True)
    for name in ("--connector-jar", "--arrivals", "--ready"):
        parser.add_argument(name, type=Path, required=True)
    for name in ("--managed-memory-mb", "--checkpoint-interval-ms", "--latency-bound-ms"):
        parser.add_argument(name, type=int, required=True)
    # As the CDC peer's: a slot a core, as Spark's side runs a task a core.
    parser.add_argument("--parallelism", type=int, default=os.cpu_count() or 1)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    tuning = Tuning(args.managed_memory_mb, args.heap, args.checkpoint_interval_ms,
                    args.latency_bound_ms)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    with tempfile.TemporaryDirectory() as scratch:
        ready = start(json.loads(args.spec.read_text()), args, tuning, Path(scratch))
        args.ready.write_text(json.dumps(ready, indent=2))
        stopped.wait()
        state = {"state": rest.latest_checkpoint(ready["rest_port"])}
        args.ready.with_name(STOPPED).write_text(json.dumps(state, indent=2))


if __name__ == "__main__":
    main()
