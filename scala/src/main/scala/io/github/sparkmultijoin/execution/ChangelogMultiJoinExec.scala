package io.github.sparkmultijoin.execution

import scala.collection.mutable

import io.github.sparkmultijoin.execution.MultiJoinMetrics.{COMMIT_TIME_MS, Metric, NUM_IDEMPOTENT_CHANGES, NUM_OUTDATED_CHANGES, NUM_OUTPUT_ROWS, NUM_TOTAL_STATE_ROWS, NUM_UPDATED_STATE_ROWS, STATE_MEMORY}
import io.github.sparkmultijoin.execution.state.{ChangelogStateFormat, CurrentRowsState}
import io.github.sparkmultijoin.logical.{ChangeTypes, ChangelogJoin}
import io.github.sparkmultijoin.model.{ChangelogJoinShape, MicroBatchContext}
import io.github.sparkmultijoin.restart.{ChangelogDeclarations, OperatorMetadataFile}
import org.apache.hadoop.conf.Configuration

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.{Distribution, Partitioning, StatefulOpClusteredDistribution, UnknownPartitioning}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.streaming.operators.stateful.{SchemaValidationUtils, StateStoreWriter, StatefulOperatorCustomMetric, StatefulOperatorStateInfo}
import org.apache.spark.sql.execution.streaming.state.{OperatorStateMetadata, StateSchemaValidationResult, StateStore, StateStoreColFamilySchema, StateStoreOps}
import org.apache.spark.sql.multijoin.{RealTimeModeShim, StateSchemaWrite, StateStoreShim}
import org.apache.spark.unsafe.types.UTF8String

/**
 * A changelog join ([[ChangelogJoin]]): per micro-batch, the change of each output row of the
 * join of its inputs' current rows.
 *
 * The inputs' changes are hash-partitioned by their join key ([[TaggedInputs]]). Per key the
 * batch changed, a partition joins the key's current rows as the state holds them, applies the
 * key's changes ([[ChangelogChanges]]), joins the rows again ([[CurrentRowsJoin]]) and emits
 * the difference by output identity: `delete` (the old row), `insert`, or `update_preimage` and
 * `update_postimage`. An output row can move between keys in a batch (its rows' keys changed),
 * so a delete under one key and an insert under another may be one update: the net change per
 * identity is made after a shuffle by identity (`ChangelogNetChangesExec`), or by the
 * changelog join that reads these changes.
 *
 * @param shape         what it joins, and how
 * @param changeColumns the change type and row version its rows end with
 * @param description   the operator as errors name it
 * @param stateFormat   how its state keeps each row identity's last change
 */
