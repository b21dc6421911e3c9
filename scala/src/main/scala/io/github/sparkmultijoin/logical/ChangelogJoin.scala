package io.github.sparkmultijoin.logical

import io.github.sparkmultijoin.model.JoinTree

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeMap, AttributeReference, AttributeSet, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.{ArrayType, LongType, MetadataBuilder, StringType}

/**
 * A join of changelog inputs on one shared key: the change stream of the join of the inputs'
 * current rows (docs/changelog-joins.md). One stateful operator keeps each input's current row
 * per identity and emits, per micro-batch, the net change of each output row.
 *
 * Each child is an input's changes: its current row's columns (the first `widths(i)`), then its
 * change type, its row version (an array of BIGINT) and whether the row passes the input's
 * filters ([[ChangelogJoin.InputChangeColumns]]). The output identity is the inputs' row ids.
 *
 * @param children      the inputs' changes, in the order their columns appear in the join
 * @param widths        per input, how many current-row columns it has
 * @param rowIds        per input, its row id columns, among its current-row columns
 * @param formats       per input, where its changes come from
 * @param names         per input, how the query names it (its alias, view or table, else its
 *                      columns), for the errors
 * @param keys          per input, the shared key over its current-row columns
 * @param condition     the inner joins' conditions, key equalities included
 * @param tree          which inputs are outer, and the order their joins apply in
 * @param onClauses     per input, its ON clause if it is outer, TRUE otherwise
 * @param filter        the filter above the join, over the joined columns
 * @param changeColumns the change type; for a join that another changelog join reads
 *                      ([[raw]]), also the row version (the micro-batch)
 * @param operatorId    the stateful operator id, set by the optimizer (`NumberChangelogJoins`)
 */
case class ChangelogJoin(
    children: Seq[LogicalPlan],
    widths: Seq[Int],
    rowIds: Seq[Seq[Attribute]],
    formats: Seq[String],
    names: Seq[String],
    keys: Seq[Seq[Expression]],
    condition: Option[Expression],
    tree: JoinTree,
    onClauses: Seq[Expression],
    filter: Option[Expression],
    changeColumns: Seq[Attribute],
    operatorId: Long = -1L) extends LogicalPlan {

  require(Seq(widths, rowIds, formats, names, keys, onClauses, tree.parents).forall(
      _.length == children.length), "every input of a changelog join needs its declaration")

  /** Whether it emits pre-images and versions for a changelog join above it. */
  def raw: Boolean = changeColumns.length == 2

  def currentColumns(input: Int): Seq[Attribute] = children(input).output.take(widths(input))

  /** The columns of the join: each input's current row, nullable where it may be padded. */
  def joinedOutput: Seq[Attribute] = tree.joinedColumns(children.indices.map(currentColumns))

  /** The output identity: each input's row id columns, as the join has them. */
  def identity: Seq[Attribute] = {
    val joined = joinedOutput
    rowIds.flatten.map(id => joined.find(_.exprId == id.exprId).get)
  }

  override def output: Seq[Attribute] = joinedOutput ++ changeColumns

  // Every column of the inputs' changes is read: Catalyst's column pruning would otherwise drop
  // the change columns, which no expression of the join names.
  override def references: AttributeSet = AttributeSet(children.flatMap(_.output))

  override def producedAttributes: AttributeSet = AttributeSet(changeColumns)

  /**
   * This join with the joined columns read as the join makes them: an outer join's padded
   * input has nulls in columns its own relation never has.
   */
  def withJoinedNullability: ChangelogJoin = {
    val fix = ChangelogJoin.nullabilityOf[Expression](joinedOutput) _
    copy(condition = condition.map(fix), onClauses = onClauses.map(fix), filter = filter.map(fix))
  }

  /** This net changelog join with its change type naming its output identity. */
  def withChangeType: ChangelogJoin =
    copy(changeColumns = Seq(ChangelogJoin.changeType(identity, changeColumns.headOption)))

  def description: String = s"The changelog join of ${names.mkString(", ")}"

  override lazy val resolved: Boolean = childrenResolved && expressions.forall(_.resolved)

  override protected def withNewChildrenInternal(
      newChildren: IndexedSeq[LogicalPlan]): ChangelogJoin = copy(children = newChildren)
}

object ChangelogJoin {

  val OperatorName = "changelogJoin"

  /**
   * The format of an input that is a changelog join's changes. Its row id is that join's output
   * identity, null where that join pads an input.
   */
  val StackedFormat = "changelog join"

  /** The name of the change type column, as in Delta's change data feed. */
  val ChangeTypeName = "_change_type"

  /** The key of the change type's metadata that lists the output identity's columns. */
  val RowIdMetadataKey = "spark_multijoin.row_id"

  /** The change columns each input of a changelog join has after its current row's. */
  val InputChangeColumns: Seq[String] = Seq("__change_type", "__row_version", "__passes")

  /** The output's change type, whose metadata names the output identity's columns. */
  def changeType(identity: Seq[Attribute], like: Option[Attribute]): Attribute = {
    val metadata = new MetadataBuilder()
      .putStringArray(RowIdMetadataKey, identity.map(_.name).toArray).build()
    like match {
      case Some(existing: AttributeReference) => existing.withMetadata(metadata)
      case _ => AttributeReference(ChangeTypeName, StringType, nullable = false, metadata)()
    }
  }

  /** Whether `column` is a changelog join's change type. */
  def isChangeType(column: Attribute): Boolean = column.metadata.contains(RowIdMetadataKey)

  /** The row version a raw changelog join emits: the micro-batch. */
  def rowVersion(): Attribute =
    AttributeReference("_row_version", ArrayType(LongType, false), nullable = false)()

  /** The column of `list` that `column` is: itself, or an alias of it. */
  def outputOf(column: Attribute, list: Seq[NamedExpression]): Option[Attribute] =
    list.collectFirst {
      case a: Attribute if a.exprId == column.exprId => a
      case alias @ Alias(a: Attribute, _) if a.exprId == column.exprId => alias.toAttribute
    }

  /** `e` with the columns of `joined` as nullable as `joined` has them. */
  def nullabilityOf[E <: Expression](joined: Seq[Attribute])(e: E): E = {
    val columns = AttributeMap(joined.map(a => a -> a))
    e.transform {
      case a: AttributeReference if columns.contains(a) => a.withNullability(columns(a).nullable)
    }.asInstanceOf[E]
  }
}
