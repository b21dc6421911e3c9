package io.github.sparkmultijoin.analysis

import io.github.sparkmultijoin.logical.MultiJoinHint
import io.github.sparkmultijoin.ttl.{StateTtl, StateTtlHint}

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.expressions.Literal
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, SubqueryAlias, UnresolvedHint}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Takes the multi-join's hints, from SQL text or `DataFrame.hint`, into nodes of their own:
 *  - Flink's `MULTI_JOIN(a, b, c)` (`SELECT /*+ MULTI_JOIN(a, b, c) */`,
 *    `hint("MULTI_JOIN", "a", "b", "c")`) into a [[MultiJoinHint]];
 *  - `STATE_TTL(a, '1d')`, one or more pairs of an input and a duration
 *    (`/*+ STATE_TTL(o, '1d'), STATE_TTL(p, '12h') */`, `hint("STATE_TTL", "o", "1d")`), into a
 *    [[StateTtlHint]]. Spark's hint grammar takes no `o = '1d'`, as Flink's STATE_TTL has it.
 *
 * Why a resolution rule: Spark removes the hints it does not know once resolution is over, and
 * the names only mean something while the aliases (SubqueryAlias) that carry them are in the
 * plan; the optimizer removes those first thing. So the names are resolved here, to the output
 * of the inputs they alias. A name that matches no input gives a warning naming it, as Spark
 * warns of a join hint naming no relation. Plans without the hints are returned unchanged.
 */
object ResolveMultiJoinHint extends Rule[LogicalPlan] with Logging {

  val HintName = "MULTI_JOIN"

  val StateTtlHintName = "STATE_TTL"

  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case UnresolvedHint(name, parameters, child)
        if name.equalsIgnoreCase(HintName) && child.resolved =>
      MultiJoinHint(namedInputs(HintName, parameters.map(parameterName), child), Nil, child)
        .rebound
    case UnresolvedHint(name, parameters, child)
        if name.equalsIgnoreCase(StateTtlHintName) && child.resolved =>
      val ttls = durations(parameters.map(parameterName))
      val found = namedInputs(StateTtlHintName, ttls.map(_._1), child).toSet
      StateTtlHint(ttls.filter { case (input, _) => found(input) }, Nil, child).rebound
  }

  /** The names of `names` that match an alias in `child`; a warning names each other one. */
  private def namedInputs(hint: String, names: Seq[String], child: LogicalPlan): Seq[String] = {
    val aliases = child.collect { case alias: SubqueryAlias => alias }
    val (found, missing) = names.partition(name => aliases.exists(_.alias.equalsIgnoreCase(name)))
    missing.foreach { name =>
      logWarning(s"Hint $hint($name): no input of the query is named $name, so the hint " +
        s"does not apply to it. Named inputs: ${aliases.map(_.alias).distinct.mkString(", ")}")
    }
    found
  }

  /** The STATE_TTL hint's pairs of an input and its duration (ms), or an error saying why not. */
  private def durations(parameters: Seq[String]): Seq[(String, Long)] = {
    def invalid(problem: String) = throw new IllegalArgumentException(
      s"Hint $StateTtlHintName(${parameters.mkString(", ")}): $problem Write " +
        s"$StateTtlHintName(input, 'duration'), for example $StateTtlHintName(o, '1 day'), or " +
        s"several pairs: $StateTtlHintName(o, '1 day', p, '12 hours').")
    if (parameters.isEmpty || parameters.length % 2 != 0) {
      invalid("it takes pairs of an input's name and a duration.")
    }
    parameters.grouped(2).map { case Seq(input, duration) =>
      input -> StateTtl.parseMs(duration).fold(invalid, identity)
    }.toSeq
  }

  /**
   * Binds every multi-join hint in a plan to the relations its names alias now, before the plan
   * is optimized (see [[MultiJoinHint]]). Plans without the hints are returned unchanged.
   */
  object Bind extends Rule[LogicalPlan] {
    override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
      case hint: MultiJoinHint => hint.rebound
      case hint: StateTtlHint => hint.rebound
    }
  }

  private def parameterName(parameter: Any): String = parameter match {
    case name: String => name
    case UnresolvedAttribute(nameParts) => nameParts.mkString(".")
    case literal: Literal => literal.value.toString
    case other => other.toString
  }
}
