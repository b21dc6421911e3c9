package io.github.sparkmultijoin.execution

import java.util.concurrent.TimeUnit.NANOSECONDS

import io.github.sparkmultijoin.execution.MultiJoinMetrics.{ALL_REMOVALS_TIME_MS, ALL_UPDATES_TIME_MS, KEY_READ_TIME_MS, NUM_KEY_READS, NUM_NULL_PADDED_ROWS, NUM_REMOVED_STATE_ROWS, NUM_ROWS_DROPPED_BY_WATERMARK, NUM_ROWS_EXPIRED_BY_TTL, NUM_TOTAL_STATE_ROWS, NUM_UPDATED_STATE_ROWS, ROWS_OF_INPUT}
import io.github.sparkmultijoin.execution.state.{MultiJoinStateLayout, MultiJoinStateManager, StateShape}
import io.github.sparkmultijoin.logical.MultiJoin
import io.github.sparkmultijoin.model.{Conjunct, JoinTree, MicroBatchContext, StateLayoutVersion}
import io.github.sparkmultijoin.restart.OperatorProperties
import io.github.sparkmultijoin.ttl.{MinimumAccumulator, StateTtlExpiry}

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.physical.{Distribution, HashPartitioning, Partitioning, PartitioningCollection, StatefulOpClusteredDistribution, UnknownPartitioning}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStore, StateStoreColFamilySchema}
import org.apache.spark.sql.multijoin.{MultiJoinConf, RealTimeModeShim, SelfCountingStoreShim}
import org.apache.spark.sql.types.StructType

/**
 * Join of several streaming inputs on one shared key, keeping only input rows in state.
 *
 * The inputs' rows are hash-partitioned by their key into the state's partitions, so the rows
 * that can join meet in one partition; they are shuffled together, tagged with their input
 * ([[TaggedInputs]]). A partition's micro-batch runs in three steps:
 *  1. [[DeltaJoiner]] stores every new row, then per key they were stored under emits each
 *     combination with at least one new row, exactly once.
 *  2. With outer inputs, [[OuterJoinPadder]] emits the null-padded output rows that the
 *     deciding inputs' rows which became final in this batch (no row to come can join them)
 *     decide.
 *  3. The rows no longer needed are evicted, by bounds derived from the interval conditions
 *     ([[InputTimeBounds]]), and the state is committed.
 * A row at or below the previous batch's watermark is late and dropped, as Spark's joins do.
 *
 * State: see [[MultiJoinStateManager]], in the multi-join state layout of the session's state
 * store ([[StateLayoutVersion]], [[MultiJoinStateLayout]]). The layout is recorded in the
 * operator's metadata with what it depends on ([[OperatorProperties]]), which a restart checks
 * ([[StatefulExec]]). Probing and checks: see [[ProbePlan]] and [[CompiledJoin]].
 *
 * @param inputs          per input, its columns
 * @param keys            per input, its key expressions (same length and types for all inputs)
 * @param condition       the inner joins' conditions besides the key
 * @param tree            which inputs are outer, and the order their joins apply in
 * @param outerConditions per outer input, its ON clause; None for inner inputs
 * @param stateTtlsMs     per input, its state TTL: how long (processing time) a stored row of it
 *                        is kept ([[StateTtlExpiry]])
 * @param description     the operator as errors name it (its inputs, its operator id)
 * @param stateInfo       filled in by the planner strategy for a running query, None otherwise
 * @param batch           what the operator needs of its micro-batch, filled in for a running
 *                        query: by the planner strategy, its watermarks after Spark's state
 *                        preparation
 * @param child           the inputs' rows, tagged ([[TaggedInputs.plan]]); transient, as the
 *                        tasks get their rows from the child's RDD, and without it the plan
 *                        they deserialize is this node's, not the whole query's below it
 */
