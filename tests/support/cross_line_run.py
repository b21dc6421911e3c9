"""One step of some checkpoints' lives on one Spark line, run in that line's venv by
tests/test_cross_line_restart.py: `python -m support.cross_line_run STEP.json` with `tests` on the
path. For each of the step's runs (one session runs them all, as a JVM's start is the step's
main cost) it writes the run's input batches, runs its query over every batch written so far
into a parquet sink from its checkpoint, and notes what it saw: the error that refused the
restart if one did, and where asked the sink's rows and the batch query's, so that the test
compares them. The step's result, as JSON, is the Spark version and what each run saw."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_multijoin import changelog, configure_spark_with_multijoin
from spark_multijoin.testing import Inputs, join_on_k
from support.runs import batch_rows, run_to_parquet

SCHEMAS = {"inner": [f"k int, v{i} int" for i in range(4)],
           "outer": [f"k int, t{i} timestamp, v{i} int" for i in range(3)],
           "changelog": ["oid int, cid int, amount int, v long, _change_type string",
                         "cid int, name string, v long, _change_type string"]}


def outer_star(frames: list[DataFrame]) -> DataFrame:
    """A time-bounded LEFT OUTER star: input 0's rows, each with the rows of inputs 1 and 2 within
    ten seconds after it, or nulls."""
    a, b, c = (frame.withWatermark(f"t{i}", "5 seconds") for i, frame in enumerate(frames))
    joined = a.join(b, (a.k == b.k) & b.t1.between(a.t0, a.t0 + F.expr("INTERVAL 10 SECONDS")),
                    "left_outer")
    joined = joined.join(c, (a.k == c.k) & c.t2.between(a.t0, a.t0 + F.expr("INTERVAL 10 SECONDS")),
                         "left_outer")
    return joined.select(a.k, "v0", "v1", "v2")


def orders_of_customers(frames: list[DataFrame]) -> DataFrame:
    """Two changelogs, orders LEFT JOIN customers on the customer: the changelog join and, as
    orders join outside their row id, the ordering by row id, two stateful operators."""
    orders = changelog.declare(frames[0], "oid", "v").alias("o")
    customers = changelog.declare(frames[1], "cid", "v").alias("c")
    return orders.join(customers, F.col("o.cid") == F.col("c.cid"), "left").select(
        "o.oid", "o.amount", F.col("c.cid").alias("ccid"), "c.name")


QUERIES = {"inner": join_on_k, "outer": outer_star, "changelog": orders_of_customers}


def run(spark: SparkSession, step: dict) -> dict:
    inputs = Inputs(Path(step["inputs"]), SCHEMAS[step["query"]])
    for index, batches in enumerate(step["batches"]):
        for batch, rows in batches.items():
            inputs.write_batch(index, int(batch), rows)
    build = QUERIES[step["query"]]
    seen = {}
    try:
        run_to_parquet(spark, inputs, build, enabled=True, checkpoint=Path(step["checkpoint"]),
                       output=Path(step["output"]))
    except StreamingQueryException as error:
        seen["error"] = str(error)
    if step.get("compare"):
        columns = spark.read.parquet(step["output"]).columns
        found = Counter(map(tuple, spark.read.parquet(step["output"]).select(*columns).collect()))
        seen["found"] = sorted(map(repr, found.elements()))
        seen["expected"] = sorted(map(repr, batch_rows(spark, inputs, build).elements()))
    return seen


def main(step_file: str) -> None:
    step = json.loads(Path(step_file).read_text())
    spark = configure_spark_with_multijoin(
        SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
        # As the tests' session: a short-lived JVM gains from the quick compiler alone.
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
        .config("spark.sql.shuffle.partitions", "2")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    seen = {"spark": spark.version, "runs": {name: run(spark, each)
                                             for name, each in step["runs"].items()}}
    spark.stop()
    Path(step["result"]).write_text(json.dumps(seen))


if __name__ == "__main__":
    main(sys.argv[1])
