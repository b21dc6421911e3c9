package io.github.sparkmultijoin.execution.state

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, NoPrefixKeyStateEncoderSpec, RangeKeyScanStateEncoderSpec, StateStore, StateStoreColFamilySchema}
import org.apache.spark.sql.multijoin.StateStoreShim
import org.apache.spark.sql.types.{BooleanType, DataType, IntegerType, LongType, StructField, StructType}

/**
 * Multi-join state layout 3 (column families), in RocksDB:
 *  - `rows`: key = the join key's columns; values = the stored rows of every input under it
 *    ([[StoredRow]]). Rows are appended with RocksDB's merge, without reading the key, and one
 *    point lookup reads every input's rows under a key.
 *  - `input<i>ByTime`, for an input with an event time: key = the event time (micros), then the
 *    row's id ([[StoredRow.idSchema]]); value = a placeholder. Its keys are ordered by time, so
 *    eviction reads exactly the rows it removes and stops at the first one it keeps.
 *  - `input<i>ByStoreTime`, only for an input with a state TTL: key = the start time (ms) of the
 *    batch that stored the row, then the row's id. Expiry reads exactly the rows it removes, and
 *    the earliest is its first key.
 *  - `rowCounts`: per input, how many rows it has stored, so that they are reported without a
 *    scan.
 * Removing rows rewrites each key's values once, with the rows kept. Stores of layouts 1 and 2
 * have their rows moved in when they are opened ([[Layout2Migration]]).
 */
private[sparkmultijoin] object ColumnFamiliesLayout extends MultiJoinStateLayout {

  val RowsFamily = "rows"

  val RowCountsFamily = "rowCounts"

  def timeFamily(input: Int): String = s"input${input}ByTime"

  def storeTimeFamily(input: Int): String = s"input${input}ByStoreTime"

  /**
   * The key of the time indexes: the time, then the row's id. (The store-time index shares the
   * first column's name, which layouts 1 and 2 gave it.)
   */
  def timeIndexKeySchema(keySchema: StructType): StructType =
    StructType(
      StructField("eventTimeMicros", LongType, nullable = false) +:
        StoredRow.idSchema(keySchema).fields)

  override def familySchemas(shape: StateShape): Map[String, StateStoreColFamilySchema] = {
    val timeKeySchema = timeIndexKeySchema(shape.keySchema)
    val present = new StructType().add("present", BooleanType)
    def family(
        name: String, key: StructType, value: StructType, spec: StructType => KeyStateEncoderSpec) =
      name -> StateStoreColFamilySchema(name, 0, key, 0, value, Some(spec(key)), None)
    def timeIndex(name: String) =
      family(name, timeKeySchema, present, RangeKeyScanStateEncoderSpec(_, Seq(0)))
    val rows =
      family(RowsFamily, shape.keySchema, StoredRow.Schema, NoPrefixKeyStateEncoderSpec(_))
    val times = shape.timeOrdinals.zipWithIndex.collect {
      case (Some(_), input) => timeIndex(timeFamily(input))
    }
    val storeTimes = shape.inputSchemas.indices.filter(shape.storeTimes)
      .map(input => timeIndex(storeTimeFamily(input)))
    val counts = family(RowCountsFamily, new StructType().add("input", IntegerType),
      new StructType().add("rows", LongType), NoPrefixKeyStateEncoderSpec(_))
    (rows +: (times ++ storeTimes :+ counts)).toMap
  }

  // Rows live in families of their own: the store's default family stays empty.
  private val Unused = StructType(Nil).add("unused", "int")

  override def storeSchemas(families: Map[String, StateStoreColFamilySchema]): StoreSchemas =
    StoreSchemas(Unused, Unused, useColumnFamilies = true)

  override def open(
      store: StateStore,
      shape: StateShape,
      storeTimeMs: Option[Long]): LayoutPartition =
    new ColumnFamiliesPartition(store, shape, storeTimeMs)

  /** From `rows`, or from a store of layout 2 that no run of layout 3 opened yet. */
  override def readRows(
      store: StateStore,
      families: Map[String, StateStoreColFamilySchema],
      input: Int,
      numFields: Int): Iterator[(InternalRow, Long)] =
    if (StateStoreShim.hasColumnFamily(store, RowsFamily)) {
      registerRecorded(store, families, RowsFamily, multipleValues = true)
      StoredRow.rowsOf(StateStoreShim.everyValue(store, RowsFamily), input, numFields)
    } else {
      Layout2Migration.readRows(store, families, input)
    }

  /**
   * Registers the family `name` of `store` with the schemas that the checkpoint's schema files
   * record for it (`families`), to read it.
   */
  private[state] def registerRecorded(
      store: StateStore,
      families: Map[String, StateStoreColFamilySchema],
      name: String,
      multipleValues: Boolean): StateStoreColFamilySchema = {
    val family = MultiJoinStateLayout.recordedFamily(families, name)
    store.createColFamilyIfAbsent(name, family.keySchema, family.valueSchema,
      family.keyStateEncoderSpec.get, useMultipleValuesPerKey = multipleValues)
    family
  }
}

