package org.apache.spark.sql.multijoin

import org.apache.spark.sql.execution.streaming.checkpointing.{OffsetSeqLog, OffsetSeqMetadata}
import org.apache.spark.sql.internal.SQLConf

/** The members of [[CheckpointShim]] whose Spark API differs between lines, for 4.1. */
private[multijoin] trait CheckpointLineShim {

  /** Sets on `conf` the confs that `log` records for micro-batch `batch`, if any. */
  protected def setConfsOfBatch(log: OffsetSeqLog, batch: Long, conf: SQLConf): Unit =
    log.get(batch).flatMap(_.metadata).foreach(OffsetSeqMetadata.setSessionConf(_, conf))

  /**
   * Why the multi-join does not run with state store checkpoint format v2 on this line, if it
   * does not: 4.1's commit log reader, which a restart and `read_state` go through to find the
   * store checkpoints' ids, takes only the commit log's first version.
   */
  def checkpointFormatV2Refusal: Option[String] = Some(
    "on Spark 4.1 the multi-join runs with state store checkpoint format version 1 only (format " +
      "2 on Spark 4.2 and newer)")
}
