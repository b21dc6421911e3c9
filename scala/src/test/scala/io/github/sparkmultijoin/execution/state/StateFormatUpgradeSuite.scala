package io.github.sparkmultijoin.execution.state

import java.io.File
import java.nio.file.Files
import java.sql.Timestamp

import scala.jdk.CollectionConverters._

import io.github.sparkmultijoin.{MultiJoinSuiteBase, SteppedInputs, StreamingSteps}
import io.github.sparkmultijoin.execution.MultiJoinMetrics
import org.apache.commons.io.FileUtils

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions.expr
import org.apache.spark.sql.streaming.StreamingQueryException

/**
 * A checkpoint written by an earlier version resumes with this one, and the query's whole output
 * is still the batch query's.
 *
 * The checkpoint in `state-format-2/` was written by spark-multijoin at a33f795 (multi-join
 * state layout 2: a family of rows per input), running [[query]] over [[before]]'s two steps;
 * `emitted.txt` holds what it emitted, as [[rendered]] lists rows. Resumed here,
 * the state manager moves those rows into layout 3, and the rows added after the restart join
 * them.
 */
class StateFormatUpgradeSuite extends MultiJoinSuiteBase {
  import spark.implicits._

  private type Timed = (Option[Int], Int, Timestamp)

  private def at(seconds: Int) = new Timestamp(seconds * 1000L)

  /** a LEFT OUTER b and JOIN c, each within 10 s of a, with 5 s watermark delays. */
  private def query(frames: Seq[DataFrame]): DataFrame = {
    val Seq(a, b, c) = frames.zipWithIndex.map { case (frame, i) =>
      frame.withWatermark(s"t$i", "5 seconds")
    }
    def within(j: Int) =
      expr(s"k0 = k$j AND t$j BETWEEN t0 - INTERVAL 10 SECONDS AND t0 + INTERVAL 10 SECONDS")
    a.join(b, within(1), "left_outer").join(c, within(2))
  }

  /** Per step, the rows added to each input, as the earlier version was given them. */
  private val before: Seq[Seq[Seq[Timed]]] = Seq(
    Seq(
      Seq((Some(1), 1, at(100)), (Some(2), 1, at(100)), (Some(3), 1, at(100)), (None, 1, at(100))),
      Seq((Some(2), 1, at(103)), (Some(3), 1, at(125))),
      Seq((Some(1), 1, at(101)), (Some(2), 1, at(105)), (Some(3), 1, at(99)))),
    Seq(
      Seq((Some(1), 2, at(200)), (Some(4), 2, at(200))),
      Seq((Some(1), 2, at(205)), (Some(4), 2, at(190))),
      Seq((Some(1), 2, at(200)), (Some(4), 2, at(209)), (Some(2), 2, at(200)))))

  // Rows that join stored rows of keys 1 and 4 (the watermark is at 195 s), then rows far ahead,
  // after which every row is final and every null-padded row out.
  private val after: Seq[Seq[Seq[Timed]]] = Seq(
    Seq(
      Seq((Some(1), 3, at(300)), (Some(2), 3, at(300))),
      Seq((Some(4), 3, at(201)), (Some(1), 3, at(300))),
      Seq((Some(1), 3, at(198)), (Some(1), 3, at(302)), (Some(2), 3, at(301)))),
    Seq.fill(3)(Seq((Some(9), 4, at(1000)))))

  private val fixture = new File(getClass.getResource("/state-format-2").toURI)

  // The operator metadata of the fixture's multi-join, which names its schema file by the path
  // the checkpoint was written at.
  private val metadataFile = "state/1073741824/_metadata/v2/0"
  private val writtenAt = "file:/tmp/v2-fixture/checkpoint"

