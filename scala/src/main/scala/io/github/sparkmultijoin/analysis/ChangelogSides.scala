package io.github.sparkmultijoin.analysis

import io.github.sparkmultijoin.logical.{ChangeTypes, ChangelogInput, ChangelogJoin, ChangelogNormalize}
import io.github.sparkmultijoin.model.JoinTree
import io.github.sparkmultijoin.optimizer.FusionVerdict.Input

import org.apache.spark.sql.catalyst.expressions.{Alias, AliasHelper, And, Attribute, AttributeSet, Cast, Coalesce, CreateArray, EqualTo, Expression, If, Literal, NamedExpression, RaiseError}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project, SubqueryAlias, View}
import org.apache.spark.sql.types.{LongType, StringType}

/**
 * A side of a join of changelogs: a changelog input, or a changelog join, under the
 * projections, filters and aliases the query puts on it. As an input of a changelog join, its
 * rows are changes, so its filters apply to its current rows (a row that stops passing is
 * removed) and its projections make the current row's columns.
 */
private[analysis] object ChangelogSides extends AliasHelper {

  /** The base of a side and, over the base's columns, the side's columns and filter. */
  case class Side(base: LogicalPlan, columns: Seq[NamedExpression], filter: Option[Expression])

  def peel(plan: LogicalPlan): Option[Side] = plan match {
    case SubqueryAlias(_, child) => peel(child)
    case view: View => peel(view.child)
    case Project(list, child) => peel(child).map { side =>
        val aliases = getAliasMap(side.columns)
        side.copy(columns = list.map(replaceAliasButKeepName(_, aliases)))
      }
    case Filter(condition, child) => peel(child).map { side =>
        val replaced = replaceAlias(condition, getAliasMap(side.columns))
        side.copy(filter = Some(side.filter.fold(replaced)(And(_, replaced))))
      }
    case base: ChangelogInput => Some(Side(base, base.output, None))
    case base: ChangelogJoin => Some(Side(base, base.output, None))
    case _ => None
  }

  def isChangelog(plan: LogicalPlan): Boolean = peel(plan).isDefined

  /** How the query names `side`: its alias, view or table, else its columns. */
  def nameOf(side: LogicalPlan): Input = {
    def alias(plan: LogicalPlan): Option[String] = plan match {
      case SubqueryAlias(alias, _) => Some(alias.name)
      case Project(_, child) => alias(child)
      case Filter(_, child) => alias(child)
      case input: ChangelogInput => alias(input.child)
      case _ => None
    }
    Input(alias(side), side.output.map(_.name).filterNot(_ == ChangelogJoin.ChangeTypeName))
  }

  /**
   * `plan`, a side, as a changelog join of one input whose columns are `plan`'s, keyed by
   * `key` (over those columns). A changelog join below is read as its raw changes.
   */
  def asInput(plan: LogicalPlan, key: Seq[Expression]): ChangelogJoin = {
    val side = peel(plan).get
    val columns = plan.output.map(column =>
      side.columns.find(_.exprId == column.exprId) match {
        case Some(alias: Alias) => Alias(alias.child, column.name)(column.exprId, column.qualifier)
        case _ => column
      })
    val (raw, rowId, changes, format) = changesOf(side.base)
    val name = nameOf(plan).shown
    // The change type of a changelog join below: its changes are read as this input's.
    val hidden = side.base match {
      case below: ChangelogJoin => below.changeColumns.toSet
      case _ => Set.empty[Attribute]
    }
    val current = columns.filterNot(c => hidden.exists(_.exprId == c.exprId))
    checkReads(current ++ side.filter, hidden, format)
    val ids = rowId.map(id => currentRowId(id, current, format))
    // A row of an input keyed otherwise than by its row id can move between keys.
    val movable = !side.base.isInstanceOf[ChangelogJoin] &&
      !key.forall(_.references.forall(k => ids.exists(_.exprId == k.exprId)))
    val fullChangelog = side.base match {
      case input: ChangelogInput => input.fullChangelog
      case _ => false
    }
    val passes = Coalesce(Seq(side.filter.getOrElse(Literal.TrueLiteral), Literal.FalseLiteral))
    val kind = if (movable && fullChangelog) withoutUpserts(changes.head, format) else changes.head
    val changeColumns = (kind +: changes.tail :+ passes).zip(ChangelogJoin.InputChangeColumns)
      .map { case (expression, name) => Alias(expression, name)() }
    val inputChanges = Project(current ++ changeColumns, raw)
    ChangelogJoin(
      Seq(if (movable && !fullChangelog) {
        ChangelogNormalize(ids, keyColumns(key, current), format, name, inputChanges)
      } else inputChanges),
      Seq(current.length), Seq(ids), Seq(format), Seq(name), Seq(key), None,
      JoinTree.inner(1), Seq(Literal.TrueLiteral), None, Nil)
  }

  /**
   * The change type of a movable input that is a full changelog, which therefore skips the
   * ordering by row id: each removal goes to its old key, as its image says. An upsert has no
   * old image, so it would leave the row's old version where it was; it fails instead.
   */
  private def withoutUpserts(kind: Expression, format: String): Expression = {
    val message = s"A change of a $format input is an upsert, which has no old image, but the " +
      "input was declared a full changelog and joins on a key outside its row id, so the " +
      "upsert could leave the row's old version under its old key. Declare it without " +
      "full_changelog (the ordering by row id then finds the old version)."
    If(EqualTo(kind, Literal(ChangeTypes.Upsert)), Cast(RaiseError(Literal(message)), StringType),
      kind)
  }

  /** A side's base as its changes: their plan, row id, change type and version, format. */
  private def changesOf(base: LogicalPlan)
      : (LogicalPlan, Seq[Attribute], Seq[Expression], String) = base match {
    case input: ChangelogInput =>
      val version = CreateArray(input.rowVersion.map(Cast(_, LongType)))
      (input.child, input.rowId, Seq(input.changeType, version), input.format)
    case below: ChangelogJoin =>
      val rawBelow =
        below.copy(changeColumns = below.changeColumns.take(1) :+ ChangelogJoin.rowVersion())
      (rawBelow, below.identity, rawBelow.changeColumns, ChangelogJoin.StackedFormat)
  }

  /** The current row's columns that `key` reads. */
  private def keyColumns(key: Seq[Expression], current: Seq[NamedExpression]): Seq[Attribute] = {
    val read = AttributeSet(key.flatMap(_.references))
    current.map(_.toAttribute).filter(read.contains)
  }

  private def currentRowId(id: Attribute, current: Seq[NamedExpression], format: String) =
    ChangelogJoin.outputOf(id, current).getOrElse(
      throw new ChangelogJoinException(s"The row id `${id.name}` of a $format input is not " +
        "among the columns the join reads of it: keep it in the select on that input, as the " +
        "join's changes are identified by it."))

  private def checkReads(expressions: Seq[Expression], hidden: Set[Attribute], format: String) =
    expressions.foreach { expression =>
      if (!expression.deterministic) throw new ChangelogJoinException(s"A $format input of a " +
        s"changelog join is read by ${expression.sql}, which is not deterministic: a change " +
        "must give the same current row each time it is read.")
      expression.references.find(r => hidden.exists(_.exprId == r.exprId)).foreach { column =>
        throw new ChangelogJoinException(s"The change column `${column.name}` of a $format " +
          s"input is read by ${expression.sql}: a changelog join consumes it.")
      }
    }
}
