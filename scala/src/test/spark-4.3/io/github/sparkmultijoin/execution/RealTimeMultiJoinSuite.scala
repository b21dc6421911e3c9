package io.github.sparkmultijoin.execution

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.ConcurrentLinkedQueue

import scala.jdk.CollectionConverters._
import scala.util.Random

import io.github.sparkmultijoin.{MultiJoinSuiteBase, RealTimeInputs}
import io.github.sparkmultijoin.StreamingSteps.canonical

import org.apache.spark.sql.{DataFrame, ForeachWriter, Row}
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryException, Trigger}

/**
 * The multi-join in Spark's real-time mode: rows joined as they arrive within a long batch, each
 * combination once, the same as the batch query over the rows added so far.
 */
class RealTimeMultiJoinSuite extends MultiJoinSuiteBase {

  import RealTimeMultiJoinSuite._

  private val Inputs = 4

  test("a 4-way inner multi-join emits each combination once, as its last row arrives") {
    val random = new Random(39)
    val rounds = Seq.fill(3)(Seq.fill(Inputs)(Seq.fill(6)((random.nextInt(4), random.nextInt()))))
    // The batch query's answers first: Spark refuses to start a real-time batch while other
    // jobs hold the task slots it needs.
    val expected = rounds.indices.map(last =>
      canonical(joined((0 until Inputs).map { i =>
        spark.createDataFrame(rounds.take(last + 1).flatMap(_(i))).toDF(s"k$i", s"v$i")
      }).collect()))
    val inputs = new RealTimeInputs(spark, Inputs)
    def add(round: Int): Unit = rounds(round).zipWithIndex.foreach { case (rows, input) =>
      inputs.add(input, rows)
    }

    withRealTimeMode {
      withTempDir { checkpoint =>
        add(0)
        val received = startCollecting(
          joined(inputs.frames), checkpoint.getPath)
        try {
          received.awaitRows(expected(0))
          // Within the same long batch: rows stored earlier in it join the new ones.
          add(1)
          received.awaitRows(expected(1))
          assert(received.query.recentProgress.isEmpty, "the first long batch is still running")
          received.awaitBatch()
          // In a later batch: the state committed at the end of the first one joins them.
          add(2)
          received.awaitRows(expected(2))
          Thread.sleep(1000)
          assert(canonical(received.rows) == expected(2), "nothing more, nothing twice")
          assert(received.planHasMultiJoin)
        } finally received.query.stop()
      }
    }
  }

  test("with Spark's allowlist check off, a sink off Spark's allowlist is still refused") {
    val inputs = new RealTimeInputs(spark, Inputs)
    withRealTimeMode {
      withTempDir { checkpoint =>
        val query =
          joined(inputs.frames).writeStream.format("memory").queryName("refused_in_real_time")
            .outputMode("update").option("checkpointLocation", checkpoint.getPath)
            .trigger(Trigger.RealTime("5 seconds")).start()
        try {
          val error = intercept[StreamingQueryException](query.awaitTermination(60000))
          assert(error.getMessage.contains("OPERATOR_OR_SINK_NOT_IN_ALLOWLIST"), error.getMessage)
          assert(error.getMessage.contains("MemorySink"), error.getMessage)
        } finally query.stop()
      }
    }
  }

  private def joined(frames: Seq[DataFrame]): DataFrame = frames.zipWithIndex.tail.foldLeft(
    frames.head) { case (left, (right, i)) => left.join(right, left("k0") === right(s"k$i")) }

  private def withRealTimeMode[T](body: => T): T = withMultiJoin(enabled = true) {
    withConf(
      "spark.sql.streaming.realTimeMode.allowlistCheck" -> "false",
      // What real-time mode needs: Spark sets it where it is unset, other suites set it to 1.
      "spark.sql.streaming.stateStore.checkpointFormatVersion" -> "2",
      "spark.sql.shuffle.partitions" -> "1")(body)
  }

  private def startCollecting(frame: DataFrame, checkpoint: String): Received = {
    val id = java.util.UUID.randomUUID().toString
    Collected.put(id, new ConcurrentLinkedQueue[Row]())
    val query = frame.writeStream
      .outputMode("update")
      .foreach(new CollectingWriter(id))
      .option("checkpointLocation", checkpoint)
      // Long enough that the first two rounds come out within the first batch on a slow machine.
      .trigger(Trigger.RealTime("10 seconds"))
      .start()
    new Received(query, id)
  }
}

object RealTimeMultiJoinSuite {

  /** The rows each test's sink received, by the sink's id: the writer runs in the test's JVM. */
  val Collected = new ConcurrentHashMap[String, ConcurrentLinkedQueue[Row]]()

  class CollectingWriter(id: String) extends ForeachWriter[Row] {
    override def open(partitionId: Long, epochId: Long): Boolean = true
    override def process(row: Row): Unit = Collected.get(id).add(row)
    override def close(errorOrNull: Throwable): Unit = ()
  }

  class Received(val query: StreamingQuery, id: String) {

    def rows: Seq[Row] = Collected.get(id).asScala.toSeq

    /** Waits until the rows received are `expected`, failing on a timeout or a failed query. */
    def awaitRows(expected: List[String]): Unit = awaitThat(s"rows $expected") {
      canonical(rows) == expected
    }

    /** Waits until the query has committed a batch. */
    def awaitBatch(): Unit = awaitThat("a committed batch")(query.recentProgress.nonEmpty)

    def planHasMultiJoin: Boolean =
      query.asInstanceOf[StreamingQueryWrapper].streamingQuery.lastExecution.executedPlan
        .exists(_.isInstanceOf[StreamingMultiJoinExec])

    private def awaitThat(what: String)(condition: => Boolean): Unit = {
      val deadline = System.nanoTime + 60L * 1000 * 1000 * 1000
      while (!condition) {
        query.exception.foreach(e => throw e)
        assert(System.nanoTime < deadline, s"timed out waiting for $what; got ${rows.size} rows")
        Thread.sleep(50)
      }
    }
  }
}
