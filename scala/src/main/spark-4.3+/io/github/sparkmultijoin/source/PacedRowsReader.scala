package io.github.sparkmultijoin.source

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.connector.read.streaming.{PartitionOffset, SupportsRealTimeRead}
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeRead.RecordStatus

/**
 * Reads one partition of [[PacedRowsProvider]]: in a micro-batch, its rows up to the batch's end
 * at once (all were due when the batch was planned); in a real-time batch, each row once it is
 * due, waiting for it within the time Spark gives.
 */
private class PacedRowsReader(part: PacedPartition) extends SupportsRealTimeRead[InternalRow] {

  private var position = part.from
  // One row, rewritten for each read: Spark copies what it keeps.
  private val row = new UnsafeRow(PacedRows.schema.length)
  private val rowBytes = UnsafeRow.calculateBitSetWidthInBytes(3) + 3 * 8
  row.pointTo(new Array[Byte](rowBytes), rowBytes)

  private def dueMillis(n: Long): Double = part.startMillis + n * 1000 / part.rowsPerSecond

  private def ended: Boolean = part.until.exists(position >= _)

  override def next(): Boolean =
    !ended && {
      read()
      true
    }

  override def nextWithTimeout(timeoutMs: java.lang.Long): RecordStatus = {
    val deadline = System.currentTimeMillis() + timeoutMs
    if (ended) {
      Thread.sleep(timeoutMs)
      RecordStatus.newStatusWithoutArrivalTime(false)
    } else {
      val due = math.ceil(dueMillis(position)).toLong
      val wait = due - System.currentTimeMillis()
      if (due > deadline) {
        Thread.sleep(math.max(0L, deadline - System.currentTimeMillis()))
        RecordStatus.newStatusWithoutArrivalTime(false)
      } else {
        if (wait > 0) Thread.sleep(wait)
        RecordStatus.newStatusWithArrivalTimeMs(read())
      }
    }
  }

  /** Makes row `position` the current one and moves on; when it was due. */
  private def read(): Long = {
    val seq = position * part.partitions + part.partition
    val sent = math.ceil(dueMillis(position)).toLong
    row.setLong(0, seq)
    row.setLong(1, part.keys.fold(seq)(seq % _))
    row.setLong(2, sent)
    position += 1
    sent
  }

  override def get(): InternalRow = row

  override def getOffset: PartitionOffset =
    PacedPartitionOffset(part.partition, part.startMillis, position)

  override def close(): Unit = ()
}