/** A partition's store in multi-join state layout 3 ([[ColumnFamiliesLayout]]). */
private class ColumnFamiliesPartition(
    store: StateStore,
    shape: StateShape,
    storeTimeMs: Option[Long])
  extends LayoutPartition {

  import ColumnFamiliesLayout._
  import StoredRow.{unsafeRowTag, BatchIdOrdinal, InputOrdinal, RowIndexOrdinal}

  ColumnFamiliesLayout.familySchemas(shape).values.foreach { schema =>
    store.createColFamilyIfAbsent(schema.colFamilyName, schema.keySchema, schema.valueSchema,
      schema.keyStateEncoderSpec.get, useMultipleValuesPerKey = schema.colFamilyName == RowsFamily)
  }
  Layout2Migration.moveRows(store, shape)

  private val encoder = new StoredRowEncoder(storeTimeMs = None)
  private val countKey = UnsafeProjection.create(Array[DataType](IntegerType))
  private val countValue = UnsafeProjection.create(Array[DataType](LongType))
  private val timeFamilies = shape.inputSchemas.indices.map(timeFamily).toArray

  // In a row id: the join key's columns, then these two.
  private val batchIdOrdinal = shape.keySchema.length
  private val rowIndexOrdinal = shape.keySchema.length + 1

  // Generated on first use, so that a task of a join without event times or a TTL generates none.
  private val rowPosition = new GenericInternalRow(2)
  private val keyAndPosition = new JoinedRow
  private lazy val rowIdProjection =
    StoredRow.boundProjection(StoredRow.idSchema(shape.keySchema), 0)
  private lazy val joinKeyOfRowId = StoredRow.boundProjection(shape.keySchema, 0)
  private val timeAndRowId = new JoinedRow
  private val timeHolder = new GenericInternalRow(1)
  private lazy val timeKeyProjection =
    StoredRow.boundProjection(timeIndexKeySchema(shape.keySchema), 0)
  private lazy val rowIdOfTimeKey =
    StoredRow.boundProjection(StoredRow.idSchema(shape.keySchema), 1)
  private lazy val placeholder =
    UnsafeProjection.create(Array[DataType](BooleanType))(InternalRow(true)).copy()

  override def encode(input: Int, batchId: Long, rowIndex: Long, row: UnsafeRow): UnsafeRow =
    encoder(input, batchId, rowIndex, row)

  override def add(key: UnsafeRow, values: Array[UnsafeRow]): Unit = {
    store.mergeList(key, values, RowsFamily)
    values.foreach(index(key, _))
  }

  /** Enters a stored row in its input's time index and, with a TTL, its store-time index. */
  private def index(key: UnsafeRow, value: UnsafeRow): Unit = {
    val input = value.getInt(InputOrdinal)
    if (shape.timeOrdinals(input).isDefined || shape.storeTimes(input)) {
      val rowId = rowIdOf(key, value.getLong(BatchIdOrdinal), value.getLong(RowIndexOrdinal))
      if (shape.timeOrdinals(input).isDefined) {
        store.put(timeIndexKey(shape.eventTime(value), rowId), placeholder, timeFamilies(input))
      }
      if (shape.storeTimes(input)) {
        store.put(timeIndexKey(storeTimeMs.get, rowId), placeholder, storeTimeFamily(input))
      }
    }
  }

  /** The id of the row `rowIndex` of batch `rowBatchId` under `key`; the next call reuses it. */
  private def rowIdOf(key: UnsafeRow, rowBatchId: Long, rowIndex: Long): UnsafeRow = {
    rowPosition.setLong(0, rowBatchId)
    rowPosition.setLong(1, rowIndex)
    rowIdProjection(keyAndPosition(key, rowPosition))
  }

  /** The key of a time index's entry for `rowId` at `time`; the next call reuses it. */
  private def timeIndexKey(time: Long, rowId: UnsafeRow): UnsafeRow = {
    timeHolder.setLong(0, time)
    timeKeyProjection(timeAndRowId(timeHolder, rowId))
  }

  override def valuesUnder(key: UnsafeRow): Iterator[UnsafeRow] =
    store.valuesIterator(key, RowsFamily)

  override def evict(bounds: Seq[(Int, Long)], limit: Int): Array[Long] = {
    val due = bounds.flatMap { case (input, maxTimeMicros) =>
      takeDue(timeFamilies(input), maxTimeMicros, limit).map(rowIdOfTimeKey(_).copy())
    }
    shape.perInput(removeRows(due).iterator.map(_._2))
  }

  // Eviction in chunks continues one scan per index; evicting all of the rest ends it.
  private val cursors = mutable.HashMap.empty[String, TimeIndexCursor]

  /** The keys of `family` due under `bound`, `limit` at the most, each taken off the index. */
  private def takeDue(family: String, bound: Long, limit: Int): Array[UnsafeRow] = {
    val keys =
      if (limit < Int.MaxValue) {
        cursors.getOrElseUpdate(family, new TimeIndexCursor(store, family)).take(bound, limit)
      } else {
        cursors.remove(family).fold(keysAtOrBelow(family, bound)) { cursor =>
          try cursor.take(bound, limit)
          finally cursor.close()
        }
      }
    keys.foreach(store.remove(_, family))
    keys
  }

  override def newlyFinal(
      input: Int,
      atOrBelowMicros: Long,
      isNewlyFinal: (Long, Long) => Boolean): Array[UnsafeRow] = {
    val rowIds = keysAtOrBelow(timeFamilies(input), atOrBelowMicros)
      .filter(key => isNewlyFinal(key.getLong(0), key.getLong(1 + batchIdOrdinal)))
      .map(rowIdOfTimeKey(_).copy()).toSeq
    idsByKey(rowIds).asScala.iterator.flatMap { case (key, ids) =>
      valuesUnder(key).filter(value => ids.contains(StoredRow.id(value))).map(shape.inputRow)
    }.toArray
  }

  /**
   * Reads only the rows it removes, from the store-time index. A row evicted by its event time
   * since left its entry in that index, which goes now.
   */
  override def expire(bounds: Seq[(Int, Long)]): Array[Long] = {
    val due = bounds.flatMap { case (input, storedAtOrBeforeMs) =>
      takeKeysAtOrBelow(storeTimeFamily(input), storedAtOrBeforeMs)
        .map(rowIdOfTimeKey(_).copy())
    }
    val expired = removeRows(due)
    expired.foreach { case (key, value) =>
      val input = value.getInt(InputOrdinal)
      if (shape.timeOrdinals(input).isDefined) {
        val rowId = rowIdOf(key, value.getLong(BatchIdOrdinal), value.getLong(RowIndexOrdinal))
        store.remove(timeIndexKey(shape.eventTime(value), rowId), timeFamilies(input))
      }
    }
    shape.perInput(expired.iterator.map(_._2))
  }

  override def earliestStoreTimes: Map[Int, Long] =
    shape.inputSchemas.indices.filter(shape.storeTimes).flatMap { input =>
      val entries = store.iterator(storeTimeFamily(input))
      try {
        entries.map(_.key.getLong(0)).take(1).toSeq.map(input -> _)
      } finally {
        entries.close()
      }
    }.toMap

  /**
   * Removes the rows with ids `rowIds` from `rows`, rewriting each key's values once with the
   * rows kept; the values removed, with their keys. Ids no longer stored are passed over.
   */
  private def removeRows(rowIds: Seq[UnsafeRow]): Seq[(UnsafeRow, UnsafeRow)] = {
    val removed = ArrayBuffer.empty[(UnsafeRow, UnsafeRow)]
    idsByKey(rowIds).forEach { (key, ids) =>
      val (gone, kept) =
        valuesUnder(key).map(_.copy()).toArray.partition(v => ids.contains(StoredRow.id(v)))
      if (gone.nonEmpty) {
        if (kept.isEmpty) store.remove(key, RowsFamily) else store.putList(key, kept, RowsFamily)
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

  override def count(input: Int): Long =
    Option(store.get(countKey(InternalRow(input)), RowCountsFamily)).map(_.getLong(0))
      .getOrElse(0L)

  override def setCount(input: Int, count: Long): Unit =
    store.put(countKey(InternalRow(input)).copy(), countValue(InternalRow(count)), RowCountsFamily)
}
