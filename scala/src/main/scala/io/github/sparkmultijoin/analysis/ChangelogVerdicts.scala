package io.github.sparkmultijoin.analysis

import io.github.sparkmultijoin.logical.ChangelogJoin
import io.github.sparkmultijoin.optimizer.FusionVerdict
import io.github.sparkmultijoin.optimizer.FusionVerdict.{ChangelogJoined, ChangelogStacked, Input}

import org.apache.spark.sql.catalyst.plans.JoinType
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * What EXPLAIN says of a changelog join: its inputs with their declarations and its key, and
 * for each side of its join that is a changelog join read as one input, why.
 */
private[analysis] object ChangelogVerdicts {

  /**
   * The verdicts on `merged`, made of a join whose sides were, each: the side, its changelog
   * join (of one input where the side is read as one), whether it is a changelog join read as
   * one input, and whether because of another key.
   */
  def apply(
      merged: ChangelogJoin,
      sides: Seq[(LogicalPlan, ChangelogJoin, Boolean, Boolean)],
      joinType: JoinType): Seq[FusionVerdict] = {
    val inputs = sides.flatMap { case (side, g, _, _) => inputsOf(g, side) }
    val declarations = merged.formats.indices.map { i =>
      val join = if (merged.tree.isOuter(i)) s", ${merged.tree.joinType(i)}" else ""
      s"${merged.formats(i)}, row id ${merged.rowIds(i).map(_.name).mkString(", ")}$join"
    }
    val key = merged.keys.head.indices.map(j => merged.keys.map(_(j).sql).distinct.mkString(" = "))
    val earlier = sides.flatMap { case (_, g, _, _) => verdicts(g) }
      .filterNot(_.isInstanceOf[ChangelogJoined])
    val stacked = sides.collect {
      case (side, _, true, otherKey) if below(side).isDefined =>
        ChangelogStacked(inputsOf(below(side).get, side), joinType, otherKey)
    }
    (earlier ++ stacked) :+ ChangelogJoined(inputs, declarations, key)
  }

  private def verdicts(plan: LogicalPlan): Seq[FusionVerdict] =
    plan.getTagValue(FusionVerdict.Tag).getOrElse(Nil)

  /** The changelog join a side is, under its selects and aliases. */
  private def below(side: LogicalPlan): Option[ChangelogJoin] =
    ChangelogSides.peel(side).map(_.base).collect { case cj: ChangelogJoin => cj }

  /** The inputs of `g`, a side's changelog join: as its verdict names them, or the side. */
  private def inputsOf(g: ChangelogJoin, side: LogicalPlan): Seq[Input] =
    verdicts(g).collectFirst { case joined: ChangelogJoined => joined.inputs }
      .filter(_ => g.children.length > 1 || below(side).exists(_ eq g))
      .getOrElse(Seq(ChangelogSides.nameOf(side)))
}
