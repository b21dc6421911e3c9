package io.github.sparkmultijoin.analysis

import io.github.sparkmultijoin.logical.ChangelogJoin

import org.apache.spark.sql.catalyst.expressions.{AliasHelper, And, Attribute, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Makes joins of changelog inputs (`Changelogs.declare`) changelog joins, and takes the
 * projections and filters above them into them.
 *
 * Why in analysis: Spark checks a streaming query's analyzed plan when it starts
 * (`ResolveWriteToStream`) and refuses an outer join of streams without watermarks and time
 * bounds, which a changelog join needs neither of; it also refuses no custom node. So the joins
 * become a [[ChangelogJoin]] while the DataFrame that joins them is analyzed, before the
 * query exists. A filter or projection above the join is taken into it because the join's
 * output is changes: a filter on the changes would drop an update that makes a row stop
 * passing, where the row must be deleted, so the filter applies to the joined rows before and
 * after each change instead. Any other operator above it is refused ([[CheckChangelogJoins]]).
 * Plans without changelog inputs are returned unchanged.
 */
object FuseChangelogJoins extends Rule[LogicalPlan] with AliasHelper {

  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case join: Join
        if join.resolved && Seq(join.left, join.right).exists(ChangelogSides.isChangelog) =>
      ChangelogJoinMerge(join)
    case Project(list, cj: ChangelogJoin) if !cj.raw && list.forall(_.resolved) =>
      absorbed(cj, list.filterNot(isChangeType(cj, _)), None)
    case Filter(condition, cj: ChangelogJoin) if !cj.raw && condition.resolved =>
      absorbed(cj, cj.visibleOutput, Some(condition))
  }

  /** `cj` with the select `list` and the filter `condition` (over its output) above it. */
  private def absorbed(cj: ChangelogJoin, list: Seq[NamedExpression],
      condition: Option[Expression]): ChangelogJoin = {
    val aliases = getAliasMap(cj.projectList.getOrElse(Nil))
    (list ++ condition).foreach(check(cj, _))
    val filter = condition.map(replaceAlias(_, aliases))
    val projected = cj.copy(
      filter = (cj.filter ++ filter).reduceOption(And),
      projectList = Some(list.map(replaceAliasButKeepName(_, aliases))))
    cj.rowIds.flatten.foreach { id =>
      if (ChangelogJoin.outputOf(id, projected.visibleOutput, projected.projectList).isEmpty) {
        throw new ChangelogJoinException(s"The select above a changelog join leaves out the " +
          s"row id `${id.name}`: its output rows are identified by its inputs' row ids, so " +
          "keep them in the select.")
      }
    }
    projected.withJoinedNullability.withChangeType
  }

  // The select over a join of changelog joins lists each one's change type: the join has one.
  private def isChangeType(cj: ChangelogJoin, item: NamedExpression): Boolean = item match {
    case a: Attribute => cj.changeColumns.exists(_.exprId == a.exprId) ||
      a.name == ChangelogJoin.ChangeTypeName && !cj.visibleOutput.exists(_.exprId == a.exprId)
    case _ => false
  }

  private def check(cj: ChangelogJoin, expression: Expression): Unit = {
    if (!expression.deterministic) throw new ChangelogJoinException(s"${expression.sql} above " +
      "a changelog join is not deterministic: each change would be read differently.")
    expression.references.find(cj.changeColumns.contains).foreach { column =>
      throw new ChangelogJoinException(s"${expression.sql} reads `${column.name}` of a " +
        "changelog join, which holds its changes, not its rows: a filter or a select above " +
        "it applies to its rows.")
    }
  }

}
