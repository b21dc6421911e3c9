package io.github.sparkmultijoin.ttl

import io.github.sparkmultijoin.logical.MultiJoinHint

import org.apache.spark.sql.catalyst.expressions.{Attribute, ExprId}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * The `STATE_TTL(a, '1d')` hint over a query block, taken by the analyzer: a state TTL for each
 * input it names, which takes precedence over `multi-join.state-ttl` for that input. The
 * optimizer rule gives an input of a multi-join the TTL of a named relation under it, and removes
 * this node from every plan (batch ones too).
 *
 * Why a node of its own, bound as [[MultiJoinHint]] is: the names mean something only while the
 * aliases that carry them are in the plan, and a streaming query's inputs get new columns every
 * micro-batch; so before each optimization the hint is bound anew to each named alias.
 *
 * @param ttls  per named input (those that match an alias of the query), its TTL (ms)
 * @param bound per named input, the ids of the columns of its alias and of the relations under
 *              it ([[MultiJoinHint.columnsUnder]]), with its TTL, once bound
 */
case class StateTtlHint(
    ttls: Seq[(String, Long)],
    bound: Seq[(Set[ExprId], Long)],
    child: LogicalPlan) extends UnaryNode {

  override def output: Seq[Attribute] = child.output

  /** The hint bound to the relations under its names' aliases in `child` as it is now. */
  def rebound: StateTtlHint = copy(bound = ttls.flatMap { case (name, ttl) =>
    MultiJoinHint.columnsUnder(child, name).map(_ -> ttl)
  })

  override protected def withNewChildInternal(newChild: LogicalPlan): StateTtlHint =
    copy(child = newChild)
}
