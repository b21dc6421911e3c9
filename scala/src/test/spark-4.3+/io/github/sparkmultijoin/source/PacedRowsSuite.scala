package io.github.sparkmultijoin.source

import java.util.concurrent.{ConcurrentHashMap, ConcurrentLinkedQueue}

import scala.jdk.CollectionConverters._

import io.github.sparkmultijoin.MultiJoinSuiteBase

import org.apache.spark.sql.{DataFrame, ForeachWriter, Row}
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}

/**
 * The paced rows source: every row once, numbered across its partitions, none read before it is
 * due, in micro-batches and in real-time mode, and a restart on the schedule it started.
 */
class PacedRowsSuite extends MultiJoinSuiteBase {

  import PacedRowsSuite._

  private def paced(options: (String, Any)*): DataFrame =
    spark.readStream.format(classOf[PacedRowsProvider].getName)
      .options(options.map { case (k, v) => k -> v.toString }.toMap).load()

  test("in micro-batches: every row once, numbered across partitions, due on its schedule") {
    val start = System.currentTimeMillis() - 60000
    withTempDir { dir =>
      // Files, not memory: a memory sink in append mode takes no restart.
      def run(rows: Int): Seq[Row] = {
        val query = paced("rowsPerSecond" -> 100, "partitions" -> 3, "rows" -> rows,
          "keys" -> 7, "startMillis" -> start).writeStream.format("parquet")
          .option("path", s"$dir/out").option("checkpointLocation", s"$dir/checkpoint").start()
        try query.processAllAvailable()
        finally query.stop()
        spark.read.parquet(s"$dir/out").collect().toSeq
      }
      val first = run(rows = 50)
      // A restart reads on from the checkpoint's offsets, on the same schedule.
      val second = run(rows = 80).diff(first)
      assert(first.map(_.getLong(0)).sorted == (0L until 150L))
      assert(second.map(_.getLong(0)).sorted == (150L until 240L))
      (first ++ second).foreach { row =>
        val seq = row.getLong(0)
        assert(row.getLong(1) == seq % 7)
        assert(row.getLong(2) == math.ceil(start + (seq / 3) * 1000.0 / 100).toLong, row)
      }
    }
  }

  test("in real-time mode: each row once, none before it is due, across batch ends") {
    val id = java.util.UUID.randomUUID().toString
    Arrivals.put(id, new ConcurrentLinkedQueue[(Long, Long, Long)]())
    withConf(
      "spark.sql.streaming.stateStore.checkpointFormatVersion" -> "2",
      "spark.sql.streaming.realTimeMode.minBatchDuration" -> "1s") {
      withTempDir { dir =>
        val rows = 400
        val query = paced("rowsPerSecond" -> 200, "partitions" -> 2, "rows" -> rows)
          .writeStream.outputMode("update").foreach(new ArrivalWriter(id))
          .option("checkpointLocation", dir.getPath).trigger(Trigger.RealTime("1 second"))
          .start()
        try {
          awaitThat(query, s"${2 * rows} rows")(Arrivals.get(id).size >= 2 * rows)
          awaitThat(query, "a batch that ends with every row")(endsWith(query, Seq(rows, rows)))
        } finally query.stop()
        val arrived = Arrivals.get(id).asScala.toSeq
        assert(arrived.map(_._1).sorted == (0L until 2L * rows))
        assert(arrived.forall { case (_, sent, at) => at >= sent }, "a row read before its time")
        assert(query.recentProgress.length >= 2, "the rows should span batch ends")
      }
    }
  }

  test("a missing or wrong option fails the query, naming it") {
    Seq(Seq("partitions" -> 2) -> "needs the option rowsPerSecond",
      Seq("rowsPerSecond" -> 10, "partitions" -> 0) -> "option partitions is '0'",
      Seq("rowsPerSecond" -> "fast") -> "option rowsPerSecond is 'fast'").foreach {
      case (options, message) =>
        val error = intercept[IllegalArgumentException](paced(options: _*))
        assert(error.getMessage.contains(message), error.getMessage)
    }
  }

  private def endsWith(query: StreamingQuery, next: Seq[Int]): Boolean =
    Option(query.lastProgress).exists(_.sources.head.endOffset.contains(
      s""""next":[${next.mkString(",")}]"""))

  private def awaitThat(query: StreamingQuery, what: String)(condition: => Boolean): Unit = {
    val deadline = System.nanoTime + 60L * 1000 * 1000 * 1000
    while (!condition) {
      query.exception.foreach(e => throw e)
      assert(System.nanoTime < deadline, s"timed out waiting for $what")
      Thread.sleep(50)
    }
  }
}

object PacedRowsSuite {

  /** (seq, sent_ms, arrival ms) of each row a test's sink received, by the sink's id. */
  val Arrivals = new ConcurrentHashMap[String, ConcurrentLinkedQueue[(Long, Long, Long)]]()

  class ArrivalWriter(id: String) extends ForeachWriter[Row] {
    override def open(partitionId: Long, epochId: Long): Boolean = true
    override def process(row: Row): Unit =
      Arrivals.get(id).add((row.getLong(0), row.getLong(2), System.currentTimeMillis()))
    override def close(errorOrNull: Throwable): Unit = ()
  }
}
