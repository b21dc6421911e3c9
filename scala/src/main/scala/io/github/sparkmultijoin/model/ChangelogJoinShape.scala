package io.github.sparkmultijoin.model

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression}

/**
 * What a changelog join computes, as its operator reads it: each input's changes and current
 * rows, and the join of the current rows. Derived once from the logical join.
 *
 * @param inputs      per input, the columns of its changes: its current row's (the first
 *                    `widths(i)`), then its change type, row version and whether it passes
 *                    its filters
 * @param widths      per input, how many current-row columns it has
 * @param rowIds      per input, its row id columns
 * @param formats     per input, where its changes come from
 * @param names       per input, how the query names it
 * @param keys        per input, the shared key over its current row
 * @param condition   the inner joins' conditions, key equalities included
 * @param tree        which inputs are outer, and the order their joins apply in
 * @param onClauses   per input, its ON clause if it is outer
 * @param filter      the filter above the join
 */
case class ChangelogJoinShape(
    inputs: Seq[Seq[Attribute]],
    widths: Seq[Int],
    rowIds: Seq[Seq[Attribute]],
    formats: Seq[String],
    names: Seq[String],
    keys: Seq[Seq[Expression]],
    condition: Option[Expression],
    tree: JoinTree,
    onClauses: Seq[Expression],
    filter: Option[Expression]) {

  def numInputs: Int = inputs.length

  def currentColumns(input: Int): Seq[Attribute] = inputs(input).take(widths(input))

  /** The columns of the join: each input's current row, nullable where it may be padded. */
  def joinedOutput: Seq[Attribute] = tree.joinedColumns(inputs.indices.map(currentColumns))

  /**
   * Whether `input`'s key is a function of its row id, so that a change of a row cannot move
   * it to another key, and a change without the row's old image (`upsert`) can be applied.
   */
  def keyWithinRowId(input: Int): Boolean =
    keys(input).forall(_.references.subsetOf(AttributeSet(rowIds(input))))

  /**
   * Whether an output row stays under one join key: each has a row of an input whose key is a
   * function of its row id, part of the output's identity. Then the changes of an identity in a
   * micro-batch all come from its key's task, which nets them there.
   */
  def identityKeepsKey: Boolean = tree.alwaysPresent.exists(keyWithinRowId)

  /** How errors name `input`. */
  def described(input: Int): String =
    if (numInputs == 1) names(input) else s"${names(input)} (input $input)"
}
