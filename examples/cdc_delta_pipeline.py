"""Example: Delta's change data feed in, a changelog join, a Delta table out.

Three Delta source tables with the change data feed on (orders, customers, products) take
rounds of random commits: inserts, updates (some moving an order to another customer or
product), deletes, rows deleted and inserted again (cdc_delta/changes.py). The query reads each
table's change feed as a changelog, joins orders LEFT JOIN customers LEFT JOIN products (two
keys: two changelog joins, one stacked on the other), filters on columns that updates change,
and MERGEs the join's changes into a Delta table with `changelog.delta_merge`
(cdc_delta/job.py). After each round the query reads every new commit and stops; the example
then checks the table against the batch join of the tables' current rows.

Runs on Spark 4.1, where Delta Lake's jars resolve; `scripts/run-example cdc-delta` sets up its
venv and jars and runs it. (`scripts/run-example cdc` runs the CDC example on Kafka,
examples/cdc_kafka_pipeline.py: Debezium's topics in.)

    python examples/cdc_delta_pipeline.py [--work DIR] [--rounds N] [--seed S]
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from cdc_delta.rounds import run_rounds
from kafka_delta.pipeline import spark_session

EXAMPLE_ROUNDS = 5


def run_example(args: argparse.Namespace) -> bool:
    shutil.rmtree(args.work, ignore_errors=True)
    started = time.monotonic()
    spark = spark_session("cdc-delta-example")
    ok, plan = True, ""
    for done in run_rounds(spark, args.work, args.rounds, args.seed):
        ok &= done.comparison.same
        plan = done.plan
        print(f"round {done.number}: {done.commits} commits, read in {done.batches} "
              f"micro-batch(es), {done.input_rows} change rows; "
              + ("same rows as the batch join: " if done.comparison.same else "DIFFERS: ")
              + done.comparison.line() + f" ({done.seconds:.1f} s)")
        if not done.comparison.same:
            print(f"  samples: {done.comparison.samples}")
    spark.stop()
    print(f"plan: {plan.count('ChangelogJoin input0')} ChangelogJoin")
    print(f"done in {time.monotonic() - started:.0f} s")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/multijoin-cdc-delta"))
    parser.add_argument("--rounds", type=int, default=EXAMPLE_ROUNDS)
    parser.add_argument("--seed", type=int, default=3)
    if not run_example(parser.parse_args()):
        raise SystemExit("the check failed (see above)")


if __name__ == "__main__":
    main()
