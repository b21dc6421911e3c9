package org.apache.spark.sql.multijoin

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, SparkSession, classic}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.StreamingJoinHelper
import org.apache.spark.sql.catalyst.expressions.{AttributeSet, Expression}
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.StructType

/** Catalyst's private helpers that the rule and `read_state` use as Spark's own code does. */
object CatalystShim {

  /**
   * A key expression whose float and double values compare by their bytes as Spark compares
   * them (one NaN, 0.0 for -0.0). Spark normalizes the keys of its own joins in an optimizer rule
   * that runs after ours and knows only Join nodes.
   */
  def normalizeFloatingNumbers(key: Expression): Expression =
    NormalizeFloatingNumbers.normalize(key)

  /**
   * The bound Spark's own join derives from `conjunct` for the rows with `time` given the
   * watermark `watermarkMs` on `otherTime`: rows at or below it cannot join rows to come.
   */
  def stateValueWatermark(
      time: AttributeSet,
      otherTime: AttributeSet,
      conjunct: Expression,
      watermarkMs: Long): Option[Long] =
    StreamingJoinHelper.getStateValueWatermark(time, otherTime, Some(conjunct), Some(watermarkMs))

  /**
   * The optimized plan of `frame` as `explain()` makes it before the query starts: its logical
   * plan normalized and optimized, on its session. Unlike `queryExecution.optimizedPlan`, this
   * takes streaming plans, which a batch execution refuses.
   */
  def optimizedAsExplained(frame: classic.Dataset[_]): LogicalPlan = {
    val session = frame.sparkSession
    session.withActive(session.sessionState.optimizer.execute(frame.queryExecution.normalized))
  }

  /** A DataFrame of `rows`, which have `schema`. */
  def dataFrame(session: SparkSession, rows: RDD[InternalRow], schema: StructType): DataFrame =
    session.asInstanceOf[classic.SparkSession].internalCreateDataFrame(rows, schema)

  /** The DataFrame of the analyzed plan `plan`. */
  def dataFrame(session: SparkSession, plan: LogicalPlan): DataFrame =
    classic.Dataset.ofRows(session.asInstanceOf[classic.SparkSession], plan)
}
