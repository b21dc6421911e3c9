package io.github.sparkmultijoin.execution

import java.io.File
import java.sql.Timestamp

import scala.util.Random

import io.github.sparkmultijoin.{MultiJoinSuiteBase, SteppedInputs, StreamingSteps}
import io.github.sparkmultijoin.StreamingSteps.canonical
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager
import org.apache.spark.sql.execution.streaming.state.StateStoreConf
import org.apache.spark.sql.functions.{col, expr}
import org.apache.spark.sql.multijoin.SelfCountingStoreShim
import org.apache.spark.sql.multijoin.SelfCountingStoreShim.TrackRowsKey

/**
 * When the operator emits rows and what it keeps, micro-batch by micro-batch, in the style of
 * Spark's StreamingJoinSuite: add rows, process them, check the new output and the state.
 * Expected rows come from the batch query over the rows added so far, from Spark's own chain run
 * in step, or, for null-padding, from the semantics worked out by hand in each test.
 */
class StreamingMultiJoinExecSuite extends MultiJoinSuiteBase {
  import spark.implicits._

  private type Keyed = (Option[Int], Int)
  private type Timed = (Option[Int], Int, Timestamp)

  private def columns(n: Int, names: String*): Seq[Seq[String]] = (0 until n).map(i =>
    names.map(name => s"$name$i"))

  private def at(seconds: Int) = new Timestamp(seconds * 1000L)

  /** Three inputs k<i>, v<i>, t<i> with event times. */
  private def timedInputs() = new SteppedInputs[Timed](spark, columns(3, "k", "v", "t"))

  /** The inputs with a 5 s watermark delay on each event time. */
  private def withWatermarks(frames: Seq[DataFrame]): Seq[DataFrame] =
    frames.zipWithIndex.map { case (frame, i) => frame.withWatermark(s"t$i", "5 seconds") }

  /** Input j's row joins input p's on k, with t<j> within `seconds` of t<p>. */
  private def onKeyWithin(j: Int, p: Int, seconds: Int) = expr(s"k$p = k$j AND t$j BETWEEN " +
    s"t$p - INTERVAL $seconds SECONDS AND t$p + INTERVAL $seconds SECONDS")

  private def withSteps[T](frame: DataFrame, checkpoint: File, enabled: Boolean)(
      body: StreamingSteps => T): T = {
    val steps = withMultiJoin(enabled)(new StreamingSteps(frame, checkpoint))
    try body(steps)
    finally steps.close()
  }

  /** The rows a step must add to the output: the batch answer now, less the one before. */
  private def newRows(build: Seq[DataFrame] => DataFrame, inputs: SteppedInputs[_],
      before: List[String]): (List[String], List[String]) = {
    val after = canonical(build(inputs.tables).collect())
    (after.diff(before), after)
  }

  test("each micro-batch emits the combinations its rows complete, as Spark's chain does") {
    val random = new Random(1)
    val names = columns(3, "k", "v")
    val multi = new SteppedInputs[Keyed](spark, names)
    val chain = new SteppedInputs[Keyed](spark, names)
    def build(frames: Seq[DataFrame]) = frames(0)
      .join(frames(1), col("k0") === col("k1"))
      .join(frames(2), col("k2") === col("k1") && col("v2") < col("v0") + 5)
    withTempDir { dir =>
      withSteps(build(multi.streaming), new File(dir, "multi"), enabled = true) { multiRun =>
        withSteps(build(chain.streaming), new File(dir, "chain"), enabled = false) { chainRun =>
          var before = List.empty[String]
          var stored = 0L
          for (step <- 0 until 4) {
            for (input <- 0 until 3) {
              val rows = Seq.fill(random.nextInt(5)) {
                (if (random.nextInt(8) == 0) None else Some(random.nextInt(3)), random.nextInt(10))
              }
              multi.add(input, rows: _*)
              chain.add(input, rows: _*)
              stored += rows.count(_._1.isDefined)
            }
            val (expected, after) = newRows(build, multi, before)
            assert(canonical(multiRun.process()) == expected, s"step $step")
            assert(canonical(chainRun.process()) == expected, s"step $step, Spark's chain")
            assert(multiRun.stateRows("multiJoin") == Seq(stored), s"step $step")
            before = after
          }
          assert(before.nonEmpty, "the data should join")
        }
      }
    }
  }

