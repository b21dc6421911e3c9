package io.github.sparkmultijoin.execution

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.ConcurrentLinkedQueue

import scala.jdk.CollectionConverters._
import scala.util.Random

import io.github.sparkmultijoin.{MultiJoinSuiteBase, RealTimeInputs}
import io.github.sparkmultijoin.StreamingSteps.canonical

import org.apache.spark.sql.{DataFrame, ForeachWriter, Row}
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
import org.apache.spark.sql.functions.{col, expr, timestamp_seconds}
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryException, Trigger}

/**
 * The multi-join in Spark's real-time mode: rows joined as they arrive within a long batch, each
 * combination once, the same as the batch query over the rows added so far.
 */
class RealTimeMultiJoinSuite extends MultiJoinSuiteBase {

  import RealTimeMultiJoinSuite._

  private val Inputs = 4

  test("a 4-way inner multi-join emits each combination once, as its last row arrives") {
    val (inputs, expected, add) = randomRounds(seed = 39, rowsPerRound = 6)

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

  test("a time-bounded multi-join: rows join within their bounds, and eviction while rows " +
    "arrive loses nothing") {
    // Rounds 80 s of event time apart and bounds of 10 s: each round joins only itself. Once a
    // batch starts with the watermark (30 s behind) past a round, even an input two bounds from
    // another (20 s) has nothing left to join with that round's rows: the next batch, whose
    // late-rows watermark that is, evicts them while its rows arrive (here: at its end).
    val random = new Random(3939)
    val rounds = Seq.tabulate(4)(round =>
      Seq.fill(Inputs)(
        Seq.fill(5)((random.nextInt(3), round * 100 + random.nextInt(20)))))
    val expected = rounds.indices.map(last =>
      canonical(timeBounded(
        (0 until Inputs).map(i =>
          spark.createDataFrame(rounds.take(last + 1).flatMap(_(i)))
            .toDF(s"k$i", s"v$i")), watermarked = false).collect()))
    val inputs = new RealTimeInputs(spark, Inputs)
    withRealTimeMode {
      withTempDir { checkpoint =>
        val received = startCollecting(
          timeBounded(inputs.frames, watermarked = true), checkpoint.getPath, batch = "2 seconds")
        try {
          rounds.indices.foreach { round =>
            rounds(round).zipWithIndex.foreach { case (rows, input) => inputs.add(input, rows) }
            received.awaitRows(expected(round))
            received.awaitBatch(round + 1)
          }
          assert(canonical(received.rows) == expected.last, "nothing more, nothing twice")
          // The third batch started with the watermark past round 0 only; the fourth evicts.
          val progress = received.query.recentProgress
          def state(batch: Int) = progress.find(_.batchId == batch).get.stateOperators.head
          assert((state(2).numRowsTotal, state(2).numRowsRemoved) == (3L * Inputs * 5, 0L),
            "at the third batch's end, rounds 0 to 2 are stored")
          assert((state(3).numRowsTotal, state(3).numRowsRemoved) == (3L * Inputs * 5, Inputs * 5L),
            "the fourth evicted round 0's")
          assert(received.planHasMultiJoin)
        } finally received.query.stop()
      }
    }
  }

  test("a query stopped within a long batch re-runs that batch on restart: nothing lost, only " +
    "that batch's rows may come out again") {
    val (inputs, expected, add) = randomRounds(seed = 393939, rowsPerRound = 5)
    withRealTimeMode {
      withTempDir { checkpoint =>
        add(0)
        val first = startCollecting(joined(inputs.frames), checkpoint.getPath, batch = "2 seconds")
        try {
          first.awaitRows(expected(0))
          first.awaitBatch()
          add(1)
          first.awaitDistinctRows(expected(1))
        } finally first.query.stop()
        // Normally the second batch is still running here, so the restart re-runs it.
        val rerun = first.query.recentProgress.length == 1
        val restarted = startCollecting(joined(inputs.frames), checkpoint.getPath,
          batch = "2 seconds", id = first.id)
        try {
          add(2)
          restarted.awaitDistinctRows(expected(2))
          restarted.awaitBatch()
          val counts = canonical(restarted.rows).groupBy(identity).view.mapValues(_.size)
          assert(expected(0).forall(counts(_) == 1), "a committed batch's rows come out once")
          val again = if (rerun) 2 else 1
          assert(expected(1).diff(expected(0)).forall(counts(_) == again),
            s"the stopped batch's rows come out $again times: $counts")
          assert(expected(2).diff(expected(1)).forall(counts(_) == 1), counts)
          assert(restarted.planHasMultiJoin)
        } finally restarted.query.stop()
      }
    }
  }

  test("outer chains and self-joins are refused in real-time mode, by Spark, saying why") {
    val inputs = new RealTimeInputs(spark, 3)
    val Seq(a, b, c) = inputs.frames
    withRealTimeMode {
      val outer = refusal(a.join(b, a("k0") === b("k1"), "left_outer")
        .join(c, a("k0") === c("k2"), "left_outer"))
      assert(outer.contains("not supported in Update output mode"), outer)
      val self = a.toDF("x", "y")
      val selfJoin = refusal(a.join(self, a("k0") === self("x")).join(b, a("k0") === b("k1")))
      assert(selfJoin.contains("IDENTICAL_SOURCES_IN_UNION_NOT_SUPPORTED"), selfJoin)
    }
  }

  /**
   * Three rounds of random rows for the inputs of [[joined]]: the inputs, the batch query's
   * answer after each round, and a function that adds a round to the inputs. The answers come
   * first: Spark refuses to start a real-time batch while other jobs hold the slots it needs.
   */
  private def randomRounds(
      seed: Int,
      rowsPerRound: Int): (RealTimeInputs, IndexedSeq[List[String]], Int => Unit) = {
    val random = new Random(seed)
    val rounds = Seq.fill(3)(
      Seq.fill(Inputs)(Seq.fill(rowsPerRound)((random.nextInt(4), random.nextInt()))))
    val expected = rounds.indices.map(last =>
      canonical(joined((0 until Inputs).map { i =>
        spark.createDataFrame(rounds.take(last + 1).flatMap(_(i))).toDF(s"k$i", s"v$i")
      }).collect()))
    val inputs = new RealTimeInputs(spark, Inputs)
    val add = (round: Int) =>
      rounds(round).zipWithIndex.foreach { case (rows, input) => inputs.add(input, rows) }
    (inputs, expected, add)
  }

  private def joined(frames: Seq[DataFrame]): DataFrame = frames.zipWithIndex.tail.foldLeft(
    frames.head) { case (left, (right, i)) => left.join(right, left("k0") === right(s"k$i")) }

  /** A 4-way join on k, each input within 10 s of event time of the first (v seconds). */
  private def timeBounded(frames: Seq[DataFrame], watermarked: Boolean): DataFrame = {
    val timed = frames.zipWithIndex.map { case (frame, i) =>
      val withTime = frame.withColumn(s"t$i", timestamp_seconds(frame(s"v$i")))
      if (watermarked) withTime.withWatermark(s"t$i", "30 seconds") else withTime
    }
    timed.zipWithIndex.tail.foldLeft(timed.head) { case (left, (right, i)) =>
      left.join(right,
        left("k0") === right(s"k$i") &&
          right(s"t$i").between(left("t0") - expr("INTERVAL 10 SECONDS"),
            left("t0") + expr("INTERVAL 10 SECONDS")))
    }.select((0 until frames.length).flatMap(i => Seq(col(s"k$i"), col(s"v$i"))): _*)
  }

  private def withRealTimeMode[T](body: => T): T = withMultiJoin(enabled = true) {
    withConf(
      "spark.sql.streaming.realTimeMode.allowlistCheck" -> "false",
      // What real-time mode needs: Spark sets it where it is unset, other suites set it to 1.
      "spark.sql.streaming.stateStore.checkpointFormatVersion" -> "2",
      "spark.sql.shuffle.partitions" -> "1",
      // Below Spark's 5 s minimum, as Spark's own tests of the mode do: these rounds are small.
      "spark.sql.streaming.realTimeMode.minBatchDuration" -> "1s")(body)
  }

  private def startCollecting(
      frame: DataFrame,
      checkpoint: String,
      // Long enough that the first two rounds come out within the first batch on a slow machine.
      batch: String = "10 seconds",
      id: String = java.util.UUID.randomUUID().toString): Received = {
    Collected.putIfAbsent(id, new ConcurrentLinkedQueue[Row]())
    val query = frame.writeStream
      .outputMode("update")
      .foreach(new CollectingWriter(id))
      .option("checkpointLocation", checkpoint)
      .trigger(Trigger.RealTime(batch))
      .start()
    new Received(query, id)
  }

  /** The error with which Spark refuses to start `frame` in real-time mode. */
  private def refusal(frame: DataFrame): String = withTempDir { checkpoint =>
    val error = intercept[Exception] {
      val received = startCollecting(frame, checkpoint.getPath)
      try received.query.awaitTermination(60000)
      finally received.query.stop()
    }
    error.getMessage
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

  class Received(val query: StreamingQuery, val id: String) {

    def rows: Seq[Row] = Collected.get(id).asScala.toSeq

    /** Waits until the rows received are `expected`, failing on a timeout or a failed query. */
    def awaitRows(expected: List[String]): Unit = awaitThat(s"rows $expected") {
      canonical(rows) == expected
    }

    /** Waits until the distinct rows received are `expected`. */
    def awaitDistinctRows(expected: List[String]): Unit = awaitThat(s"rows $expected") {
      canonical(rows).distinct == expected
    }

    /** Waits until the query has committed `count` batches. */
    def awaitBatch(count: Int = 1): Unit =
      awaitThat(s"$count committed batches")(query.recentProgress.length >= count)

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