  /**
   * Copies the fixture's checkpoint to `dir`, pointing its metadata at the copy's schema file;
   * with `recordedLayout`, its operator properties become only that layout's number, as builds
   * before ad64604 recorded them.
   */
  private def copyCheckpoint(dir: File, recordedLayout: Option[Int] = None): Unit = {
    FileUtils.copyDirectory(new File(fixture, "checkpoint"), dir)
    val metadata = new File(dir, metadataFile)
    val Array(version, json) = FileUtils.readFileToString(metadata, "UTF-8").split("\n", 2)
    val moved = json.replace(writtenAt, dir.toURI.toString.stripSuffix("/"))
    val properties = """"operatorPropertiesJson":"(?:[^"\\]|\\.)*""""
    FileUtils.writeStringToFile(metadata,
      version + "\n" +
        recordedLayout.fold(moved) { layout =>
          moved.replaceFirst(properties,
            s""""operatorPropertiesJson":"{\\\\"stateFormatVersion\\\\":$layout}"""")
        }, "UTF-8")
    new File(metadata.getParentFile, ".0.crc").delete()
  }

  /** Rows as sorted strings, event times in epoch seconds: the same in every time zone. */
  private def rendered(rows: Seq[Row]): List[String] = rows.map(_.toSeq.map {
    case time: Timestamp => (time.getTime / 1000).toString
    case value => String.valueOf(value)
  }.mkString("[", ",", "]")).toList.sorted

  /** The rows of input a in the checkpoint's state, as `read_state` reads them. */
  private def storedRowsOfA(checkpoint: File): List[String] = rendered(MultiJoinStateReader
    .read(spark, checkpoint.getPath, input = 0, batchId = None, operatorId = None)
    .select("k0", "v0", "t0").collect().toSeq)

  test("a checkpoint of state layout 2 resumes, and the output is the batch query's") {
    val emittedBefore = Files.readAllLines(new File(fixture, "emitted.txt").toPath).asScala.toList
    withTempDir { dir =>
      copyCheckpoint(dir)
      val inputs =
        new SteppedInputs[Timed](spark, (0 until 3).map(i => Seq(s"k$i", s"v$i", s"t$i")))
      // The same rows in the same steps: the restarted sources then stand at the checkpoint's
      // offsets, and nothing before the restart runs again.
      for (step <- before; (rows, input) <- step.zipWithIndex) inputs.add(input, rows: _*)
      // Read from either layout: a's rows at 100 s were evicted, as nothing can join them now.
      assert(storedRowsOfA(dir) == List("[1,2,200]", "[4,2,200]"), "layout 2")
      val steps = withMultiJoin(enabled = true)(new StreamingSteps(query(inputs.streaming), dir))
      val emittedAfter = try {
        after.flatMap { step =>
          step.zipWithIndex.foreach { case (rows, input) => inputs.add(input, rows: _*) }
          val emitted = steps.process()
          val keyReads = steps.stateMetric("multiJoin", MultiJoinMetrics.NUM_KEY_READS.name)
          assert(keyReads.sum > 0, "read stored rows")
          emitted
        }
      } finally steps.close()
      assert(storedRowsOfA(dir) == List("[9,4,1000]"), "layout 3")
      val expected = rendered(query(inputs.tables).collect().toSeq)
      assert(expected.contains("[4,2,200,4,3,201,4,2,209]"),
        "a row added after the restart joins rows stored before it")
      assert((emittedBefore ++ rendered(emittedAfter)).sorted == expected)
    }
  }

  test(
    "a layout 2 checkpoint that recorded no input columns is refused if one's columns changed") {
    withTempDir { dir =>
      copyCheckpoint(dir, recordedLayout = Some(2))
      assert(FileUtils.readFileToString(new File(dir, metadataFile), "UTF-8")
        .contains(""""operatorPropertiesJson":"{\"stateFormatVersion\":2}""""))
      val inputs =
        new SteppedInputs[Timed](spark, (0 until 3).map(i => Seq(s"k$i", s"v$i", s"t$i")))
      for (step <- before; (rows, input) <- step.zipWithIndex) inputs.add(input, rows: _*)
      inputs.add(0, after.head.head: _*)
      // Input b with a column more than the checkpoint's rows have.
      val frames = inputs.streaming.updated(1, inputs.streaming(1).withColumn("w1", expr("v1 + 1")))
      val error = intercept[StreamingQueryException] {
        val steps = withMultiJoin(enabled = true)(new StreamingSteps(query(frames), dir))
        try steps.process()
        finally steps.close()
      }
      assert(error.getMessage.contains("input 1 had the columns (k1 INT, v1 INT NOT NULL, " +
          "t1 TIMESTAMP NOT NULL) and now has ("), error.getMessage)
    }
  }

  /** The error of a restart of the fixture with `recordedLayout` as its operator properties. */
  private def restartError(recordedLayout: Int): String = withTempDir { dir =>
    copyCheckpoint(dir, recordedLayout = Some(recordedLayout))
    val inputs =
      new SteppedInputs[Timed](spark, (0 until 3).map(i => Seq(s"k$i", s"v$i", s"t$i")))
    for (step <- before ++ after.take(1); (rows, input) <- step.zipWithIndex) {
      inputs.add(input, rows: _*)
    }
    intercept[StreamingQueryException] {
      val steps = withMultiJoin(enabled = true)(new StreamingSteps(query(inputs.streaming), dir))
      try steps.process()
      finally steps.close()
    }.getMessage
  }

  test("a checkpoint of another state layout than the session's, or a later one, is refused") {
    // The fixture's store is RocksDB's, where this session uses layout 3.
    val otherLayout = restartError(recordedLayout = 4)
    assert(
      otherLayout.contains("cannot resume from this checkpoint: its state is in " +
        "multi-join state layout 4 (one value per key), which HDFSBackedStateStoreProvider " +
        "keeps, and this session would use multi-join state layout 3 (column families)"),
      otherLayout)
    val later = restartError(recordedLayout = 5)
    assert(later.contains("multi-join state layout 5 is not one this version of " +
        "spark-multijoin knows"), later)
  }
}
