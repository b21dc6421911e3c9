package io.github.sparkmultijoin.planning

import io.github.sparkmultijoin.execution.{StreamingMultiJoinExec, TaggedInputs}
import io.github.sparkmultijoin.logical.MultiJoin

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.multijoin.MicroBatchShim

/**
 * Plans a [[MultiJoin]] as a [[StreamingMultiJoinExec]] with its state info and its micro-batch
 * filled in, over its inputs tagged and unioned ([[TaggedInputs]]), so that Spark shuffles them
 * in one exchange.
 *
 * Spark gives state info only to its own stateful operators, after planning, and its watermark
 * simulation reads the operator id of every stateful operator in the plan; so the state info
 * (checkpoint, run id, batch, partitions) of the micro-batch being planned is looked up here,
 * with what else the operator needs of the batch. Its watermarks come after planning
 * ([[AddMultiJoinWatermarks]]). Outside a running query (`explain()` before `start()`) there is
 * none, as Spark shows `<unknown>` for its own operators then.
 */
case class MultiJoinStrategy(session: SparkSession) extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case multiJoin: MultiJoin =>
      val running = MicroBatchShim.running(session)
      StreamingMultiJoinExec(
        multiJoin.children.map(_.output),
        multiJoin.keys,
        multiJoin.condition,
        multiJoin.tree,
        multiJoin.outerConditions,
        multiJoin.stateTtlsMs,
        multiJoin.description,
        running.flatMap(_.stateInfo(multiJoin.operatorId)),
        running.flatMap(_.context),
        TaggedInputs.plan(multiJoin.keys, multiJoin.children.map(planLater))) :: Nil
    case _ => Nil
  }
}
