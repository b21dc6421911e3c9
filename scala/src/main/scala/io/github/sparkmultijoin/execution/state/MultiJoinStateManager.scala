package io.github.sparkmultijoin.execution.state

import java.util.concurrent.TimeUnit.NANOSECONDS

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import scala.reflect.ClassTag

import io.github.sparkmultijoin.analysis.StateLayout

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, NoPrefixKeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec, RangeKeyScanStateEncoderSpec, StateStore, StateStoreColFamilySchema}
import org.apache.spark.sql.multijoin.SparkInternals
import org.apache.spark.sql.types.{BinaryType, BooleanType, DataType, IntegerType, LongType, StructField, StructType}

/**
 * The state of one partition of a multi-join: the input rows of every input, by join key.
 *
 * Layout (version 3), in one RocksDB state store per partition:
 *  - `rows`: key = the join key's columns; values = one per stored row, of any input: the
 *    input's index, `batchId` and `rowIndex` (the batch that stored the row and its position
 *    among the rows this partition stored in that batch, which identify the row), and the row's
 *    bytes (an UnsafeRow of the input's schema). Rows are appended with RocksDB's merge, without
 *    reading the key: a batch's rows under a key with one merge (see below). One point lookup
 *    reads every input's rows under a key.
 *  - `input<i>ByTime`, for an input with an event time: key = the event time (microseconds),
 *    then the row's id (the join key's columns, `batchId`, `rowIndex`); value = a placeholder.
 *    Its keys are ordered by event time, so eviction reads exactly the rows it removes and stops
 *    at the first one it keeps.
 *  - `input<i>ByStoreTime`, only with a state TTL: key = the start time (ms) of the batch that
 *    stored the row, then the row's id; value = a placeholder. Expiring reads exactly the rows
 *    it removes, as eviction does.
 *  - `rowCounts`: key = input index, value = how many rows of that input are stored, so that the
 *    operator can report its rows per input (and in total) without scanning.
 * Removing rows (eviction, expiry) rewrites each key's values once, with the rows kept.
 * Nothing but input rows and their index is stored: which outer inputs a row matched is read
 * from the rows themselves when it is needed.
 *
 * Version 4, for Spark's in-memory state store ([[StateLayout.OneValuePerKey]]), which has no
 * column families, several values per key or order: the same values as `rows` and `rowCounts`,
 * each key's rows as one array ([[OneValuePerKeyRows]]), and no time indexes: eviction, expiry
 * and finding the rows that became final read every key's rows, as Spark's own joins do on that
 * store. With a state TTL each row's value ends with the start time (ms) of the batch that
 * stored it ([[StoredRowWithTimeSchema]]), which version 3 keeps in `input<i>ByStoreTime`.
 *
 * Version 2 kept each input's rows in a family of their own, `input<i>`, keyed by the row's id,
 * and read an input's rows under a key with a prefix scan: one per input and key, each a new
 * RocksDB iterator. A store that still has such a family has its rows moved into `rows` when it
 * is opened (the indexes are the same in both versions). Version 1 also kept a `matched` family
 * of bit masks per row with outer joins, which version 2 no longer reads.
 *
 * A batch that is retried reloads the store at the batch's version, so its row indexes start
 * over without clashing with stored rows.
 *
 * Besides the store, the manager notes the join keys this batch stores rows under (with the
 * inputs that added them). An input that had no rows stored before this batch has, under any
 * key, exactly the rows this batch adds: the manager keeps copies of those in memory, up to
 * `batchRowsMemoryBytes` (estimated), and reads them from there instead of the store. In the
 * first batch of a query (often its largest, a backlog) nothing is read back. Past the bound
 * the copies are dropped and every read goes to the store, as it would without them.
 *
 * The rows a batch appends are written per key, all of a key's with one merge (Spark's
 * `mergeList`), before the store is first read or committed, or once they pass the same memory
 * bound. A merge costs the same for one row as for many: RocksDB's write, a changelog record,
 * and the read Spark makes to count keys. A key that gets a row from each of five inputs in a
 * batch is written once instead of five times.
 *
 * @param store         the partition's state store, opened as `layout` needs
 * @param keySchema     the join key's schema, the same for all inputs
 * @param inputSchemas  the schema of each input's rows
 * @param timeOrdinals  per input, the ordinal of its event time in its rows, if it has one
 * @param batchId       the micro-batch being processed
 * @param batchRowsMemoryBytes how much of the batch's rows to keep in memory for reading them,
 *                      and how much to hold before writing them
 * @param storeTimeMs   with a state TTL, the start time of this batch, which its rows are stored
 *                      with; None without one
 * @param layout        how the store holds the rows; only version 3's has time indexes
 */
