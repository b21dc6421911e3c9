package io.github.sparkmultijoin.ttl

import java.io.File
import java.sql.Timestamp

import io.github.sparkmultijoin.{MultiJoinSuiteBase, SteppedInputs, StreamingSteps}
import io.github.sparkmultijoin.MultiJoinSuiteBase.{InMemoryProvider, RocksDbProvider}
import io.github.sparkmultijoin.StreamingSteps.canonical
import io.github.sparkmultijoin.execution.MultiJoinMetrics

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions.{col, expr}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.multijoin.{CheckpointShim, ClockedSteps, MultiJoinConf}
import org.apache.spark.sql.streaming.StreamingQueryException

/**
 * State TTLs at run time, micro-batch by micro-batch, on a trigger clock the test moves
 * ([[ClockedSteps]]): what must have expired is computed from the start times the offset log
 * records, which are the clock's times at the triggers; nothing waits on the wall clock.
 */
class StateTtlExpirySuite extends MultiJoinSuiteBase {
  import spark.implicits._

  private type Keyed = (Option[Int], Int)
  private type Timed = (Option[Int], Int, Timestamp)

  private val Second = 1000L

  private def columns(n: Int, names: String*): Seq[Seq[String]] = (0 until n).map(i =>
    names.map(name => s"$name$i"))

  private val expiredByTtl = MultiJoinMetrics.NUM_ROWS_EXPIRED_BY_TTL.name

  /** a, b and c joined on k, with nothing else bounding their rows. */
  private def innerChain(frames: Seq[DataFrame]): DataFrame = frames(0)
    .join(frames(1), col("k0") === col("k1")).join(frames(2), col("k2") === col("k0"))

  private def withClock[T](frame: DataFrame, dir: File)(body: ClockedSteps => T): T = {
    val steps = withMultiJoin(enabled = true)(new ClockedSteps(frame, dir, intervalMs = Second))
    try body(steps)
    finally steps.close()
  }

  test("the STATE_TTL hint expires its input's rows and keeps the others', from SQL and " +
    "DataFrame.hint") {
    // a's rows live 5 s, b's and c's for good. Batch 0 stores a1 and b1; c1 comes 5 s or more
    // later and finds a1 expired, so nothing joins; a2 then joins b1, which is still there. In
    // RocksDB with the hint from the DataFrame API, then in Spark's in-memory store from SQL.
    for ((provider, fromSql) <- Seq(RocksDbProvider -> false, InMemoryProvider -> true)) {
      withTempDir { dir =>
        val inputs = new SteppedInputs[Keyed](spark, columns(3, "k", "v"))
        val Seq(a, b, c) = inputs.streaming.zip(Seq("a", "b", "c")).map { case (f, n) =>
          f.createOrReplaceTempView(n)
          f.alias(n)
        }
        val frame =
          if (fromSql) {
            spark.sql("SELECT /*+ STATE_TTL(a, '5 seconds') */ * FROM a JOIN b ON a.k0 = b.k1 " +
              "JOIN c ON c.k2 = a.k0")
          } else {
            innerChain(Seq(a, b, c)).hint("STATE_TTL", "a", "5 seconds")
          }
        withConf(SQLConf.STATE_STORE_PROVIDER_CLASS.key -> provider) {
          withClock(frame, dir) { run =>
            inputs.add(0, (Some(1), 1))
            inputs.add(1, (Some(1), 1))
            assert(run.advanceTo(1 * Second).isEmpty)
            inputs.add(2, (Some(1), 1))
            val joined = run.advanceTo(7 * Second)
            assert(run.batchStartMs(1) - run.batchStartMs(0) >= 5 * Second, "a1 is due")
            assert(joined.isEmpty, s"$provider: a1 expired before c1 came")
            assert(run.stateMetric("multiJoin", expiredByTtl) == Seq(1L))
            inputs.add(0, (Some(1), 2))
            assert(canonical(run.advanceTo(8 * Second)) == List("[1,2,1,1,1,1]"),
              s"$provider: b1, without a TTL, is kept")
            assert(run.stateRows("multiJoin") == Seq(3L))
          }
        }
      }
    }
  }

  test("an idle stream's rows expire in a batch without data once due, not on every trigger") {
    // The session's TTL, 5 s, on every input; a trigger every second. Batch 0 stores two rows
    // at 1 s; the next triggers find no data and nothing due, until the one at 6 s.
    withTempDir { dir =>
      val inputs = new SteppedInputs[Keyed](spark, columns(3, "k", "v"))
      withConf(MultiJoinConf.STATE_TTL.key -> "5 seconds") {
        withClock(innerChain(inputs.streaming), dir) { run =>
          inputs.add(0, (Some(1), 1))
          inputs.add(1, (Some(1), 1))
          run.advanceTo(1 * Second)
          val due = run.batchStartMs(0) + 5 * Second
          for (time <- 2L to 9L) {
            run.advanceTo(time * Second)
            val expected = if (time * Second >= due) Seq(0L, 1L) else Seq(0L)
            assert(run.committedBatches == expected, s"at $time s (rows due at $due ms)")
          }
          assert(run.batchStartMs(1) == due)
          assert(run.stateRows("multiJoin") == Seq(0L))
          assert(run.stateMetric("multiJoin", expiredByTtl) == Seq(2L))
        }
      }
    }
  }

