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
 * columns of each named alias and of the relations under it ([[MultiJoinHint.columnsUnder]]),
 * and an input of a chain is named where a relation under it has some of them.
 *
 * @param names the inputs the hint names (those that match an alias of the query)
 * @param bound per named input, the ids of the columns of its alias and of the relations under
 *              it, once bound (ids, not attributes, which Catalyst would take for references)
 */
case class MultiJoinHint(names: Seq[String], bound: Seq[Set[ExprId]], child: LogicalPlan)
  extends UnaryNode {

  override def output: Seq[Attribute] = child.output

  /** The hint bound to the relations under its names' aliases in `child` as it is now. */
  def rebound: MultiJoinHint = copy(bound = names.flatMap(MultiJoinHint.columnsUnder(child, _)))

  override protected def withNewChildInternal(newChild: LogicalPlan): MultiJoinHint =
    copy(child = newChild)
}

object MultiJoinHint {

  /**
   * Per alias `name` in `plan`, the ids of its columns and of the columns of the relations under
   * it. The optimizer keeps the relations, except where it folds an input into a LocalRelation
   * of the alias's columns: in a micro-batch without data for a streaming input, it is one.
   */
  def columnsUnder(plan: LogicalPlan, name: String): Seq[Set[ExprId]] = plan.collect {
    case alias: SubqueryAlias if alias.alias.equalsIgnoreCase(name) =>
      (alias.output ++ alias.collectLeaves().flatMap(_.output)).map(_.exprId).toSet
  }
}