class MultiJoinStateManager(
    store: StateStore,
    keySchema: StructType,
    inputSchemas: Seq[StructType],
    timeOrdinals: Seq[Option[Int]],
    batchId: Long,
    batchRowsMemoryBytes: Long,
    storeTimeMs: Option[Long] = None,
    layout: StateLayout = StateLayout.ColumnFamilies) {

  import MultiJoinStateManager._

  // Only version 3 has column families, among them ordered time indexes; version 4 scans its
  // rows to evict them.
  private val usesColumnFamilies = layout == StateLayout.ColumnFamilies

  // Version 4 has no store-time index: with a state TTL, each row keeps its store time itself.
  private val storeTimeInRows = !usesColumnFamilies && storeTimeMs.isDefined

  if (usesColumnFamilies) {
    columnFamilySchemas(keySchema, inputSchemas, timeOrdinals.map(_.isDefined),
      withStoreTimes = storeTimeMs.isDefined).values.foreach {
      schema =>
        store.createColFamilyIfAbsent(schema.colFamilyName, schema.keySchema, schema.valueSchema,
          schema.keyStateEncoderSpec.get,
          useMultipleValuesPerKey = schema.colFamilyName == RowsFamily)
    }
  }

  private val storedRows: StoredRows = layout match {
    case StateLayout.ColumnFamilies => new ColumnFamilyRows(store)
    case StateLayout.OneValuePerKey => new OneValuePerKeyRows(store, keySchema, storeTimeInRows)
  }

  private val numInputs = inputSchemas.length
  private val inputWidths = inputSchemas.map(_.length).toArray
  // In a row id: the join key's columns, then these two.
  private val batchIdOrdinal = keySchema.length
  private val rowIndexOrdinal = keySchema.length + 1

  // Row ids, the time indexes and moving a version 2 store need these. They are generated on
  // first use, so that a task of a join without event times or a TTL generates none of them.
  private val rowPosition = new GenericInternalRow(2)
  private val keyAndPosition = new JoinedRow
  private lazy val rowIdProjection = boundProjection(rowIdSchema(keySchema), 0)
  private lazy val joinKeyOfRowId = boundProjection(keySchema, 0)
  private val timeAndRowId = new JoinedRow
  private val timeHolder = new GenericInternalRow(1)
  private lazy val timeKeyProjection = boundProjection(timeIndexKeySchema(keySchema), 0)
  private lazy val rowIdOfTimeKey = boundProjection(rowIdSchema(keySchema), 1)
  private lazy val placeholder = UnsafeProjection.create(Array[DataType](BooleanType))(
    InternalRow(true)).copy()

  private val storedValueSchema = storedRowSchema(storeTimeInRows)
  private val storedValue = new GenericInternalRow(storedValueSchema.length)
  private val storedValueProjection = boundProjection(storedValueSchema, 0)

  private val timeFamilies = inputSchemas.indices.map(timeFamily).toArray

  if (usesColumnFamilies) moveVersion2Rows()

  private var nextRowIndex = 0L
  private val storedCounts = inputSchemas.indices.map(storedRows.count).toArray
  private var stored = 0L
  private var evicted = 0L
  // What reading stored rows costs: one point lookup per key read from the store.
  private var keyReads = 0L
  private var keyReadNs = 0L

  // The keys this batch stored rows under; per input, whether the rows kept in memory are all
  // it has stored (it had none before this batch, and none were removed since).
  private val batchKeys = new java.util.HashMap[UnsafeRow, BatchKey]
  private val inputInMemory = storedCounts.map(_ == 0L)
  private var batchRowsInMemory = true
  private var batchRowsBytes = 0L
  // The keys with rows appended and not yet written to the store, and those rows' size.
  private val keysWithUnwrittenRows = ArrayBuffer.empty[BatchKey]
  private var unwrittenBytes = 0L

  private def readsFromMemory(input: Int): Boolean = batchRowsInMemory && inputInMemory(input)

  /** The join keys this batch stored rows under, each with the inputs that added them (a mask). */
  def keysAdded: Iterator[(UnsafeRow, Long)] =
    batchKeys.entrySet.iterator.asScala.map(entry => (entry.getKey, entry.getValue.inputs))

  /**
   * Per input, its rows stored under `key`, this batch's included, copied to be held.
   *
   * @param everyInput whether the caller needs rows of every input (an inner join): then, where
   *                   an input whose rows are all in memory has none under the key, the store is
   *                   not read and the inputs read from it are given none
   */
  def rowsUnder(key: UnsafeRow, everyInput: Boolean): Array[KeyRows] = {
    val inMemory = Array.tabulate(numInputs)(input =>
      if (readsFromMemory(input)) rowsInMemory(input, key) else null)
    def oneHasNone = inMemory.exists(rows => rows != null && rows.rows.isEmpty)
    val fromStore =
      if (inMemory.forall(_ != null) || (everyInput && oneHasNone)) Array.fill(numInputs)(NoRows)
      else rowsInStore(key)
    Array.tabulate(numInputs)(input => Option(inMemory(input)).getOrElse(fromStore(input)))
  }

  private def rowsInMemory(input: Int, key: UnsafeRow): KeyRows = {
    val batchKey = batchKeys.get(key)
    if (batchKey == null || batchKey.rows(input) == null) NoRows
    else new KeyRows(batchKey.rows(input).toArray, numEarlier = 0)
  }

  private def rowsInStore(key: UnsafeRow): Array[KeyRows] = {
    writeAppendedRows() // not a read: it is timed with the updates, outside the key reads
    val startNs = System.nanoTime
    val earlier, added = Array.fill(numInputs)(ArrayBuffer.empty[UnsafeRow])
    storedValues(key).foreach { value =>
      val input = value.getInt(InputOrdinal)
      // An input read from memory has its rows there: its stored copies are not decoded.
      if (!readsFromMemory(input)) {
        (if (value.getLong(BatchIdOrdinal) == batchId) added else earlier) (input) +=
          inputRow(value)
      }
    }
    keyReads += 1
    keyReadNs += System.nanoTime - startNs
    Array.tabulate(numInputs) { input =>
      val numEarlier = earlier(input).length
      new KeyRows((earlier(input) ++= added(input)).toArray, numEarlier)
    }
  }

  /** The values of `rows` under `key`, not copied: each is read before the next is. */
  private def storedValues(key: UnsafeRow): Iterator[UnsafeRow] = {
    writeAppendedRows()
    storedRows.under(key)
  }

  /**
   * Writes the rows appended since the last call, each key's with one merge. Reads of `rows` and
   * the commit call it first; tests that read the store past the manager do too.
   */
  private[state] def writeAppendedRows(): Unit = if (keysWithUnwrittenRows.nonEmpty) {
    keysWithUnwrittenRows.foreach { batchKey =>
      storedRows.add(batchKey.key, batchKey.unwrittenRows.toArray)
      batchKey.unwrittenRows.clear()
    }
    keysWithUnwrittenRows.clear()
    unwrittenBytes = 0L
  }

  private def inputRow(value: UnsafeRow): UnsafeRow =
    storedInputRow(value, inputWidths(value.getInt(InputOrdinal)))

  private def storedRow(input: Int, rowBatchId: Long, rowIndex: Long, row: UnsafeRow): UnsafeRow = {
    storedValue.setInt(InputOrdinal, input)
    storedValue.setLong(BatchIdOrdinal, rowBatchId)
    storedValue.setLong(RowIndexOrdinal, rowIndex)
    storedValue.update(RowBytesOrdinal, row.getBytes)
    if (storeTimeInRows) storedValue.setLong(StoreTimeOrdinal, storeTimeMs.get)
    storedValueProjection(storedValue)
  }

  /** Stores `row` (an UnsafeRow of the input's schema) of `input` under `key`. */
  def append(input: Int, key: UnsafeRow, row: UnsafeRow): Unit = {
    val value = storedRow(input, batchId, nextRowIndex, row).copy()
    if (usesColumnFamilies && (timeOrdinals(input).isDefined || storeTimeMs.isDefined)) {
      val rowId = rowIdOf(key, batchId, nextRowIndex)
      timeOrdinals(input).foreach(ordinal =>
        index(timeFamilies(input), row.getLong(ordinal), rowId))
      storeTimeMs.foreach(index(storeTimeFamily(input), _, rowId))
    }
    nextRowIndex += 1
    storedCounts(input) += 1
    stored += 1
    val batchKey = noteInBatch(input, key, row)
    if (batchKey.unwrittenRows.isEmpty) keysWithUnwrittenRows += batchKey
    batchKey.unwrittenRows += value
    unwrittenBytes += value.getSizeInBytes + ObjectOverheadBytes
    if (unwrittenBytes > batchRowsMemoryBytes) writeAppendedRows()
  }

  /** The id of the row `rowIndex` of batch `rowBatchId` under `key`; the next call reuses it. */
  private def rowIdOf(key: UnsafeRow, rowBatchId: Long, rowIndex: Long): UnsafeRow = {
    rowPosition.setLong(0, rowBatchId)
    rowPosition.setLong(1, rowIndex)
    rowIdProjection(keyAndPosition(key, rowPosition))
  }

  private def index(family: String, time: Long, rowId: UnsafeRow): Unit =
    store.put(timeIndexKey(time, rowId), placeholder, family)

  /** The key of a time index's entry for `rowId` at `time`; the next call reuses it. */
  private def timeIndexKey(time: Long, rowId: UnsafeRow): UnsafeRow = {
    timeHolder.setLong(0, time)
    timeKeyProjection(timeAndRowId(timeHolder, rowId))
  }

  private def noteInBatch(input: Int, key: UnsafeRow, row: UnsafeRow): BatchKey = {
    var batchKey = batchKeys.get(key)
    if (batchKey == null) {
      batchKey = new BatchKey(key.copy(), numInputs)
      batchKeys.put(batchKey.key, batchKey)
      batchRowsBytes += key.getSizeInBytes + ObjectOverheadBytes
    }
    batchKey.inputs |= 1L << input
    if (readsFromMemory(input)) {
      if (batchKey.rows(input) == null) batchKey.rows(input) = ArrayBuffer.empty
      batchKey.rows(input) += row.copy()
      batchRowsBytes += row.getSizeInBytes + ObjectOverheadBytes
      if (batchRowsBytes > batchRowsMemoryBytes) dropBatchRowsInMemory()
    }
    batchKey
  }

  private def dropBatchRowsInMemory(): Unit = {
    batchRowsInMemory = false
    batchKeys.values.forEach(_.dropRows())
  }

  /**
   * Removes, per (input, bound) in `bounds`, the rows of the input whose event time is at or
   * below the bound, reading only those (and the first row kept) from its time index; in
   * version 4, scanning every row. Returns how many were removed.
   */
  def evict(bounds: (Int, Long)*): Long = {
    bounds.foreach { case (input, _) =>
      require(timeOrdinals(input).isDefined, s"input $input has no event time to evict by")
    }
    if (usesColumnFamilies) evictByTimeIndex(bounds) else evictByScan(bounds.toMap)
  }

  private def evictByTimeIndex(bounds: Seq[(Int, Long)]): Long = {
    val due = bounds.flatMap { case (input, maxTimeMicros) =>
      val timeKeys = takeKeysAtOrBelow(timeFamilies(input), maxTimeMicros)
      storedCounts(input) -= timeKeys.length
      evicted += timeKeys.length
      if (timeKeys.nonEmpty) inputInMemory(input) = false
      timeKeys.map(rowIdOfTimeKey(_).copy())
    }
    removeRows(due).length
  }

  /** [[evict]] without time indexes. */
  private def evictByScan(bounds: Map[Int, Long]): Long =
    removeByScan(value =>
      bounds.get(value.getInt(InputOrdinal)).exists(bound => eventTimeOf(value) <= bound))

  /**
   * Removes the stored values that are `due`, without indexes: each key's rows are read, and
   * rewritten where some go. Returns how many were removed.
   */
  private def removeByScan(isDue: UnsafeRow => Boolean): Long = {
    writeAppendedRows()
    val rewrites = oneValuePerKeyRows.keysAndRows.flatMap { case (key, values) =>
      val (gone, kept) = values.toArray.partition(isDue)
      if (gone.isEmpty) None else Some((key, gone.map(_.getInt(InputOrdinal)), kept.map(_.copy())))
    }.toArray
    rewrites.foreach { case (key, goneInputs, kept) =>
      storedRows.replace(key, kept)
      goneInputs.foreach { input =>
        storedCounts(input) -= 1
        inputInMemory(input) = false
      }
    }
    val removed = rewrites.map(_._2.length.toLong).sum
    evicted += removed
    removed
  }

  private def eventTimeOf(value: UnsafeRow): Long =
    inputRow(value).getLong(timeOrdinals(value.getInt(InputOrdinal)).get)

  private def oneValuePerKeyRows: OneValuePerKeyRows = storedRows match {
    case rows: OneValuePerKeyRows => rows
    case _ => throw new IllegalStateException(s"state layout $layout reads its time indexes")
  }

  /**
   * The rows of `input` that became final in this batch, for null-padding: those with an event
   * time at or below `finalAtOrBelowMicros`, except the rows of earlier batches at or below
   * `finalBeforeAtOrBelowMicros`, the previous batch's bound (they were final then). Copied;
   * nothing is removed.
   */
  def newlyFinalRows(
      input: Int,
      finalAtOrBelowMicros: Long,
      finalBeforeAtOrBelowMicros: Long): Array[UnsafeRow] = {
    require(timeOrdinals(input).isDefined, s"input $input has no event time")
    def isNewlyFinal(time: Long, rowBatchId: Long) = time <= finalAtOrBelowMicros &&
      (time > finalBeforeAtOrBelowMicros || rowBatchId == batchId)
    if (usesColumnFamilies) newlyFinalRowsByTimeIndex(input, finalAtOrBelowMicros, isNewlyFinal)
    else newlyFinalRowsByScan(input, isNewlyFinal)
  }

  private def newlyFinalRowsByTimeIndex(
      input: Int,
      finalAtOrBelowMicros: Long,
      isNewlyFinal: (Long, Long) => Boolean): Array[UnsafeRow] = {
    val rowIds = keysAtOrBelow(timeFamilies(input), finalAtOrBelowMicros)
      .filter(key => isNewlyFinal(key.getLong(0), key.getLong(1 + batchIdOrdinal)))
      .map(rowIdOfTimeKey(_).copy()).toSeq
    idsByKey(rowIds).asScala.iterator.flatMap { case (key, ids) =>
      storedValues(key).filter(value => ids.contains(idOf(value))).map(inputRow)
    }.toArray
  }

  /** [[newlyFinalRows]] without time indexes: every stored row is read. */
  private def newlyFinalRowsByScan(
      input: Int,
      isNewlyFinal: (Long, Long) => Boolean): Array[UnsafeRow] = {
    writeAppendedRows()
    oneValuePerKeyRows.rows.filter { value =>
      value.getInt(InputOrdinal) == input &&
      isNewlyFinal(eventTimeOf(value), value.getLong(BatchIdOrdinal))
    }.map(inputRow).toArray
  }

  /**
   * Removes the rows stored by a batch that started at or before `storedAtOrBeforeMs` (a state
   * TTL; only with `storeTimeMs`), reading only those from the store-time index; in version 4,
   * scanning every row. Returns how many were removed.
   */
  def expire(storedAtOrBeforeMs: Long): Long = {
    require(storeTimeMs.isDefined, "rows have store times only with a state TTL")
    if (usesColumnFamilies) expireByStoreTimeIndex(storedAtOrBeforeMs)
    else removeByScan(_.getLong(StoreTimeOrdinal) <= storedAtOrBeforeMs)
  }

  /**
   * [[expire]] by the store-time index. A row evicted by its event time since left its entry in
   * that index, which goes now.
   */
  private def expireByStoreTimeIndex(storedAtOrBeforeMs: Long): Long = {
    val due = inputSchemas.indices.flatMap { input =>
      takeKeysAtOrBelow(storeTimeFamily(input), storedAtOrBeforeMs).map(rowIdOfTimeKey(_).copy())
    }
    val expired = removeRows(due)
    expired.foreach { case (key, value) =>
      val input = value.getInt(InputOrdinal)
      timeOrdinals(input).foreach { ordinal =>
        val rowId = rowIdOf(key, value.getLong(BatchIdOrdinal), value.getLong(RowIndexOrdinal))
        store.remove(timeIndexKey(inputRow(value).getLong(ordinal), rowId), timeFamilies(input))
      }
      storedCounts(input) -= 1
      inputInMemory(input) = false
    }
    evicted += expired.length
    expired.length
  }

  /**
   * Removes the rows with ids `rowIds` from `rows`, rewriting each key's values once with the
   * rows kept; the values removed, with their keys. Ids no longer stored are passed over.
   */
  private def removeRows(rowIds: Seq[UnsafeRow]): Seq[(UnsafeRow, UnsafeRow)] = {
    val removed = ArrayBuffer.empty[(UnsafeRow, UnsafeRow)]
    idsByKey(rowIds).forEach { (key, ids) =>
      val (gone, kept) =
        storedValues(key).map(_.copy()).toArray.partition(v => ids.contains(idOf(v)))
      if (gone.nonEmpty) {
        storedRows.replace(key, kept)
        removed ++= gone.map(key -> _)
      }
    }
    removed.toSeq
  }

  /** `rowIds` grouped by their join key, as (batchId, rowIndex) pairs. */
  private def idsByKey(
      rowIds: Seq[UnsafeRow]): java.util.HashMap[UnsafeRow, mutable.HashSet[(Long, Long)]] = {
    val byKey = new java.util.HashMap[UnsafeRow, mutable.HashSet[(Long, Long)]]
    rowIds.foreach { rowId =>
      byKey.computeIfAbsent(joinKeyOfRowId(rowId).copy(), _ => mutable.HashSet.empty) +=
        ((rowId.getLong(batchIdOrdinal), rowId.getLong(rowIndexOrdinal)))
    }
    byKey
  }

  private def idOf(value: UnsafeRow): (Long, Long) =
    (value.getLong(BatchIdOrdinal), value.getLong(RowIndexOrdinal))

  /** [[keysAtOrBelow]], each taken off its index. */
  private def takeKeysAtOrBelow(family: String, bound: Long): Array[UnsafeRow] = {
    val keys = keysAtOrBelow(family, bound)
    keys.foreach(store.remove(_, family))
    keys
  }

  /**
   * The keys of an index family (a time, then a row's id) whose time is at or below `bound`,
   * copied: the index is ordered by time, so only those and the first one above are read.
   */
  private def keysAtOrBelow(family: String, bound: Long): Array[UnsafeRow] = {
    val entries = store.iterator(family)
    try {
      entries.map(_.key).takeWhile(_.getLong(0) <= bound).map(_.copy()).toArray
    } finally {
      entries.close()
    }
  }

  /**
   * Moves the rows of a version 2 store ([[MultiJoinStateManager]]) into `rows`, and drops the
   * families that held them. Runs once per partition: a store without them has nothing to move.
   */
  private def moveVersion2Rows(): Unit = {
    inputSchemas.indices.map(input => (input, version2RowFamily(input)))
      .filter(p => SparkInternals.hasColumnFamily(store, p._2))
      .foreach {
        case (input, family) =>
          val idSchema = rowIdSchema(keySchema)
          store.createColFamilyIfAbsent(family, idSchema, inputSchemas(input),
            PrefixKeyScanStateEncoderSpec(idSchema, keySchema.length))
          val entries = store.iterator(family)
          try {
            entries.foreach { pair =>
              store.merge(joinKeyOfRowId(pair.key),
                storedRow(input, pair.key.getLong(batchIdOrdinal),
                  pair.key.getLong(rowIndexOrdinal), pair.value), RowsFamily)
            }
          } finally {
            entries.close()
          }
          store.removeColFamilyIfExists(family)
      }
  }

  /** How many rows of each input are stored after this batch's changes. */
  def rowCounts: Seq[Long] = storedCounts.toSeq

  def numStoredRows: Long = stored

  def numEvictedRows: Long = evicted

  /** How many reads of a key's stored rows went to the store (one point lookup each). */
  def numKeyReads: Long = keyReads

  /** The time those reads took, copying the rows included. */
  def keyReadTimeMs: Long = NANOSECONDS.toMillis(keyReadNs)

  def commit(): Unit = {
    writeAppendedRows()
    storedCounts.zipWithIndex.foreach { case (count, input) => storedRows.setCount(input, count) }
    store.commit()
  }

  def abortIfNotCommitted(): Unit = if (!store.hasCommitted) store.abort()
}

