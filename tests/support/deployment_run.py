"""Runs one fused streaming join through Spark Connect on a local cluster, and prints
what it found as JSON: whether the plan holds a multi-join, and the rows it emitted and the batch
query's. Run by tests/test_deployments.py in a process of its own, as the deployment needs its own
JVM set-up.

    python tests/support/deployment_run.py FOLDER
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from spark_multijoin import configure_spark_with_multijoin
from spark_multijoin._session_conf import ENABLED_KEY
from spark_multijoin.testing import Inputs, join_on_k

SCHEMAS = ["k INT, v0 INT", "k INT, v1 INT", "k INT, v2 INT"]


def session() -> SparkSession:
    # A Spark Connect client, whose queries a server in another JVM plans, and that server's
    # master a local cluster: an executor in a process of its own, which gets the jar through
    # spark.jars. One run covers both, as each costs a JVM's start.
    builder = (SparkSession.builder.appName("spark-multijoin-deployment")
               .remote("local-cluster[1,2,1024]")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2"))
    return configure_spark_with_multijoin(builder).getOrCreate()


def inputs(root: Path) -> Inputs:
    # Fan-out on a few keys over three micro-batches: every batch joins new rows with stored ones.
    data = Inputs(root, SCHEMAS)
    data.batches = [[[{"k": key, f"v{i}": 10 * batch + copy} for key in range(4) for copy in range(2)]
                     for batch in range(3)] for i in range(3)]
    data.write()
    return data


def main(folder: str) -> None:
    root = Path(folder)
    spark = session()
    spark.conf.set(ENABLED_KEY, "true")
    data = inputs(root / "in")
    query = (join_on_k(data.streams(spark)).writeStream.format("memory").queryName("joined")
             .option("checkpointLocation", str(root / "checkpoint")).trigger(availableNow=True)
             .start())
    query.awaitTermination()
    plan = io.StringIO()
    with contextlib.redirect_stdout(plan):
        query.explain()
    columns = ["k", "v0", "v1", "v2"]
    streamed = sorted(tuple(row) for row in spark.table("joined").select(*columns).collect())
    batch = sorted(tuple(row) for row in join_on_k(data.tables(spark)).select(*columns).collect())
    print(json.dumps({"fused": "StreamingMultiJoin" in plan.getvalue(), "streamed": streamed,
                      "batch": batch}))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
