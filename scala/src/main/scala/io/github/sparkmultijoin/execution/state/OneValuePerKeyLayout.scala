package io.github.sparkmultijoin.execution.state

import scala.collection.mutable

import io.github.sparkmultijoin.model.StateLayoutVersion

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStore, StateStoreColFamilySchema}
import org.apache.spark.sql.types.{ArrayType, IntegerType, LongType, StructField, StructType}

/**
 * Multi-join state layout 4 (one value per key), for Spark's in-memory state store, which has
 * one keyspace, one value per key and no order ([[storeKeySchema]], [[storeValueSchema]]):
 *  - under (the join key's columns, -1): every input's rows under the join key, as one array of
 *    stored rows ([[StoredRow]]; with a state TTL on some input each keeps its store time, as
 *    there is no index for it). Adding rows rewrites the key's array, which the batch reads
 *    anyway to join the rows it adds.
 *  - under (nulls, the input's index): the input's row count.
 * With nothing ordered, eviction, expiry and finding the rows that became final read every key's
 * rows, as Spark's own joins do on that store.
 */
private[sparkmultijoin] object OneValuePerKeyLayout extends MultiJoinStateLayout {

  private[state] val RowsSlot = -1
  private[state] val RowsOrdinal = 0
  private[state] val CountOrdinal = 1

  /** The store's key: the join key's columns (null in a count's key), then the entry's slot. */
  def storeKeySchema(keySchema: StructType): StructType =
    StructType(keySchema.fields.map(_.copy(nullable = true)) :+
      StructField("slot", IntegerType, nullable = false))

  /** The store's value: a join key's rows (with their store times or not), or a row count. */
  def storeValueSchema(withStoreTimes: Boolean): StructType = new StructType()
    .add("rows", ArrayType(StoredRow.schema(withStoreTimes), containsNull = false))
    .add("count", LongType)

  /** The store's one family. */
  override def familySchemas(shape: StateShape): Map[String, StateStoreColFamilySchema] = {
    val key = storeKeySchema(shape.keySchema)
    val family = StateStoreColFamilySchema(StateStore.DEFAULT_COL_FAMILY_NAME, 0, key, 0,
      storeValueSchema(shape.anyStoreTimes), Some(NoPrefixKeyStateEncoderSpec(key)), None)
    Map(family.colFamilyName -> family)
  }

  override def storeSchemas(families: Map[String, StateStoreColFamilySchema]): StoreSchemas = {
    val family = MultiJoinStateLayout.recordedFamily(families, StateStore.DEFAULT_COL_FAMILY_NAME)
    StoreSchemas(family.keySchema, family.valueSchema, useColumnFamilies = false)
  }

  override def open(
      store: StateStore,
      shape: StateShape,
      storeTimeMs: Option[Long]): LayoutPartition =
    new OneValuePerKeyPartition(store, shape, storeTimeMs)

  override def readRows(
      store: StateStore,
      families: Map[String, StateStoreColFamilySchema],
      input: Int,
      numFields: Int): Iterator[(InternalRow, Long)] = {
    val valueSchema = storeSchemas(families).valueSchema
    val width = valueSchema(RowsOrdinal).dataType match {
      case ArrayType(row: StructType, _) => row.length
      case other =>
        throw new IllegalArgumentException(
          s"not a value of ${StateLayoutVersion.OneValuePerKey}: $other")
    }
    StoredRow.rowsOf(rowsIn(store, width), input, numFields)
  }

  /** Every row in `store`, each of `width` fields, not copied. */
  private[state] def rowsIn(store: StateStore, width: Int): Iterator[UnsafeRow] =
    store.iterator().map(_.value).filterNot(_.isNullAt(RowsOrdinal)).flatMap(rowsOf(_, width))

  /** The rows a value of a join key holds, each of `width` fields, not copied. */
  private[state] def rowsOf(value: UnsafeRow, width: Int): Iterator[UnsafeRow] = {
    val rows = value.getArray(RowsOrdinal)
    Iterator.range(0, rows.numElements).map(rows.getStruct(_, width))
  }
}