/**
 * An input's rows stored under one join key: first the `numEarlier` stored by earlier batches,
 * then those this batch stored.
 */
class KeyRows(val rows: Array[UnsafeRow], numEarlier: Int) {

  lazy val addedRows: Array[UnsafeRow] = if (numEarlier == 0) rows else rows.drop(numEarlier)

  lazy val earlierRows: Array[UnsafeRow] =
    if (numEarlier == rows.length) rows else rows.take(numEarlier)
}

/**
 * A join key this batch stored rows under: the inputs that added them (a bit mask), while the
 * batch's rows are kept in memory per input the rows, and the values of `rows` appended under
 * it that are not written to the store yet.
 */
private class BatchKey(val key: UnsafeRow, numInputs: Int) {
  var inputs = 0L
  val rows = new Array[ArrayBuffer[UnsafeRow]](numInputs)
  val unwrittenRows = ArrayBuffer.empty[UnsafeRow]

  def dropRows(): Unit = java.util.Arrays.fill(rows.asInstanceOf[Array[AnyRef]], null)
}

object MultiJoinStateManager {

  // Spares the lookup behind every summoned ClassTag: rows are collected into arrays per key.
  implicit val unsafeRowTag: ClassTag[UnsafeRow] = ClassTag(classOf[UnsafeRow])

