package org.apache.spark.sql.multijoin

import org.apache.spark.sql.execution.streaming.checkpointing.{OffsetSeqLog, OffsetSeqMetadata}
import org.apache.spark.sql.internal.SQLConf

/** The members of [[CheckpointShim]] whose Spark API differs between lines, from 4.2 on. */
private[multijoin] trait CheckpointLineShim {

  /** Sets on `conf` the confs that `log` records for micro-batch `batch`, if any. */
  protected def setConfsOfBatch(log: OffsetSeqLog, batch: Long, conf: SQLConf): Unit =
    log.get(batch).flatMap(_.metadataOpt).foreach(OffsetSeqMetadata.setSessionConf(_, conf))

  /** Why the multi-join does not run with state store checkpoint format v2 here: it does. */
  def checkpointFormatV2Refusal: Option[String] = None
}
