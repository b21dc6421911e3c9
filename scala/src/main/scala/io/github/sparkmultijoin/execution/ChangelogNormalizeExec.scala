package io.github.sparkmultijoin.execution

import scala.collection.mutable

import io.github.sparkmultijoin.execution.MultiJoinMetrics.{NUM_IDEMPOTENT_CHANGES, NUM_OUTDATED_CHANGES, NUM_TOTAL_STATE_ROWS, NUM_UPDATED_STATE_ROWS}
import io.github.sparkmultijoin.execution.state.{Applied, ChangelogStateFormat}
import io.github.sparkmultijoin.logical.{ChangeTypes, ChangelogNormalize}
import io.github.sparkmultijoin.model.{ChangelogJoinShape, MicroBatchContext}
import io.github.sparkmultijoin.restart.{ChangelogDeclarations, OperatorProperties}

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Literal, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.{Distribution, StatefulOpClusteredDistribution}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStore, StateStoreColFamilySchema, StateStoreOps}
import org.apache.spark.sql.multijoin.StateStoreShim

/**
 * A changelog input's changes ordered by row id ([[ChangelogNormalize]]): per micro-batch and
 * row id, the changes apply in version order to the row id's last applied change, which the
 * state keeps ([[Applied]], by row id), as [[ChangelogChanges]] applies them; where the row
 * changed, it emits the removal of its old version (`delete`, at its old join key) and the put
 * of its new one (`insert`), each with the micro-batch as its version. A partition holds its
 * batch's changes grouped by row id, as a row id's changes apply together, and streams its
 * output; the state commits once the output is read.
 *
 * @param shape       the one input, as a changelog join reads it
 * @param description the operator as errors name it
 * @param kept        the row id and the columns the join key reads: what the removal of a row's
 *                    old version needs of it
 * @param stateFormat how its state keeps each row id's last change
 */
case class ChangelogNormalizeExec(
    shape: ChangelogJoinShape,
    description: String,
    stateInfo: Option[StatefulOperatorStateInfo],
    batch: Option[MicroBatchContext],
    kept: Seq[Attribute],
    stateFormat: ChangelogStateFormat,
    child: SparkPlan)
  extends StatefulExec {

  override def nodeName: String = "ChangelogNormalize"

  override def shortName: String = ChangelogNormalize.OperatorName

  override def output: Seq[Attribute] = child.output

  private def rowId: Seq[Attribute] = shape.rowIds.head

  private def keySchema = DataTypeUtils.fromAttributes(rowId)

  override protected def numInputs: Int = 1

  override def requiredChildDistribution: Seq[Distribution] =
    StatefulOpClusteredDistribution(rowId, numStatePartitions) :: Nil

  override def getColFamilySchemas(
      shouldBeNullable: Boolean): Map[String, StateStoreColFamilySchema] = {
    val name = StateStore.DEFAULT_COL_FAMILY_NAME
    Map(name -> StateStoreColFamilySchema(name, 0, keySchema, 0, stateFormat.valueSchema,
      Some(NoPrefixKeyStateEncoderSpec(keySchema))))
  }

  override protected def operatorProperties: OperatorProperties =
    ChangelogDeclarations.ofOrdering(shape, kept, stateFormat.version)

  override protected def doExecute(): RDD[InternalRow] = {
    val info = runningStateInfo
    metrics // created on the driver, before tasks refer to them
    child.execute().mapPartitionsWithStateStore(info, keySchema, stateFormat.valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema), session.sessionState,
      Some(StateStoreShim.stateStoreCoordinator(session)))(process(info.storeVersion))
  }

  private def process(batchId: Long)(
      store: StateStore,
      rows: Iterator[InternalRow]): Iterator[InternalRow] = {
    abortIfNotCommitted(store)
    val changes = new ChangelogChanges(shape, Nil, description)
    val byId = mutable.LinkedHashMap.empty[UnsafeRow, mutable.ArrayBuffer[Change]]
    rows.foreach { row =>
      val change = changes.change(0, row)
      byId.getOrElseUpdate(change.id, mutable.ArrayBuffer.empty) += change
    }
    val emit = ChangeRows.ofOrdering(shape.currentColumns(0).map(_.dataType), batchId)
    val storeValue = UnsafeProjection.create(stateFormat.valueSchema)
    val stored = storedRow
    val out = byId.iterator.flatMap { case (id, idChanges) =>
      val before = Option(store.get(id)).map(stateFormat.applied(_, shape.widths.head))
      val applied = mutable.HashMap.empty[(Int, UnsafeRow), Applied] ++ before.map((0, id) -> _)
      if (changes.apply(idChanges.toSeq, applied).isEmpty) Iterator.empty
      else {
        val after = applied((0, id))
        store.put(id,
          storeValue(stateFormat.valueRow(after.copy(row = after.row.map(stored)), batchId)))
        metric(NUM_UPDATED_STATE_ROWS) += 1
        netChange(emit, before.flatMap(_.row), after.row)
      }
    }
    streamed(out) {
      commit(store)(store.commit())
      metric(NUM_TOTAL_STATE_ROWS) += store.metrics.numKeys
      metric(NUM_OUTDATED_CHANGES) += changes.numOutdated
      metric(NUM_IDEMPOTENT_CHANGES) += changes.numIdempotent
    }
  }

  /** The rows a row id's net change in a micro-batch is: its old version out, its new one in. */
  private def netChange(emit: ChangeRows, before: Option[UnsafeRow], after: Option[UnsafeRow])
      : Iterator[InternalRow] =
    if (before == after) Iterator.empty
    else before.iterator.map(emit(ChangeTypes.Delete, _)) ++
      after.iterator.map(emit(ChangeTypes.Insert, _))

  /**
   * The current row as the state keeps it: whole, or with the columns not [[kept]] null (a
   * type's default where the column cannot be null, as the rows emitted must hold).
   */
  private def storedRow: UnsafeRow => UnsafeRow = {
    val columns = shape.currentColumns(0)
    if (stateFormat.orderingKeepsWholeRows) identity
    else {
      val keep = AttributeSet(kept)
      val project = UnsafeProjection.create(columns.map { column =>
          if (keep.contains(column)) column
          else if (column.nullable) Literal(null, column.dataType)
          else Literal.default(column.dataType)
        }, columns)
      project(_)
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): ChangelogNormalizeExec =
    copy(child = newChild)
}
