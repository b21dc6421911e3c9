package io.github.sparkmultijoin.optimizer

import io.github.sparkmultijoin.logical.MultiJoin
import io.github.sparkmultijoin.restart.MultiJoinRestart

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.multijoin.{CheckpointShim, MicroBatchShim}

/**
 * Fails the first micro-batch of a restart whose multi-joins are not the ones its checkpoint
 * was written with, naming the setting that changed ([[MultiJoinRestart]]).
 *
 * Why here: it runs right after [[CollapseStreamingJoinChains]], before Spark's own check of the
 * stateful operators (at physical planning), which refuses a changed plan without naming the
 * setting. It never changes the plan.
 */
case class ValidateMultiJoinRestart(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (plan.isStreaming) {
      MicroBatchShim.running(session).flatMap(_.restartedState).foreach {
        case (stateLocation, previousBatch) =>
          MultiJoinRestart.check(plan.collect { case multiJoin: MultiJoin => multiJoin.operatorId },
            stateLocation, previousBatch, CheckpointShim.newHadoopConf(session), conf)
      }
    }
    plan
  }
}
