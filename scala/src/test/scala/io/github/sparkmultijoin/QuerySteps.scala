package io.github.sparkmultijoin

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
import org.apache.spark.sql.streaming.StreamingQuery

/**
 * What the step-by-step query runners of the tests share: the rows the query's sink collected
 * since the last step, and its stateful operators' figures from its last progress.
 */
trait QuerySteps extends AutoCloseable {

  protected def query: StreamingQuery

  private val emitted = ArrayBuffer.empty[Row]

  /** The sink's work: keeps a micro-batch's rows for the next `drain`. */
  protected def collect(batch: DataFrame): Unit = {
    val rows = batch.collect()
    emitted.synchronized(emitted ++= rows)
  }

  /** The rows collected since the last call. */
  protected def drain(): Seq[Row] = emitted.synchronized {
    val rows = emitted.toList
    emitted.clear()
    rows
  }

  /** The rows in state of each stateful operator called `operator`, after the last batch. */
  def stateRows(operator: String): Seq[Long] =
    query.lastProgress.stateOperators.toSeq.filter(_.operatorName == operator).map(_.numRowsTotal)

  /** The custom metric `name` of each stateful operator called `operator`, in the last batch. */
  def stateMetric(operator: String, name: String): Seq[Long] =
    query.lastProgress.stateOperators.toSeq.filter(_.operatorName == operator)
      .map(_.customMetrics.get(name).longValue)

  /** The physical plan of the last batch, as the query ran it. */
  def lastPlan: SparkPlan =
    query.asInstanceOf[StreamingQueryWrapper].streamingQuery.lastExecution.executedPlan

  override def close(): Unit = query.stop()
}
