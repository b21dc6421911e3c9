package org.apache.spark.sql.multijoin

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, RocksDBStateStoreProvider}

/** The members of [[StateStoreShim]] whose Spark API differs between lines, for 4.1. */
private[multijoin] trait StateStoreLineShim {

  /**
   * Whether `store` has the column family `name`. A 4.1 store cannot list its families
   * (`allColumnFamilyNames` came in 4.2), but the RocksDB instance of its provider can tell one
   * exists; the store is an inner class of that provider, which is reached through its outer
   * reference. Column families exist only on RocksDB.
   */
  def hasColumnFamily(store: ReadStateStore, name: String): Boolean = store match {
    case rocksDB: RocksDBStateStoreProvider#RocksDBStateStore =>
      rocksDB.getClass.getField("$outer").get(rocksDB).asInstanceOf[RocksDBStateStoreProvider]
        .rocksDB.checkColFamilyExists(name)
    case other =>
      throw new IllegalStateException(s"${other.getClass.getName} has no column families")
  }

  /**
   * Every value of every key of the column family `family`, which keeps several values per key.
   * A 4.1 store iterates such a family one key at a time (`iteratorWithMultiValues` came in
   * 4.2), so each key's values are read with a lookup of their own.
   */
  def everyValue(store: ReadStateStore, family: String): Iterator[UnsafeRow] =
    store.iterator(family).flatMap(pair => store.valuesIterator(pair.key, family))
}