  test("time bounds evict every row that can no longer join, batch by batch") {
    // b within 10 s of a, c within [b, b + 10 s]: Spark's chain rejects this shape. Each step's
    // rows are 100 s after the last step's, so they join only each other, and by hand: with a
    // 5 s delay the watermark after step s is 100 s * s - 5 s (input a's rows are the latest
    // behind), and every input keeps its rows for at most 20 s below the watermark (a needs
    // c <= b + 10 <= a + 20), so after each step the state holds exactly that step's rows.
    val inputs = timedInputs()
    def build(frames: Seq[DataFrame]) = {
      val Seq(a, b, c) = withWatermarks(frames)
      a.join(b, onKeyWithin(1, 0, seconds = 10))
        .join(c, expr("k2 = k1 AND t2 BETWEEN t1 AND t1 + INTERVAL 10 SECONDS"))
    }
    withTempDir { dir =>
      withSteps(build(inputs.streaming), dir, enabled = true) { run =>
        var before = List.empty[String]
        for (step <- 1 to 4) {
          val base = 100 * step
          // Key 0 joins; key 1's b is outside a's window; key 2 has no c.
          inputs.add(0, (Some(0), step, at(base)), (Some(1), step, at(base)),
            (Some(2), step, at(base)), (None, step, at(base)))
          inputs.add(1, (Some(0), step, at(base + 5)), (Some(1), step, at(base + 15)),
            (Some(2), step, at(base + 1)))
          inputs.add(2, (Some(0), step, at(base + 12)), (Some(1), step, at(base + 16)))
          val (expected, after) = newRows(build, inputs, before)
          assert(expected.length == 1, s"step $step: only key 0 joins")
          assert(canonical(run.process()) == expected, s"step $step")
          assert(run.stateRows("multiJoin") == Seq(8L), s"step $step: that step's 8 keyed rows")
          before = after
        }
      }
    }
  }

  test("a null-padded row comes out once nothing can match it, and never when one does") {
    // a LEFT OUTER b (b within 10 s of a), then c (within 10 s of a), 5 s delay. By hand:
    // step 1 (t = 100 s): a1 and a3 have no b yet, but a b row can still come (the watermark
    // is 95 s): only key 2, which has its b, comes out. Step 2: b3 arrives (on time) and
    // matches; far rows at 200 s move the watermark to 195 s, past a1's last chance (110 s),
    // so a1 comes out padded. Nothing else is padded, ever.
    val inputs = timedInputs()
    def build(frames: Seq[DataFrame]) = {
      val Seq(a, b, c) = withWatermarks(frames)
      a.join(b, onKeyWithin(1, 0, seconds = 10), "left_outer")
        .join(c,
          onKeyWithin(2, 0, seconds = 10))
    }
    def keysAndPadding(rows: Seq[Row]) =
      rows.map(row => (row.getAs[Int]("k0"), row.isNullAt(row.fieldIndex("k1")))).sorted
    withTempDir { dir =>
      withSteps(build(inputs.streaming), dir, enabled = true) { run =>
        Seq(1, 2, 3).foreach { key =>
          inputs.add(0, (Some(key), 0, at(100)))
          inputs.add(2, (Some(key), 0, at(100)))
        }
        inputs.add(1, (Some(2), 0, at(101)))
        assert(keysAndPadding(run.process()) == Seq(2 -> false))

        inputs.add(1, (Some(3), 0, at(104)), (Some(9), 0, at(200)))
        inputs.add(0, (Some(9), 0, at(200)))
        inputs.add(2, (Some(9), 0, at(200)))
        assert(keysAndPadding(run.process()) == Seq(1 -> true, 3 -> false, 9 -> false))
        assert(run.stateRows("multiJoin") == Seq(3L), "only the rows at 200 s are left")
      }
      val all = build(inputs.tables).collect()
      assert(keysAndPadding(all.toSeq) == Seq(1 -> true, 2 -> false, 3 -> false, 9 -> false))
    }
  }

  test("a FULL OUTER input's row nothing matches comes out once it is final, padded before it") {
    // (a JOIN b, b within 10 s of a) FULL OUTER c (on b's key, within 10 s of b), 5 s delay. By
    // hand, a row of a or c is final 20 s below the watermark (c is within 20 s of a through b).
    // Step 1 (t = 100 s, watermark 95 s): key 1 has all three and comes out; key 3's a and b
    // have no c yet and key 2's c no a or b, but rows can still come. Step 2: rows at 200 s move
    // the watermark to 195 s: (a3, b3, null) and (null, null, c2) come out, each once.
    val inputs = timedInputs()
    def build(frames: Seq[DataFrame]) = {
      val Seq(a, b, c) = withWatermarks(frames)
      a.join(b, onKeyWithin(1, 0, seconds = 10))
        .join(c, onKeyWithin(2, 1, seconds = 10), "full_outer")
    }
    def keys(rows: Seq[Row]) = rows.map { row =>
      Seq("k0", "k1", "k2").map(name => Option(row.getAs[Integer](name)).map(_.toInt))
    }.sortBy(_.toString)
    withTempDir { dir =>
      withSteps(build(inputs.streaming), dir, enabled = true) { run =>
        Seq(1, 3).foreach { key =>
          inputs.add(0, (Some(key), 0, at(100)))
          inputs.add(1, (Some(key), 0, at(100)))
        }
        inputs.add(2, (Some(1), 0, at(103)), (Some(2), 0, at(100)))
        assert(keys(run.process()) == Seq(Seq(Some(1), Some(1), Some(1))))

        (0 until 3).foreach(input => inputs.add(input, (Some(9), 0, at(200))))
        assert(keys(run.process()) == Seq(Seq(None, None, Some(2)),
          Seq(Some(3), Some(3), None), Seq(Some(9), Some(9), Some(9))))
        assert(run.stateRows("multiJoin") == Seq(3L), "only the rows at 200 s are left")
        assert(run.process().isEmpty, "nothing comes out twice")
      }
      assert(keys(build(inputs.tables).collect().toSeq) == Seq(Seq(None, None, Some(2)),
        Seq(Some(1), Some(1), Some(1)), Seq(Some(3), Some(3), None),
        Seq(Some(9), Some(9), Some(9))))
    }
  }

