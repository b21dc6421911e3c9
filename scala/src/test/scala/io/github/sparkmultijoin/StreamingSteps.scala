package io.github.sparkmultijoin

import java.io.File

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.{DataFrame, Encoder, Row, SparkSession}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.streaming.StreamingQuery

/**
 * Streaming inputs fed step by step, remembering every row added, so that the same rows can be
 * read as batch DataFrames: the batch query over them is the reference answer.
 *
 * @param columns the column names of each input's rows
 */
class SteppedInputs[A: Encoder](spark: SparkSession, columns: Seq[Seq[String]]) {

  private val streams = columns.map(_ => MemoryStream[A](implicitly[Encoder[A]], spark))
  private val added = columns.map(_ => ArrayBuffer.empty[A])

  def streaming: Seq[DataFrame] =
    streams.zip(columns).map { case (stream, names) => stream.toDF().toDF(names: _*) }

  def tables: Seq[DataFrame] = added.zip(columns).map { case (rows, names) =>
    spark.createDataset(rows.toSeq).toDF(names: _*)
  }

  def add(input: Int, rows: A*): Unit = {
    streams(input).addData(rows)
    added(input) ++= rows
  }
}

/**
 * A streaming query run the way Spark's `testStream` runs one: rows are added to its inputs, all
 * that is available is processed (batches without data included), and then what came out since
 * the previous step and what the state holds are checked.
 */
class StreamingSteps(frame: DataFrame, checkpoint: File) extends QuerySteps {

  protected val query: StreamingQuery = frame.writeStream
    .foreachBatch((batch: DataFrame, _: Long) => collect(batch))
    .option("checkpointLocation", checkpoint.getPath)
    .start()

  /** Processes everything available, and returns the rows emitted since the last call. */
  def process(): Seq[Row] = {
    query.processAllAvailable()
    drain()
  }
}

object StreamingSteps {

  /** Rows as a sorted list of their strings: equal exactly when they are equal as multisets. */
  def canonical(rows: Iterable[Row]): List[String] = rows.map(_.toString).toList.sorted
}