case class StreamingMultiJoinExec(
    inputs: Seq[Seq[Attribute]],
    keys: Seq[Seq[Expression]],
    condition: Option[Expression],
    tree: JoinTree,
    outerConditions: Seq[Option[Expression]],
    stateTtlsMs: Seq[Option[Long]],
    description: String,
    stateInfo: Option[StatefulOperatorStateInfo],
    batch: Option[MicroBatchContext],
    @transient child: SparkPlan)
  extends StatefulExec {

  require(keys.length == inputs.length && keys.map(_.map(_.dataType)).distinct.length == 1,
    "every input of a multi-join needs a key of the same types")

  override def nodeName: String = "StreamingMultiJoin"

  override def shortName: String = MultiJoin.OperatorName

  override def output: Seq[Attribute] = tree.joinedColumns(inputs)

  // The inputs' columns reach the operator inside the tagged rows, not as its child's columns.
  override def producedAttributes: AttributeSet = AttributeSet(inputs.flatten)

  private def inputSchemas: Seq[StructType] = inputs.map(DataTypeUtils.fromAttributes)

  override protected def numInputs: Int = inputs.length

  override def requiredChildDistribution: Seq[Distribution] = StatefulOpClusteredDistribution(
    TaggedInputs.keyColumns(child.output, keys.head.length), numStatePartitions) :: Nil

  // Rows of a FULL OUTER input's own have nulls for the inner inputs' keys, as in Spark's join.
  override def outputPartitioning: Partitioning =
    if (tree.fullOuter.nonEmpty) UnknownPartitioning(numStatePartitions)
    else PartitioningCollection(
      tree.innerInputs.map(input => HashPartitioning(keys(input), numStatePartitions)))

  override def simpleString(maxFields: Int): String = {
    val described = inputs.indices.map { input =>
      val joined = (outerConditions(input), tree.parents(input)) match {
        case (Some(on), Some(parent)) => s" ${tree.joinType(input)} to input$parent ON ${on.sql}"
        case _ => ""
      }
      val key = keys(input).map(_.sql).mkString("[", ", ", "]")
      s"input$input key=$key$joined${bounds.kept(input)}${ttlExpiry.shown(input)}"
    }
    val on = condition.map(_.sql).getOrElse("none")
    s"$nodeName ${described.mkString(", ")}, condition=$on, " +
      s"state=${stateInfo.map(info => s"operator ${info.operatorId}").getOrElse("<unknown>")}"
  }

  private def conjuncts = Conjunct.all(condition, outerConditions)

  private lazy val bounds = new InputTimeBounds(inputs, conjuncts, tree)

  private lazy val ttlExpiry = new StateTtlExpiry(stateTtlsMs)

  // When the earliest stored row falls due, as the last batch's partitions reported it. Created
  // on the driver before tasks refer to it, as the metrics are.
  private lazy val nextTtlDueMs: MinimumAccumulator = {
    val accumulator = new MinimumAccumulator
    session.sparkContext.register(accumulator, s"$nodeName next TTL due")
    accumulator
  }

  private def keySchema: StructType = MultiJoinStateManager.keySchema(keys.head.map(_.dataType))

  /**
   * The state layout for the session's state store, which the rule checked there is (a
   * restarted query runs on the store its checkpoint was written with).
   */
  private lazy val layout: StateLayoutVersion = StateLayoutVersion.forSession(conf).fold(
    reason => throw new IllegalStateException(s"$nodeName cannot run: $reason"), identity)

  override def getColFamilySchemas(
      shouldBeNullable: Boolean): Map[String, StateStoreColFamilySchema] =
    MultiJoinStateLayout(layout).familySchemas(
      StateShape(keySchema, inputSchemas, bounds.timeOrdinals, stateTtlsMs.map(_.isDefined)))

  /**
   * What the state layout depends on, with the value of `multi-join.max-tables` that the
   * operator was planned with (this runs while it is planned).
   */
  override protected def operatorProperties: OperatorProperties = OperatorProperties.planned(
    layout, MultiJoinConf.maxTables(conf), inputSchemas, tree, stateTtlsMs)

  // A batch without data is worth running when the watermark moved and rows may be due, or,
  // under a processing-time trigger, when the earliest stored row's TTL has passed.
  override def shouldRunAnotherBatch(newInputWatermark: Long): Boolean = {
    val watermarkMoved = bounds.evictable.nonEmpty &&
      batch.flatMap(_.evictionWatermarkMs).exists(newInputWatermark > _)
    watermarkMoved ||
    (ttlExpiry.isSet && batch.flatMap(_.nextBatchStartMs()).exists(_ >= nextTtlDueMs.value))
  }

  override def produceOutputWatermark(inputWatermarkMs: Long): Option[Long] =
    Some(bounds.outputWatermarkMs(inputWatermarkMs))

  override protected def doExecute(): RDD[InternalRow] = {
    val info = runningStateInfo
    val context = batch.get // planned with the state info
    metrics // created on the driver, before tasks refer to them
    // Analyzed here, once: the tasks get the results with the plan instead of each redoing it.
    bounds; if (ttlExpiry.isSet) nextTtlDueMs
    if (context.realTime) RealTimeModeShim.warmUpBatchEnd()
    val opened = MultiJoinStateLayout(layout).storeSchemas(getColFamilySchemas(false))
    SelfCountingStoreShim.mapPartitionsWithStateStore(child.execute(), info, opened.keySchema,
      opened.valueSchema, NoPrefixKeyStateEncoderSpec(opened.keySchema), session,
      opened.useColumnFamilies, LocalFileSystemCheckpointFileManager.storeFiles(conf))(
      processPartition(info, context, batchRowsMemory(context), layout))
  }

  // A long batch of real-time mode writes its rows as they come: held to its end, they would all
  // be written while the batch commits, and every row would wait for it.
  private def batchRowsMemory(context: MicroBatchContext): Long =
    if (context.realTime) 0L else MultiJoinConf.batchRowsMemory(conf)

  private def processPartition(
      info: StatefulOperatorStateInfo,
      context: MicroBatchContext,
      batchRowsMemory: Long,
      layout: StateLayoutVersion)(
      store: StateStore,
      taggedRows: Iterator[InternalRow]): Iterator[InternalRow] = {
    if (context.realTime) RealTimeModeShim.warmUpBatchEnd() // on an executor of its own too
    val batchStartMs = Some(context.batchTimestampMs).filter(_ => ttlExpiry.isSet)
    val state = new MultiJoinStateManager(store, keySchema, inputSchemas, bounds.timeOrdinals,
      info.storeVersion, batchRowsMemory, batchStartMs, layout, ttlExpiry.inputs)
    abortIfNotCommitted(store)
    // A row past its TTL joins nothing from this batch on, so it goes before any row is joined.
    batchStartMs.foreach(now => metric(NUM_ROWS_EXPIRED_BY_TTL) += ttlExpiry.expire(state, now))
    val updateStartTimeNs = System.nanoTime
    val eviction = Option.when(context.realTime)(
      new EvictionOnArrival(state, bounds.evictionBounds(context.lateRowsWatermarkMs)))
    val rows =
      joinedRows(info, context, state, eviction.fold(taggedRows)(_.whileArriving(taggedRows)))
    streamed(rows)(endBatch(context, state, store, eviction, updateStartTimeNs))
  }

  /** Once the partition's rows ended: what is due evicted, the state committed and reported. */
  private def endBatch(
      context: MicroBatchContext,
      state: MultiJoinStateManager,
      store: StateStore,
      eviction: Option[EvictionOnArrival],
      updateStartTimeNs: Long): Unit = {
    // The rows still held are written now, so that their writing counts as updates, not as
    // the removals or the commit that would write them first.
    state.writeAppendedRows()
    metric(ALL_UPDATES_TIME_MS) += NANOSECONDS.toMillis(System.nanoTime - updateStartTimeNs) -
      eviction.fold(0L)(_.removalMs)
    metric(ALL_REMOVALS_TIME_MS) += eviction.fold(
      timeTakenMs(state.evict(bounds.evictionBounds(context.evictionWatermarkMs): _*)))(
      _.remainder())
    if (ttlExpiry.isSet) ttlExpiry.nextDueMs(state).foreach(nextTtlDueMs.add)
    commit(store)(state.commit())
    reportState(state)
  }

  /** The rows the partition's tagged rows join into, in real time or as one batch. */
  private def joinedRows(
      info: StatefulOperatorStateInfo,
      context: MicroBatchContext,
      state: MultiJoinStateManager,
      taggedRows: Iterator[InternalRow]): Iterator[InternalRow] = {
    val join = CompiledJoins.lendToTask(new CompiledJoins.Spec(
      (info.queryRunId, info.operatorId), keys, inputs, output, conjuncts, tree))
    val padder = new OuterJoinPadder(join, state, metric(NUM_NULL_PADDED_ROWS))
    val joiner = new DeltaJoiner(join, state, padder,
      context.lateRowsWatermarkMs.map(_ * 1000), bounds.timeOrdinals,
      metric(NUM_ROWS_DROPPED_BY_WATERMARK))
    val reader = new TaggedInputs.Reader(keys.head.length, inputs.map(_.length))
    if (context.realTime) joiner.joinOnArrival(reader, taggedRows)
    else joiner.joinAsBatch(reader, taggedRows) ++
      padded(padder, state, context.lateRowsWatermarkMs, context.evictionWatermarkMs)
  }

  /**
   * The null-padded rows that the deciding inputs' rows which became final decide (bounds in
   * microseconds, as rows keep their event times).
   */
  private def padded(
      padder: OuterJoinPadder,
      state: MultiJoinStateManager,
      lateRowsWatermarkMs: Option[Long],
      evictionWatermarkMs: Option[Long]): Iterator[InternalRow] =
    tree.decidingInputs.iterator.flatMap { decider =>
      bounds.newlyFinalRows(state, decider, lateRowsWatermarkMs, evictionWatermarkMs).iterator
        .flatMap(padder.padFinal(decider, _))
    }

  /** The state's metrics, once the partition's batch is committed. */
  private def reportState(state: MultiJoinStateManager): Unit = {
    metric(NUM_UPDATED_STATE_ROWS) += state.numStoredRows
    metric(NUM_REMOVED_STATE_ROWS) += state.numEvictedRows
    // The store counts the time index too; the state rows reported are the input rows.
    metric(NUM_TOTAL_STATE_ROWS) += state.rowCounts.sum
    state.rowCounts.zipWithIndex.foreach { case (rows, input) =>
      longMetric(ROWS_OF_INPUT.ofInput(input)) += rows
    }
    metric(NUM_KEY_READS) += state.numKeyReads
    metric(KEY_READ_TIME_MS) += state.keyReadTimeMs
  }

  override protected def withNewChildInternal(newChild: SparkPlan): StreamingMultiJoinExec =
    copy(child = newChild)
}
