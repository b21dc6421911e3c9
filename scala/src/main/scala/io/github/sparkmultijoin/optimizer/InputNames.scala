package io.github.sparkmultijoin.optimizer

import scala.collection.mutable

import io.github.sparkmultijoin.optimizer.FusionVerdict.Input

import org.apache.spark.sql.catalyst.expressions.{AttributeReference, ExprId}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, SubqueryAlias}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag

/**
 * The names the query gave the inputs of `plan` (an alias, or a table's or view's name), for
 * the verdicts to name inputs as the user wrote them.
 *
 * The optimizer removes the aliases (SubqueryAlias) before the rule runs, so the names are read
 * where they survive. First, the relation's own tag ([[InputNames.Record]], set before every
 * optimization, when the aliases are still there). Else the qualifiers: each column reference
 * the analyzer resolved through an alias keeps its name (`o.order_id`). An input takes a
 * qualifier used outside it (a view's own names inside it are not what the query calls it) that
 * qualifies its columns and no column outside it; where several do (an input inside a subquery
 * is read through both names), the one used deepest, nearest the input. An input of several
 * relations (a join below the chain, say), or without a name either way, goes by its columns.
 */
private[sparkmultijoin] class InputNames(plan: LogicalPlan) {

  def of(input: LogicalPlan): Input = {
    val name = input.collectLeaves() match {
      case Seq(relation) => relation.getTagValue(InputNames.Tag).orElse(nameOf(input))
      case _ => None
    }
    Input(name, input.output.map(_.name))
  }

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

object InputNames {

  /** The name the query reads a relation under. */
  val Tag: TreeNodeTag[String] = TreeNodeTag("spark-multijoin.inputName")

  /**
   * Tags each relation (a leaf) with the outermost alias over it and no other relation: `o` in
   * `STREAM(orders) o`, `orders` where nothing else names it. A plan normalization rule, so that
   * it runs before every optimization, a running query's micro-batches included, while the
   * aliases are still in the plan; their relations are new each micro-batch, and the optimizer
   * keeps tags where it copies a node. Returns the plan unchanged.
   */
  object Record extends Rule[LogicalPlan] {
    override def apply(plan: LogicalPlan): LogicalPlan = {
      val named = new java.util.IdentityHashMap[LogicalPlan, Unit]()
      // Top down: an outer alias comes before the aliases inside it.
      plan.foreach {
        case alias: SubqueryAlias =>
          alias.collectLeaves() match {
            case Seq(relation) if !named.containsKey(relation) =>
              named.put(relation, ())
              relation.setTagValue(Tag, alias.alias)
            case _ =>
          }
        case _ =>
      }
      plan
    }
  }
}
