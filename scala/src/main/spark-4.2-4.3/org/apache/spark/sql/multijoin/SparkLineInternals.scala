package org.apache.spark.sql.multijoin

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.connector.catalog.Table
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.checkpointing.{OffsetSeqLog, OffsetSeqMetadata}
import org.apache.spark.sql.execution.streaming.state.ReadStateStore
import org.apache.spark.sql.execution.streaming.runtime.RealTimeModeAllowlist
import org.apache.spark.sql.internal.SQLConf

/** The members of [[SparkInternals]] whose Spark API differs between lines, for 4.2 and 4.3. */
private[multijoin] trait SparkLineInternals {

  /** Sets on `conf` the confs that `log` records for micro-batch `batch`, if any. */
  protected def setConfsOfBatch(log: OffsetSeqLog, batch: Long, conf: SQLConf): Unit =
    log.get(batch).flatMap(_.metadataOpt).foreach(OffsetSeqMetadata.setSessionConf(_, conf))

  /** Whether `store` has the column family `name`. */
  def hasColumnFamily(store: ReadStateStore, name: String): Boolean =
    store.allColumnFamilyNames.contains(name)

  /** Every value of every key of the column family `family`, which keeps several per key. */
  def everyValue(store: ReadStateStore, family: String): Iterator[UnsafeRow] =
    store.iteratorWithMultiValues(family).map(_.value)

  /** Why the multi-join does not run with state store checkpoint format v2 here: it does. */
  def checkpointFormatV2Refusal: Option[String] = None

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
