package io.github.sparkmultijoin.execution.state

import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.{PrefixKeyScanStateEncoderSpec, StateStore}
import org.apache.spark.sql.types.{BinaryType, DataType, IntegerType, StructField, StructType}

/**
 * The version of a row identity's change last applied, and the row it left: None where it
 * deleted the row (or the row did not pass the input's filters).
 *
 * @param version the change's row version
 * @param rank    0 for a change that removes the row, 1 for one that puts it: at one version a
 *                removal applies first (Delta's pre-image before its post-image)
 */
case class Applied(version: Array[Long], rank: Int, row: Option[UnsafeRow]) {

  /** Whether a change of `version` and `rank` comes after this one, and so applies. */
  def isBefore(otherVersion: Array[Long], otherRank: Int): Boolean = {
    val order = Applied.compare(version, otherVersion)
    order < 0 || order == 0 && rank < otherRank
  }
}

object Applied {
  def compare(a: Array[Long], b: Array[Long]): Int = {
    val differing = a.indices.find(i => i < b.length && a(i) != b(i))
    differing.map(i => java.lang.Long.compare(a(i), b(i)))
      .getOrElse(Integer.compare(a.length, b.length))
  }
}

/**
 * A changelog join's state in one partition's store: per input and row identity under its join
 * key, the change last applied ([[Applied]]). So the store holds each input's current rows (one
 * per identity, Flink's unique-key view) and, of a deleted row, its identity and version, which
 * keep a late older change of it from bringing it back.
 *
 * Store key: the join key's columns, the input, the row id (its UnsafeRow's bytes); scanned by
 * the join key. Value: the change, as the checkpoint's [[ChangelogStateFormat]] keeps it.
 */
class CurrentRowsState(
    store: StateStore,
    format: ChangelogStateFormat,
    keyTypes: Seq[DataType],
    widths: Seq[Int],
    idWidths: Seq[Int]) {

  import CurrentRowsState._

  private val storeKey = UnsafeProjection.create(keySchema(keyTypes))
  private val storeValue = UnsafeProjection.create(format.valueSchema)
  private val numKeys = keyTypes.length

  /** What was applied under `key` (the join key's columns), as (input, row id, applied). */
  def under(key: UnsafeRow): Iterator[(Int, UnsafeRow, Applied)] =
    store.prefixScan(key).map { pair =>
      val input = pair.key.getInt(numKeys)
      val id = ChangelogStateFormat.bytesRow(pair.key.getBinary(numKeys + 1), idWidths(input))
      (input, id, format.applied(pair.value, widths(input)))
    }

  /** Stores `applied`, the change micro-batch `batchId` applied last. */
  def put(key: UnsafeRow, input: Int, id: UnsafeRow, applied: Applied, batchId: Long): Unit = {
    val keyValues = new Array[Any](numKeys + 2)
    (0 until numKeys).foreach(i => keyValues(i) = key.get(i, keyTypes(i)))
    keyValues(numKeys) = input
    keyValues(numKeys + 1) = id.getBytes
    store.put(storeKey(new GenericInternalRow(keyValues)),
      storeValue(format.valueRow(applied, batchId)))
  }

  def commit(): Long = store.commit()

  def numStoredKeys: Long = store.metrics.numKeys
}

object CurrentRowsState {

  def keySchema(keyTypes: Seq[DataType]): StructType = StructType(
    keyTypes.zipWithIndex.map { case (t, i) => StructField(s"key$i", t) } :+
      StructField("input", IntegerType, nullable = false) :+
      StructField("rowId", BinaryType, nullable = false))

  def encoderSpec(keyTypes: Seq[DataType]): PrefixKeyScanStateEncoderSpec =
    PrefixKeyScanStateEncoderSpec(keySchema(keyTypes), keyTypes.length)

  /**
   * `read_state`: the current rows of `input` (of `width` columns) in `store`, kept in `format`,
   * whose keys have `numKeys` key columns, each with the micro-batch that applied it.
   */
  def rows(store: StateStore, format: ChangelogStateFormat, numKeys: Int, input: Int,
      width: Int): Iterator[(UnsafeRow, Long)] =
    store.iterator().filter(_.key.getInt(numKeys) == input)
      .flatMap(pair => format.currentRow(pair.value, width))
}
