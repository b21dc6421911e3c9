package org.apache.spark.sql.multijoin

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.ReadStateStore

/** The members of [[StateStoreShim]] whose Spark API differs between lines, from 4.2 on. */
private[multijoin] trait StateStoreLineShim {

  /** Whether `store` has the column family `name`. */
  def hasColumnFamily(store: ReadStateStore, name: String): Boolean =
    store.allColumnFamilyNames.contains(name)

  /** Every value of every key of the column family `family`, which keeps several per key. */
  def everyValue(store: ReadStateStore, family: String): Iterator[UnsafeRow] =
    store.iteratorWithMultiValues(family).map(_.value)
}
