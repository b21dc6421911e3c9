package io.github.sparkmultijoin.execution.state

import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.{PrefixKeyScanStateEncoderSpec, StateStore, StateStoreColFamilySchema}
import org.apache.spark.sql.types.{DataType, LongType, StructField, StructType}

/**
 * The state of one partition of a multi-join: the input rows of every input, by join key.
 *
 * Layout, in one RocksDB state store per partition:
 *  - one column family per input, named `input0`, `input1`, ...;
 *  - key: the join key's columns, then `batchId` and `rowIndex` (longs), which make each stored
 *    row's key unique: the batch that stored it and its position among the rows this partition
 *    stored in that batch. A prefix scan over the join key's columns reads an input's rows for
 *    one key;
 *  - value: the input row, in its input's schema.
 * Nothing but input rows is stored, so the state is as large as the inputs it holds.
 *
 * A batch that is retried reloads the store at the batch's version, so its row indexes start
 * over without clashing with stored rows.
 *
 * @param store       the partition's state store, opened with column families
 * @param keySchema   the join key's schema, the same for all inputs
 * @param inputSchemas the schema of each input's rows
 * @param batchId     the micro-batch being processed
 */
class MultiJoinStateManager(
    store: StateStore,
    keySchema: StructType,
    inputSchemas: Seq[StructType],
    batchId: Long) {

  import MultiJoinStateManager._

  private val columnFamilies = inputSchemas.indices.map(columnFamilyName)
  private val rowKeySchema = stateKeySchema(keySchema)

  columnFamilySchemas(keySchema, inputSchemas).values.foreach { schema =>
    store.createColFamilyIfAbsent(
      schema.colFamilyName, schema.keySchema, schema.valueSchema, schema.keyStateEncoderSpec.get)
  }

  private val rowPosition = new GenericInternalRow(Array[Any](batchId, 0L))
  private val keyAndPosition = new JoinedRow
  private val rowKeyProjection = UnsafeProjection.create(
    rowKeySchema.fields.zipWithIndex.map { case (field, ordinal) =>
      BoundReference(ordinal, field.dataType, field.nullable)
    }.toSeq)
  private var nextRowIndex = 0L
  private var storedRowCount = 0L

  /** The rows of `input` stored so far under `key`, copied so that they can be held. */
  def get(input: Int, key: UnsafeRow): Array[UnsafeRow] = {
    val stored = store.prefixScan(key, columnFamilies(input))
    try stored.map(_.value.copy()).toArray finally stored.close()
  }

  /** Stores `row` (an UnsafeRow of the input's schema) of `input` under `key`. */
  def append(input: Int, key: UnsafeRow, row: UnsafeRow): Unit = {
    rowPosition.setLong(1, nextRowIndex)
    nextRowIndex += 1
    store.put(rowKeyProjection(keyAndPosition(key, rowPosition)), row, columnFamilies(input))
    storedRowCount += 1
  }

  /** How many rows this batch stored. */
  def numStoredRows: Long = storedRowCount

  def commit(): Unit = store.commit()

  def abortIfNotCommitted(): Unit = if (!store.hasCommitted) store.abort()
}

object MultiJoinStateManager {

  def columnFamilyName(input: Int): String = s"input$input"

  /** The key of a stored row: the join key's columns, then the row's batch and index. */
  def stateKeySchema(keySchema: StructType): StructType =
    keySchema
      .add(StructField("batchId", LongType, nullable = false))
      .add(StructField("rowIndex", LongType, nullable = false))

  /** The schema of the join key made of `keyTypes`' columns. */
  def keySchema(keyTypes: Seq[DataType]): StructType =
    StructType(keyTypes.zipWithIndex.map { case (dataType, index) =>
      StructField(s"key$index", dataType, nullable = false)
    })

  /** Every column family's schema, for creating them and for Spark's schema checks. */
  def columnFamilySchemas(
      keySchema: StructType,
      inputSchemas: Seq[StructType]): Map[String, StateStoreColFamilySchema] = {
    val rowKeySchema = stateKeySchema(keySchema)
    val encoder = PrefixKeyScanStateEncoderSpec(rowKeySchema, keySchema.length)
    inputSchemas.zipWithIndex.map { case (inputSchema, input) =>
      val name = columnFamilyName(input)
      name -> StateStoreColFamilySchema(
        name, 0, rowKeySchema, 0, inputSchema, Some(encoder), None)
    }.toMap
  }
}
