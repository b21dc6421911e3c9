package org.apache.spark.sql.multijoin

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.SPARK_VERSION
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.StreamingJoinHelper
import org.apache.spark.sql.catalyst.expressions.{AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers
import org.apache.spark.sql.classic
import org.apache.spark.sql.connector.catalog.Table
import org.apache.spark.sql.execution.streaming.{ProcessingTimeTrigger, RealTimeTrigger}
import org.apache.spark.sql.execution.streaming.checkpointing.{CommitLog, OffsetSeqLog}
import org.apache.spark.sql.execution.streaming.operators.stateful.{SchemaValidationUtils, StatefulOperatorStateInfo, StatefulOpStateStoreCheckpointInfo}
import org.apache.spark.sql.execution.streaming.runtime.{IncrementalExecution, StreamExecution}
import org.apache.spark.sql.execution.streaming.state.{StateSchemaValidationResult, StateStore, StateStoreCoordinatorRef}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * The few Spark-private members the extension needs, in one place.
 *
 * State info: Spark assigns state info (checkpoint location, run id, operator id, batch id,
 * partitions) only to its own stateful operators, by matching their classes after planning. Its
 * watermark simulation then reads the operator id of every StateStoreWriter, so ours must carry
 * state info when planning ends. The micro-batch thread holds the query id as a local property,
 * and the running query is registered in the shared state (not in `session.streams`: the query
 * runs on a cloned session).
 *
 * What differs between Spark lines comes from [[SparkLineInternals]], which each line's source
 * folder (scala/src/main/spark-<line>) defines.
 */
object SparkInternals extends SparkLineInternals {

  /**
   * Fails unless the running Spark is of the line this jar is compiled against. Spark's
   * internals differ between lines, and a call compiled against another line's fails only when
   * a query reaches it (NoSuchMethodError in the middle of a micro-batch).
   */
  def requireBuiltLine(): Unit = {
    val running = SPARK_VERSION.split('.').take(2).mkString(".")
    if (running != BuiltFor.SparkLine) {
      throw new IllegalStateException(
        s"This jar of spark-multijoin, spark-multijoin_${BuiltFor.SparkLine}_2.13, is built for " +
          s"Spark ${BuiltFor.SparkLine}, and this is Spark $SPARK_VERSION: use the jar built for " +
          s"its line, spark-multijoin_${running}_2.13 (from Python, " +
          "configure_spark_with_multijoin adds the jar that fits the Spark it starts).")
    }
  }

  /**
   * The state info of stateful operator `operatorId` in the micro-batch being planned on this
   * thread, or None outside a running query (for example `df.explain()` before `start()`).
   *
   * It is the state info Spark gives its own operators (IncrementalExecution's
   * `nextStatefulOperationStateInfo`), read from the IncrementalExecution being planned: the
   * running query's `lastExecution` (set before planning starts). Its `numStateStores` is the
   * number of state partitions the checkpoint was written with, from the offset log, not the
   * session's `spark.sql.shuffle.partitions`, which a restart may have changed (a new checkpoint
   * takes the session's).
   *
   * With state store checkpoint format v2, it carries the ids of the store checkpoints that the
   * previous micro-batch committed per partition, as Spark's own operators get them: the query
   * collects them from every StateStoreWriter when a batch ends, records them in its commit log,
   * and reads them back on a restart. A store loads the checkpoint its id names, not whichever
   * files of that version a failed attempt left behind.
   */
  def stateInfo(session: SparkSession, operatorId: Long): Option[StatefulOperatorStateInfo] =
    currentExecution(session).map { execution =>
      StatefulOperatorStateInfo(
        checkpointLocation = execution.checkpointLocation,
        queryRunId = execution.runId,
        operatorId = operatorId,
        storeVersion = execution.currentBatchId,
        numPartitions = execution.numStateStores,
        stateStoreCkptIds = execution.currentStateStoreCkptId.get(operatorId))
    }

  /**
   * The IncrementalExecution of the micro-batch being planned or run on this thread: the
   * running query's `lastExecution`, set before planning starts; None outside a running query.
   */
  private def currentExecution(session: SparkSession): Option[IncrementalExecution] =
    for {
      query <- runningQuery(session)
      execution <- Option(query.lastExecution)
    } yield execution

  /**
   * Whether the streaming query planned or run on this thread runs in Spark's real-time mode
   * (`trigger(realTime=...)`): long batches whose stateful operators get their input rows as
   * the sources read them, until the batch ends.
   */
  def isRealTimeMode(session: SparkSession): Boolean = realTimeSink(session).isDefined

  /** The sink of the real-time query planned or run on this thread, if it is one. */
  def realTimeSink(session: SparkSession): Option[Table] =
    runningQuery(session).filter(_.trigger.isInstanceOf[RealTimeTrigger]).map(_.sink)

  /**
   * Spark's validation and writing of `operator`'s state schema (format `version`), for a
   * micro-batch of `session`'s running query (which may run in real-time mode).
   */
  def validateAndWriteStateSchema(
      operator: SchemaValidationUtils,
      hadoopConf: Configuration,
      batchId: Long,
      version: Int,
      info: StatefulOperatorStateInfo,
      schemaDir: Path,
      session: SparkSession): List[StateSchemaValidationResult] =
    RealTimeModeLine.validateAndWriteStateSchema(operator, hadoopConf, batchId, version, info,
      schemaDir, session, isRealTimeMode(session))

  /** Why chains keep Spark's joins in real-time mode on this Spark line, if they do. */
  def realTimeModeRefusal: Option[String] = RealTimeModeLine.refusal

  /** The run id of the streaming query whose micro-batch is planned on this thread, if any. */
  def runningQueryRun(session: SparkSession): Option[UUID] = runningQuery(session).map(_.runId)

  /** The streaming query whose micro-batch runs on this thread, if any. */
  private def runningQuery(session: SparkSession): Option[StreamExecution] =
    Option(session.sparkContext.getLocalProperty(StreamExecution.QUERY_ID_KEY)).flatMap { id =>
      Option(classicSession(session).sharedState.activeStreamingQueries.get(UUID.fromString(id)))
    }

  private def classicSession(session: SparkSession): classic.SparkSession =
    session.asInstanceOf[classic.SparkSession]

  /**
   * Whether state rows stored with `stored` can be read as rows of `schema`, by the rule of
   * Spark's state schema check (StateSchemaCompatibilityChecker): the same types, field names
   * aside, and no field that could hold nulls now non-nullable.
   */
  def stateSchemaCompatible(stored: StructType, schema: StructType): Boolean =
    DataType.equalsIgnoreNameAndCompatibleNullability(stored, schema)

  /**
   * What a partition's `store`, just committed, reports for the query's commit log under state
   * store checkpoint format v2 (its checkpoint's id, and the id of the one it loaded), as Spark's
   * single-store operators report it; None under format v1, which records no ids.
   */
  def committedCheckpoint(
      store: StateStore,
      conf: SQLConf): Option[StatefulOpStateStoreCheckpointInfo] =
    Some(store).filter(_ => StatefulOperatorStateInfo.enableStateStoreCheckpointIds(conf)).map {
      store =>
        val info = store.getStateStoreCheckpointInfo()
        StatefulOpStateStoreCheckpointInfo(info.partitionId, info.batchVersion,
          info.stateStoreCkptId.map(Array(_)), info.baseStateStoreCkptId.map(Array(_)))
    }

  /** The coordinator that tracks where each state store is loaded, for task locality. */
  def stateStoreCoordinator(session: SparkSession): StateStoreCoordinatorRef =
    classicSession(session).sessionState.streamingQueryManager.stateStoreCoordinator

  /**
   * A key expression whose float and double values compare by their bytes as Spark compares
   * them (one NaN, 0.0 for -0.0). Spark normalizes the keys of its own joins in an optimizer rule
   * that runs after ours and knows only Join nodes.
   */
  def normalizeFloatingNumbers(key: Expression): Expression =
    NormalizeFloatingNumbers.normalize(key)

  /**
   * The bound Spark's own join derives from `conjunct` for the rows with `time` given the
   * watermark `watermarkMs` on `otherTime`: rows at or below it cannot join rows to come.
   */
  def stateValueWatermark(
      time: AttributeSet,
      otherTime: AttributeSet,
      conjunct: Expression,
      watermarkMs: Long): Option[Long] =
    StreamingJoinHelper.getStateValueWatermark(time, otherTime, Some(conjunct), Some(watermarkMs))

  /**
   * The input watermarks (for dropping late rows, for evicting state) that Spark's watermark
   * propagation gives stateful operator `stateInfo.operatorId` in the micro-batch running on this
   * thread. Spark hands them to its own operators after planning, in a rule that knows only its
   * own classes, so ours asks when it runs; None outside a running query.
   */
  def inputWatermarks(
      session: SparkSession,
      stateInfo: StatefulOperatorStateInfo): Option[(Long, Long)] =
    currentExecution(session).map { execution =>
      val propagator = execution.watermarkPropagator
      (propagator.getInputWatermarkForLateEvents(stateInfo.storeVersion, stateInfo.operatorId),
        propagator.getInputWatermarkForEviction(stateInfo.storeVersion, stateInfo.operatorId))
    }

  /**
   * The start time of the micro-batch running on this thread, as its offset log records it (so
   * a retried batch sees the same); None outside a running query.
   */
  def batchTimestampMs(session: SparkSession): Option[Long] =
    currentExecution(session).map(_.offsetSeqMetadata.batchTimestampMs)

  /**
   * Under a processing-time trigger, the start time that the micro-batch being constructed on
   * this thread records in the offset log: Spark sets it before it asks the stateful operators
   * whether to run a micro-batch without data. None under other triggers (availableNow, once,
   * real time) or outside a running query.
   */
  def processingTimeBatchStartMs(session: SparkSession): Option[Long] =
    runningQuery(session).filter(_.trigger.isInstanceOf[ProcessingTimeTrigger])
      .flatMap(query => Option(query.getLatestExecutionContext()))
      .map(_.offsetSeqMetadata.batchTimestampMs)

  /**
   * Where the query running on this thread keeps its state, and the micro-batch before the one
   * being planned, on the first micro-batch of a restart (when Spark checks the plan's stateful
   * operators against the checkpoint's); None otherwise.
   */
  def restartedState(session: SparkSession): Option[(Path, Long)] =
    currentExecution(session)
      .filter(execution => execution.isFirstBatch && execution.currentBatchId > 0)
      .map(execution => (new Path(execution.checkpointLocation), execution.currentBatchId - 1))

  // Reading a checkpoint offline (MultiJoinStateReader), as Spark's state data source does.

  def newHadoopConf(session: SparkSession): Configuration =
    classicSession(session).sessionState.newHadoopConf()

  /**
   * Per stateful operator and partition, the ids of the store checkpoints micro-batch `batch`
   * committed, as the commit log records them (state store checkpoint format v2); None where it
   * records none (format v1).
   */
  def stateCheckpointIds(
      session: SparkSession,
      checkpoint: Path,
      batch: Long): Option[Map[Long, Array[Array[String]]]] =
    commitLog(session, checkpoint).get(batch).flatMap(_.stateUniqueIds)

  /** The last micro-batch of the checkpoint at `checkpoint` in its commit log, if any. */
  def lastCommittedBatch(session: SparkSession, checkpoint: Path): Option[Long] =
    commitLog(session, checkpoint).getLatestBatchId()

  private def commitLog(session: SparkSession, checkpoint: Path): CommitLog =
    new CommitLog(session, new Path(checkpoint, "commits").toString)

  /**
   * The session's conf with the confs the checkpoint's query ran micro-batch `batch` with (its
   * offset log's, such as the state store provider), which its state must be read with. The
   * state store checkpoint format is not among them: it is the one whose checkpoint ids the
   * commit log records for the batch, or format 1 where it records none.
   */
  def sessionConfOfBatch(session: SparkSession, checkpoint: Path, batch: Long): SQLConf = {
    val conf = classicSession(session).sessionState.conf.clone()
    setConfsOfBatch(new OffsetSeqLog(session, new Path(checkpoint, "offsets").toString), batch,
      conf)
    conf.setConf(SQLConf.STATE_STORE_CHECKPOINT_FORMAT_VERSION,
      if (stateCheckpointIds(session, checkpoint, batch).isDefined) 2 else 1)
    conf
  }

  /**
   * The optimized plan of `frame` as `explain()` makes it before the query starts: its logical
   * plan normalized and optimized, on its session. Unlike `queryExecution.optimizedPlan`, this
   * takes streaming plans, which a batch execution refuses.
   */
  def optimizedAsExplained(frame: classic.Dataset[_]): LogicalPlan = {
    val session = frame.sparkSession
    session.withActive(session.sessionState.optimizer.execute(frame.queryExecution.normalized))
  }

  /** A DataFrame of `rows`, which have `schema`. */
  def dataFrame(session: SparkSession, rows: RDD[InternalRow], schema: StructType): DataFrame =
    classicSession(session).internalCreateDataFrame(rows, schema)
}