  // A rough per-row estimate of the JVM's object headers and references around a row's bytes.
  private val ObjectOverheadBytes = 48

  private val NoRows = new KeyRows(Array.empty, numEarlier = 0)

  val RowsFamily = "rows"

  val RowCountsFamily = "rowCounts"

  /** The family of an input's rows in version 2, keyed by the row's id ([[rowIdSchema]]). */
  def version2RowFamily(input: Int): String = s"input$input"

  def timeFamily(input: Int): String = s"input${input}ByTime"

  def storeTimeFamily(input: Int): String = s"input${input}ByStoreTime"

  /** A value of `rows`: a stored row of any input, with what identifies it. */
  val StoredRowSchema: StructType = new StructType()
    .add("input", IntegerType, nullable = false)
    .add("batchId", LongType, nullable = false)
    .add("rowIndex", LongType, nullable = false)
    .add("row", BinaryType, nullable = false)

  val InputOrdinal = 0
  val BatchIdOrdinal = 1
  val RowIndexOrdinal = 2
  val RowBytesOrdinal = 3

  /**
   * A stored row in layout version 4 with a state TTL: [[StoredRowSchema]], then the start time
   * (ms) of the batch that stored it.
   */
  val StoredRowWithTimeSchema: StructType =
    StoredRowSchema.add("storeTimeMs", LongType, nullable = false)

