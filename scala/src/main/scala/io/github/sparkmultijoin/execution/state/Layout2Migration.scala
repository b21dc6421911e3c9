package io.github.sparkmultijoin.execution.state

import io.github.sparkmultijoin.restart.RecordedOperators

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.streaming.state.{PrefixKeyScanStateEncoderSpec, StateStore, StateStoreColFamilySchema}
import org.apache.spark.sql.multijoin.StateStoreShim

/**
 * Multi-join state layouts 1 and 2, which RocksDB had before layout 3: each input's rows in a
 * family of its own, `input<i>`, keyed by the row's id ([[StoredRow.idSchema]]), and the time
 * indexes of layout 3. (Layout 1 also kept a `matched` family, which nothing reads.) Layout 3
 * moves their rows into its own `rows` when it opens their store; until then `read_state` reads
 * them where they are.
 */
private[sparkmultijoin] object Layout2Migration {

  /** The family of an input's rows in layouts 1 and 2. */
  def rowFamily(input: Int): String = RecordedOperators.layout2RowFamily(input)

  /**
   * Moves the rows of a store of layout 1 or 2 into layout 3's `rows` (which must exist), and
   * drops the families that held them. A store without them has nothing to move.
   */
  def moveRows(store: StateStore, shape: StateShape): Unit = {
    val idSchema = StoredRow.idSchema(shape.keySchema)
    lazy val joinKeyOfId = StoredRow.boundProjection(shape.keySchema, 0)
    lazy val encoder = new StoredRowEncoder(storeTimeMs = None)
    val (batchIdOrdinal, rowIndexOrdinal) = (shape.keySchema.length, shape.keySchema.length + 1)
    shape.inputSchemas.indices.filter(input =>
      StateStoreShim.hasColumnFamily(store, rowFamily(input)))
      .foreach { input =>
        val family = rowFamily(input)
        store.createColFamilyIfAbsent(family, idSchema, shape.inputSchemas(input),
          PrefixKeyScanStateEncoderSpec(idSchema, shape.keySchema.length))
        val entries = store.iterator(family)
        try {
          entries.foreach { pair =>
            store.merge(joinKeyOfId(pair.key),
              encoder(input, pair.key.getLong(batchIdOrdinal),
                pair.key.getLong(rowIndexOrdinal), pair.value), ColumnFamiliesLayout.RowsFamily)
          }
        } finally {
          entries.close()
        }
        store.removeColFamilyIfExists(family)
      }
  }

  /**
   * `read_state` on a store of layout 1 or 2: the rows of `input`, each with the batch that
   * stored it; none where the store has no family of them.
   */
  def readRows(
      store: StateStore,
      families: Map[String, StateStoreColFamilySchema],
      input: Int): Iterator[(InternalRow, Long)] =
    if (StateStoreShim.hasColumnFamily(store, rowFamily(input))) {
      val family = ColumnFamiliesLayout.registerRecorded(store, families, rowFamily(input),
        multipleValues = false)
      // The row's id: the join key's columns, then batchId and rowIndex.
      val batchIdOrdinal = family.keySchema.length - 2
      store.iterator(rowFamily(input)).map(pair => (pair.value, pair.key.getLong(batchIdOrdinal)))
    } else {
      Iterator.empty
    }
}
