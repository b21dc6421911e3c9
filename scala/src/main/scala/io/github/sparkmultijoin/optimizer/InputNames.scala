package io.github.sparkmultijoin.optimizer

import scala.collection.mutable

import io.github.sparkmultijoin.optimizer.FusionVerdict.Input

import org.apache.spark.sql.catalyst.expressions.{AttributeReference, ExprId}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * The names the query gave the inputs of `plan` (an alias, or a table's or view's name), for
 * the verdicts to name inputs as the user wrote them.
 *
 * Why from qualifiers: the optimizer removes the aliases (SubqueryAlias) before the rule runs,
 * but each column reference the analyzer resolved through an alias keeps its name as the
 * qualifier (`o.order_id`). An input takes a qualifier used outside it (a view's own names
 * inside it are not what the query calls it) that qualifies its columns and no column outside
 * it; where several do (an input inside a subquery is read through both names), the one used
 * deepest, nearest the input. An input of several relations (a join below the chain, say), or
 * one whose aliases the optimizer dropped with their references (a running query's micro-batch
 * plans), goes by its columns.
 */
private[optimizer] class InputNames(plan: LogicalPlan) {

  def of(input: LogicalPlan): Input =
    Input(if (input.collectLeaves().length == 1) nameOf(input) else None,
      input.output.map(_.name))

  private def nameOf(input: LogicalPlan): Option[String] = {
    val output = input.output.map(_.exprId).toSet
    lazy val within = input.flatMap(_.output).map(_.exprId).toSet
    val candidates = qualifiersOutside(input).filter { case (_, (ids, _)) =>
      ids.exists(output) && ids.subsetOf(within)
    }
    val nearest = candidates.toSeq.sortBy { case (name, (_, depth)) => (-depth, name) }.headOption
    // Qualifiers of disjoint columns name several relations, not this input.
    nearest.filter { case (_, (ids, _)) =>
      candidates.values.forall { case (others, _) => (others & ids & output).nonEmpty }
    }.map(_._1)
  }

  /**
   * Per qualifier used in `plan` outside `input`, the ids of the columns it qualifies and the
   * depth of its deepest use.
   */
  private def qualifiersOutside(input: LogicalPlan): Map[String, (Set[ExprId], Int)] = {
    val found = mutable.LinkedHashMap.empty[String, (Set[ExprId], Int)]
    def visit(node: LogicalPlan, depth: Int): Unit = if (!(node eq input)) {
      node.expressions.foreach(_.foreach {
        case column: AttributeReference if column.qualifier.nonEmpty =>
          val name = column.qualifier.last
          val (ids, deepest) = found.getOrElse(name, (Set.empty[ExprId], depth))
          found(name) = (ids + column.exprId, deepest max depth)
        case _ =>
      })
      node.children.foreach(visit(_, depth + 1))
    }
    visit(plan, 0)
    found.toMap
  }
}
