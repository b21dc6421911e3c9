package io.github.sparkmultijoin.source

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.{MicroBatchStream, Offset, PartitionOffset, ReadLimit, SupportsAdmissionControl, SupportsRealTimeMode}

/**
 * [[PacedRowsProvider]]'s stream. An offset is the schedule's start and, per partition, the
 * number of the next row; a micro-batch reads the rows due when it is planned, a real-time batch
 * reads on from its start offset until Spark ends it, and its readers' positions are its end.
 */
private class PacedRowsStream(settings: PacedRows.Settings)
  extends MicroBatchStream with SupportsAdmissionControl with SupportsRealTimeMode {

  override def initialOffset(): Offset = PacedOffset(
    settings.startMillis.getOrElse(System.currentTimeMillis()),
    Seq.fill(settings.partitions)(0L))

  override def getDefaultReadLimit: ReadLimit = ReadLimit.allAvailable()

  override def latestOffset(): Offset = throw new UnsupportedOperationException(
    "latestOffset(Offset, ReadLimit) is used instead")

  /** The rows due now, as far as `rows` lets each partition go. */
  override def latestOffset(start: Offset, limit: ReadLimit): Offset = {
    val from = start.asInstanceOf[PacedOffset]
    val now = System.currentTimeMillis()
    val due = math.max(0L,
      math.floor((now - from.startMillis) * settings.rowsPerSecond / 1000)
        .toLong + 1)
    from.copy(next = from.next.map(next => math.max(next, settings.rows.fold(due)(due.min))))
  }

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = {
    val (from, until) = (start.asInstanceOf[PacedOffset], end.asInstanceOf[PacedOffset])
    partitions(from, p => Some(until.next(p)))
  }

  override def planInputPartitions(start: Offset): Array[InputPartition] =
    partitions(start.asInstanceOf[PacedOffset], _ => settings.rows)

  private def partitions(from: PacedOffset, until: Int => Option[Long]): Array[InputPartition] =
    Array.tabulate[InputPartition](settings.partitions)(p =>
      PacedPartition(p, settings.partitions, from.startMillis, settings.rowsPerSecond,
        from.next(p), until(p), settings.keys))

  override def mergeOffsets(offsets: Array[PartitionOffset]): Offset = {
    val byPartition = offsets.map(_.asInstanceOf[PacedPartitionOffset])
    PacedOffset(byPartition.head.startMillis,
      Seq.tabulate(settings.partitions)(p => byPartition.find(_.partition == p).get.next))
  }

  override def createReaderFactory(): PartitionReaderFactory = PacedRowsReaderFactory

  override def deserializeOffset(json: String): Offset = PacedOffset.fromJson(json)

  override def commit(end: Offset): Unit = ()

  override def stop(): Unit = ()
}

private case class PacedOffset(startMillis: Long, next: Seq[Long]) extends Offset {
  override def json(): String =
    s"""{"startMillis":$startMillis,"next":[${next.mkString(",")}]}"""
}

private object PacedOffset {
  private val Json = """\{"startMillis":(\d+),"next":\[([\d,]*)\]\}""".r

  def fromJson(json: String): PacedOffset = json match {
    case Json(start, next) => PacedOffset(start.toLong, next.split(',').map(_.toLong).toSeq)
    case _ => throw new IllegalArgumentException(
        s"'$json' is not an offset of the paced rows source")
  }
}

private case class PacedPartitionOffset(partition: Int, startMillis: Long, next: Long)
  extends PartitionOffset

/** Partition `partition`'s rows from number `from` on, up to `until` (exclusive) if set. */
private case class PacedPartition(
    partition: Int,
    partitions: Int,
    startMillis: Long,
    rowsPerSecond: Double,
    from: Long,
    until: Option[Long],
    keys: Option[Long]) extends InputPartition

private object PacedRowsReaderFactory extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    new PacedRowsReader(partition.asInstanceOf[PacedPartition])
}
