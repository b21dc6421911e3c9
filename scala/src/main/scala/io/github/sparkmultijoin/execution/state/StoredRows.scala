package io.github.sparkmultijoin.execution.state

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStore, StateStoreColFamilySchema}
import org.apache.spark.sql.types.{ArrayType, DataType, IntegerType, LongType, StructField, StructType}

/**
 * Where a multi-join's state keeps the rows under each join key, and each input's row count: the
 * part of the state layout that differs between state stores ([[MultiJoinStateManager]] has the
 * rest). A row is a value of [[MultiJoinStateManager.StoredRowSchema]].
 */
private[state] sealed trait StoredRows {

  /** The rows under `key`, not copied: each is read before the next is. */
  def under(key: UnsafeRow): Iterator[UnsafeRow]

  /** Adds `rows` to those under `key`. */
  def add(key: UnsafeRow, rows: Array[UnsafeRow]): Unit

  /** Makes `rows` the rows under `key`; with none, the key goes. */
  def replace(key: UnsafeRow, rows: Array[UnsafeRow]): Unit

  /** How many rows of `input` are stored, as last set. */
  def count(input: Int): Long

  def setCount(input: Int, count: Long): Unit
}

/**
 * Layout version 3, in RocksDB: the `rows` family holds one value per row under its join key,
 * appended with a merge; `rowCounts` holds each input's count under the input's index. The
 * manager creates these families and the time indexes.
 */
private[state] class ColumnFamilyRows(store: StateStore) extends StoredRows {
  import MultiJoinStateManager.{RowCountsFamily, RowsFamily}

  private val countKey = UnsafeProjection.create(Array[DataType](IntegerType))
  private val countValue = UnsafeProjection.create(Array[DataType](LongType))

  override def under(key: UnsafeRow): Iterator[UnsafeRow] = store.valuesIterator(key, RowsFamily)

  override def add(key: UnsafeRow, rows: Array[UnsafeRow]): Unit =
    store.mergeList(key, rows, RowsFamily)

  override def replace(key: UnsafeRow, rows: Array[UnsafeRow]): Unit =
    if (rows.isEmpty) store.remove(key, RowsFamily) else store.putList(key, rows, RowsFamily)

  override def count(input: Int): Long =
    Option(store.get(countKey(InternalRow(input)), RowCountsFamily)).map(_.getLong(0)).getOrElse(0L)

  override def setCount(input: Int, count: Long): Unit =
    store.put(countKey(InternalRow(input)).copy(), countValue(InternalRow(count)), RowCountsFamily)
}

/**
 * Layout version 4, for Spark's in-memory state store, which has one keyspace and one value per
 * key ([[OneValuePerKeyRows.storeKeySchema]], [[OneValuePerKeyRows.storeValueSchema]]):
 *  - under (the join key's columns, -1): every input's rows under the join key, as one array of
 *    [[MultiJoinStateManager.StoredRowSchema]] values (with a state TTL,
 *    [[MultiJoinStateManager.StoredRowWithTimeSchema]]). Adding rows rewrites the key's array,
 *    which the batch reads anyway to join the rows it adds; a batch adds a key's rows at once,
 *    unless they pass the manager's memory bound.
 *  - under (nulls, the input's index): the input's row count.
 * Nothing in it is ordered: eviction by event time and expiry by a TTL read every key's rows
 * ([[MultiJoinStateManager.evict]], [[MultiJoinStateManager.expire]]).
 *
 * @param store          the partition's store, opened with the schemas of this layout
 * @param keySchema      the join key's schema
 * @param withStoreTimes whether each row keeps the time it was stored (a state TTL)
 */
