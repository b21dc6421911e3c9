package io.github.sparkmultijoin.logical

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * A changelog input's changes ordered by row id, as Flink's ChangelogNormalize orders them:
 * the changes each micro-batch applies to each row id (by version, wherever they come from),
 * as the removal of the row's old version and the put of its new one.
 *
 * Why: a changelog join keeps its rows under their join key. Where an input's key is not a
 * column of its row id, a row can move between keys, and its changes under two keys meet only
 * by row id: a change without an old image (an upsert), an insert of a row live under another
 * key, or a key move that arrives after a newer one would otherwise leave the row under its old
 * key too. A full changelog (Delta's change data feed) needs none of it: each removal carries
 * the old row, so it goes to the key the old version is under, and as a row's changes arrive in
 * order, the version rule kept per key reads each key's changes as it reads them by row id.
 * Its children and output are a changelog join's input changes ([[ChangelogJoin]]).
 *
 * @param rowId      the row id columns, among the current row's
 * @param keyColumns the current row's columns that the join key reads: with the row id, all that
 *                   the removal of a row's old version needs to find it
 * @param format     where the changes come from
 * @param name       how the query names the input, for the errors
 * @param operatorId the stateful operator id, set by the optimizer
 */
case class ChangelogNormalize(
    rowId: Seq[Attribute],
    keyColumns: Seq[Attribute],
    format: String,
    name: String,
    child: LogicalPlan,
    operatorId: Long = -1L) extends UnaryNode {

  override def output: Seq[Attribute] = child.output

  // Every column is kept: the change columns are named by no expression here.
  override def references: AttributeSet = child.outputSet

  def description: String =
    s"The ordering by row id of $name, a ${ChangelogInput.kind(format)}"

  override protected def withNewChildInternal(newChild: LogicalPlan): ChangelogNormalize =
    copy(child = newChild)
}

object ChangelogNormalize {
  val OperatorName = "changelogNormalize"
}
