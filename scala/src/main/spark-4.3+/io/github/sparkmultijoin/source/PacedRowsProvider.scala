package io.github.sparkmultijoin.source

import java.util

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.read.{Scan, ScanBuilder}
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.types.{LongType, StructField, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * A streaming source of rows at a set rate, each with the time it was due: the benchmark's and the
 * tests' input in real-time mode, where Spark's own test source answers each record with a call
 * that walks the rows added before it and falls behind at some thousands of rows a second.
 *
 * {{{
 *   spark.readStream.format(classOf[PacedRowsProvider].getName)
 *     .option("rowsPerSecond", 10000).option("partitions", 1).option("rows", 600000).load()
 * }}}
 *
 * Columns: `seq`, the row's number (0, 1, ... over all partitions: row n of partition p is
 * `n * partitions + p`); `key`, `seq` or, with the option `keys`, `seq % keys`; `sent_ms`, when
 * the row was due, in epoch milliseconds. Row n of a partition is due `n / rowsPerSecond` seconds
 * after the stream's start: the option `startMillis`, or when the query first planned the
 * stream. The start is in every offset, so a restart keeps the schedule, and the rows due while
 * the query was down come at once, as from a broker. `rows` ends each partition after that many
 * rows (default: never). A row is never read before it is due, so a late read shows in the
 * latency measured from `sent_ms`.
 *
 * It reads in micro-batches (the rows due when the batch is planned) and, from Spark 4.3, in
 * real-time mode (`SupportsRealTimeMode`: each row as it comes due).
 */
class PacedRowsProvider extends TableProvider {

  override def inferSchema(options: CaseInsensitiveStringMap): StructType = PacedRows.schema

  override def getTable(
      schema: StructType,
      partitioning: Array[Transform],
      properties: util.Map[String, String]): Table =
    new PacedRowsTable(PacedRows.Settings(new CaseInsensitiveStringMap(properties)))
}

private class PacedRowsTable(settings: PacedRows.Settings) extends Table with SupportsRead {

  override def name(): String = s"paced rows: ${settings.describe}"

  override def schema(): StructType = PacedRows.schema

  override def capabilities(): util.Set[TableCapability] =
    Set(TableCapability.MICRO_BATCH_READ).asJava

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = () =>
    new Scan {
      override def readSchema(): StructType = PacedRows.schema

      override def description(): String = name()

      override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream =
        new PacedRowsStream(settings)
    }
}

object PacedRows {

  val schema: StructType = StructType(Seq(
    StructField("seq", LongType, nullable = false),
    StructField("key", LongType, nullable = false),
    StructField("sent_ms", LongType, nullable = false)))

  /** The source's options, checked when the query is planned. */
  case class Settings(
      rowsPerSecond: Double,
      partitions: Int,
      rows: Option[Long],
      keys: Option[Long],
      startMillis: Option[Long]) {

    def describe: String =
      s"$rowsPerSecond a second in each of $partitions partition(s)" +
        rows.fold("")(n => s", $n each")
  }

  object Settings {
    def apply(options: CaseInsensitiveStringMap): Settings = {
      def number(name: String): Option[String] = Option(options.get(name))
      def positive[T](name: String, parse: String => T, valid: T => Boolean): Option[T] =
        number(name).map { text =>
          val value = scala.util.Try(parse(text)).toOption.filter(valid)
          value.getOrElse(throw new IllegalArgumentException(
            s"The paced rows source's option $name is '$text'; it takes a positive number."))
        }
      Settings(
        positive("rowsPerSecond", _.toDouble, (v: Double) => v > 0).getOrElse(
          throw new IllegalArgumentException(
            "The paced rows source needs the option rowsPerSecond (rows a second per " +
              "partition).")),
        positive("partitions", _.toInt, (v: Int) => v > 0).getOrElse(1),
        positive("rows", _.toLong, (v: Long) => v > 0),
        positive("keys", _.toLong, (v: Long) => v > 0),
        positive("startMillis", _.toLong, (v: Long) => v > 0))
    }
  }
}
