package io.github.sparkmultijoin.execution.state

import java.util.concurrent.TimeUnit.NANOSECONDS

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import scala.reflect.ClassTag

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, NoPrefixKeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec, RangeKeyScanStateEncoderSpec, StateStore, StateStoreColFamilySchema}
import org.apache.spark.sql.types.{BooleanType, DataType, IntegerType, LongType, StructField, StructType}

/**
 * The state of one partition of a multi-join: the input rows of every input, by join key.
 *
 * Layout, in one RocksDB state store per partition:
 *  - `input<i>`, one column family per input: key = the join key's columns, then `batchId` and
 *    `rowIndex` (longs: the batch that stored the row and its position among the rows this
 *    partition stored in that batch, which make every key unique); value = the input row. A
 *    prefix scan over the join key's columns reads an input's rows for one key.
 *  - `input<i>ByTime`, for an input with an event time: key = the event time (microseconds),
 *    then the row's key in `input<i>`; value = a placeholder. Its keys are ordered by event time,
 *    so eviction reads exactly the rows it removes and stops at the first one it keeps.
 *  - `input<i>ByStoreTime`, only with a state TTL: key = the start time (ms) of the batch that
 *    stored the row, then the row's key in `input<i>`; value = a placeholder. Expiring reads
 *    exactly the rows it removes, as eviction does.
 *  - `rowCounts`: key = input index, value = how many rows of that input are stored, so that the
 *    operator can report its rows per input (and in total) without scanning.
 * Nothing but input rows and their index is stored: which outer inputs a row matched is read
 * from the rows themselves when it is needed. (Layout version 2; version 1 also kept a
 * `matched` family of bit masks per row with outer joins.)
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
 * @param store         the partition's state store, opened with column families
 * @param keySchema     the join key's schema, the same for all inputs
 * @param inputSchemas  the schema of each input's rows
 * @param timeOrdinals  per input, the ordinal of its event time in its rows, if it has one
 * @param batchId       the micro-batch being processed
 * @param batchRowsMemoryBytes how much of the batch's rows to keep in memory
 * @param storeTimeMs   with a state TTL, the start time of this batch, which its rows are stored
 *                      with; None without one
 */
