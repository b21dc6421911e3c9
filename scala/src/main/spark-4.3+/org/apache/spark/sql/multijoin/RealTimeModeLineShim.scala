package org.apache.spark.sql.multijoin

import org.apache.spark.sql.execution.streaming.operators.stateful.SchemaValidationUtils
import org.apache.spark.sql.execution.streaming.state.{StateSchemaValidationResult, StateStoreEncoding}

/** What real-time mode (`trigger(realTime=...)`) gives the multi-join, from 4.3 on. */
private[multijoin] trait RealTimeModeLineShim {

  /** Why chains keep Spark's joins in real-time mode on this line, if they do. */
  val realTimeModeRefusal: Option[String] = None

  /**
   * Spark's validation and writing of `operator`'s state schema. In real-time mode a
   * batch's offsets are logged at its end, not its start, so Spark reads the operator metadata
   * there as of the batch before.
   */
  def validateAndWriteStateSchema(
      operator: SchemaValidationUtils,
      write: StateSchemaWrite): List[StateSchemaValidationResult] =
    operator.validateAndWriteStateSchema(write.hadoopConf, write.batchId, write.version,
      write.info, write.schemaDir, write.session, 2, StateStoreEncoding.UnsafeRow.toString,
      write.realTime)

  /**
   * Builds, off the query's threads, what the end of the JVM's first real-time batch would
   * otherwise build while rows wait ([[BatchEndWarmUp]]).
   */
  def warmUpBatchEnd(): Unit = BatchEndWarmUp.start()
}
