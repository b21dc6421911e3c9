package io.github.sparkmultijoin.planning

import io.github.sparkmultijoin.execution.StreamingMultiJoinExec

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan}
import org.apache.spark.sql.multijoin.MicroBatchShim

/**
 * Gives each multi-join of a micro-batch's physical plan the input watermarks Spark's watermark
 * propagation computed for it.
 *
 * Why: Spark propagates watermarks in its state preparation of the physical plan, after planning,
 * and hands them to its own stateful operators there, in a rule that knows only its own classes.
 * The columnar rules are the first hook an extension has after that preparation, so the
 * multi-join gets them here, once per batch, as Spark's joins get theirs, instead of reading them
 * from the running query when it executes.
 */
case class AddMultiJoinWatermarks(session: SparkSession) extends ColumnarRule {

  override def preColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan = plan.transform {
      case multiJoin @ StreamingMultiJoinExec(_, _, _, _, _, _, _, Some(info), Some(batch), _) =>
        val watermarks = MicroBatchShim.running(session).flatMap(_.inputWatermarks(info))
        multiJoin.copy(batch = Some(batch.copy(
          lateRowsWatermarkMs = watermarks.map(_._1),
          evictionWatermarkMs = watermarks.map(_._2))))
    }
  }
}