  val StoreTimeOrdinal = 4

  /** The schema of a stored row: with its store time, or as [[StoredRowSchema]]. */
  def storedRowSchema(withStoreTime: Boolean): StructType =
    if (withStoreTime) StoredRowWithTimeSchema else StoredRowSchema

  /**
   * The input row a value of `rows` ([[StoredRowSchema]]) holds, of `numFields` columns, in an
   * array of its own.
   */
  def storedInputRow(value: UnsafeRow, numFields: Int): UnsafeRow = {
    val bytes = value.getBinary(RowBytesOrdinal)
    val row = new UnsafeRow(numFields)
    row.pointTo(bytes, bytes.length)
    row
  }

  /** The id of a stored row: the join key's columns, then the row's batch and index. */
  def rowIdSchema(keySchema: StructType): StructType =
    keySchema
      .add(StructField("batchId", LongType, nullable = false))
      .add(StructField("rowIndex", LongType, nullable = false))

  /**
   * The key of the time indexes: the time, then the row's id. (The store-time index shares the
   * first column's name, which versions 1 and 2 gave it.)
   */
  def timeIndexKeySchema(keySchema: StructType): StructType =
    StructType(
      StructField("eventTimeMicros", LongType, nullable = false) +: rowIdSchema(keySchema).fields)

