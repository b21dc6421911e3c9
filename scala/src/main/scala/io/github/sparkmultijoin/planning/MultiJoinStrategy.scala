package io.github.sparkmultijoin.planning

import io.github.sparkmultijoin.execution.{StreamingMultiJoinExec, TaggedInputs}
import io.github.sparkmultijoin.logical.MultiJoin

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.multijoin.SparkInternals

/**
 * Plans a [[MultiJoin]] as a [[StreamingMultiJoinExec]] with its state info filled in, over its
 * inputs tagged and unioned ([[TaggedInputs]]), so that Spark shuffles them in one exchange.
 *
 * Spark gives state info only to its own stateful operators, after planning, and its watermark
 * simulation reads the operator id of every stateful operator in the plan; so the state info
 * (checkpoint, run id, batch, partitions) of the micro-batch being planned is looked up here.
 * Outside a running query (`explain()` before `start()`) there is none, as Spark shows
 * `<unknown>` for its own operators then.
 */
case class MultiJoinStrategy(session: SparkSession) extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case multiJoin @ MultiJoin(children, keys, condition, tree, _, operatorId, stateTtlsMs) =>
      StreamingMultiJoinExec(
        children.map(_.output),
        keys,
        condition,
        tree,
        multiJoin.outerConditions,
        stateTtlsMs,
        SparkInternals.stateInfo(session, operatorId),
        TaggedInputs.plan(keys, children.map(planLater))) :: Nil
    case _ => Nil
  }
}
