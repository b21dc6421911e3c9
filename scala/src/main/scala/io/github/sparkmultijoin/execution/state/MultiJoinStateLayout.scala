package io.github.sparkmultijoin.execution.state

import io.github.sparkmultijoin.model.StateLayoutVersion

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreColFamilySchema}
import org.apache.spark.sql.types.StructType

/**
 * One multi-join state layout ([[StateLayoutVersion]]): the schemas of the stores it keeps rows in, and
 * those rows in an open store ([[LayoutPartition]]).
 *
 * Why one implementation per layout: the operator, Spark's schema check and `read_state` each
 * need a layout's schemas, and the state manager its rows. Each layout answers for itself, and
 * [[MultiJoinStateLayout.apply]] picks it by its number, so nothing else asks which layout a
 * state has. A layout neither opens nor commits a store: how stores are versioned and
 * checkpointed (Spark's state store checkpoint format) stays with the operator.
 */
private[sparkmultijoin] trait MultiJoinStateLayout extends Serializable {

  /** Every column family's schema, for creating them and for Spark's schema checks. */
  def familySchemas(shape: StateShape): Map[String, StateStoreColFamilySchema]

  /** How a store of this layout is opened, given its families ([[familySchemas]]). */
  def storeSchemas(families: Map[String, StateStoreColFamilySchema]): StoreSchemas

  /**
   * A partition's store, opened as [[storeSchemas]] says, for one micro-batch whose rows are
   * stored at `storeTimeMs` (with a state TTL: the rows of the inputs `shape.storeTimes` marks).
   */
  def open(store: StateStore, shape: StateShape, storeTimeMs: Option[Long]): LayoutPartition

  /**
   * `read_state`: the rows of `input` (of `numFields` columns) in `store`, each with the batch
   * that stored it. The store is opened as [[storeSchemas]] says for the `families` that the
   * checkpoint's schema files record, and only read.
   */
  def readRows(
      store: StateStore,
      families: Map[String, StateStoreColFamilySchema],
      input: Int,
      numFields: Int): Iterator[(InternalRow, Long)]
}

private[sparkmultijoin] object MultiJoinStateLayout {

  /** The implementation of `layout`. */
  def apply(layout: StateLayoutVersion): MultiJoinStateLayout = layout match {
    case StateLayoutVersion.ColumnFamilies => ColumnFamiliesLayout
    case StateLayoutVersion.OneValuePerKey => OneValuePerKeyLayout
  }

  /** The implementation of the layout a checkpoint recorded as `version`, or why there is none. */
  def recorded(version: Option[Int]): Either[String, MultiJoinStateLayout] =
    StateLayoutVersion.recorded(version).map(apply)

  /** The schema the checkpoint records for the family `name`. */
  private[state] def recordedFamily(
      families: Map[String, StateStoreColFamilySchema],
      name: String): StateStoreColFamilySchema =
    families.getOrElse(name,
      throw new IllegalStateException(s"The state schema files have no " +
        s"schema for the column family $name of the state store: the checkpoint is incomplete."))
}

/**
 * How a partition's store is opened for a layout.
 *
 * @param keySchema         the schema of the keys of its default family
 * @param valueSchema       the schema of the values of its default family
 * @param useColumnFamilies whether it has column families
 */
case class StoreSchemas(keySchema: StructType, valueSchema: StructType, useColumnFamilies: Boolean)

/**
 * What a layout needs to know of a multi-join.
 *
 * @param keySchema    the join key's schema, the same for all inputs
 * @param inputSchemas the schema of each input's rows
 * @param timeOrdinals per input, the ordinal of its event time in its rows, if it has one
 * @param storeTimes   per input, whether its rows keep the time they were stored (a state TTL)
 */
case class StateShape(
    keySchema: StructType,
    inputSchemas: Seq[StructType],
    timeOrdinals: Seq[Option[Int]],
    storeTimes: Seq[Boolean]) {

  require(storeTimes.length == inputSchemas.length, "every input says whether it has store times")

  private val inputWidths = inputSchemas.map(_.length).toArray

  def numInputs: Int = inputSchemas.length

  /** Whether some input's rows keep their store times. */
  def anyStoreTimes: Boolean = storeTimes.contains(true)

  /** The input row that a stored row ([[StoredRow]]) holds. */
  def inputRow(value: UnsafeRow): UnsafeRow =
    StoredRow.inputRow(value, inputWidths(value.getInt(StoredRow.InputOrdinal)))

  /** The event time (micros) of a stored row of an input that has one. */
  def eventTime(value: UnsafeRow): Long =
    inputRow(value).getLong(timeOrdinals(value.getInt(StoredRow.InputOrdinal)).get)

  /** How many of the stored rows `values` each input has. */
  def perInput(values: Iterator[UnsafeRow]): Array[Long] = {
    val counts = new Array[Long](numInputs)
    values.foreach(value => counts(value.getInt(StoredRow.InputOrdinal)) += 1)
    counts
  }
}

/**
 * A partition's store for one micro-batch, as a layout keeps rows in it. Its values are stored
 * rows ([[StoredRow]]) under their join key. The state manager holds rows it stores for a while
 * ([[MultiJoinStateManager]]); it writes them all before it reads or removes any.
 *
 * Eviction and expiry take a bound per input, so that each input can be kept for a time of its
 * own.
 */
private[sparkmultijoin] trait LayoutPartition {

  /** Row `rowIndex` of `input`, stored by batch `batchId`, as a value; reused by the next call. */
  def encode(input: Int, batchId: Long, rowIndex: Long, row: UnsafeRow): UnsafeRow

  /** Stores `values` ([[encode]]d, copied) under `key`. */
  def add(key: UnsafeRow, values: Array[UnsafeRow]): Unit

  /** The values under `key`, not copied: each is read before the next is. */
  def valuesUnder(key: UnsafeRow): Iterator[UnsafeRow]

  /**
   * Removes, per (input, bound) in `bounds`, the rows of the input with an event time at or
   * below the bound (micros): the earliest `limit` of them, where the layout keeps rows in time
   * order, else all. A layout may continue one scan from such a call to the next, until a call
   * without a limit, and leave to a later scan the rows stored after it began. Returns how many
   * of each input's rows were removed.
   */
  def evict(bounds: Seq[(Int, Long)], limit: Int): Array[Long]

  /**
   * The rows of `input` with an event time at or below `atOrBelowMicros` for which
   * `isNewlyFinal(eventTime, batchId)` holds, as input rows, copied; nothing is removed.
   */
  def newlyFinal(
      input: Int,
      atOrBelowMicros: Long,
      isNewlyFinal: (Long, Long) => Boolean): Array[UnsafeRow]

  /**
   * Removes, per (input, bound) in `bounds`, the rows of the input stored by a batch that started
   * at or before the bound (ms; only inputs with store times). Returns how many of each input's
   * rows were removed.
   */
  def expire(bounds: Seq[(Int, Long)]): Array[Long]

  /**
   * Per input with store times, the earliest time (ms) a row of it still stored was stored at,
   * as far as this batch knows: after [[expire]] and the batch's [[add]]s. A row since removed
   * by its event time may still count, which makes it earlier, never later.
   */
  def earliestStoreTimes: Map[Int, Long]

  /** How many rows of `input` are stored, as last set. */
  def count(input: Int): Long

  def setCount(input: Int, count: Long): Unit
}
