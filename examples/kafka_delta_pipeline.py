"""Example: Kafka topics in, one multi-join, a Delta table out, exactly once.

Starts a Kafka broker of its own (KRaft, on free loopback ports), produces a shop's orders,
payments, shipments and reviews into four topics while the query runs (out of order, with a hot
key, late rows, a topic empty for a while and a pause: kafka_delta/events.py), joins them with an
inner join and two time-bounded LEFT OUTER joins fused into one StreamingMultiJoin, and writes a
Delta table. Then it checks the table against the batch query over the topics' full contents
and prints what it checked (kafka_delta/checks.py).

Runs on Spark 4.1, the newest line where Spark's Kafka connector and Delta Lake both resolve;
`scripts/run-example kafka` sets up its venv and jars and runs it.

    python examples/kafka_delta_pipeline.py [--work DIR] [--max-offsets N]
    python examples/kafka_delta_pipeline.py --move [--work DIR]
    python examples/kafka_delta_pipeline.py --driver --bootstrap HOST:PORT --work DIR [--check]

The second form shows how a running query moves from Spark's chain of joins to the multi-join
(kafka_delta/move.py, docs/kafka-delta.md). The third is the streaming driver alone, on a
broker that runs elsewhere (the tests start and kill it): it runs until the file DIR/stop
appears, then processes what the topics hold and stops; with --check it then writes
DIR/check.json and prints the report.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from kafka_delta.broker import running_broker
from kafka_delta.checks import passed, report, summary
from kafka_delta.driver import Files, ProducerThread, example_run, run_until_stopped
from kafka_delta.events import TOPICS, EventProducer, Scenario
from kafka_delta.move import run_move
from kafka_delta.pipeline import compare, spark_session

# The example's maxOffsetsPerTrigger per topic: the events take many micro-batches.
EXAMPLE_MAX_OFFSETS = 40


def check_and_report(spark, bootstrap: str, files: Files, plan: str) -> bool:
    numbers = summary(spark, bootstrap, files)
    (files.work / "check.json").write_text(json.dumps(numbers, indent=1))
    print("\n".join(report(numbers, plan)))
    return passed(numbers)


def query_plan(files: Files) -> str:
    return files.plan.read_text() if files.plan.exists() else ""


def run_driver(args: argparse.Namespace) -> bool:
    """The driver alone; its checks are for its caller to judge (a killed run's progress is
    lost, and with it the count of the late rows it dropped), so it fails only on an error."""
    files = Files(args.work)
    spark = spark_session("kafka-delta-driver")
    run_until_stopped(spark, args.bootstrap, files, args.max_offsets)
    if args.check:
        check_and_report(spark, args.bootstrap, files, query_plan(files))
    spark.stop()
    return True


def run_example(args: argparse.Namespace) -> bool:
    with example_run(args.work, TOPICS, "kafka-delta-example") as (files, broker, spark):
        producer = ProducerThread(EventProducer(broker.bootstrap, Scenario(), files).run, files)
        producer.start()
        run_until_stopped(spark, broker.bootstrap, files, args.max_offsets or EXAMPLE_MAX_OFFSETS)
        producer.finish()
        ok = check_and_report(spark, broker.bootstrap, files, query_plan(files))
    return ok


def run_move_example(args: argparse.Namespace) -> bool:
    shutil.rmtree(args.work, ignore_errors=True)
    with running_broker(args.work / "broker", TOPICS) as broker:
        spark = spark_session("kafka-delta-move")
        print("\n".join(run_move(spark, broker.bootstrap, args.work, args.max_offsets)))
        comparison = compare(spark, broker.bootstrap, args.work / "table")
        print(f"after the move: rows expected {comparison.expected}, found {comparison.found}, "
              f"duplicated {comparison.duplicated}, missing {comparison.missing}, unexpected "
              f"{comparison.unexpected}")
        spark.stop()
    return comparison.same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/multijoin-kafka-delta"))
    parser.add_argument("--max-offsets", type=int, default=None,
                        help="maxOffsetsPerTrigger of each topic (default: none; the example "
                             "itself runs with 40)")
    parser.add_argument("--move", action="store_true",
                        help="run Spark's chain, then move the query to the multi-join")
    parser.add_argument("--driver", action="store_true")
    parser.add_argument("--bootstrap")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    run = run_driver if args.driver else run_move_example if args.move else run_example
    ok = run(args)
    if not ok:
        raise SystemExit("the check failed (see above)")


if __name__ == "__main__":
    main()
