"""A streaming driver of its own process, for a test to kill: the multi-join of `join_on_k` over
the JSON inputs that `Inputs` wrote under INPUTS (N inputs), one file per micro-batch, into a
parquet sink, until every file present is processed (availableNow).

    python file_stream_driver.py INPUTS N CHECKPOINT OUTPUT CHECKPOINT_FORMAT
"""

from __future__ import annotations

import sys
from pathlib import Path

from pyspark.sql import SparkSession

from spark_multijoin import configure_spark_with_multijoin
from spark_multijoin.testing import Inputs, join_on_k


def main(inputs_root: str, n_inputs: str, checkpoint: str, output: str, format_: str) -> None:
    builder = (SparkSession.builder.master("local[2]").appName("killed-driver")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               # As the tests' session: a short-lived JVM gains from the quick compiler alone.
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
               .config("spark.sql.streaming.stateStore.checkpointFormatVersion", format_)
               .config("multi-join.enabled", "true"))
    spark = configure_spark_with_multijoin(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    inputs = Inputs(Path(inputs_root), [f"k int, v{i} int" for i in range(int(n_inputs))])
    query = (join_on_k(inputs.streams(spark)).writeStream.format("parquet")
             .option("path", output).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
