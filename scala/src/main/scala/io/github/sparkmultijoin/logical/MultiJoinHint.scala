package io.github.sparkmultijoin.logical

import org.apache.spark.sql.catalyst.expressions.{Attribute, ExprId}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, SubqueryAlias, UnaryNode}

/**
 * The `MULTI_JOIN(a, b, c)` hint over a query block, taken by the analyzer. The optimizer rule
 * fuses the chain of the inputs it names even while `multi-join.enabled` is false, and removes
 * this node from every plan (batch ones too).
 *
 * The names mean something only while the aliases that carry them are in the plan, which the
 * optimizer removes first thing; and a streaming query's inputs get new columns every micro-batch
 * (their aliases map them to the query's). So before each optimization the hint is bound to the
 * columns of the relations under each named alias: the optimizer keeps those relations, and an
 * input of a chain is named where a relation under it is.
 *
 * @param names the inputs the hint names (those that match an alias of the query)
 * @param bound per named input, the ids of the columns of the relations under its alias, once
 *              bound (ids, not attributes, which Catalyst would take for references)
 */
case class MultiJoinHint(names: Seq[String], bound: Seq[Set[ExprId]], child: LogicalPlan)
  extends UnaryNode {

  override def output: Seq[Attribute] = child.output

  /** The hint bound to the relations under its names' aliases in `child` as it is now. */
  def rebound: MultiJoinHint = copy(bound = names.flatMap { name =>
    child.collect {
      case alias: SubqueryAlias if alias.alias.equalsIgnoreCase(name) =>
        alias.collectLeaves().flatMap(_.output).map(_.exprId).toSet
    }
  })

  override protected def withNewChildInternal(newChild: LogicalPlan): MultiJoinHint =
    copy(child = newChild)
}
