"""A real-time query of its own process, for a test to kill: the multi-join on `k` of three
inputs of Spark's `LowLatencyMemoryStream` into the benchmark's JVM `foreach` sink
(benchmarks/multijoin_bench/latency/ArrivalWriter.java, compiled by the test into CLASSES), which
writes each row as it comes.

    python real_time_driver.py ROUNDS.json ADDED CHECKPOINT OUTPUT CLASSES

ROUNDS.json holds rounds of ints per input (a row's `k` is its int modulo 5, its `v` the int).
The memory streams live in this process, so a restarted driver adds the same rounds again, in the
same order, for the checkpoint's offsets to mean the same rows: the first ADDED rounds before the
query starts, then each further round once the checkpoint has committed as many batches as the
rounds added (a round need not be its batch's: a long batch ends on time, read or not). It runs
until killed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_multijoin import configure_spark_with_multijoin

INPUTS = 3
BATCH = "3 seconds"


def frames(spark: SparkSession) -> tuple[list, list[DataFrame]]:
    jvm = spark._jvm  # type: ignore[attr-defined]
    stream_class = jvm.org.apache.spark.sql.execution.streaming.sources.LowLatencyMemoryStream
    encoder = jvm.org.apache.spark.sql.Encoders.scalaInt()
    context = spark._jsparkSession.sqlContext()  # type: ignore[attr-defined]
    streams = [stream_class.singlePartition(encoder, context) for _ in range(INPUTS)]
    return streams, [DataFrame(s.toDF(), spark).select((F.col("value") % 5).alias(f"k{i}"),
                                                       F.col("value").alias(f"v{i}"))
                     for i, s in enumerate(streams)]


def joined(inputs: list[DataFrame]) -> DataFrame:
    result = inputs[0]
    for i, frame in enumerate(inputs[1:], start=1):
        result = result.join(frame, result["k0"] == frame[f"k{i}"])
    return result.select("k0", *[f"v{i}" for i in range(INPUTS)])


def add(spark: SparkSession, streams: list, round_: list[list[int]]) -> None:
    convert = spark._jvm.scala.jdk.javaapi.CollectionConverters  # type: ignore[attr-defined]
    for stream, values in zip(streams, round_):
        rows = spark._jvm.java.util.ArrayList()  # type: ignore[attr-defined]
        for value in values:
            rows.add(value)
        stream.addData(convert.asScala(rows).toList())


def committed(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.exists() else 0


def main(rounds_file: str, added: str, checkpoint: str, output: str, classes: str) -> None:
    builder = (SparkSession.builder.master("local[4]").appName("killed-real-time-driver")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.sql.streaming.stateStore.checkpointFormatVersion", "2")
               .config("spark.sql.streaming.realTimeMode.minBatchDuration", "1s")
               .config("spark.driver.extraClassPath", classes)
               # As the tests' session: a short-lived JVM gains from the quick compiler alone.
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
               .config("multi-join.enabled", "true"))
    spark = configure_spark_with_multijoin(builder, real_time=True).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    rounds = json.loads(Path(rounds_file).read_text())
    streams, inputs = frames(spark)
    for round_ in rounds[:int(added)]:
        add(spark, streams, round_)
    jvm = spark._jvm  # type: ignore[attr-defined]
    (joined(inputs)._jdf.writeStream().outputMode("update")
     .foreach(jvm.multijoinbench.ArrivalWriter(output))
     .option("checkpointLocation", checkpoint)
     .trigger(jvm.org.apache.spark.sql.streaming.Trigger.RealTime(BATCH)).start())
    for number, round_ in enumerate(rounds[int(added):], start=int(added)):
        while committed(Path(checkpoint)) < number:
            time.sleep(0.05)
        add(spark, streams, round_)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main(*sys.argv[1:])
