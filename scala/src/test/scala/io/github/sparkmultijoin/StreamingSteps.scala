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
class StreamingSteps(frame: DataFrame, checkpoint: File) extends AutoCloseable {

  private val emitted = ArrayBuffer.empty[Row]

  private val query: StreamingQuery = frame.writeStream
    .foreachBatch { (batch: DataFrame, _: Long) =>
      val rows = batch.collect()
      emitted.synchronized(emitted ++= rows)
      ()
    }
    .option("checkpointLocation", checkpoint.getPath)
    .start()

  /** Processes everything available, and returns the rows emitted since the last call. */
  def process(): Seq[Row] = {
    query.processAllAvailable()
    emitted.synchronized {
      val rows = emitted.toList
      emitted.clear()
      rows
    }
  }

  /** The rows in state of each stateful operator called `operator`, after the last batch. */
  def stateRows(operator: String): Seq[Long] =
    query.lastProgress.stateOperators.toSeq.filter(_.operatorName == operator).map(_.numRowsTotal)

  /** The custom metric `name` of each stateful operator called `operator`, in the last batch. */
  def stateMetric(operator: String, name: String): Seq[Long] =
    query.lastProgress.stateOperators.toSeq.filter(_.operatorName == operator)
      .map(_.customMetrics.get(name).longValue)

  override def close(): Unit = query.stop()
}

object StreamingSteps {

  /** Rows as a sorted list of their strings: equal exactly when they are equal as multisets. */
  def canonical(rows: Iterable[Row]): List[String] = rows.map(_.toString).toList.sorted
}
