package org.apache.spark.sql.multijoin

import java.io.File
import java.nio.file.Files
import java.util.concurrent.TimeoutException

import org.apache.spark.sql.{classic, DataFrame, Row}
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder
import org.apache.spark.sql.execution.streaming.sources.ForeachBatchSink
import org.apache.spark.sql.streaming.{OutputMode, StreamingQuery, Trigger}
import org.apache.spark.util.ManualClock

import io.github.sparkmultijoin.QuerySteps

/**
 * A streaming query on a processing-time trigger whose clock the test moves, as Spark's own tests
 * run one (a manual trigger clock, which only Spark's package can give a query): each step sets
 * the clock to a trigger time and waits until the query has handled that trigger (run one
 * micro-batch, with or without data, or none) and waits for the next. No wall-clock sleeps: a
 * micro-batch's start time, which the offset log records and a state TTL expires rows by, is the
 * clock's time at its trigger.
 *
 * @param intervalMs the trigger's interval; the clock starts at 0
 */
class ClockedSteps(frame: DataFrame, checkpoint: File, intervalMs: Long) extends QuerySteps {

  private val clock = new SteppedClock

  protected val query: StreamingQuery = {
    val sink =
      new ForeachBatchSink[Row]((batch, _) => collect(batch), ExpressionEncoder(frame.schema))
    // By name: Spark 4.2 added a parameter (the sink's name) after the first.
    frame.sparkSession.asInstanceOf[classic.SparkSession].streams.startQuery(
      userSpecifiedName = None, userSpecifiedCheckpointLocation = Some(checkpoint.getPath),
      df = frame.asInstanceOf[classic.Dataset[Row]], extraOptions = Map.empty, sink = sink,
      outputMode = OutputMode.Append(), useTempCheckpointLocation = false,
      recoverFromCheckpointLocation = true, trigger = Trigger.ProcessingTime(intervalMs),
      triggerClock = clock)
  }
  awaitWaitingFor(intervalMs)

  /** The clock's time. */
  def now: Long = clock.getTimeMillis()

  /**
   * Sets the clock to `timeMs` (a trigger time after now), lets the query handle that trigger,
   * and returns the rows it emitted.
   */
  def advanceTo(timeMs: Long): Seq[Row] = {
    require(timeMs > now && timeMs % intervalMs == 0, s"$timeMs: a later trigger time")
    clock.setTime(timeMs)
    awaitWaitingFor(timeMs + intervalMs)
    drain()
  }

  private def awaitWaitingFor(timeMs: Long): Unit = {
    val deadline = System.nanoTime + 60L * 1000 * 1000 * 1000
    while (!clock.isWaitingFor(timeMs)) {
      query.exception.foreach(error => throw error)
      if (System.nanoTime > deadline) {
        throw new TimeoutException(s"the query did not reach its trigger at $timeMs")
      }
      Thread.sleep(5)
    }
  }

  /** The micro-batches the query has committed, by id. */
  def committedBatches: Seq[Long] =
    Option(new File(checkpoint, "commits").listFiles()).toSeq.flatten.map(_.getName)
      .filter(_.forall(_.isDigit)).map(_.toLong).sorted

  /** The start time that the offset log records for micro-batch `batchId`. */
  def batchStartMs(batchId: Long): Long = {
    val recorded = new String(Files.readAllBytes(
      new File(new File(checkpoint, "offsets"), batchId.toString).toPath))
    """"batchTimestampMs":(\d+)""".r.findFirstMatchIn(recorded).get.group(1).toLong
  }
}

/** A manual clock that tells which time the query's trigger waits for, while it waits. */
private class SteppedClock extends ManualClock(0L) {

  @volatile private var waitingFor = -1L

  override def waitTillTime(targetTime: Long): Long = {
    waitingFor = targetTime
    try super.waitTillTime(targetTime)
    finally waitingFor = -1L
  }

  def isWaitingFor(time: Long): Boolean = waitingFor == time
}
