package io.github.sparkmultijoin.analysis

import io.github.sparkmultijoin.logical.ChangelogJoin

import org.apache.spark.sql.catalyst.expressions.{AliasHelper, And, Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, Project, SubqueryAlias}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Rewrites the joins of changelog inputs (`Changelogs.declare`) as changelog joins, two sides at
 * a time ([[ChangelogJoinMerge]]: one changelog join where its tree can express the join, else
 * stacked), takes the filters above them into them, and keeps the change type in the selects
 * above them.
 *
 * Why in analysis: Spark checks a streaming query's analyzed plan when it starts
 * (`ResolveWriteToStream`) and refuses an outer join of streams without watermarks and time
 * bounds, which a changelog join needs neither of; it also refuses no custom node. So the joins
 * become a [[ChangelogJoin]] while the DataFrame that joins them is analyzed, before the
 * query exists. A filter above the join is taken into it because the join's output is
 * changes: a filter on the changes would drop an update that makes a row stop passing, where
 * the row must be deleted, so it applies to the joined rows before and after each change
 * instead. A select applies to changes as to rows, as long as it keeps the output identity
 * (which the sink merges by) and the change type (added where it leaves it out). Any other
 * operator above it is refused ([[CheckChangelogJoins]]). Plans without changelog inputs are
 * returned unchanged.
 */
object RewriteChangelogJoins extends Rule[LogicalPlan] with AliasHelper {

  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case join: Join
        if join.resolved && Seq(join.left, join.right).exists(ChangelogSides.isChangelog) =>
      ChangelogJoinMerge(join)
    case Filter(condition, child) if condition.resolved && changesOf(child).isDefined =>
      check(changesOf(child).get._2, condition)
      pushed(condition, child)
    case project @ Project(list, child) if project.resolved && changesOf(child).isDefined =>
      val (identity, changeType) = changesOf(child).get
      val kept = identity.map(id =>
        ChangelogJoin.outputOf(id, list).getOrElse(
          throw new ChangelogJoinException(s"The select above a changelog join leaves out " +
            s"`${id.name}`, a column of its output identity: its rows are identified by its " +
            "inputs' row ids, so keep them in the select.")))
      val wanted = ChangelogJoin.changeType(kept, Some(changeType))
      if (list.lastOption.contains(wanted)) project
      else Project(list.filterNot(_.exprId == changeType.exprId) :+ wanted, child)
  }

  /**
   * Of a net changelog join under selects and aliases, its output identity as `plan` has it
   * (None for a column the selects leave out) and its change type.
   */
  private def changesOf(plan: LogicalPlan): Option[(Seq[Attribute], Attribute)] = plan match {
    case cj: ChangelogJoin if !cj.raw => Some((cj.identity, cj.changeColumns.head))
    case SubqueryAlias(_, child) => changesOf(child)
    case Project(list, child) => changesOf(child).map { case (identity, changeType) =>
        (identity.map(id => ChangelogJoin.outputOf(id, list).getOrElse(id)), changeType)
      }
    case _ => None
  }

  /** `plan`, a net changelog join under selects and aliases, with `condition` taken into it. */
  private def pushed(condition: Expression, plan: LogicalPlan): LogicalPlan = plan match {
    case cj: ChangelogJoin =>
      cj.copy(filter = (cj.filter.toSeq :+ condition).reduceOption(And)).withJoinedNullability
    case SubqueryAlias(alias, child) => SubqueryAlias(alias, pushed(condition, child))
    case Project(list, child) =>
      Project(list, pushed(replaceAlias(condition, getAliasMap(list)), child))
  }

  private def check(changeType: Attribute, condition: Expression): Unit = {
    if (!condition.deterministic) throw new ChangelogJoinException(s"The filter " +
      s"${condition.sql} above a changelog join is not deterministic: it would read each " +
      "joined row differently before and after a change.")
    if (condition.references.exists(_.exprId == changeType.exprId)) {
      throw new ChangelogJoinException(s"The filter ${condition.sql} reads the change type of " +
        "a changelog join: a filter above it applies to its joined rows, not to its changes.")
    }
  }
}
