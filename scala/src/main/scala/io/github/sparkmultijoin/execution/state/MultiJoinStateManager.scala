package io.github.sparkmultijoin.execution.state

import java.util.concurrent.TimeUnit.NANOSECONDS

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

import io.github.sparkmultijoin.model.StateLayoutVersion

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types.{DataType, StructField, StructType}

/**
 * The state of one partition of a multi-join for one micro-batch: the input rows of every input,
 * by join key, in the store's multi-join state layout ([[MultiJoinStateLayout]], which keeps the
 * rows), and what every layout shares: the writes it holds, the batch's rows it keeps in memory,
 * and its counters.
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
 * The rows a batch appends are written per key, all of a key's at once (with RocksDB, one merge:
 * Spark's `mergeList`), before the store is first read or committed, or once they pass the same
 * memory bound. A write costs about the same for one row as for many, so a key that gets a row
 * from each of five inputs in a batch is written once instead of five times.
 *
 * @param store         the partition's state store, opened as `layout` needs
 * @param keySchema     the join key's schema, the same for all inputs
 * @param inputSchemas  the schema of each input's rows
 * @param timeOrdinals  per input, the ordinal of its event time in its rows, if it has one
 * @param batchId       the micro-batch being processed
 * @param batchRowsMemoryBytes how much of the batch's rows to keep in memory for reading them,
 *                      and how much to hold before writing them
 * @param storeTimeMs   with a state TTL, the start time of this batch, which the rows of the
 *                      inputs in `storeTimesOf` are stored with; None without one
 * @param layout        the multi-join state layout of the store
 * @param storeTimesOf  the inputs whose rows keep the time they were stored (those with a TTL)
 */
class MultiJoinStateManager(
    store: StateStore,
    keySchema: StructType,
    inputSchemas: Seq[StructType],
    timeOrdinals: Seq[Option[Int]],
    batchId: Long,
    batchRowsMemoryBytes: Long,
    storeTimeMs: Option[Long] = None,
    layout: StateLayoutVersion,
    storeTimesOf: Set[Int] = Set.empty) {

  import MultiJoinStateManager._
  import StoredRow.unsafeRowTag

  require(storeTimeMs.isDefined == storeTimesOf.nonEmpty,
    "rows keep store times where a batch has a store time, and only there")

  private val shape =
    StateShape(keySchema, inputSchemas, timeOrdinals, inputSchemas.indices.map(storeTimesOf))
  private val partition = MultiJoinStateLayout(layout).open(store, shape, storeTimeMs)
  private val numInputs = inputSchemas.length

  private var nextRowIndex = 0L
  private val storedCounts = inputSchemas.indices.map(partition.count).toArray
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
    partition.valuesUnder(key).foreach { value =>
      val input = value.getInt(StoredRow.InputOrdinal)
      // An input read from memory has its rows there: its stored copies are not decoded.
      if (!readsFromMemory(input)) {
        (if (value.getLong(StoredRow.BatchIdOrdinal) == batchId) added else earlier) (input) +=
          shape.inputRow(value)
      }
    }
    keyReads += 1
    keyReadNs += System.nanoTime - startNs
    Array.tabulate(numInputs) { input =>
      val numEarlier = earlier(input).length
      new KeyRows((earlier(input) ++= added(input)).toArray, numEarlier)
    }
  }

  /**
   * Writes the rows appended since the last call, each key's at once. Reads and removals of
   * stored rows and the commit call it first; tests that read the store past the manager do too.
   */
  def writeAppendedRows(): Unit = if (keysWithUnwrittenRows.nonEmpty) {
    keysWithUnwrittenRows.foreach { batchKey =>
      partition.add(batchKey.key, batchKey.unwrittenRows.toArray)
      batchKey.unwrittenRows.clear()
    }
    keysWithUnwrittenRows.clear()
    unwrittenBytes = 0L
  }

  /** Stores `row` (an UnsafeRow of the input's schema) of `input` under `key`. */
  def append(input: Int, key: UnsafeRow, row: UnsafeRow): Unit = {
    val value = partition.encode(input, batchId, nextRowIndex, row).copy()
    nextRowIndex += 1
    storedCounts(input) += 1
    stored += 1
    val batchKey = noteInBatch(input, key, row)
    if (batchKey.unwrittenRows.isEmpty) keysWithUnwrittenRows += batchKey
    batchKey.unwrittenRows += value
    unwrittenBytes += value.getSizeInBytes + ObjectOverheadBytes
    if (unwrittenBytes > batchRowsMemoryBytes) writeAppendedRows()
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
   * below the bound (micros). Returns how many were removed.
   */
  def evict(bounds: (Int, Long)*): Long = evictAtMost(Int.MaxValue, bounds)

  /**
   * [[evict]] in part: of each input, the earliest `limit` of its rows due, where the layout
   * keeps them in time order (else all). Returns how many were removed.
   */
  def evictAtMost(limit: Int, bounds: Seq[(Int, Long)]): Long = {
    bounds.foreach { case (input, _) =>
      require(timeOrdinals(input).isDefined, s"input $input has no event time to evict by")
    }
    writeAppendedRows()
    removed(partition.evict(bounds, limit))
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
    writeAppendedRows()
    partition.newlyFinal(input, finalAtOrBelowMicros, isNewlyFinal)
  }

  /**
   * Removes, per (input, bound) in `bounds`, the rows of the input stored by a batch that started
   * at or before the bound (ms; a state TTL, only for inputs in `storeTimesOf`). Returns how many
   * were removed.
   */
  def expire(bounds: (Int, Long)*): Long = {
    bounds.foreach { case (input, _) =>
      require(storeTimesOf(input), s"input $input keeps no store times to expire by")
    }
    writeAppendedRows()
    removed(partition.expire(bounds))
  }

  /**
   * Per input in `storeTimesOf` with rows stored, the earliest time (ms) one was stored at, once
   * this batch's rows are stored and expired; a row since evicted may still count.
   */
  def earliestStoreTimes: Map[Int, Long] = {
    writeAppendedRows()
    partition.earliestStoreTimes
  }

  /** Counts the rows of each input that `perInput` says were removed; how many in all. */
  private def removed(perInput: Array[Long]): Long = {
    perInput.zipWithIndex.filter(_._1 > 0).foreach { case (rows, input) =>
      storedCounts(input) -= rows
      inputInMemory(input) = false
    }
    evicted += perInput.sum
    perInput.sum
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
    storedCounts.zipWithIndex.foreach { case (count, input) => partition.setCount(input, count) }
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

  // A rough per-row estimate of the JVM's object headers and references around a row's bytes.
  private val ObjectOverheadBytes = 48

  private val NoRows = new KeyRows(Array.empty, numEarlier = 0)

  /** The schema of the join key made of `keyTypes`' columns. */
  def keySchema(keyTypes: Seq[DataType]): StructType =
    StructType(keyTypes.zipWithIndex.map { case (dataType, index) =>
      StructField(s"key$index", dataType, nullable = false)
    })
}
