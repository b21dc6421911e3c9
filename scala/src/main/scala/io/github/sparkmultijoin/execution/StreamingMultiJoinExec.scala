package io.github.sparkmultijoin.execution

import java.util.concurrent.TimeUnit.NANOSECONDS

import scala.collection.mutable

import io.github.sparkmultijoin.execution.StreamingMultiJoinHelper.{conjuncts, onExhaustion, predicate, probePlan, probePlanAfter, probePlans, BoundRows, Combinations, ProbePlan}
import io.github.sparkmultijoin.execution.state.MultiJoinStateManager
import org.apache.hadoop.conf.Configuration

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, BasePredicate, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.{Distribution, Partitioning, PartitioningCollection, StatefulOpClusteredDistribution}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.{SchemaValidationUtils, StatefulOperatorCustomMetric, StatefulOperatorCustomSumMetric, StatefulOperatorStateInfo, StateStoreWriter}
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, OperatorInfoV1, OperatorStateMetadata, OperatorStateMetadataV2, StateSchemaValidationResult, StateStore, StateStoreColFamilySchema, StateStoreId, StateStoreMetadataV2, StateStoreOps}
import org.apache.spark.sql.multijoin.SparkInternals
import org.apache.spark.sql.types.StructType

/**
 * Join of several streaming inputs on one shared key, keeping only input rows in state.
 *
 * Every input is hash-partitioned by its key into the state's partitions, so the rows that can
 * join meet in one partition. A partition's micro-batch is processed input by input, in input
 * order: a new row of input i is joined with the rows of the other inputs stored so far (for
 * inputs processed before i in this batch, that includes their new rows), then stored. So every
 * combination is emitted exactly once, when its last member arrives: the N-way delta join
 * `dA join B join C + A' join dB join C + A' join B' join dC`, where primes are states updated by
 * this batch. Rows with a null key component never match and are not stored, nor are rows that
 * fail a conjunct that references only their own input.
 *
 * Event time: a row at or below the previous batch's watermark is late and dropped, as Spark's
 * joins do. After the batch's rows, each input's rows that can no longer join are evicted, by a
 * bound derived from the interval conditions ([[EventTimeBounds]]).
 *
 * LEFT OUTER inputs (each joined to one inner input, its anchor): the combinations above have a
 * row of every input. Besides, each anchor row keeps which of its outer inputs it has matched
 * (by their ON clauses). When a row of the deciding input (an inner input) is evicted, no row to
 * come can join it any more, so every outer input's matches in its combinations are final: its
 * combinations of inner rows are enumerated once more, and each is joined with the rows of the
 * outer inputs its anchor rows matched and nulls for those they never matched (when there is at
 * least one). The other inputs' rows are kept until the deciding rows they can join are evicted.
 *
 * State: see [[MultiJoinStateManager]]. Probing and checks: see [[StreamingMultiJoinHelper]].
 *
 * @param keys            per input, its key expressions (same length and types for all inputs)
 * @param condition       what else every output row satisfies
 * @param outerConditions per LEFT OUTER input, its ON clause besides the key; None for others
 * @param outerAnchors    per LEFT OUTER input, the inner input it is joined to; None for others
 * @param decidingInput   with outer inputs, the inner input whose evicted rows decide padding
 * @param stateInfo       filled in by the planner strategy for a running query, None otherwise
 */
