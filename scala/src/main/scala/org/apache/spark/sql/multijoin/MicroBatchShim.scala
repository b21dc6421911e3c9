package org.apache.spark.sql.multijoin

import java.util.UUID

import io.github.sparkmultijoin.model.MicroBatchContext
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.{SparkSession, classic}
import org.apache.spark.sql.connector.catalog.Table
import org.apache.spark.sql.execution.streaming.{ProcessingTimeTrigger, RealTimeTrigger}
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.runtime.{IncrementalExecution, StreamExecution}

/**
 * The streaming query whose micro-batch is planned or run on this thread, read in one place.
 *
 * The micro-batch thread holds the query id as a local property, and the running query is
 * registered in the shared state (not in `session.streams`: the query runs on a cloned session).
 * The rule, the planner strategy and the physical rules read the batch here once; the operator
 * gets what it needs as a [[MicroBatchContext]].
 */
object MicroBatchShim {

  /** The micro-batch planned or run on this thread, or None outside a running query. */
  def running(session: SparkSession): Option[RunningMicroBatch] =
    Option(session.sparkContext.getLocalProperty(StreamExecution.QUERY_ID_KEY)).flatMap { id =>
      Option(session.asInstanceOf[classic.SparkSession].sharedState.activeStreamingQueries
        .get(UUID.fromString(id)))
    }.map(new RunningMicroBatch(_))

  /** The micro-batch planned on this thread, on its active session; None outside one. */
  def current: Option[RunningMicroBatch] = SparkSession.getActiveSession.flatMap(running)
}

/** A running query and the micro-batch it plans or runs: its `lastExecution`, once set. */
class RunningMicroBatch private[multijoin] (query: StreamExecution) {

  private def execution: Option[IncrementalExecution] = Option(query.lastExecution)

  /** The run id of the query. */
  def runId: UUID = query.runId

  /** The query's sink, if it runs in Spark's real-time mode (`trigger(realTime=...)`). */
  def realTimeSink: Option[Table] = Some(query).filter(_.trigger.isInstanceOf[RealTimeTrigger])
    .map(_.sink)

  def isRealTimeMode: Boolean = realTimeSink.isDefined

  /**
   * The state info of stateful operator `operatorId` in the micro-batch: what Spark gives its
   * own operators (IncrementalExecution's `nextStatefulOperationStateInfo`). Its
   * `numStateStores` is the number of state partitions the checkpoint was written with, from the
   * offset log, not the session's `spark.sql.shuffle.partitions`, which a restart may have
   * changed. With state store checkpoint format v2, it carries the ids of the store checkpoints
   * the previous micro-batch committed per partition, as Spark's own operators get them, so that
   * a store loads the checkpoint its id names, not whichever files a failed attempt left.
   */
  def stateInfo(operatorId: Long): Option[StatefulOperatorStateInfo] = execution.map { batch =>
    StatefulOperatorStateInfo(
      checkpointLocation = batch.checkpointLocation,
      queryRunId = batch.runId,
      operatorId = operatorId,
      storeVersion = batch.currentBatchId,
      numPartitions = batch.numStateStores,
      stateStoreCkptIds = batch.currentStateStoreCkptId.get(operatorId))
  }

  /**
   * What the multi-join needs of the micro-batch, as it is planned: its watermarks come later
   * ([[inputWatermarks]]).
   */
  def context: Option[MicroBatchContext] = execution.map { batch =>
    MicroBatchContext(isRealTimeMode, batch.offsetSeqMetadata.batchTimestampMs,
      lateRowsWatermarkMs = None, evictionWatermarkMs = None, () => nextBatchStartMs)
  }

  /**
   * The input watermarks (for dropping late rows, for evicting state) that Spark's watermark
   * propagation gives stateful operator `stateInfo.operatorId` in the micro-batch. Spark
   * propagates them in its state preparation of the physical plan, after planning, and hands them
   * to its own operators in a rule that knows only its own classes.
   */
  def inputWatermarks(stateInfo: StatefulOperatorStateInfo): Option[(Long, Long)] =
    execution.map { batch =>
      val propagator = batch.watermarkPropagator
      (propagator.getInputWatermarkForLateEvents(stateInfo.storeVersion, stateInfo.operatorId),
        propagator.getInputWatermarkForEviction(stateInfo.storeVersion, stateInfo.operatorId))
    }

  /**
   * Under a processing-time trigger, the start time that the micro-batch being constructed
   * records in the offset log; None under other triggers (availableNow, once, real time).
   */
  private def nextBatchStartMs: Option[Long] =
    Some(query).filter(_.trigger.isInstanceOf[ProcessingTimeTrigger])
      .flatMap(query => Option(query.getLatestExecutionContext()))
      .map(_.offsetSeqMetadata.batchTimestampMs)

  /**
   * Where the query keeps its state, and the micro-batch before the one being planned, on the
   * first micro-batch of a restart (when Spark checks the plan's stateful operators against the
   * checkpoint's); None otherwise.
   */
  def restartedState: Option[(Path, Long)] =
    execution.filter(batch => batch.isFirstBatch && batch.currentBatchId > 0)
      .map(batch => (new Path(batch.checkpointLocation), batch.currentBatchId - 1))
}