  test("with a session TTL, an outer chain gives its answer batch by batch, expiring nothing") {
    // a LEFT OUTER b LEFT OUTER c, b and c within 10 s of a, 5 s watermark delay; TTL 1 s and a
    // minute between batches, so a TTL would have dropped every row before the next batch. By
    // hand: batch 0 (t = 100 s) has every row of key 2, which comes out; a1 has c1, a3 nothing,
    // and rows can still come. Batch 1: b3 arrives (104 s, on time) and key 9's rows at 200 s
    // come out; the watermark moves to 195 s, past a1's and a3's last chance (110 s). Batch 2,
    // without data: a1 comes out without b, a3 without c. Nothing expires by the TTL.
    val inputs = new SteppedInputs[Timed](spark, columns(3, "k", "v", "t"))
    def at(seconds: Int) = new Timestamp(seconds * Second)
    def build(frames: Seq[DataFrame]) = {
      val Seq(a, b, c) = frames.zipWithIndex.map { case (f, i) =>
        f.withWatermark(s"t$i", "5 seconds")
      }
      def within(j: Int) = expr(s"k0 = k$j AND t$j BETWEEN t0 - INTERVAL 10 SECONDS AND " +
        s"t0 + INTERVAL 10 SECONDS")
      a.join(b, within(1), "left_outer").join(c, within(2), "left_outer")
    }
    def keys(rows: Seq[Row]) = rows.map { row =>
      Seq("k0", "k1", "k2").map(name => Option(row.getAs[Integer](name)).map(_.toInt))
    }.sortBy(_.toString)
    val (one, two, three, nine) = (Some(1), Some(2), Some(3), Some(9))
    withTempDir { dir =>
      withConf(MultiJoinConf.STATE_TTL.key -> "1 second") {
        withClock(build(inputs.streaming), dir) { run =>
          Seq(1, 2, 3).foreach(key => inputs.add(0, (Some(key), 0, at(100))))
          inputs.add(1, (Some(2), 0, at(101)))
          inputs.add(2, (Some(1), 0, at(102)), (Some(2), 0, at(100)))
          assert(keys(run.advanceTo(60 * Second)) == Seq(Seq(two, two, two)))

          inputs.add(1, (Some(3), 0, at(104)), (Some(9), 0, at(200)))
          inputs.add(0, (Some(9), 0, at(200)))
          inputs.add(2, (Some(9), 0, at(200)))
          assert(keys(run.advanceTo(120 * Second)) == Seq(Seq(nine, nine, nine)))
          assert(run.batchStartMs(1) - run.batchStartMs(0) > Second, "a TTL would have passed")

          assert(keys(run.advanceTo(180 * Second)) ==
            Seq(Seq(one, None, one), Seq(three, three, None)))
          assert(run.committedBatches == Seq(0L, 1L, 2L))
          assert(run.stateRows("multiJoin") == Seq(3L), "only the rows at 200 s are left")
          assert(run.stateMetric("multiJoin", expiredByTtl) == Seq(0L))
          assert(run.advanceTo(240 * Second).isEmpty && run.committedBatches.length == 3)
        }
      }
      assert(keys(build(inputs.tables).collect().toSeq) == Seq(Seq(one, None, one),
        Seq(two, two, two), Seq(three, three, None), Seq(nine, nine, nine)))
    }
  }

  test("a restart with another duration resumes; adding or removing an input's TTL is refused") {
    // On either state store checkpoint format where the line runs the multi-join on both: under
    // v2 each store loads the checkpoint whose id the commit log records.
    val formats = Seq(1) ++ Seq(2).filter(_ => CheckpointShim.checkpointFormatV2Refusal.isEmpty)
    for (format <- formats) withConf(
      SQLConf.STATE_STORE_CHECKPOINT_FORMAT_VERSION.key -> format.toString) {
      val inputs = new SteppedInputs[Keyed](spark, columns(3, "k", "v"))
      val Seq(a, b, c) = inputs.streaming.zip(Seq("a", "b", "c")).map { case (f, n) => f.alias(n) }
      def run[T](dir: File, hints: String*)(body: StreamingSteps => T): T = {
        val frame = hints.grouped(2).foldLeft(innerChain(Seq(a, b, c))) {
          case (hinted, Seq(input, ttl)) => hinted.hint("STATE_TTL", input, ttl)
        }
        val steps = withMultiJoin(enabled = true)(new StreamingSteps(frame, dir))
        try body(steps)
        finally steps.close()
      }
      def refused(dir: File, hints: String*): String =
        intercept[StreamingQueryException](run(dir, hints: _*)(_.process())).getMessage
      withTempDir { dir =>
        inputs.add(0, (Some(1), 1))
        inputs.add(1, (Some(1), 1))
        run(dir, "a", "1 hour")(steps => assert(steps.process().isEmpty))
        inputs.add(2, (Some(1), 1))
        run(dir, "a", "2 hours") { steps =>
          assert(canonical(steps.process()) == List("[1,1,1,1,1,1]"), "the state resumed")
        }
        inputs.add(2, (Some(1), 2))
        assert(refused(dir).contains("input 0 had a state TTL of 2h when it was written and has " +
          "no state TTL now"))
        assert(refused(dir, "a", "1h", "b", "1h").contains("input 1 had no state TTL when it was " +
          "written and has a state TTL of 1h now"))
      }
    }
  }
}