class MultiJoinStateManager(
    store: StateStore,
    keySchema: StructType,
    inputSchemas: Seq[StructType],
    timeOrdinals: Seq[Option[Int]],
    batchId: Long,
    batchRowsMemoryBytes: Long,
    storeTimeMs: Option[Long] = None) {

  import MultiJoinStateManager._

  columnFamilySchemas(keySchema, inputSchemas, timeOrdinals.map(_.isDefined),
    withStoreTimes = storeTimeMs.isDefined).values.foreach {
    schema =>
      store.createColFamilyIfAbsent(schema.colFamilyName, schema.keySchema, schema.valueSchema,
        schema.keyStateEncoderSpec.get)
  }

  private val rowKeyWidth = stateKeySchema(keySchema).length
  private val rowPosition = new GenericInternalRow(Array[Any](batchId, 0L))
  private val keyAndPosition = new JoinedRow
  private val rowKeyProjection = UnsafeProjection.create(
    stateKeySchema(keySchema).fields.zipWithIndex.map { case (field, ordinal) =>
      BoundReference(ordinal, field.dataType, field.nullable)
    }.toSeq)
  private val timeAndRowKey = new JoinedRow
  private val timeHolder = new GenericInternalRow(1)
  private val timeKeyProjection = UnsafeProjection.create(
    timeIndexKeySchema(keySchema).fields.zipWithIndex.map { case (field, ordinal) =>
      BoundReference(ordinal, field.dataType, field.nullable)
    }.toSeq)
  private val rowKeyOfTimeKey = UnsafeProjection.create(
    (1 to rowKeyWidth).map { ordinal =>
      val field = timeIndexKeySchema(keySchema)(ordinal)
      BoundReference(ordinal, field.dataType, field.nullable)
    })
  private val placeholder = UnsafeProjection.create(Array[DataType](BooleanType))(
    InternalRow(true)).copy()
  private val countKey = UnsafeProjection.create(Array[DataType](IntegerType))
  private val countValue = UnsafeProjection.create(Array[DataType](LongType))

  private val rowFamilies = inputSchemas.indices.map(rowFamily).toArray
  private val timeFamilies = inputSchemas.indices.map(timeFamily).toArray

  private var nextRowIndex = 0L
  private val storedCounts = inputSchemas.indices.map { input =>
    Option(store.get(countKey(InternalRow(input)), RowCountsFamily)).map(_.getLong(0)).getOrElse(0L)
  }.toArray
  private var stored = 0L
  private var evicted = 0L
  // What reading stored rows costs: a prefix scan per input and key read from the store.
  private var prefixScans = 0L
  private var prefixScanNs = 0L

  // The keys this batch stored rows under; per input, whether the rows kept in memory are all
  // it has stored (it had none before this batch, and none were removed since).
  private val batchKeys = new java.util.HashMap[UnsafeRow, BatchKey]
  private val inputInMemory = storedCounts.map(_ == 0L)
  private var batchRowsInMemory = true
  private var batchRowsBytes = 0L

  private def readsFromMemory(input: Int): Boolean = batchRowsInMemory && inputInMemory(input)

  /** The join keys this batch stored rows under, each with the inputs that added them (a mask). */
  def keysAdded: Iterator[(UnsafeRow, Long)] =
    batchKeys.entrySet.iterator.asScala.map(entry => (entry.getKey, entry.getValue.inputs))

  /** The rows of `input` stored under `key`, this batch's included, copied to be held. */
  def rowsUnder(input: Int, key: UnsafeRow): KeyRows =
    if (readsFromMemory(input)) {
      rowsInMemory(input, key)
    } else {
      rowsInStore(input, key)
    }

  private def rowsInMemory(input: Int, key: UnsafeRow): KeyRows = {
    val batchKey = batchKeys.get(key)
    if (batchKey == null || batchKey.rows(input) == null) {
      new KeyRows(Array.empty, numEarlier = 0)
    } else {
      new KeyRows(batchKey.rows(input).toArray, numEarlier = 0)
    }
  }

  private def rowsInStore(input: Int, key: UnsafeRow): KeyRows = {
    val earlier, added = ArrayBuffer.empty[UnsafeRow]
    val startNs = System.nanoTime
    val scan = store.prefixScan(key, rowFamilies(input))
    try {
      scan.foreach { pair =>
        val isAdded = pair.key.getLong(keySchema.length) == batchId
        (if (isAdded) added else earlier) += pair.value.copy()
      }
    } finally {
      scan.close()
    }
    prefixScans += 1
    prefixScanNs += System.nanoTime - startNs
    val numEarlier = earlier.length
    new KeyRows((earlier ++= added).toArray, numEarlier)
  }

  /** Stores `row` (an UnsafeRow of the input's schema) of `input` under `key`. */
  def append(input: Int, key: UnsafeRow, row: UnsafeRow): Unit = {
    rowPosition.setLong(1, nextRowIndex)
    nextRowIndex += 1
    val rowKey = rowKeyProjection(keyAndPosition(key, rowPosition))
    store.put(rowKey, row, rowFamilies(input))
    timeOrdinals(input).foreach { ordinal =>
      timeHolder.setLong(0, row.getLong(ordinal))
      store.put(timeKeyProjection(timeAndRowKey(timeHolder, rowKey)), placeholder,
        timeFamilies(input))
    }
    storeTimeMs.foreach { storedAt =>
      timeHolder.setLong(0, storedAt)
      store.put(timeKeyProjection(timeAndRowKey(timeHolder, rowKey)), placeholder,
        storeTimeFamily(input))
    }
    storedCounts(input) += 1
    stored += 1

    var batchKey = batchKeys.get(key)
    if (batchKey == null) {
      batchKey = new BatchKey(inputSchemas.length)
      batchKeys.put(key.copy(), batchKey)
      batchRowsBytes += key.getSizeInBytes + ObjectOverheadBytes
    }
    batchKey.inputs |= 1L << input
    if (readsFromMemory(input)) {
      if (batchKey.rows(input) == null) batchKey.rows(input) = ArrayBuffer.empty
      batchKey.rows(input) += row.copy()
      batchRowsBytes += row.getSizeInBytes + ObjectOverheadBytes
      if (batchRowsBytes > batchRowsMemoryBytes) dropBatchRowsInMemory()
    }
  }

  private def dropBatchRowsInMemory(): Unit = {
    batchRowsInMemory = false
    batchKeys.values.forEach(_.dropRows())
  }

  /**
   * Removes the rows of `input` whose event time is at or below `maxTimeMicros`, reading only
   * those (and the first row kept). Returns how many were removed.
   */
  def evict(input: Int, maxTimeMicros: Long): Long =
    dueRowKeys(input, maxTimeMicros).map(store.remove(_, rowFamilies(input))).length

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
    val batchIdOrdinal = 1 + keySchema.length
    keysAtOrBelow(timeFamilies(input), finalAtOrBelowMicros)
      .filter(key =>
        key.getLong(0) > finalBeforeAtOrBelowMicros || key.getLong(batchIdOrdinal) == batchId)
      .map(key => store.get(rowKeyOfTimeKey(key), rowFamilies(input)).copy())
  }

  /** Takes the due rows of `input` off its time index and the counts; the caller removes them. */
  private def dueRowKeys(input: Int, maxTimeMicros: Long): Array[UnsafeRow] = {
    require(timeOrdinals(input).isDefined, s"input $input has no event time to evict by")
    val timeKeys = keysAtOrBelow(timeFamilies(input), maxTimeMicros)
    storedCounts(input) -= timeKeys.length
    evicted += timeKeys.length
    if (timeKeys.nonEmpty) inputInMemory(input) = false
    timeKeys.map { timeKey =>
      store.remove(timeKey, timeFamilies(input))
      rowKeyOfTimeKey(timeKey).copy()
    }
  }

  /**
   * Removes the rows of `input` stored by a batch that started at or before `storedAtOrBeforeMs`
   * (a state TTL; only with `storeTimeMs`), reading only those. Returns how many were removed.
   * A row evicted by its event time since left its entry in the store-time index, which goes
   * now.
   */
  def expire(input: Int, storedAtOrBeforeMs: Long): Long = {
    require(storeTimeMs.isDefined, "rows have store times only with a state TTL")
    val storeTimeKeys = keysAtOrBelow(storeTimeFamily(input), storedAtOrBeforeMs)
    val expired = storeTimeKeys.count { storeTimeKey =>
      store.remove(storeTimeKey, storeTimeFamily(input))
      val rowKey = rowKeyOfTimeKey(storeTimeKey).copy()
      val row = store.get(rowKey, rowFamilies(input))
      if (row != null) {
        timeOrdinals(input).foreach { ordinal =>
          timeHolder.setLong(0, row.getLong(ordinal))
          store.remove(timeKeyProjection(timeAndRowKey(timeHolder, rowKey)), timeFamilies(input))
        }
        store.remove(rowKey, rowFamilies(input))
      }
      row != null
    }
    storedCounts(input) -= expired
    evicted += expired
    if (expired > 0) inputInMemory(input) = false
    expired
  }

  /**
   * The keys of an index family (a time, then a row's key) whose time is at or below `bound`,
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

  /** How many rows of each input are stored after this batch's changes. */
  def rowCounts: Seq[Long] = storedCounts.toSeq

  def numStoredRows: Long = stored

  def numEvictedRows: Long = evicted

  /** How many reads of an input's rows under a key went to the store (one prefix scan each). */
  def numPrefixScans: Long = prefixScans

  /** The time those reads took, copying the rows included. */
  def prefixScanTimeMs: Long = NANOSECONDS.toMillis(prefixScanNs)

  def commit(): Unit = {
    storedCounts.zipWithIndex.foreach { case (count, input) =>
      store.put(countKey(InternalRow(input)).copy(), countValue(InternalRow(count)),
        RowCountsFamily)
    }
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
 * A join key this batch stored rows under: the inputs that added them (a bit mask) and, while
 * the batch's rows are kept in memory, per input the rows.
 */
private class BatchKey(numInputs: Int) {
  var inputs = 0L
  val rows = new Array[ArrayBuffer[UnsafeRow]](numInputs)

  def dropRows(): Unit = java.util.Arrays.fill(rows.asInstanceOf[Array[AnyRef]], null)
}

object MultiJoinStateManager {

  // Spares the lookup behind every summoned ClassTag: rows are collected into arrays per key.
  implicit val unsafeRowTag: ClassTag[UnsafeRow] = ClassTag(classOf[UnsafeRow])

  // A rough per-row estimate of the JVM's object headers and references around a row's bytes.
  private val ObjectOverheadBytes = 48

  val RowCountsFamily = "rowCounts"

  def rowFamily(input: Int): String = s"input$input"

  def timeFamily(input: Int): String = s"input${input}ByTime"

  def storeTimeFamily(input: Int): String = s"input${input}ByStoreTime"

  /** The key of a stored row: the join key's columns, then the row's batch and index. */
  def stateKeySchema(keySchema: StructType): StructType =
    keySchema
      .add(StructField("batchId", LongType, nullable = false))
      .add(StructField("rowIndex", LongType, nullable = false))

  /** The key of the time index: the event time, then the row's key. */
  def timeIndexKeySchema(keySchema: StructType): StructType =
    StructType(StructField("eventTimeMicros", LongType, nullable = false) +:
      stateKeySchema(keySchema).fields)

  /** The schema of the join key made of `keyTypes`' columns. */
  def keySchema(keyTypes: Seq[DataType]): StructType =
    StructType(keyTypes.zipWithIndex.map { case (dataType, index) =>
      StructField(s"key$index", dataType, nullable = false)
    })

  /** Every column family's schema, for creating them and for Spark's schema checks. */
  def columnFamilySchemas(
      keySchema: StructType,
      inputSchemas: Seq[StructType],
      hasEventTime: Seq[Boolean],
      withStoreTimes: Boolean = false): Map[String, StateStoreColFamilySchema] = {
    val rowKeySchema = stateKeySchema(keySchema)
    val timeKeySchema = timeIndexKeySchema(keySchema)
    def family(
        name: String, key: StructType, value: StructType, spec: StructType => KeyStateEncoderSpec) =
      name -> StateStoreColFamilySchema(name, 0, key, 0, value, Some(spec(key)), None)
    val rows = inputSchemas.zipWithIndex.map { case (inputSchema, input) =>
      family(rowFamily(input), rowKeySchema, inputSchema,
        PrefixKeyScanStateEncoderSpec(_, keySchema.length))
    }
    val times = hasEventTime.zipWithIndex.collect { case (true, input) =>
      family(timeFamily(input), timeKeySchema, new StructType().add("present", BooleanType),
        RangeKeyScanStateEncoderSpec(_, Seq(0)))
    }
    val storeTimes = inputSchemas.indices.filter(_ => withStoreTimes).map { input =>
      family(storeTimeFamily(input), timeKeySchema, new StructType().add("present", BooleanType),
        RangeKeyScanStateEncoderSpec(_, Seq(0)))
    }
    val counts = family(RowCountsFamily, new StructType().add("input", IntegerType),
      new StructType().add("rows", LongType), NoPrefixKeyStateEncoderSpec(_))
    (rows ++ times ++ storeTimes :+ counts).toMap
  }
}
