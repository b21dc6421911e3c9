"""Runs a streaming chain that does not fuse on a session with the Spark UI on, and prints, as
JSON, what `fusion_report` says of it and the plan descriptions of the SQL executions that the
UI's REST API lists while the query runs. Run as a script, in a process of its own: the tests'
shared session has the UI off, and a JVM holds one SparkContext.

    python spark_ui_run.py FOLDER
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

from pyspark.sql import SparkSession

from spark_multijoin import configure_spark_with_multijoin, fusion_report, multi_join

NAMES = ["orders", "payments", "shipments"]


def get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def main(folder: Path) -> None:
    builder = (SparkSession.builder.master("local[2]").appName("spark-multijoin-ui")
               .config("spark.ui.enabled", "true").config("spark.ui.port", "0")
               .config("spark.sql.shuffle.partitions", "2")
               # As the tests' session: a short-lived JVM gains from the quick compiler alone.
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1"))
    spark = configure_spark_with_multijoin(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    multi_join(spark).enabled = True
    for i, name in enumerate(NAMES):
        (folder / name).mkdir()
        spark.readStream.schema(f"id{i} INT, v{i} INT").json(str(folder / name)) \
            .createOrReplaceTempView(name)
    # The verdicts name o, p and s in every micro-batch's plan as before the start.
    df = spark.sql("SELECT * FROM STREAM(orders) o JOIN STREAM(payments) p ON o.id0 = p.id1 "
                   "JOIN STREAM(shipments) s ON s.v2 = p.v1")
    report = fusion_report(df)
    query = df.writeStream.format("noop") \
        .option("checkpointLocation", str(folder / "checkpoint")).start()
    for i, name in enumerate(NAMES):
        (folder / name / "rows.json").write_text(f'{{"id{i}": 1, "v{i}": 1}}\n')
    query.processAllAvailable()
    ui = spark.sparkContext.uiWebUrl
    [application] = get(f"{ui}/api/v1/applications")
    executions = get(f"{ui}/api/v1/applications/{application['id']}/sql"
                     "?details=true&planDescription=true")
    query.stop()
    print(json.dumps({"report": report,
                      "descriptions": [e.get("planDescription", "") for e in executions]}))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
