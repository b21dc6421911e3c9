package io.github.sparkmultijoin.execution.state

import scala.reflect.ClassTag

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{BinaryType, IntegerType, LongType, StructField, StructType}

/**
 * A stored row, as every multi-join state layout keeps it: the input's index, the row's id
 * (`batchId` and `rowIndex`: the batch that stored it and its position among the rows the
 * partition stored in that batch) and the row's bytes, an UnsafeRow of the input's schema. Rows
 * of every input share one value schema, so that one read of a key returns them all. A layout
 * without an index of store times keeps each row's store time last ([[WithStoreTimeSchema]]).
 */
private[sparkmultijoin] object StoredRow {

  // Spares the lookup behind every summoned ClassTag: rows are collected into arrays per key.
  implicit val unsafeRowTag: ClassTag[UnsafeRow] = ClassTag(classOf[UnsafeRow])

  val Schema: StructType = new StructType()
    .add("input", IntegerType, nullable = false)
    .add("batchId", LongType, nullable = false)
    .add("rowIndex", LongType, nullable = false)
    .add("row", BinaryType, nullable = false)

  val InputOrdinal = 0
  val BatchIdOrdinal = 1
  val RowIndexOrdinal = 2
  val RowBytesOrdinal = 3

  /** [[Schema]], then the start time (ms) of the batch that stored the row. */
  val WithStoreTimeSchema: StructType = Schema.add("storeTimeMs", LongType, nullable = false)

  val StoreTimeOrdinal = 4

  def schema(withStoreTime: Boolean): StructType =
    if (withStoreTime) WithStoreTimeSchema else Schema

  /** The input row a stored row holds, of `numFields` columns, in an array of its own. */
  def inputRow(value: UnsafeRow, numFields: Int): UnsafeRow = {
    val bytes = value.getBinary(RowBytesOrdinal)
    val row = new UnsafeRow(numFields)
    row.pointTo(bytes, bytes.length)
    row
  }

  /** A stored row's id within its join key: (batchId, rowIndex). */
  def id(value: UnsafeRow): (Long, Long) =
    (value.getLong(BatchIdOrdinal), value.getLong(RowIndexOrdinal))

  /** A row's id across join keys: the join key's columns, then the row's batch and index. */
  def idSchema(keySchema: StructType): StructType =
    keySchema
      .add(StructField("batchId", LongType, nullable = false))
      .add(StructField("rowIndex", LongType, nullable = false))

  /**
   * The rows of `input` among `values`, each of `numFields` columns, with the batch that stored
   * it: what `read_state` returns.
   */
  def rowsOf(
      values: Iterator[UnsafeRow],
      input: Int,
      numFields: Int): Iterator[(InternalRow, Long)] =
    values.filter(_.getInt(InputOrdinal) == input).map { value =>
      (inputRow(value, numFields), value.getLong(BatchIdOrdinal))
    }

  /** A projection of `schema`'s columns, read from ordinal `from` on of the rows it is given. */
  def boundProjection(schema: StructType, from: Int): UnsafeProjection =
    UnsafeProjection.create(schema.fields.zipWithIndex.map { case (field, ordinal) =>
      BoundReference(from + ordinal, field.dataType, field.nullable)
    }.toSeq)
}

/**
 * Makes stored rows ([[StoredRow]]), each with `storeTimeMs` last where it is given; the row
 * returned is reused by the next call.
 */
private[state] class StoredRowEncoder(storeTimeMs: Option[Long]) {
  import StoredRow._

  private val schema = StoredRow.schema(storeTimeMs.isDefined)
  private val value = new GenericInternalRow(schema.length)
  private val projection = boundProjection(schema, 0)

  def apply(input: Int, batchId: Long, rowIndex: Long, row: UnsafeRow): UnsafeRow = {
    value.setInt(InputOrdinal, input)
    value.setLong(BatchIdOrdinal, batchId)
    value.setLong(RowIndexOrdinal, rowIndex)
    value.update(RowBytesOrdinal, row.getBytes)
    storeTimeMs.foreach(value.setLong(StoreTimeOrdinal, _))
    projection(value)
  }
}
