package io.github.sparkmultijoin.planning

import io.github.sparkmultijoin.optimizer.FusionVerdict
import io.github.sparkmultijoin.optimizer.FusionVerdict.Collapsed

import org.apache.spark.sql.ExtendedExplainGenerator
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.SparkPlan

/**
 * EXPLAIN's section on the streaming joins, added by Spark's extended-explain hook
 * (`spark.sql.extendedExplainProviders`, which `configure_spark_with_multijoin` sets): for each
 * chain of streaming joins, what fused into which multi-join on which key, and the verdicts of
 * [[io.github.sparkmultijoin.optimizer.CollapseStreamingJoinChains]] on it, in their words.
 *
 * Why from the plan: the rule attaches its verdicts to the logical plan it returns
 * ([[FusionVerdict.Tag]]), and each physical operator links back to the logical node it was
 * planned from; so EXPLAIN, the Spark UI's plan description (which Spark writes with the same
 * hook, per micro-batch) and [[FusionReport]] all show what the rule decided for that very plan.
 */
class FusionExplainGenerator extends ExtendedExplainGenerator {

  override def title: String = FusionExplainGenerator.Title

  override def generateExtendedInfo(plan: SparkPlan): String =
    FusionExplainGenerator.text(FusionExplainGenerator.chains(plan))
}

object FusionExplainGenerator {

  val Title = "spark-multijoin"

  /** The verdicts on each chain of streaming joins of `plan`, top down. */
  def chains(plan: SparkPlan): Seq[Seq[FusionVerdict]] = {
    val logical = plan.collectWithSubqueries { case node => node.logicalLink }.flatten
    logical.flatMap(chains).distinct
  }

  /** The verdicts on each chain of streaming joins of the logical `plan`, top down. */
  def chains(plan: LogicalPlan): Seq[Seq[FusionVerdict]] =
    plan.collectWithSubqueries { case node =>
      node.getTagValue(FusionVerdict.Tag).toSeq ++
        node.expressions.flatMap(_.getTagValue(FusionVerdict.Tag))
    }.flatten.distinct

  /**
   * The section's text: per chain a heading, a line per multi-join it fused into (its operator
   * id, inputs and key), and a line per verdict, warnings marked.
   */
  def text(chains: Seq[Seq[FusionVerdict]]): String =
    if (chains.isEmpty) "No chain of streaming joins.\n"
    else {
      chains.zipWithIndex.map { case (verdicts, index) =>
        val heading = s"Streaming join chain ${index + 1}:"
        (heading +: verdicts.flatMap(fusedLines) ++: verdicts.map(verdictLine)).mkString("\n")
      }.mkString("", "\n", "\n")
    }

  private def fusedLines(verdict: FusionVerdict): Seq[String] = verdict match {
    case Collapsed(groups, _, _) =>
      groups.map { group =>
        val ids = group.operatorIds.mkString(", ")
        val key = group.key.map(_.mkString(" = ")).mkString(", ")
        s"  StreamingMultiJoin $ids: ${group.inputs.map(_.shown).mkString(", ")} on $key"
      }
    case _ => Nil
  }

  private def verdictLine(verdict: FusionVerdict): String =
    (if (verdict.isWarning) "  WARNING: " else "  - ") + verdict.message
}
