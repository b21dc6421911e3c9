package io.github.sparkmultijoin.optimizer

import io.github.sparkmultijoin.logical.MultiJoinHint

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.expressions.Literal
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, SubqueryAlias, UnresolvedHint}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Takes Flink's `MULTI_JOIN(a, b, c)` hint, from SQL text (`SELECT /*+ MULTI_JOIN(a, b, c) */`)
 * or `DataFrame.hint("MULTI_JOIN", "a", "b", "c")`, into a [[MultiJoinHint]].
 *
 * Why a resolution rule: Spark removes the hints it does not know once resolution is over, and
 * the names only mean something while the aliases (SubqueryAlias) that carry them are in the
 * plan; the optimizer removes those first thing. So the names are resolved here, to the output
 * of the inputs they alias. A name that matches no input gives a warning naming it, as Spark
 * warns of a join hint naming no relation. Plans without the hint are returned unchanged.
 */
object ResolveMultiJoinHint extends Rule[LogicalPlan] with Logging {

  val HintName = "MULTI_JOIN"

  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case UnresolvedHint(name, parameters, child)
        if name.equalsIgnoreCase(HintName) && child.resolved =>
      val names = parameters.map(parameterName)
      val aliases = child.collect { case alias: SubqueryAlias => alias }
      val (found, missing) = names.partition(name => aliases.exists(_.alias.equalsIgnoreCase(name)))
      missing.foreach { name =>
        logWarning(s"Hint $HintName($name): no input of the query is named $name, so the hint " +
          s"does not apply to it. Named inputs: ${aliases.map(_.alias).distinct.mkString(", ")}")
      }
      MultiJoinHint(found, Nil, child).rebound
  }

  /**
   * Binds every MULTI_JOIN hint in a plan to the relations its names alias now, before the plan
   * is optimized (see [[MultiJoinHint]]). Plans without the hint are returned unchanged.
   */
  object Bind extends Rule[LogicalPlan] {
    override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
      case hint: MultiJoinHint => hint.rebound
    }
  }

  private def parameterName(parameter: Any): String = parameter match {
    case name: String => name
    case UnresolvedAttribute(nameParts) => nameParts.mkString(".")
    case literal: Literal => literal.value.toString
    case other => other.toString
  }
}
