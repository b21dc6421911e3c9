package io.github.sparkmultijoin.execution

import java.util.concurrent.TimeUnit.NANOSECONDS

import io.github.sparkmultijoin.execution.StreamingMultiJoinHelper.{onExhaustion, predicate, probePlans, BoundRows, Combinations}
import io.github.sparkmultijoin.execution.state.MultiJoinStateManager
import org.apache.hadoop.conf.Configuration

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.{Distribution, Partitioning, PartitioningCollection, StatefulOpClusteredDistribution}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.{SchemaValidationUtils, StatefulOperatorCustomMetric, StatefulOperatorCustomSumMetric, StatefulOperatorStateInfo, StateStoreWriter}
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, OperatorInfoV1, OperatorStateMetadata, OperatorStateMetadataV2, StateSchemaValidationResult, StateStore, StateStoreColFamilySchema, StateStoreId, StateStoreMetadataV2, StateStoreOps}
import org.apache.spark.sql.multijoin.SparkInternals
import org.apache.spark.sql.types.StructType

/**
 * Inner join of several streaming inputs on one shared key, keeping only input rows in state.
 *
 * Every input is hash-partitioned by its key into the state's partitions, so the rows that can
 * join meet in one partition. A partition's micro-batch is processed input by input, in input
 * order: a new row of input i is joined with the rows of the other inputs stored so far (for
 * inputs processed before i in this batch, that includes their new rows), then stored. So every
 * combination is emitted exactly once, when its last member arrives: the N-way delta join
 * `dA join B join C + A' join dB join C + A' join B' join dC`, where primes are states updated by
 * this batch. Rows with a null key component never match and are not stored, nor are rows that
 * fail a conjunct of the condition that references only their own input.
 *
 * State: see [[MultiJoinStateManager]]. Probing and checks: see [[StreamingMultiJoinHelper]].
 *
 * @param keys      per input, its key expressions (same length and types for all inputs)
 * @param condition what else a combination must satisfy
 * @param stateInfo filled in by the planner strategy for a running query, None otherwise
 */
