package io.github.sparkmultijoin

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.streaming.sources.LowLatencyMemoryStream

/**
 * Inputs of pairs of ints for real-time mode (Spark's `LowLatencyMemoryStream`, whose package
 * differs between lines), one partition each, named k<i> and v<i>.
 */
class RealTimeInputs(spark: SparkSession, count: Int) {

  private val streams = (0 until count).map(_ =>
    LowLatencyMemoryStream.singlePartition[(Int, Int)](
      spark.implicits.newProductEncoder[(Int, Int)], spark.sqlContext))

  def frames: Seq[DataFrame] =
    streams.zipWithIndex.map { case (stream, i) => stream.toDF().toDF(s"k$i", s"v$i") }

  def add(input: Int, rows: Seq[(Int, Int)]): Unit = streams(input).addData(rows)
}
