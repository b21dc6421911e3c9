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
 * qualifier (`o.order_id`). An input takes the qualifier that qualifies its columns and no column
 * outside it; where several do (a view's own name inside it, and the alias it is read under), the
 * one referenced nearest the root of the plan, which is where the user wrote it. An input no
 * such name fits (a join of two relations, say) goes by its columns.
 */
private[optimizer] class InputNames(plan: LogicalPlan) {

  /** Per qualifier, the ids of the columns it qualifies and the depth of its shallowest use. */
  private val qualifiers: Map[String, (Set[ExprId], Int)] = {
    val found = mutable.LinkedHashMap.empty[String, (Set[ExprId], Int)]
    def visit(node: LogicalPlan, depth: Int): Unit = {
      node.expressions.foreach(_.foreach {
        case column: AttributeReference if column.qualifier.nonEmpty =>
          val name = column.qualifier.last
          val (ids, shallowest) = found.getOrElse(name, (Set.empty[ExprId], depth))
          found(name) = (ids + column.exprId, shallowest min depth)
        case _ =>
      })
      node.children.foreach(visit(_, depth + 1))
    }
    visit(plan, 0)
    found.toMap
  }

  def of(input: LogicalPlan): Input = {
    val output = input.output.map(_.exprId).toSet
    lazy val within = input.flatMap(_.output).map(_.exprId).toSet
    val candidates = qualifiers.filter { case (_, (ids, _)) =>
      ids.exists(output) && ids.subsetOf(within)
    }
    val nearest = candidates.toSeq.sortBy { case (name, (_, depth)) => (depth, name) }.headOption
    // Qualifiers of disjoint columns name several relations, not this input.
    val name = nearest.filter { case (_, (ids, _)) =>
      candidates.values.forall { case (others, _) => (others & ids & output).nonEmpty }
    }.map(_._1)
    Input(name, input.output.map(_.name))
  }
}
