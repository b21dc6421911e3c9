package io.github.sparkmultijoin.logical

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * A stream of changes declared a changelog (`Changelogs.declare`): each row of `child` is a
 * change of the row whose identity is `rowId`. It reads as the input's current rows, so its
 * output is `child`'s columns but the change columns, which only a changelog join reads.
 *
 * Why a node of its own: it marks the input for the analysis rule that makes joins of it
 * changelog joins, and it hides the change columns from the query while keeping them in the
 * plan for the join.
 *
 * @param rowId      the identity (primary key) of the row a change is of, among the output
 * @param rowVersion the integer columns that order the changes of one identity
 * @param changeType the change type (`ChangeTypes`)
 * @param consumed   other columns of the changes that the current rows do not have
 * @param format     where the changes come from, as EXPLAIN and the errors name it
 * @param fullChangelog whether the changes are a full changelog: every removal
 *                      (`update_preimage`, `delete`) carries the row's whole old image, and a
 *                      row's changes arrive in version order (a change may come again, none
 *                      comes first after a newer one), as Delta's change data feed's do
 */
case class ChangelogInput(
    rowId: Seq[Attribute],
    rowVersion: Seq[Attribute],
    changeType: Attribute,
    consumed: Seq[Attribute],
    format: String,
    fullChangelog: Boolean,
    child: LogicalPlan) extends UnaryNode {

  def changeColumns: AttributeSet = AttributeSet(rowVersion ++ (changeType +: consumed))

  override def output: Seq[Attribute] = child.output.filterNot(changeColumns.contains)

  override protected def withNewChildInternal(newChild: LogicalPlan): ChangelogInput =
    copy(child = newChild)
}

object ChangelogInput {

  /** A changelog of `format` as errors name it: a debezium changelog; a changelog. */
  def kind(format: String): String =
    if (format == "changelog") format else s"$format changelog"
}

/**
 * The change types a changelog input's rows carry: Delta's change data feed's words, which are
 * also those of Spark's `Changelog` connector interface, and `upsert`, a row's new version
 * with no old image (an upsert stream's rows, Debezium's updates without `before`).
 */
object ChangeTypes {
  val Insert = "insert"
  val UpdatePreimage = "update_preimage"
  val UpdatePostimage = "update_postimage"
  val Delete = "delete"
  val Upsert = "upsert"

  /** The types that remove the identity's row: at one version, they apply before the others. */
  val Removes: Set[String] = Set(UpdatePreimage, Delete)

  val All: Seq[String] = Seq(Insert, UpdatePreimage, UpdatePostimage, Delete, Upsert)
}
