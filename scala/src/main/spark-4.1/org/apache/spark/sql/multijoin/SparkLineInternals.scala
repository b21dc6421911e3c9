package org.apache.spark.sql.multijoin

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.connector.catalog.Table
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.checkpointing.{OffsetSeqLog, OffsetSeqMetadata}
import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, RocksDBStateStoreProvider}
import org.apache.spark.sql.execution.streaming.RealTimeModeAllowlist
import org.apache.spark.sql.internal.SQLConf

/** The members of [[SparkInternals]] whose Spark API differs between lines, for 4.1. */
private[multijoin] trait SparkLineInternals {

  /** Sets on `conf` the confs that `log` records for micro-batch `batch`, if any. */
  protected def setConfsOfBatch(log: OffsetSeqLog, batch: Long, conf: SQLConf): Unit =
    log.get(batch).flatMap(_.metadata).foreach(OffsetSeqMetadata.setSessionConf(_, conf))

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

  /**
   * Why the multi-join does not run with state store checkpoint format v2 on this line, if it
   * does not: 4.1's commit log reader, which a restart and `read_state` go through to find the
   * store checkpoints' ids, takes only the commit log's first version.
   */
  def checkpointFormatV2Refusal: Option[String] = Some(
    "on Spark 4.1 the multi-join runs with state store checkpoint format version 1 only (format " +
      "2 on Spark 4.2 and newer)")

  /**
   * Spark's own check that every operator above a real-time source, and `sink`, may run in
   * real-time mode, failing the query where one may not, whatever
   * `spark.sql.streaming.realTimeMode.allowlistCheck` says.
   */
  def checkRealTimeAllowlist(plan: SparkPlan, sink: Table): Unit = {
    RealTimeModeAllowlist.checkAllowedPhysicalOperator(plan, true)
    RealTimeModeAllowlist.checkAllowedSink(sink, true)
  }
}