case class StreamingMultiJoinExec(
    keys: Seq[Seq[Expression]],
    condition: Option[Expression],
    outerConditions: Seq[Option[Expression]],
    outerAnchors: Seq[Option[Int]],
    decidingInput: Option[Int],
    stateInfo: Option[StatefulOperatorStateInfo],
    children: Seq[SparkPlan])
  extends SparkPlan with StateStoreWriter with SchemaValidationUtils {

  require(keys.length == children.length && keys.map(_.map(_.dataType)).distinct.length == 1,
    "every input of a multi-join needs a key of the same types")

  override def nodeName: String = "StreamingMultiJoin"

  override def shortName: String = "multiJoin"

  override def output: Seq[Attribute] = children.zip(outerConditions).flatMap {
    case (child, None) => child.output
    case (child, Some(_)) => child.output.map(_.withNullability(true))
  }

  private def outerInputs: Seq[Int] = children.indices.filter(outerConditions(_).isDefined)

  // Without state info (explain before start) the partition count Spark would use is the conf's.
  private def numStatePartitions: Int =
    stateInfo.map(_.numPartitions).getOrElse(conf.numShufflePartitions)

  override def requiredChildDistribution: Seq[Distribution] =
    keys.map(StatefulOpClusteredDistribution(_, numStatePartitions))

  override def outputPartitioning: Partitioning =
    PartitioningCollection(children.zip(outerConditions).collect {
      case (child, None) => child.outputPartitioning
    })

  override def simpleString(maxFields: Int): String = {
    val inputs = children.indices.map { input =>
      val joined = (outerConditions(input), outerAnchors(input)) match {
        case (Some(on), Some(anchor)) => s" LEFT OUTER to input$anchor ON ${on.sql}"
        case _ => ""
      }
      val kept = (eventTimes(input), evictionOffsets(input)) match {
        case (Some(time), Some(offset)) =>
          s" keeps ${time.name} > watermark ${if (offset < 0) "-" else "+"} ${offset.abs}ms"
        case (Some(time), None) => s" keeps all (${time.name} unbounded)"
        case _ => ""
      }
      s"input$input key=${keys(input).map(_.sql).mkString("[", ", ", "]")}$joined$kept"
    }
    s"$nodeName ${inputs.mkString(", ")}, condition=${condition.map(_.sql).getOrElse("none")}, " +
      s"state=${stateInfo.map(info => s"operator ${info.operatorId}").getOrElse("<unknown>")}"
  }

  /** Each input's event-time column, and its ordinal in the input's rows. */
  private lazy val eventTimes: Seq[Option[Attribute]] =
    EventTimeBounds.eventTimeColumns(children.map(_.output))

  private lazy val timeOrdinals: Seq[Option[Int]] = eventTimes.zip(children).map {
    case (time, child) => time.map(column => child.output.indexWhere(_.exprId == column.exprId))
  }

  private def allConjuncts = conjuncts(condition, outerConditions)

  /** Per input, how far below the watermark its rows are kept (ms); None keeps them all. */
  private lazy val evictionOffsets: Seq[Option[Long]] = EventTimeBounds.evictionOffsets(
    children.map(_.output), allConjuncts.map(_.expression).reduceOption(And), decidingInput)

  private lazy val evictable: Seq[Int] =
    children.indices.filter { input =>
      eventTimes(input).isDefined && evictionOffsets(input).isDefined
    }

  private def keySchema: StructType = MultiJoinStateManager.keySchema(keys.head.map(_.dataType))

  override def getColFamilySchemas(
      shouldBeNullable: Boolean): Map[String, StateStoreColFamilySchema] =
    MultiJoinStateManager.columnFamilySchemas(
      keySchema, children.map(_.schema), eventTimes.map(_.isDefined), decidingInput.isDefined)

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
    } :+ StatefulOperatorCustomSumMetric(NullPaddedRowsMetric, "null-padded rows emitted")

  private def rowsOfInputMetric(input: Int): String = s"numRowsInput$input"

  private val NullPaddedRowsMetric = "numNullPaddedRows"

  // A batch without data is worth running when the watermark moved and rows may be due.
  override def shouldRunAnotherBatch(newInputWatermark: Long): Boolean =
    evictable.nonEmpty && stateInfo.flatMap(SparkInternals.inputWatermarks(session, _)).exists {
      case (_, evictionWatermark) => newInputWatermark > evictionWatermark
    }

  // Every row to come joins rows above their inputs' eviction bounds (null-padded rows too, as
  // their anchor row is above its bound until evicted); an operator after this one must not take
  // those as late.
  override def produceOutputWatermark(inputWatermarkMs: Long): Option[Long] =
    Some((inputWatermarkMs +: evictable.map(inputWatermarkMs + evictionOffsets(_).get)).min)

  override protected def doExecute(): RDD[InternalRow] = {
    val info = stateInfo.getOrElse(throw new IllegalStateException(
      s"$nodeName runs only inside a streaming query, which gives it its state info:\n$this"))
    metrics // created on the driver, before tasks refer to them
    val watermarks = SparkInternals.inputWatermarks(session, info)
    // Rows live in column families of their own; the store's default family stays empty.
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
    val numNullPaddedRows = longMetric(NullPaddedRowsMetric)

    val ordinals = timeOrdinals
    val state = new MultiJoinStateManager(
      store, keySchema, children.map(_.schema), ordinals, decidingInput.isDefined,
      info.storeVersion)
    TaskContext.get().addTaskCompletionListener[Unit](_ => state.abortIfNotCommitted())

    val inputOutputs = children.map(_.output)
    val keyProjections = keys.zip(inputOutputs).map { case (key, input) =>
      UnsafeProjection.create(key, input)
    }
    val storedRowProjections = inputOutputs.map(input => UnsafeProjection.create(input, input))
    val bound = new BoundRows(inputOutputs.map(_.length))
    val project = UnsafeProjection.create(output, output)
    val conjunctList = allConjuncts

    /** A probe plan with its predicates compiled. */
    class CompiledPlan(val plan: ProbePlan) {
      val onNewRow: BasePredicate = predicate(plan.checkOnNewRow, output)
      val afterProbe: Array[BasePredicate] = plan.checksAfterProbe.map(predicate(_, output))
    }
    val joinPlans = probePlans(inputOutputs, conjunctList).map(new CompiledPlan(_))
    val innerInputs = children.indices.filter(outerConditions(_).isEmpty)
    // The combinations of inner rows with a deciding row; then, per set of outer inputs its
    // anchor rows never matched (a bit mask), those of the others with nulls for them.
    lazy val innerPlan = new CompiledPlan(
      probePlan(inputOutputs, conjunctList, decidingInput.get, outerInputs.toSet))
    val paddedPlans = mutable.HashMap.empty[Long, CompiledPlan]
    def paddedPlan(unmatched: Long): CompiledPlan = paddedPlans.getOrElseUpdate(unmatched,
      new CompiledPlan(probePlanAfter(inputOutputs, conjunctList,
        decidingInput.get +: innerInputs.filterNot(decidingInput.contains),
        outerInputs.filter(input => (unmatched & bit(input)) != 0).toSet)))
    // An outer input's ON clause, over its anchor row and its row.
    val onClauses = outerConditions.map(_.map(on => predicate(Some(on), output)))
    val outerInputsOf =
      children.indices.map(anchor => outerInputs.filter(outerAnchors(_).contains(anchor)))

    /**
     * Every combination of the bound row(s) with the stored rows of the inputs `compiled`
     * probes, or nothing when one of them has none.
     */
    def combinations[A](compiled: CompiledPlan, stored: Int => Array[UnsafeRow])(
        emit: Array[Int] => A): Iterator[A] = {
      val plan = compiled.plan
      val matches = new Array[Array[UnsafeRow]](plan.probeOrder.length)
      var depth = 0
      while (depth < matches.length) {
        matches(depth) = stored(plan.probeOrder(depth))
        if (matches(depth).isEmpty) return Iterator.empty
        depth += 1
      }
      new Combinations(matches, plan.probeOrder, compiled.afterProbe, bound, emit)
    }

    def joinedRows(compiled: CompiledPlan, key: UnsafeRow): Iterator[InternalRow] =
      combinations(compiled, state.get(_, key))(_ => project(bound.row))

    def bindOnly(input: Int, row: InternalRow): Unit = {
      children.indices.foreach(bound.clear)
      bound.bind(input, row)
    }

    /** The outer inputs anchored at `anchor` whose stored rows under `key` match `anchorRow`. */
    // The ON clause reads only the anchor and the outer input: one side is bound once, the
    // other overwritten per stored row.
    def matchedByStored(anchor: Int, anchorRow: InternalRow, key: UnsafeRow): Long = {
      bindOnly(anchor, anchorRow)
      outerInputsOf(anchor).foldLeft(0L) { (mask, outerInput) =>
        val matched = state.get(outerInput, key).exists { outerRow =>
          bound.bind(outerInput, outerRow)
          onClauses(outerInput).get.eval(bound.row)
        }
        if (matched) mask | bit(outerInput) else mask
      }
    }

    /** Marks the stored anchor rows under `key` that `outerRow` of `outerInput` matches. */
    def markAnchorsMatching(outerInput: Int, outerRow: InternalRow, key: UnsafeRow): Unit = {
      val anchor = outerAnchors(outerInput).get
      bindOnly(outerInput, outerRow)
      state.getWithKeys(anchor, key).foreach { case (rowKey, anchorRow) =>
        bound.bind(anchor, anchorRow)
        if (onClauses(outerInput).get.eval(bound.row)) {
          val mask = state.matchedMask(rowKey)
          if ((mask & bit(outerInput)) == 0) state.setMatchedMask(rowKey, mask | bit(outerInput))
        }
      }
    }

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
      if (key.anyNull) return nullKeyOutput(input, row)
      val compiled = joinPlans(input)
      bindOnly(input, row)
      if (compiled.onNewRow != null && !compiled.onNewRow.eval(bound.row)) return Iterator.empty

      val storedRow = storedRowProjections(input)(row)
      if (outerConditions(input).isDefined) markAnchorsMatching(input, row, key)
      if (outerInputsOf(input).nonEmpty) {
        val mask = matchedByStored(input, row, key)
        val rowKey = state.append(input, key, storedRow)
        if (mask != 0L) state.setMatchedMask(rowKey, mask)
      } else {
        state.append(input, key, storedRow)
      }
      // Storing first is safe: a row's own input is never probed for it.
      bindOnly(input, row)
      joinedRows(compiled, key)
    }

    /**
     * A row with a null key joins nothing; a deciding row without other inner inputs to join
     * comes out at once, null-padded, as a LEFT OUTER join gives it.
     */
    def nullKeyOutput(input: Int, row: InternalRow): Iterator[InternalRow] = {
      if (!decidingInput.contains(input) || innerInputs != Seq(input)) return Iterator.empty
      val compiled = paddedPlan(outerInputs.map(bit).sum)
      bindOnly(input, row)
      if (compiled.onNewRow != null && !compiled.onNewRow.eval(bound.row)) return Iterator.empty
      numNullPaddedRows += 1
      Iterator.single(project(bound.row))
    }

    /**
     * The null-padded output of the deciding rows evicted now, before the other inputs' rows
     * are: per combination of inner rows, the outer inputs whose anchor rows never matched.
     */
    def evictDecidingRows(): Iterator[InternalRow] = {
      val decider = decidingInput.get
      val evicted = evictionWatermarkMs.filter(_ => evictable.contains(decider)).map {
        watermark =>
          state.evictDecidingRows(decider, (watermark + evictionOffsets(decider).get) * 1000)
      }.getOrElse(Array.empty)
      val probedInner = innerPlan.plan.probeOrder
      evicted.iterator.flatMap { case (decidingRow, decidingMask) =>
        val key = keyProjections(decider)(decidingRow).copy()
        val storedWithKeys = probedInner.map(state.getWithKeys(_, key))
        val storedInner = probedInner.zip(storedWithKeys.map(_.map(_._2))).toMap
        lazy val storedOuter = outerInputs.map(input => input -> state.get(input, key)).toMap
        def unmatched(cursor: Array[Int]): Long = outerInputs.foldLeft(0L) { (mask, outer) =>
          val anchor = outerAnchors(outer).get
          val anchorMask = if (anchor == decider) decidingMask else {
            val depth = probedInner.indexOf(anchor)
            state.matchedMask(storedWithKeys(depth)(cursor(depth))._1)
          }
          if ((anchorMask & bit(outer)) == 0) mask | bit(outer) else mask
        }
        bindOnly(decider, decidingRow)
        if (innerPlan.onNewRow != null && !innerPlan.onNewRow.eval(bound.row)) {
          Iterator.empty
        } else {
          combinations(innerPlan, storedInner)(unmatched).filter(_ != 0L).flatMap { padded =>
            // The padded inputs may still hold rows bound for another combination.
            outerInputs.filter(input => (padded & bit(input)) != 0).foreach(bound.clear)
            combinations(paddedPlan(padded), storedOuter)(_ => project(bound.row))
              .map { row => numNullPaddedRows += 1; row }
          }
        }
      }
    }

    val updateStartTimeNs = System.nanoTime
    val joined = taggedInput.flatMap { case (input, row) => joinAndStore(input, row) }
    val outputRows = (if (decidingInput.isEmpty) joined else joined ++ evictDecidingRows())
      .map { row => numOutputRows += 1; row }

    def onCompletion(): Unit = {
      allUpdatesTimeMs += NANOSECONDS.toMillis(System.nanoTime - updateStartTimeNs)
      allRemovalsTimeMs += timeTakenMs {
        for (watermark <- evictionWatermarkMs; input <- evictable
             if !decidingInput.contains(input)) {
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

  private def bit(input: Int): Long = 1L << input

  override protected def withNewChildrenInternal(
      newChildren: IndexedSeq[SparkPlan]): StreamingMultiJoinExec = copy(children = newChildren)
}
