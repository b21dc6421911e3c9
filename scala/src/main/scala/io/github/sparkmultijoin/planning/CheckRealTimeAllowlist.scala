package io.github.sparkmultijoin.planning

import io.github.sparkmultijoin.execution.StreamingMultiJoinExec

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, ProjectExec, SparkPlan}
import org.apache.spark.sql.multijoin.{MicroBatchShim, RealTimeModeShim}

/**
 * Spark's real-time mode runs only the operators and sinks on its allowlist, which has no
 * extension point, so a query with a multi-join runs in that mode only with Spark's check off
 * (`spark.sql.streaming.realTimeMode.allowlistCheck=false`). Off, Spark lets every operator and
 * sink through with a warning. So, where it is off, this check runs Spark's own in its place, on
 * every physical plan of a real-time query, with the multi-join taken for an allowed operator:
 * turning Spark's check off then lets nothing else through.
 *
 * It runs as a columnar rule after the transitions, the last hook an extension has into a
 * micro-batch's physical plan; it changes nothing.
 */
case class CheckRealTimeAllowlist(session: SparkSession) extends ColumnarRule {

  override def postColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan = {
      if (!sparkChecks) {
        MicroBatchShim.running(session).flatMap(_.realTimeSink).foreach { sink =>
          RealTimeModeShim.checkRealTimeAllowlist(multiJoinsAllowed(plan), sink)
        }
      }
      plan
    }
  }

  private def sparkChecks: Boolean =
    session.sessionState.conf.getConfString(CheckRealTimeAllowlist.SparkCheckKey, "true").toBoolean

  // Each multi-join as an operator Spark allows, over the same child, for Spark's check.
  private def multiJoinsAllowed(plan: SparkPlan): SparkPlan = plan.transform {
    case multiJoin: StreamingMultiJoinExec => ProjectExec(multiJoin.output, multiJoin.child)
  }
}

object CheckRealTimeAllowlist {

  /** Spark's switch for its real-time mode allowlist check. */
  val SparkCheckKey = "spark.sql.streaming.realTimeMode.allowlistCheck"
}