  /** The schema of the join key made of `keyTypes`' columns. */
  def keySchema(keyTypes: Seq[DataType]): StructType =
    StructType(keyTypes.zipWithIndex.map { case (dataType, index) =>
      StructField(s"key$index", dataType, nullable = false)
    })

  /** A projection of `schema`'s columns, read from ordinal `from` on of the rows it is given. */
  private[state] def boundProjection(schema: StructType, from: Int): UnsafeProjection =
    UnsafeProjection.create(schema.fields.zipWithIndex.map { case (field, ordinal) =>
      BoundReference(from + ordinal, field.dataType, field.nullable)
    }.toSeq)

  /** Every column family's schema, for creating them and for Spark's schema checks. */
  def columnFamilySchemas(
      keySchema: StructType,
      inputSchemas: Seq[StructType],
      hasEventTime: Seq[Boolean],
      withStoreTimes: Boolean = false): Map[String, StateStoreColFamilySchema] = {
    val timeKeySchema = timeIndexKeySchema(keySchema)
    val present = new StructType().add("present", BooleanType)
    def family(
        name: String, key: StructType, value: StructType, spec: StructType => KeyStateEncoderSpec) =
      name -> StateStoreColFamilySchema(name, 0, key, 0, value, Some(spec(key)), None)
    val rows = family(RowsFamily, keySchema, StoredRowSchema, NoPrefixKeyStateEncoderSpec(_))
    val times = hasEventTime.zipWithIndex.collect { case (true, input) =>
      family(timeFamily(input), timeKeySchema, present, RangeKeyScanStateEncoderSpec(_, Seq(0)))
    }
    val storeTimes = inputSchemas.indices.filter(_ => withStoreTimes).map { input =>
      family(storeTimeFamily(input), timeKeySchema, present,
        RangeKeyScanStateEncoderSpec(_, Seq(0)))
    }
    val counts = family(RowCountsFamily, new StructType().add("input", IntegerType),
      new StructType().add("rows", LongType), NoPrefixKeyStateEncoderSpec(_))
    (rows +: (times ++ storeTimes :+ counts)).toMap
  }
}
