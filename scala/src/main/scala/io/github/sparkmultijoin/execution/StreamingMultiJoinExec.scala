package io.github.sparkmultijoin.execution

import java.util.concurrent.TimeUnit.NANOSECONDS

import scala.collection.mutable

import io.github.sparkmultijoin.execution.StreamingMultiJoinHelper.{conjuncts, onExhaustion, predicate, probePlan, probePlanAfter, probePlans, BoundRows, Combinations, ProbePlan}
import io.github.sparkmultijoin.execution.state.{KeyRows, MultiJoinStateManager}
import org.apache.hadoop.conf.Configuration

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, BasePredicate, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.{Distribution, Partitioning, PartitioningCollection, StatefulOpClusteredDistribution}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.{SchemaValidationUtils, StatefulOperatorCustomMetric, StatefulOperatorCustomSumMetric, StatefulOperatorStateInfo, StateStoreWriter}
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, OperatorInfoV1, OperatorStateMetadata, OperatorStateMetadataV2, StateSchemaValidationResult, StateStore, StateStoreColFamilySchema, StateStoreId, StateStoreMetadataV2, StateStoreOps}
import org.apache.spark.sql.multijoin.{MultiJoinConf, SparkInternals}
import org.apache.spark.sql.types.StructType

/**
 * Join of several streaming inputs on one shared key, keeping only input rows in state.
 *
 * Every input is hash-partitioned by its key into the state's partitions, so the rows that can
 * join meet in one partition. A partition's micro-batch runs in two passes. First every new row
 * is stored, and the keys it was stored under are noted (with the inputs that added rows under
 * them). Then, per noted key, each input's rows under it are read once (from memory for an
 * input that had no rows before this batch, see [[MultiJoinStateManager]]), and every
 * combination with at least one new row is emitted exactly once: a new row of input i joins all
 * rows of the inputs before i and the earlier rows of the inputs after it. This is the N-way
 * delta join `dA join B join C + A' join dB join C + A' join B' join dC`, where primes are states
 * updated by this batch. Grouping by key reads a key's stored rows once per batch rather than
 * once per new row, and a key without rows of some input is dropped after reading that input:
 * the inputs that added nothing under the key are read first, as the likeliest to be empty. Rows
 * with a null key component never match and are not stored, nor are rows that fail a conjunct
 * that references only their own input.
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
    val batchRowsMemory = MultiJoinConf.batchRowsMemory(conf)
    // Rows live in column families of their own; the store's default family stays empty.
    val defaultFamilySchema = StructType(Nil).add("unused", "int")
    new TaggedZipRDD(children.map(_.execute())).mapPartitionsWithStateStore(
      info, defaultFamilySchema, defaultFamilySchema,
      NoPrefixKeyStateEncoderSpec(defaultFamilySchema), session.sessionState,
      Some(SparkInternals.stateStoreCoordinator(session)), useColumnFamilies = true)(
      processPartition(info, watermarks.map(_._1), watermarks.map(_._2), batchRowsMemory))
  }

  private def processPartition(
      info: StatefulOperatorStateInfo,
      lateRowsWatermarkMs: Option[Long],
      evictionWatermarkMs: Option[Long],
      batchRowsMemory: Long)(
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
    val outerInputsOf =
      children.indices.map(anchor => outerInputs.filter(outerAnchors(_).contains(anchor)))
    // An anchor's rows are read with their keys, which address their matched bits.
    val anchors = children.indices.filter(outerInputsOf(_).nonEmpty).toSet
    val state = new MultiJoinStateManager(
      store, keySchema, children.map(_.schema), ordinals, decidingInput.isDefined, anchors,
      info.storeVersion, batchRowsMemory)
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
        outerInputs.filter(inMask(unmatched, _)).toSet)))
    // An outer input's ON clause, over its anchor row and its row.
    val onClauses = outerConditions.map(_.map(on => predicate(Some(on), output)))

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

    def bindOnly(input: Int, row: InternalRow): Unit = {
      children.indices.foreach(bound.clear)
      bound.bind(input, row)
    }

    // Spark drops an input row at or below the watermark of the previous batch as late.
    val lateAtOrBelowMicros = lateRowsWatermarkMs.map(_ * 1000)
    def isLate(input: Int, row: InternalRow): Boolean = ordinals(input).exists { ordinal =>
      lateAtOrBelowMicros.exists(watermark => !row.isNullAt(ordinal) &&
        row.getLong(ordinal) <= watermark)
    }

    // Per set of inputs that added rows under a key (a bit mask), the order the inputs' rows
    // under it are read in: those that added none first (the likeliest to have none).
    val readOrders = mutable.HashMap.empty[Long, Array[Int]]
    def readOrder(addedInputs: Long): Array[Int] = readOrders.getOrElseUpdate(addedInputs,
      children.indices.sortBy(inMask(addedInputs, _)).toArray)

    /** Stores a new row, unless it is late or can join nothing. */
    def storeNewRow(input: Int, row: InternalRow): Iterator[InternalRow] = {
      if (isLate(input, row)) {
        numLateRows += 1
        return Iterator.empty
      }
      val key = keyProjections(input)(row)
      if (key.anyNull) return nullKeyOutput(input, row)
      val ownCheck = joinPlans(input).onNewRow
      bindOnly(input, row)
      if (ownCheck != null && !ownCheck.eval(bound.row)) return Iterator.empty
      val storedRow = row match {
        case unsafeRow: UnsafeRow => unsafeRow // as rows come from the shuffle: the store copies it
        case _ => storedRowProjections(input)(row)
      }
      state.append(input, key, storedRow)
      Iterator.empty
    }

    /**
     * The combinations under `key` with a row of this batch, each once: a new row of input i
     * joins all rows of the inputs before i and the earlier rows of those after it.
     */
    def joinKey(key: UnsafeRow, addedInputs: Long): Iterator[InternalRow] = {
      val rowsOf = new Array[KeyRows](children.length)
      def rowsUnder(input: Int): KeyRows = {
        if (rowsOf(input) == null) {
          rowsOf(input) = state.rowsUnder(input, key)
        }
        rowsOf(input)
      }
      if (decidingInput.isDefined) markMatches(addedInputs, rowsUnder)
      if (readOrder(addedInputs).exists(rowsUnder(_).rows.isEmpty)) return Iterator.empty
      readOrder(addedInputs).iterator.filter(inMask(addedInputs, _)).flatMap { input =>
        rowsOf(input).addedRows.iterator.flatMap { row =>
          bindOnly(input, row)
          combinations(joinPlans(input), probed =>
            if (probed < input) rowsOf(probed).rows else rowsOf(probed).earlierRows
          )(_ => project(bound.row))
        }
      }
    }

    /**
     * Marks the anchor rows under a key that match a row of an outer input anchored there, for
     * the pairs with a row of this batch; the other pairs were checked in earlier batches.
     */
    def markMatches(addedInputs: Long, rowsUnder: Int => KeyRows): Unit =
      children.indices.foreach { anchor =>
        val outers = outerInputsOf(anchor).filter(outer =>
          inMask(addedInputs, anchor) || inMask(addedInputs, outer))
        if (outers.nonEmpty) {
          val outersWithAddedRows = outers.filter(inMask(addedInputs, _))
          val anchorRows = rowsUnder(anchor)
          anchorRows.rows.indices.foreach { position =>
            val isAdded = anchorRows.isAdded(position)
            val checked = if (isAdded) outers else outersWithAddedRows
            if (checked.nonEmpty) {
              val rowKey = anchorRows.rowKeys(position)
              val before = if (isAdded) 0L else state.matchedMask(rowKey)
              // The ON clause reads only the anchor and the outer input: the anchor row is bound
              // once, the outer input's rows overwrite each other.
              bindOnly(anchor, anchorRows.rows(position))
              val after = checked.foldLeft(before) { (mask, outer) =>
                val candidates =
                  if (isAdded) rowsUnder(outer).rows else rowsUnder(outer).addedRows
                val matched = inMask(mask, outer) || candidates.exists { outerRow =>
                  bound.bind(outer, outerRow)
                  onClauses(outer).get.eval(bound.row)
                }
                if (matched) mask | bit(outer) else mask
              }
              if (after != before) state.setMatchedMask(rowKey, after)
            }
          }
        }
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
        val storedInner = probedInner.map(input => input -> state.rowsUnder(input, key)).toMap
        lazy val storedOuter =
          outerInputs.map(input => input -> state.rowsUnder(input, key).rows).toMap
        def unmatched(cursor: Array[Int]): Long = outerInputs.foldLeft(0L) { (mask, outer) =>
          val anchor = outerAnchors(outer).get
          val anchorMask = if (anchor == decider) decidingMask else {
            state.matchedMask(storedInner(anchor).rowKeys(cursor(probedInner.indexOf(anchor))))
          }
          if (inMask(anchorMask, outer)) mask else mask | bit(outer)
        }
        bindOnly(decider, decidingRow)
        if (innerPlan.onNewRow != null && !innerPlan.onNewRow.eval(bound.row)) {
          Iterator.empty
        } else {
          val unmatchedPerCombination =
            combinations(innerPlan, storedInner(_).rows)(unmatched).filter(_ != 0L)
          unmatchedPerCombination.flatMap { padded =>
            // The padded inputs may still hold rows bound for another combination.
            outerInputs.filter(inMask(padded, _)).foreach(bound.clear)
            combinations(paddedPlan(padded), storedOuter)(_ => project(bound.row))
              .map { row => numNullPaddedRows += 1; row }
          }
        }
      }
    }

    val updateStartTimeNs = System.nanoTime
    // All new rows are stored before any is joined, so that each key's stored rows are read
    // once per batch, not once per new row.
    val joined = taggedInput.flatMap { case (input, row) => storeNewRow(input, row) } ++
      state.keysAdded.flatMap { case (key, addedInputs) => joinKey(key, addedInputs) }
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

  private def inMask(mask: Long, input: Int): Boolean = (mask & bit(input)) != 0

  override protected def withNewChildrenInternal(
      newChildren: IndexedSeq[SparkPlan]): StreamingMultiJoinExec = copy(children = newChildren)
}
