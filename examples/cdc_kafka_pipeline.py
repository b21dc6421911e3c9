"""Example: a shop's tables captured by Debezium into Kafka, multi-joined, a Delta table out.

Starts a Kafka broker of its own (KRaft, on free loopback ports: kafka_delta/broker.py) and,
while the query runs, produces Debezium's change events of five tables, customers, orders, order
items, payments and shipments, into a topic each: inserts, updates (orders moved to another
customer, items to another order), deletes with their tombstones, rows inserted again
(cdc_delta/topics.py). The query declares each topic a changelog with `changelog.debezium`,
joins orders JOIN items LEFT JOIN payments LEFT JOIN shipments on the order (one changelog
join), LEFT JOIN customers on the order's customer (a second, stacked on the first), and MERGEs
the join's changes into a Delta table with `changelog.delta_merge`, exactly once
(cdc_delta/kafka_job.py). Then it prints what it checked: the table against the batch join of
the topics' final snapshots (rows expected, found, missing, extra), the changes in and out, the
micro-batches.

Runs on Spark 4.1, the newest line where Spark's Kafka connector and Delta Lake both resolve;
`scripts/run-example cdc` sets up its venv and jars and runs it.

    python examples/cdc_kafka_pipeline.py [--work DIR] [--rounds N] [--max-offsets N] [--seed S]
    python examples/cdc_kafka_pipeline.py --driver --bootstrap HOST:PORT --work DIR
                                          [--max-offsets N] [--check]

The second form is the streaming driver alone, on a broker and a producer that run elsewhere
(the kill test, tests/pipeline/test_cdc_delta.py, starts and kills it): it runs until the file
DIR/stop appears, then reads every message there is and stops; with --check it then writes
DIR/check.json and prints the report.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from cdc_delta.kafka_job import compare, start, topic_sizes
from cdc_delta.topics import TOPICS, DebeziumProducer, Shop
from kafka_delta.broker import producer_client
from kafka_delta.checks import commits, delta_log
from kafka_delta.driver import Files, ProducerThread, example_run, run_kafka_query
from kafka_delta.pipeline import read_progress, spark_session

EXAMPLE_ROUNDS = 24
EXAMPLE_PAUSE = 1.5  # seconds between two rounds: the changes come over many micro-batches
# Each topic is read in steps of this many messages: the changes take many micro-batches.
EXAMPLE_MAX_OFFSETS = 20
CHANGELOG_JOIN = "ChangelogJoin input0"  # a changelog join in a physical plan
MERGE_METRICS = ("numSourceRows", "numTargetRowsInserted", "numTargetRowsUpdated",
                 "numTargetRowsDeleted")


def merged(table: Path) -> dict[str, int]:
    """The table's MERGE commits, and their metrics summed: the change rows merged and what they
    did to the table."""
    totals: Counter[str] = Counter({name: 0 for name in ("commits", *MERGE_METRICS)})
    for actions in commits(table):
        for info in (action["commitInfo"] for action in actions if "commitInfo" in action):
            if info.get("operation") == "MERGE":
                totals["commits"] += 1
                totals.update({name: int(info.get("operationMetrics", {}).get(name, 0))
                               for name in MERGE_METRICS})
    return dict(totals)


def summary(spark, bootstrap: str, files: Files) -> dict:
    """What the report prints, as numbers; a batch's progress counts once however many runs
    reported it."""
    comparison = compare(spark, bootstrap, files.table)
    progress = {p["batchId"]: p for p in read_progress(files.progress)}
    log = delta_log(files.table)
    plan = files.plan.read_text() if files.plan.exists() else ""
    return {
        **asdict(comparison), "same": comparison.same,
        "changes_in": sum(p["numInputRows"] for p in progress.values()),
        "messages": sum(topic_sizes(spark, bootstrap).values()),
        "batches": len(progress),
        "batches_with_changes": sum(p["numInputRows"] > 0 for p in progress.values()),
        "runs": files.run_count(), "merged": merged(files.table),
        "transactions": log["transactions"],
        "distinct_transactions": log["distinct_transactions"],
        "changelog_joins": plan.count(CHANGELOG_JOIN),
    }


def report(numbers: dict) -> list[str]:
    merge = numbers["merged"]
    return [
        f"plan: {numbers['changelog_joins']} ChangelogJoin (orders, items, payments and "
        "shipments on the order; customers on the customer, stacked)",
        "answer: " + ("the Delta table is the batch join of the topics' final snapshots: "
                      if numbers["same"] else "the Delta table DIFFERS from the batch join: ")
        + f"rows expected {numbers['expected']}, found {numbers['found']}, missing "
          f"{numbers['missing']}, extra {numbers['extra']}, identities twice "
          f"{numbers['duplicate_ids']} (null-padded: {numbers['padded']})",
        f"changes in: {numbers['changes_in']} Debezium messages read (the topics hold "
        f"{numbers['messages']}, tombstones included)",
        f"changes out: {merge['numSourceRows']} change rows merged into the table "
        f"({merge['numTargetRowsInserted']} inserted, {merge['numTargetRowsUpdated']} updated, "
        f"{merge['numTargetRowsDeleted']} deleted) by {merge['commits']} MERGE commits, "
        f"{numbers['distinct_transactions']} distinct (query, batch) of "
        f"{numbers['transactions']}",
        f"micro-batches: {numbers['batches']} ({numbers['batches_with_changes']} with messages) "
        f"in {numbers['runs']} query start(s)",
    ] + ([] if numbers["same"] else [f"samples: {numbers['samples']}"])


def passed(numbers: dict) -> bool:
    return (numbers["same"] and numbers["changelog_joins"] == 2
            and numbers["transactions"] == numbers["distinct_transactions"])


def check_and_report(spark, bootstrap: str, files: Files) -> dict:
    numbers = summary(spark, bootstrap, files)
    (files.work / "check.json").write_text(json.dumps(numbers, indent=1))
    print("\n".join(report(numbers)))
    return numbers


def run_driver(args: argparse.Namespace) -> bool:
    """The driver alone; its checks are for its caller to judge (a killed run's progress may
    be lost, and with it the count of the messages it read), so it fails only on an error."""
    files = Files(args.work)
    spark = spark_session("cdc-kafka-driver")
    run_kafka_query(lambda: start(spark, args.bootstrap, files.table, files.checkpoint,
                                  args.max_offsets), files)
    if args.check:
        check_and_report(spark, args.bootstrap, files)
    spark.stop()
    return True


def produced(counts: Counter[str], rounds: int) -> str:
    sent = sum(counts[op] for op in ("r", "c", "u", "d", "tombstone"))
    return (f"producer: {sent} Debezium messages in {rounds} rounds ({counts['r']} snapshot "
            f"reads, {counts['c']} inserts, {counts['u']} updates, {counts['d']} deletes, "
            f"{counts['tombstone']} tombstones); {counts['orders to another customer']} orders "
            f"moved to another customer, {counts['items to another order']} items to another "
            f"order, {counts['ids inserted again']} ids inserted again")


def run_example(args: argparse.Namespace) -> bool:
    with example_run(args.work, TOPICS, "cdc-kafka-example") as (files, broker, spark):

        def once_running(done: int, rounds: int) -> None:
            while files.run_count() == 0:  # the changes come while the query runs
                time.sleep(0.1)

        changes = DebeziumProducer(producer_client(broker.bootstrap), Shop(args.seed),
                                   args.rounds, gate=once_running, pause_seconds=EXAMPLE_PAUSE)
        producer = ProducerThread(changes.run, files)
        producer.start()
        run_kafka_query(lambda: start(spark, broker.bootstrap, files.table, files.checkpoint,
                                      args.max_offsets or EXAMPLE_MAX_OFFSETS), files)
        print(produced(producer.finish(), args.rounds))
        numbers = check_and_report(spark, broker.bootstrap, files)
    return passed(numbers) and numbers["changes_in"] == numbers["messages"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/multijoin-cdc-kafka"))
    parser.add_argument("--rounds", type=int, default=EXAMPLE_ROUNDS)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--max-offsets", type=int, default=None,
                        help="maxOffsetsPerTrigger of each topic (default: none; the example "
                             f"itself runs with {EXAMPLE_MAX_OFFSETS})")
    parser.add_argument("--driver", action="store_true")
    parser.add_argument("--bootstrap")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if not (run_driver if args.driver else run_example)(args):
        raise SystemExit("the check failed (see above)")


if __name__ == "__main__":
    main()
