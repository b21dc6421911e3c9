package io.github.sparkmultijoin.optimizer

import org.apache.spark.sql.catalyst.expressions.ExprId
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * Which inputs of a chain may go into a multi-join: every one while `multi-join.enabled` is
 * true, only those the MULTI_JOIN hint names while it is false, and none without either.
 *
 * Why a type of its own: the hint lets the rule run with the conf off, for some inputs only, so
 * the rule asks both whether it runs at all and whether a given input may fuse. One value answers
 * both, and the verdict of a chain says whether the hint was what fused it.
 */
sealed trait Eligibility {

  /** Whether `input`, an input of a chain, may go into a multi-join. */
  def admits(input: LogicalPlan): Boolean
}

object Eligibility {

  /** The conf enables the rule: every input may fuse. */
  case object ByConf extends Eligibility {
    override def admits(input: LogicalPlan): Boolean = true
  }

  /**
   * The conf is off and the MULTI_JOIN hint names inputs: an input of a chain may fuse where a
   * relation under it is one the hint names.
   *
   * @param named per named input, the ids of the columns of its alias and of the relations under it
   */
  case class ByHint(named: Seq[Set[ExprId]]) extends Eligibility {
    require(named.nonEmpty, "a hint that names no input enables nothing")

    override def admits(input: LogicalPlan): Boolean = named.exists { ids =>
      input.collectLeaves().exists(_.output.exists(column => ids(column.exprId)))
    }
  }

  /** The conf is off and no hint names an input: nothing fuses. */
  case object Disabled extends Eligibility {
    override def admits(input: LogicalPlan): Boolean = false
  }

  /** The eligibility the conf and the hint's inputs (`named`, as [[ByHint]] has them) give. */
  def of(enabled: Boolean, named: Seq[Set[ExprId]]): Eligibility =
    if (enabled) ByConf else if (named.isEmpty) Disabled else ByHint(named)
}