case class ChangelogMultiJoinExec(
    shape: ChangelogJoinShape,
    changeColumns: Seq[Attribute],
    description: String,
    stateInfo: Option[StatefulOperatorStateInfo],
    batch: Option[MicroBatchContext],
    stateFormat: ChangelogStateFormat,
    @transient child: SparkPlan)
  extends UnaryExecNode with StateStoreWriter with SchemaValidationUtils {

  override def nodeName: String = "ChangelogMultiJoin"

  override def shortName: String = ChangelogJoin.OperatorName

  override def output: Seq[Attribute] = shape.joinedOutput ++ changeColumns

  override def producedAttributes: AttributeSet = AttributeSet(shape.inputs.flatten) ++
    AttributeSet(changeColumns)

  private def keyTypes = shape.keys.head.map(_.dataType)

  private def numStatePartitions: Int =
    stateInfo.map(_.numPartitions).getOrElse(conf.numShufflePartitions)

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

  private def metadataFile = new OperatorMetadataFile(getStateInfo, shortName, description)

  override def operatorStateMetadataVersion: Int = OperatorMetadataFile.Version

  override def operatorStateMetadata(
      stateSchemaPaths: List[List[String]] = List.empty): OperatorStateMetadata =
    metadataFile.metadata(ChangelogDeclarations.of(shape, stateFormat.version).json,
      stateSchemaPaths)

  // On a restart, the inputs' declarations are compared with the checkpoint's first.
  override def validateAndMaybeEvolveStateSchema(
      hadoopConf: Configuration,
      batchId: Long,
      stateSchemaVersion: Int): List[StateSchemaValidationResult] = {
    metadataFile.previousJson(hadoopConf, batchId).foreach { json =>
      ChangelogDeclarations.fromJson(json).checkRestart(
        ChangelogDeclarations.of(shape, stateFormat.version), description)
    }
    // Spark passes its default schema format; a schema with an encoder spec needs format 3.
    RealTimeModeShim.validateAndWriteStateSchema(this,
      StateSchemaWrite(hadoopConf, batchId,
        3, getStateInfo, stateSchemaDirPath(), session,
        batch.exists(_.realTime)))
  }

  override def customStatefulOperatorMetrics: Seq[StatefulOperatorCustomMetric] =
    MultiJoinMetrics.customStatefulOperatorMetrics(shape.numInputs)

  private def metric(declared: Metric): SQLMetricRef = longMetric(declared.name)

  private type SQLMetricRef = org.apache.spark.sql.execution.metric.SQLMetric

  override protected def doExecute(): RDD[InternalRow] = {
    val info = stateInfo.getOrElse(throw new IllegalStateException(
      s"$nodeName runs only inside a streaming query, which gives it its state info:\n$this"))
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
    TaskContext.get().addTaskCompletionListener[Unit] { _ =>
      if (!store.hasCommitted) store.abort()
    }
    val state = new CurrentRowsState(store, stateFormat, keyTypes, shape.widths,
      shape.rowIds.map(_.length))
    val changes = new ChangelogChanges(shape, keyTypes, description)
    val (join, emit) = (new CurrentRowsJoin(shape), new ChangeRows(shape, batchId))
    val out = mutable.ArrayBuffer.empty[InternalRow]
    changes.byKey(tagged).foreach { case (key, keyChanges) =>
      out ++= changedRows(key, keyChanges, state, changes, join, emit, batchId)
    }
    metric(COMMIT_TIME_MS) += timeTakenMs(state.commit())
    StateStoreShim.committedCheckpoint(store, conf).foreach(setStateStoreCheckpointInfo)
    metric(NUM_OUTPUT_ROWS) += out.length
    metric(NUM_TOTAL_STATE_ROWS) += state.numStoredKeys
    metric(NUM_OUTDATED_CHANGES) += changes.numOutdated
    metric(NUM_IDEMPOTENT_CHANGES) += changes.numIdempotent
    metric(STATE_MEMORY) += store.metrics.memoryUsedBytes
    setStoreCustomMetrics(store.metrics.customMetrics)
    setOperatorMetrics()
    out.iterator
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

  override protected def withNewChildInternal(newChild: SparkPlan): ChangelogMultiJoinExec =
    copy(child = newChild)
}

/** The change rows of a key's join before and after a batch's changes. */
private class ChangeRows(shape: ChangelogJoinShape, batchId: Long) {

  private val types = shape.joinedOutput.map(_.dataType) ++
    Seq(org.apache.spark.sql.types.StringType,
      org.apache.spark.sql.types.ArrayType(org.apache.spark.sql.types.LongType, false))
  private val toUnsafe = UnsafeProjection.create(types.toArray)
  private val version = new GenericArrayData(Array[Any](batchId))

  private def row(kind: String, visible: UnsafeRow): InternalRow = toUnsafe(new JoinedRow(
    visible, new GenericInternalRow(Array[Any](UTF8String.fromString(kind), version)))).copy()

  def diff(
      before: collection.Map[UnsafeRow, UnsafeRow],
      after: collection.Map[UnsafeRow, UnsafeRow]): Iterator[InternalRow] =
    before.iterator.flatMap { case (id, old) =>
      after.get(id) match {
        case None => Iterator(row(ChangeTypes.Delete, old))
        case Some(now) if now == old => Iterator.empty
        case Some(now) =>
          Iterator(row(ChangeTypes.UpdatePreimage, old), row(ChangeTypes.UpdatePostimage, now))
      }
    } ++ after.iterator.collect {
      case (id, now) if !before.contains(id) => row(ChangeTypes.Insert, now)
    }
}
