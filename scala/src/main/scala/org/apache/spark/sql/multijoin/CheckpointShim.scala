package org.apache.spark.sql.multijoin

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.{SparkSession, classic}
import org.apache.spark.sql.execution.streaming.checkpointing.{CommitLog, OffsetSeqLog}
import org.apache.spark.sql.internal.SQLConf

/** A checkpoint's logs, read offline (`read_state`, restarts), as Spark's state source reads them. */
object CheckpointShim extends CheckpointLineShim {

  def newHadoopConf(session: SparkSession): Configuration =
    classicSession(session).sessionState.newHadoopConf()

  /**
   * Per stateful operator and partition, the ids of the store checkpoints micro-batch `batch`
   * committed, as the commit log records them (state store checkpoint format v2); None where it
   * records none (format v1).
   */
  def stateCheckpointIds(
      session: SparkSession,
      checkpoint: Path,
      batch: Long): Option[Map[Long, Array[Array[String]]]] =
    commitLog(session, checkpoint).get(batch).flatMap(_.stateUniqueIds)

  /** The last micro-batch of the checkpoint at `checkpoint` in its commit log, if any. */
  def lastCommittedBatch(session: SparkSession, checkpoint: Path): Option[Long] =
    commitLog(session, checkpoint).getLatestBatchId()

  private def commitLog(session: SparkSession, checkpoint: Path): CommitLog =
    new CommitLog(classicSession(session), new Path(checkpoint, "commits").toString)

  /**
   * The session's conf with the confs the checkpoint's query ran micro-batch `batch` with (its
   * offset log's, such as the state store provider), which its state must be read with. The
   * state store checkpoint format is not among them: it is the one whose checkpoint ids the
   * commit log records for the batch, or format 1 where it records none.
   */
  def sessionConfOfBatch(session: SparkSession, checkpoint: Path, batch: Long): SQLConf = {
    val conf = classicSession(session).sessionState.conf.clone()
    setConfsOfBatch(
      new OffsetSeqLog(classicSession(session), new Path(checkpoint, "offsets").toString), batch,
      conf)
    conf.setConf(SQLConf.STATE_STORE_CHECKPOINT_FORMAT_VERSION,
      if (stateCheckpointIds(session, checkpoint, batch).isDefined) 2 else 1)
    conf
  }

  private def classicSession(session: SparkSession): classic.SparkSession =
    session.asInstanceOf[classic.SparkSession]
}
