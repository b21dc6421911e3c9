package io.github.sparkmultijoin.optimizer

import io.github.sparkmultijoin.logical.{ChangelogJoin, ChangelogNormalize}

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Gives each changelog join, and each ordering of an input's changes by row id, its stateful
 * operator id, in the order of the plan from its inputs up.
 *
 * Why here and not when the join is made: the join is made while a DataFrame is analyzed,
 * before the query it ends in exists, so only the whole plan orders them; the optimizer sees
 * the whole plan on every micro-batch and after a restart, in the same shape, so the ids are
 * the same each time. They start far above the ids Spark gives its own stateful operators and
 * the ids of the multi-joins of append-only inputs.
 */
object NumberChangelogJoins extends Rule[LogicalPlan] {

  val FirstOperatorId: Long = 1L << 31

  override def apply(plan: LogicalPlan): LogicalPlan = {
    val next = Iterator.iterate(FirstOperatorId)(_ + 1)
    plan.transformUp {
      case cj: ChangelogJoin if cj.operatorId < 0 => cj.copy(operatorId = next.next())
      case normalize: ChangelogNormalize if normalize.operatorId < 0 =>
        normalize.copy(operatorId = next.next())
    }
  }
}