  test("a UTF8_LCASE key joins rows whose keys differ in case only, as the batch query does") {
    // Spark's own chain is wrong on this shape, so the batch query is the reference.
    val random = new Random(3)
    val inputs = new SteppedInputs[(Option[String], Int)](spark, columns(3, "k", "v"))
    def build(frames: Seq[DataFrame]) = {
      val Seq(a, b, c) = frames.zipWithIndex.map { case (frame, i) =>
        frame.select(expr(s"collate(k$i, 'UTF8_LCASE')").as(s"k$i"), col(s"v$i"))
      }
      a.join(b, col("k0") === col("k1")).join(c, col("k1") === col("k2"))
    }
    withTempDir { dir =>
      withSteps(build(inputs.streaming), dir, enabled = true) { run =>
        val emitted = (0 until 3).flatMap { _ =>
          (0 until 3).foreach { input =>
            inputs.add(input,
              Seq.fill(3)((
                Option(random.shuffle(Seq("ab", "AB", "Ab", "x")).head).filter(_ =>
                  random.nextInt(6) > 0),
                random.nextInt(5))): _*)
          }
          run.process()
        }
        val expected = canonical(build(inputs.tables).collect())
        assert(expected.exists(row => row.contains("AB") || row.contains("Ab")), expected)
        assert(canonical(emitted) == expected)
        assert(run.stateRows("multiJoin").nonEmpty, "the multi-join ran it")
      }
    }
  }

  test("with the session's checkpoint manager ours, its stores copy files through its file " +
    "system, not the session's") {
    def build(frames: Seq[DataFrame]) = frames(0)
      .join(frames(1), col("k0") === col("k1"))
      .join(frames(2), col("k1") === col("k2"))
    def storeSettings(): Map[String, String] = withTempDir { dir =>
      val inputs = new SteppedInputs[Keyed](spark, columns(3, "k", "v"))
      withSteps(build(inputs.streaming), dir, enabled = true) { run =>
        (0 until 3).foreach(input => inputs.add(input, (Some(1), 1), (Some(2), 2)))
        assert(canonical(run.process()) == canonical(build(inputs.tables).collect()))
        val exec = run.lastPlan.collectFirst { case exec: StreamingMultiJoinExec => exec }.get
        SelfCountingStoreShim.hadoopSettingsOf(exec.execute())
      }
    }
    val managerKey = "spark.sql.streaming.checkpointFileManagerClass"
    val settings = withConf(managerKey -> classOf[LocalFileSystemCheckpointFileManager].getName)(
      storeSettings())
    withTempDir { dir =>
      val stores = new Configuration(spark.sessionState.newHadoopConf())
      settings.foreach { case (key, value) => stores.set(key, value) }
      val path = new Path(dir.toURI)
      assert(path.getFileSystem(stores).isInstanceOf[NioPermissionLocalFileSystem])
      assert(!path.getFileSystem(spark.sessionState.newHadoopConf())
          .isInstanceOf[NioPermissionLocalFileSystem], "the session's file system stays its own")
    }
    withConf(managerKey -> classOf[FileContextBasedCheckpointFileManager].getName) {
      assert(storeSettings().isEmpty, "without our manager, Spark's file system")
    }
  }

  test("its stores leave the count of keys to it: it counts the rows it stores itself") {
    val inputs = new SteppedInputs[Keyed](spark, columns(3, "k", "v"))
    withConf(TrackRowsKey -> "true") {
      withTempDir { dir =>
        def build(frames: Seq[DataFrame]) = frames(0)
          .join(frames(1), col("k0") === col("k1"))
          .join(frames(2), col("k1") === col("k2"))
        withSteps(build(inputs.streaming), dir, enabled = true) { run =>
          (0 until 3).foreach(input => inputs.add(input, (Some(1), 1), (Some(1), 2), (Some(2), 3)))
          assert(canonical(run.process()) == canonical(build(inputs.tables).collect()))
          assert(run.stateRows("multiJoin") == Seq(9))
          val exec = run.lastPlan.collectFirst { case exec: StreamingMultiJoinExec => exec }.get
          val storeConf = SelfCountingStoreShim.storeConfOf(exec.execute())
          assert(storeConf.sqlConfs.get(TrackRowsKey).contains("false"))
          assert(new StateStoreConf(spark.sessionState.conf).sqlConfs.get(TrackRowsKey)
              .contains("true"), "the session's other operators keep counting")
        }
      }
    }
  }
}
