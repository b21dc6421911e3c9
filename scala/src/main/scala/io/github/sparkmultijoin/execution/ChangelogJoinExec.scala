package io.github.sparkmultijoin.execution

import io.github.sparkmultijoin.execution.MultiJoinMetrics.{NUM_IDEMPOTENT_CHANGES, NUM_OUTDATED_CHANGES, NUM_TOTAL_STATE_ROWS, NUM_UPDATED_STATE_ROWS}
import io.github.sparkmultijoin.execution.state.{ChangelogStateFormat, CurrentRowsState}
import io.github.sparkmultijoin.logical.ChangelogJoin
import io.github.sparkmultijoin.model.{ChangelogJoinShape, MicroBatchContext}
import io.github.sparkmultijoin.restart.{ChangelogDeclarations, OperatorProperties}

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.{Distribution, Partitioning, StatefulOpClusteredDistribution, UnknownPartitioning}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreColFamilySchema, StateStoreOps}
import org.apache.spark.sql.multijoin.StateStoreShim

/**
 * A changelog join ([[ChangelogJoin]]): per micro-batch, the change of each output row of the
 * join of its inputs' current rows.
 *
 * The inputs' changes are hash-partitioned by their join key ([[TaggedInputs]]). Per key the
 * batch changed, a partition joins the key's current rows as the state holds them, applies the
 * key's changes ([[ChangelogChanges]]), joins the rows again ([[CurrentRowsJoin]]) and emits
 * the difference by output identity ([[ChangeRows.diff]]). A partition reads its batch's changes
 * whole, as a key's changes apply together, and streams its output, key by key; the state
 * commits once the output is read. An output row can move between keys in a batch (its rows'
 * keys changed), so a delete under one key and an insert under another may be one update: the
 * net change per identity is made after a shuffle by identity ([[ChangelogNetChangesExec]]), or
 * by the changelog join that reads these changes.
 *
 * @param shape         what it joins, and how
 * @param changeColumns the change type and row version its rows end with
 * @param description   the operator as errors name it
 * @param stateFormat   how its state keeps each row identity's last change
 */
case class ChangelogJoinExec(
    shape: ChangelogJoinShape,
    changeColumns: Seq[Attribute],
    description: String,
    stateInfo: Option[StatefulOperatorStateInfo],
    batch: Option[MicroBatchContext],
    stateFormat: ChangelogStateFormat,
    @transient child: SparkPlan)
  extends StatefulExec {

  override def nodeName: String = "ChangelogJoin"

  override def shortName: String = ChangelogJoin.OperatorName

  override def output: Seq[Attribute] = shape.joinedOutput ++ changeColumns

  override def producedAttributes: AttributeSet = AttributeSet(shape.inputs.flatten) ++
    AttributeSet(changeColumns)

  override protected def numInputs: Int = shape.numInputs

  private def keyTypes = shape.keys.head.map(_.dataType)

  override def requiredChildDistribution: Seq[Distribution] = StatefulOpClusteredDistribution(
    TaggedInputs.keyColumns(child.output, keyTypes.length), numStatePartitions) :: Nil

  override def outputPartitioning: Partitioning = UnknownPartitioning(numStatePartitions)

  override def simpleString(maxFields: Int): String = {
    val inputs = shape.inputs.indices.map { i =>
      val joined = if (shape.tree.isOuter(i)) {
        s" ${shape.tree.joinType(i)} ON ${shape.onClauses(i).sql}"
      } else ""
      s"input$i ${shape.formats(i)} rowId=${shape.rowIds(i).map(_.name).mkString("[", ", ", "]")}" +
        s" key=${shape.keys(i).map(_.sql).mkString("[", ", ", "]")}$joined"
    }
    s"$nodeName ${inputs.mkString(", ")}, condition=${shape.condition.map(_.sql).getOrElse("none")}" +
      s", filter=${shape.filter.map(_.sql).getOrElse("none")}, " +
      s"state=${stateInfo.map(info => s"operator ${info.operatorId}").getOrElse("<unknown>")}" +
      s" in format ${stateFormat.version}"
  }

  override def getColFamilySchemas(
      shouldBeNullable: Boolean): Map[String, StateStoreColFamilySchema] = {
    val name = StateStore.DEFAULT_COL_FAMILY_NAME
    Map(name -> StateStoreColFamilySchema(name, 0, CurrentRowsState.keySchema(keyTypes), 0,
      stateFormat.valueSchema, Some(CurrentRowsState.encoderSpec(keyTypes))))
  }

  override protected def operatorProperties: OperatorProperties =
    ChangelogDeclarations.ofJoin(shape, stateFormat.version)

  override protected def doExecute(): RDD[InternalRow] = {
    val info = runningStateInfo
    metrics // created on the driver, before tasks refer to them
    val keySchema = CurrentRowsState.keySchema(keyTypes)
    child.execute().mapPartitionsWithStateStore(info, keySchema, stateFormat.valueSchema,
      CurrentRowsState.encoderSpec(keyTypes), session.sessionState,
      Some(StateStoreShim.stateStoreCoordinator(session)))(
      processPartition(info.storeVersion))
  }

  private def processPartition(batchId: Long)(
      store: StateStore,
      tagged: Iterator[InternalRow]): Iterator[InternalRow] = {
    abortIfNotCommitted(store)
    val state = new CurrentRowsState(store, stateFormat, keyTypes, shape.widths,
      shape.rowIds.map(_.length))
    val changes = new ChangelogChanges(shape, keyTypes, description)
    val join = new CurrentRowsJoin(shape)
    val emit = ChangeRows.ofJoin(shape.joinedOutput.map(_.dataType), batchId)
    val rows = changes.byKey(tagged).iterator.flatMap { case (key, keyChanges) =>
      changedRows(key, keyChanges, state, changes, join, emit, batchId)
    }
    streamed(rows) {
      commit(store)(state.commit())
      metric(NUM_TOTAL_STATE_ROWS) += state.numStoredKeys
      metric(NUM_OUTDATED_CHANGES) += changes.numOutdated
      metric(NUM_IDEMPOTENT_CHANGES) += changes.numIdempotent
    }
  }

  /**
   * Applies a key's changes to the state and returns the key's change rows. Under a key with a
   * null, rows join nothing (every join condition holds the key's equality), so only the rows
   * changed are joined, not all the rows with a null key.
   */
  private def changedRows(
      key: UnsafeRow,
      keyChanges: collection.Seq[Change],
      state: CurrentRowsState,
      changes: ChangelogChanges,
      join: CurrentRowsJoin,
      emit: ChangeRows,
      batchId: Long): Iterator[InternalRow] = {
    val stored = ChangelogChanges.stored(state, key)
    val applied = if (!key.anyNull) stored
    else {
      val changed = keyChanges.map(change => (change.input, change.id)).toSet
      stored.filter { case (slot, _) => changed.contains(slot) }
    }
    val before = join.rows(ChangelogChanges.currentRows(applied, shape.numInputs))
    val writes = changes.apply(keyChanges, applied).toMap
    writes.foreach { case ((input, id), entry) => state.put(key, input, id, entry, batchId) }
    metric(NUM_UPDATED_STATE_ROWS) += writes.size
    if (writes.isEmpty) Iterator.empty
    else emit.diff(before, join.rows(ChangelogChanges.currentRows(applied, shape.numInputs)))
  }

  override protected def withNewChildInternal(newChild: SparkPlan): ChangelogJoinExec =
    copy(child = newChild)
}
