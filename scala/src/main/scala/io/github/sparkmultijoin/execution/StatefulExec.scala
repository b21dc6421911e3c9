package io.github.sparkmultijoin.execution

import io.github.sparkmultijoin.execution.Iterators.onExhaustion
import io.github.sparkmultijoin.execution.MultiJoinMetrics.{COMMIT_TIME_MS, Metric, NUM_OUTPUT_ROWS, STATE_MEMORY}
import io.github.sparkmultijoin.model.MicroBatchContext
import io.github.sparkmultijoin.restart.{OperatorMetadataFile, OperatorProperties}
import org.apache.hadoop.conf.Configuration

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.UnaryExecNode
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.execution.streaming.operators.stateful.{SchemaValidationUtils, StateStoreWriter, StatefulOperatorCustomMetric, StatefulOperatorStateInfo}
import org.apache.spark.sql.execution.streaming.state.{OperatorStateMetadata, StateSchemaValidationResult, StateStore}
import org.apache.spark.sql.multijoin.{RealTimeModeShim, StateSchemaWrite, StateStoreShim}

/**
 * The stateful skeleton every operator of spark-multijoin that keeps state runs on, over Spark's
 * StateStoreWriter, as Spark's own stateful operators share theirs: the multi-join
 * ([[StreamingMultiJoinExec]]), the changelog join ([[ChangelogJoinExec]]) and its ordering by
 * row id ([[ChangelogNormalizeExec]]).
 *
 * It owns what they all do alike: the guard that they run only inside a streaming query, the
 * operator metadata they record and its check on a restart ([[OperatorProperties]], Spark's
 * `validateNewMetadata` included), the state schema written in the format column families and
 * encoder specs need, the custom metrics they declare, a partition's output streamed and counted,
 * with the batch's end run once the rows are exhausted, and the commit with what Spark reports
 * of it (the commit time, the checkpoint info of checkpoint format v2, the store's metrics). Each
 * operator keeps only its own work: its state layout (`getColFamilySchemas`), what its state
 * depends on ([[operatorProperties]]), and its partition's rows.
 */
trait StatefulExec extends UnaryExecNode with StateStoreWriter with SchemaValidationUtils {

  def stateInfo: Option[StatefulOperatorStateInfo]

  /** What the operator needs of its micro-batch; None outside a running query. */
  def batch: Option[MicroBatchContext]

  /** The operator as errors name it. */
  def description: String

  /** What its state depends on, recorded in its operator metadata, checked on a restart. */
  protected def operatorProperties: OperatorProperties

  /** How many inputs its metrics per input count. */
  protected def numInputs: Int

  // Without state info (explain before start) the partition count Spark would use is the conf's.
  protected def numStatePartitions: Int =
    stateInfo.map(_.numPartitions).getOrElse(conf.numShufflePartitions)

  /** The running query's state info, which it gives only to the operators of its batches. */
  protected def runningStateInfo: StatefulOperatorStateInfo = stateInfo.getOrElse(
    throw new IllegalStateException(
      s"$nodeName runs only inside a streaming query, which gives it its state info:\n$this"))

  private def metadataFile = new OperatorMetadataFile(getStateInfo, shortName, description)

  override def operatorStateMetadataVersion: Int = OperatorMetadataFile.Version

  override def operatorStateMetadata(
      stateSchemaPaths: List[List[String]] = List.empty): OperatorStateMetadata =
    metadataFile.metadata(operatorProperties, stateSchemaPaths)

  override def validateNewMetadata(
      previous: OperatorStateMetadata,
      current: OperatorStateMetadata): Unit = metadataFile.checkNewMetadata(previous, current)

  // On a restart, the operator first compares itself with the checkpoint's operator metadata.
  override def validateAndMaybeEvolveStateSchema(
      hadoopConf: Configuration,
      batchId: Long,
      stateSchemaVersion: Int): List[StateSchemaValidationResult] = {
    metadataFile.checkRestart(hadoopConf, batchId, operatorProperties)
    // Spark passes its default schema format, which predates column families and encoder specs.
    RealTimeModeShim.validateAndWriteStateSchema(this,
      StateSchemaWrite(hadoopConf, batchId, StatefulExec.SchemaFormat, getStateInfo,
        stateSchemaDirPath(), session, batch.exists(_.realTime)))
  }

  override def customStatefulOperatorMetrics: Seq[StatefulOperatorCustomMetric] =
    MultiJoinMetrics.customStatefulOperatorMetrics(numInputs)

  protected def metric(declared: Metric): SQLMetric = longMetric(declared.name)

  /** Aborts the task's store where the task ends without committing it (a failure). */
  protected def abortIfNotCommitted(store: StateStore): Unit =
    TaskContext.get().addTaskCompletionListener[Unit] { _ =>
      if (!store.hasCommitted) store.abort()
    }

  /**
   * A partition's output, streamed: each row counted as it is read, and `endBatch` run once,
   * when the rows are exhausted (the store is committed there, by [[commit]]).
   */
  protected def streamed(rows: Iterator[InternalRow])(endBatch: => Unit): Iterator[InternalRow] = {
    val numOutputRows = metric(NUM_OUTPUT_ROWS)
    onExhaustion(rows.map { row => numOutputRows += 1; row })(endBatch)
  }

  /**
   * Commits the partition's state with `commitState` (the store's commit, or that of a state
   * manager over it), and reports what Spark reports of a stateful operator's commit.
   */
  protected def commit(store: StateStore)(commitState: => Unit): Unit = {
    metric(COMMIT_TIME_MS) += timeTakenMs(commitState)
    StateStoreShim.committedCheckpoint(store, conf).foreach(setStateStoreCheckpointInfo)
    val storeMetrics = store.metrics
    metric(STATE_MEMORY) += storeMetrics.memoryUsedBytes
    setStoreCustomMetrics(storeMetrics.customMetrics)
    setStoreInstanceMetrics(storeMetrics.instanceMetrics)
    setOperatorMetrics()
  }
}

object StatefulExec {

  /** Spark's state schema format that records column families and encoder specs. */
  val SchemaFormat = 3
}