private[state] class OneValuePerKeyRows(
    store: StateStore,
    keySchema: StructType,
    withStoreTimes: Boolean)
  extends StoredRows {
  import OneValuePerKeyRows._

  private val numKeyColumns = keySchema.length
  private val slot = new GenericInternalRow(1)
  private val keyAndSlot = new JoinedRow
  private val storeKey = MultiJoinStateManager.boundProjection(storeKeySchema(keySchema), 0)
  private val countEntryKey = new GenericInternalRow(numKeyColumns + 1)
  private val storeValue = UnsafeProjection.create(storeValueSchema(withStoreTimes))
  private val value = new GenericInternalRow(CountOrdinal + 1)
  private val storedRowWidth = MultiJoinStateManager.storedRowSchema(withStoreTimes).length
  private val joinKey = MultiJoinStateManager.boundProjection(keySchema, 0)

  private def rowsKey(key: UnsafeRow): UnsafeRow = {
    slot.setInt(0, RowsSlot)
    storeKey(keyAndSlot(key, slot))
  }

  private def countKey(input: Int): UnsafeRow = {
    countEntryKey.setInt(numKeyColumns, input)
    storeKey(countEntryKey)
  }

  override def under(key: UnsafeRow): Iterator[UnsafeRow] = {
    val stored = store.get(rowsKey(key))
    if (stored == null) Iterator.empty else rowsOf(stored, storedRowWidth)
  }

  override def add(key: UnsafeRow, rows: Array[UnsafeRow]): Unit =
    replace(key, under(key).toArray ++ rows)

  override def replace(key: UnsafeRow, rows: Array[UnsafeRow]): Unit =
    if (rows.isEmpty) store.remove(rowsKey(key))
    else {
      value.update(RowsOrdinal, new GenericArrayData(rows.asInstanceOf[Array[Any]]))
      value.setNullAt(CountOrdinal)
      store.put(rowsKey(key), storeValue(value))
    }

  /** Every stored row, of any input, not copied. */
  def rows: Iterator[UnsafeRow] = rowsIn(store, storedRowWidth)

  /** Every join key with rows, copied, with its rows, not copied. */
  def keysAndRows: Iterator[(UnsafeRow, Iterator[UnsafeRow])] =
    store.iterator().filter(_.key.getInt(numKeyColumns) == RowsSlot).map { pair =>
      (joinKey(pair.key).copy(), rowsOf(pair.value, storedRowWidth))
    }

  override def count(input: Int): Long = {
    val stored = store.get(countKey(input))
    if (stored == null) 0L else stored.getLong(CountOrdinal)
  }

  override def setCount(input: Int, count: Long): Unit = {
    value.setNullAt(RowsOrdinal)
    value.setLong(CountOrdinal, count)
    store.put(countKey(input), storeValue(value))
  }
}

object OneValuePerKeyRows {

  /**
   * Every row in `store`, of any input, not copied. The store was opened with this layout's
   * schemas, its values' being `valueSchema` ([[storeValueSchema]]).
   */
  def all(store: StateStore, valueSchema: StructType): Iterator[UnsafeRow] =
    valueSchema(RowsOrdinal).dataType match {
      case ArrayType(row: StructType, _) => rowsIn(store, row.length)
      case other => throw new IllegalArgumentException(s"not a value of layout version 4: $other")
    }

  /** Every row in `store`, each of `width` fields, not copied. */
  private def rowsIn(store: StateStore, width: Int): Iterator[UnsafeRow] =
    store.iterator().map(_.value).filterNot(_.isNullAt(RowsOrdinal)).flatMap(rowsOf(_, width))

  /** The rows a value of a join key holds, each of `width` fields, not copied. */
  private def rowsOf(value: UnsafeRow, width: Int): Iterator[UnsafeRow] = {
    val rows = value.getArray(RowsOrdinal)
    Iterator.range(0, rows.numElements).map(rows.getStruct(_, width))
  }

  private val RowsSlot = -1
  private val RowsOrdinal = 0
  private val CountOrdinal = 1

  /** The store's key: the join key's columns (null in a count's key), then the entry's slot. */
  def storeKeySchema(keySchema: StructType): StructType =
    StructType(keySchema.fields.map(_.copy(nullable = true)) :+
      StructField("slot", IntegerType, nullable = false))

  /** The store's value: a join key's rows (with their store times or not), or a row count. */
  def storeValueSchema(withStoreTimes: Boolean): StructType = new StructType()
    .add("rows",
      ArrayType(MultiJoinStateManager.storedRowSchema(withStoreTimes), containsNull = false))
    .add("count", LongType)

  /** The store's one family, for Spark's schema checks. */
  def familySchema(keySchema: StructType, withStoreTimes: Boolean): StateStoreColFamilySchema = {
    val key = storeKeySchema(keySchema)
    StateStoreColFamilySchema(StateStore.DEFAULT_COL_FAMILY_NAME, 0, key, 0,
      storeValueSchema(withStoreTimes), Some(NoPrefixKeyStateEncoderSpec(key)), None)
  }
}