case class StreamingMultiJoinExec(
    keys: Seq[Seq[Expression]],
    condition: Option[Expression],
    stateInfo: Option[StatefulOperatorStateInfo],
    children: Seq[SparkPlan])
  extends SparkPlan with StateStoreWriter with SchemaValidationUtils {

  require(keys.length == children.length && keys.map(_.map(_.dataType)).distinct.length == 1,
    "every input of a multi-join needs a key of the same types")

  override def nodeName: String = "StreamingMultiJoin"

  override def shortName: String = "multiJoin"

  override def output: Seq[Attribute] = children.flatMap(_.output)

  // Without state info (explain before start) the partition count Spark would use is the conf's.
  private def numStatePartitions: Int =
    stateInfo.map(_.numPartitions).getOrElse(conf.numShufflePartitions)

  override def requiredChildDistribution: Seq[Distribution] =
    keys.map(StatefulOpClusteredDistribution(_, numStatePartitions))

  override def outputPartitioning: Partitioning =
    PartitioningCollection(children.map(_.outputPartitioning))

  override def simpleString(maxFields: Int): String = {
    val inputs = children.indices.map { input =>
      val kept = (eventTimes(input), evictionOffsets(input)) match {
        case (Some(time), Some(offset)) => s" keeps ${time.name} > watermark + ${offset}ms"
        case (Some(time), None) => s" keeps all (${time.name} unbounded)"
        case _ => ""
      }
      s"input$input key=${keys(input).map(_.sql).mkString("[", ", ", "]")}$kept"
    }
    s"$nodeName ${inputs.mkString(", ")}, condition=${condition.map(_.sql).getOrElse("none")}, " +
      s"state=${stateInfo.map(info => s"operator ${info.operatorId}").getOrElse("<unknown>")}"
  }

  /** Each input's event-time column, and its ordinal in the input's rows. */
  private def eventTimes: Seq[Option[Attribute]] =
    EventTimeBounds.eventTimeColumns(children.map(_.output))

  private def timeOrdinals: Seq[Option[Int]] = eventTimes.zip(children).map {
    case (time, child) => time.map(column => child.output.indexWhere(_.exprId == column.exprId))
  }

  /** Per input, how far below the watermark its rows are kept (ms); None keeps them all. */
  private lazy val evictionOffsets: Seq[Option[Long]] =
    EventTimeBounds.evictionOffsets(children.map(_.output), condition)

  private def evictable: Seq[Int] =
    children.indices.filter(input => eventTimes(input).isDefined && evictionOffsets(input).isDefined)

  private def keySchema: StructType = MultiJoinStateManager.keySchema(keys.head.map(_.dataType))

  override def getColFamilySchemas(
      shouldBeNullable: Boolean): Map[String, StateStoreColFamilySchema] =
    MultiJoinStateManager.columnFamilySchemas(
      keySchema, children.map(_.schema), eventTimes.map(_.isDefined))

  override def validateAndMaybeEvolveStateSchema(
      hadoopConf: Configuration,
      batchId: Long,
      stateSchemaVersion: Int): List[StateSchemaValidationResult] =
    // Spark passes its default schema format, which predates column families; ours need 3.
    validateAndWriteStateSchema(
      hadoopConf, batchId, ColumnFamilySchemaFormat, getStateInfo, stateSchemaDirPath(), session)

  private val ColumnFamilySchemaFormat = 3

  override def operatorStateMetadataVersion: Int = 2

  override def operatorStateMetadata(
      stateSchemaPaths: List[List[String]] = List.empty): OperatorStateMetadata = {
    val info = getStateInfo
    val store = StateStoreMetadataV2(StateStoreId.DEFAULT_STORE_NAME, 0, info.numPartitions,
      stateSchemaPaths.headOption.getOrElse(Nil))
    OperatorStateMetadataV2(OperatorInfoV1(info.operatorId, shortName), Array(store), "{}")
  }

  override def customStatefulOperatorMetrics: Seq[StatefulOperatorCustomMetric] =
    children.indices.map { input =>
      StatefulOperatorCustomSumMetric(rowsOfInputMetric(input), s"rows of input $input in state")
    }

  private def rowsOfInputMetric(input: Int): String = s"numRowsInput$input"

  // A batch without data is worth running when the watermark moved and rows may be due.
  override def shouldRunAnotherBatch(newInputWatermark: Long): Boolean =
    evictable.nonEmpty && stateInfo.flatMap(SparkInternals.inputWatermarks(session, _)).exists {
      case (_, evictionWatermark) => newInputWatermark > evictionWatermark
    }

  // Every row to come joins rows above their inputs' eviction bounds; an operator after this one
  // must not take those as late.
  override def produceOutputWatermark(inputWatermarkMs: Long): Option[Long] =
    Some((inputWatermarkMs +: evictable.map(inputWatermarkMs + evictionOffsets(_).get)).min)

  override protected def doExecute(): RDD[InternalRow] = {
    val info = stateInfo.getOrElse(throw new IllegalStateException(
      s"$nodeName runs only inside a streaming query, which gives it its state info:\n$this"))
    metrics // created on the driver, before tasks refer to them
    val watermarks = SparkInternals.inputWatermarks(session, info)
    // Rows live in one column family per input; the store's default family stays empty.
    val defaultFamilySchema = StructType(Nil).add("unused", "int")
    new TaggedZipRDD(children.map(_.execute())).mapPartitionsWithStateStore(
      info, defaultFamilySchema, defaultFamilySchema,
      NoPrefixKeyStateEncoderSpec(defaultFamilySchema), session.sessionState,
      Some(SparkInternals.stateStoreCoordinator(session)), useColumnFamilies = true)(
      processPartition(info, watermarks.map(_._1), watermarks.map(_._2)))
  }

  private def processPartition(
      info: StatefulOperatorStateInfo,
      lateRowsWatermarkMs: Option[Long],
      evictionWatermarkMs: Option[Long])(
      store: StateStore,
      taggedInput: Iterator[(Int, InternalRow)]): Iterator[InternalRow] = {
    val numOutputRows = longMetric("numOutputRows")
    val numUpdatedStateRows = longMetric("numUpdatedStateRows")
    val allUpdatesTimeMs = longMetric("allUpdatesTimeMs")
    val commitTimeMs = longMetric("commitTimeMs")
    val allRemovalsTimeMs = longMetric("allRemovalsTimeMs")
    val numRemovedStateRows = longMetric("numRemovedStateRows")
    val numLateRows = longMetric("numRowsDroppedByWatermark")

    val ordinals = timeOrdinals
    val state = new MultiJoinStateManager(
      store, keySchema, children.map(_.schema), ordinals, info.storeVersion)
    TaskContext.get().addTaskCompletionListener[Unit](_ => state.abortIfNotCommitted())

    val inputOutputs = children.map(_.output)
    val keyProjections = keys.zip(inputOutputs).map { case (key, input) =>
      UnsafeProjection.create(key, input)
    }
    val storedRowProjections = inputOutputs.map(input => UnsafeProjection.create(input, input))
    val plans = probePlans(inputOutputs, condition)
    val checksOnNewRow = plans.map(plan => predicate(plan.checkOnNewRow, output))
    val checksAfterProbe = plans.map(_.checksAfterProbe.map(predicate(_, output)))
    val bound = new BoundRows(inputOutputs.map(_.length))
    val project = UnsafeProjection.create(output, output)

    // Spark drops an input row at or below the watermark of the previous batch as late.
    val lateAtOrBelowMicros = lateRowsWatermarkMs.map(_ * 1000)
    def isLate(input: Int, row: InternalRow): Boolean = ordinals(input).exists { ordinal =>
      lateAtOrBelowMicros.exists(watermark => !row.isNullAt(ordinal) &&
        row.getLong(ordinal) <= watermark)
    }

    def joinAndStore(input: Int, row: InternalRow): Iterator[InternalRow] = {
      if (isLate(input, row)) {
        numLateRows += 1
        return Iterator.empty
      }
      val key = keyProjections(input)(row)
      if (key.anyNull) return Iterator.empty
      val plan = plans(input)
      plan.probeOrder.foreach(bound.clear)
      bound.bind(input, row)
      val checkOnNewRow = checksOnNewRow(input)
      if (checkOnNewRow != null && !checkOnNewRow.eval(bound.row)) return Iterator.empty

      // Read every probed input before storing the row: an empty one means no combination.
      val matches = new Array[Array[UnsafeRow]](plan.probeOrder.length)
      var depth = 0
      var anyEmpty = false
      while (depth < matches.length && !anyEmpty) {
        matches(depth) = state.get(plan.probeOrder(depth), key)
        anyEmpty = matches(depth).isEmpty
        depth += 1
      }
      state.append(input, key, storedRowProjections(input)(row))
      if (anyEmpty) Iterator.empty
      else new Combinations(matches, plan.probeOrder, checksAfterProbe(input), bound, project)
    }

    val updateStartTimeNs = System.nanoTime
    val outputRows = taggedInput.flatMap { case (input, row) => joinAndStore(input, row) }
      .map { row => numOutputRows += 1; row }

    def onCompletion(): Unit = {
      allUpdatesTimeMs += NANOSECONDS.toMillis(System.nanoTime - updateStartTimeNs)
      allRemovalsTimeMs += timeTakenMs {
        for (watermark <- evictionWatermarkMs; input <- evictable) {
          state.evict(input, (watermark + evictionOffsets(input).get) * 1000)
        }
      }
      commitTimeMs += timeTakenMs {
        state.commit()
      }
      numUpdatedStateRows += state.numStoredRows
      numRemovedStateRows += state.numEvictedRows
      // The store counts the time index too; the state rows reported are the input rows.
      longMetric("numTotalStateRows") += state.rowCounts.sum
      state.rowCounts.zipWithIndex.foreach { case (rows, input) =>
        longMetric(rowsOfInputMetric(input)) += rows
      }
      val storeMetrics = store.metrics
      longMetric("stateMemory") += storeMetrics.memoryUsedBytes
      setStoreCustomMetrics(storeMetrics.customMetrics)
      setStoreInstanceMetrics(storeMetrics.instanceMetrics)
      setOperatorMetrics()
    }

    onExhaustion(outputRows)(onCompletion())
  }

  override protected def withNewChildrenInternal(
      newChildren: IndexedSeq[SparkPlan]): StreamingMultiJoinExec = copy(children = newChildren)
}