/** A partition's store in multi-join state layout 4 ([[OneValuePerKeyLayout]]). */
private class OneValuePerKeyPartition(
    store: StateStore,
    shape: StateShape,
    storeTimeMs: Option[Long])
  extends LayoutPartition {

  import OneValuePerKeyLayout._
  import StoredRow.{unsafeRowTag, BatchIdOrdinal, InputOrdinal, StoreTimeOrdinal}

  private val encoder = new StoredRowEncoder(storeTimeMs)
  private val numKeyColumns = shape.keySchema.length
  private val slot = new GenericInternalRow(1)
  private val keyAndSlot = new JoinedRow
  private val storeKey = StoredRow.boundProjection(storeKeySchema(shape.keySchema), 0)
  private val countEntryKey = new GenericInternalRow(numKeyColumns + 1)
  private val storeValue = UnsafeProjection.create(storeValueSchema(shape.anyStoreTimes))
  private val value = new GenericInternalRow(CountOrdinal + 1)
  private val storedRowWidth = StoredRow.schema(shape.anyStoreTimes).length
  private val joinKey = StoredRow.boundProjection(shape.keySchema, 0)

  private def rowsKey(key: UnsafeRow): UnsafeRow = {
    slot.setInt(0, RowsSlot)
    storeKey(keyAndSlot(key, slot))
  }

  private def countKey(input: Int): UnsafeRow = {
    countEntryKey.setInt(numKeyColumns, input)
    storeKey(countEntryKey)
  }

  override def encode(input: Int, batchId: Long, rowIndex: Long, row: UnsafeRow): UnsafeRow =
    encoder(input, batchId, rowIndex, row)

  override def add(key: UnsafeRow, values: Array[UnsafeRow]): Unit = {
    replace(key, valuesUnder(key).toArray ++ values)
    for (time <- storeTimeMs; value <- values) noteStoreTime(value.getInt(InputOrdinal), time)
  }

  override def valuesUnder(key: UnsafeRow): Iterator[UnsafeRow] = {
    val stored = store.get(rowsKey(key))
    if (stored == null) Iterator.empty else rowsOf(stored, storedRowWidth)
  }

  /** Makes `values` the rows under `key`; with none, the key goes. */
  private def replace(key: UnsafeRow, values: Array[UnsafeRow]): Unit =
    if (values.isEmpty) store.remove(rowsKey(key))
    else {
      value.update(RowsOrdinal, new GenericArrayData(values.asInstanceOf[Array[Any]]))
      value.setNullAt(CountOrdinal)
      store.put(rowsKey(key), storeValue(value))
    }

  // Its rows are in no order: it scans them all, and removes every due one.
  override def evict(bounds: Seq[(Int, Long)], limit: Int): Array[Long] = {
    val byInput = bounds.toMap
    removeByScan(value =>
      byInput.get(value.getInt(InputOrdinal)).exists(bound => shape.eventTime(value) <= bound))
  }

  override def newlyFinal(
      input: Int,
      atOrBelowMicros: Long,
      isNewlyFinal: (Long, Long) => Boolean): Array[UnsafeRow] =
    rowsIn(store, storedRowWidth).filter { value =>
      value.getInt(InputOrdinal) == input &&
      isNewlyFinal(shape.eventTime(value), value.getLong(BatchIdOrdinal))
    }.map(shape.inputRow).toArray

  // Per input with store times, the earliest store time of the rows this batch kept or added.
  private val earliest = mutable.HashMap.empty[Int, Long]

  private def noteStoreTime(input: Int, timeMs: Long): Unit =
    if (shape.storeTimes(input)) earliest(input) = earliest.getOrElse(input, timeMs) min timeMs

  /** Reads every row, so it also notes the earliest store time of those it keeps. */
  override def expire(bounds: Seq[(Int, Long)]): Array[Long] = {
    val byInput = bounds.toMap
    earliest.clear()
    removeByScan { value =>
      val (input, storedAt) = (value.getInt(InputOrdinal), value.getLong(StoreTimeOrdinal))
      val due = byInput.get(input).exists(storedAt <= _)
      if (!due) noteStoreTime(input, storedAt)
      due
    }
  }

  override def earliestStoreTimes: Map[Int, Long] = earliest.toMap

  /**
   * Removes the stored rows that are `due`: each key's rows are read, and rewritten where some
   * go. Returns how many of each input's were removed.
   */
  private def removeByScan(isDue: UnsafeRow => Boolean): Array[Long] = {
    val rewrites = keysAndRows.flatMap { case (key, values) =>
      val (gone, kept) = values.toArray.partition(isDue)
      if (gone.isEmpty) None else Some((key, gone.map(_.getInt(InputOrdinal)), kept.map(_.copy())))
    }.toArray
    val removed = new Array[Long](shape.numInputs)
    rewrites.foreach { case (key, goneInputs, kept) =>
      replace(key, kept)
      goneInputs.foreach(input => removed(input) += 1)
    }
    removed
  }

  /** Every join key with rows, copied, with its rows, not copied. */
  private def keysAndRows: Iterator[(UnsafeRow, Iterator[UnsafeRow])] =
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
