package org.apache.spark.sql.multijoin

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.operators.stateful.{SchemaValidationUtils, StatefulOperatorStateInfo}
import org.apache.spark.sql.execution.streaming.state.{StateSchemaValidationResult, StateStoreEncoding}

/** What real-time mode (`trigger(realTime=...)`) gives the multi-join, from 4.3 on. */
private[multijoin] trait RealTimeModeLineShim {

  /** Why chains keep Spark's joins in real-time mode on this line, if they do. */
  val realTimeModeRefusal: Option[String] = None

  /**
   * Spark's validation and writing of `operator`'s state schema (format `version`). In
   * real-time mode a batch's offsets are logged at its end, not its start, so Spark reads the
   * operator metadata there as of the batch before.
   */
  def validateAndWriteStateSchema(
      operator: SchemaValidationUtils,
      hadoopConf: Configuration,
      batchId: Long,
      version: Int,
      info: StatefulOperatorStateInfo,
      schemaDir: Path,
      session: SparkSession,
      realTime: Boolean): List[StateSchemaValidationResult] =
    operator.validateAndWriteStateSchema(hadoopConf, batchId, version, info, schemaDir, session,
      2, StateStoreEncoding.UnsafeRow.toString, realTime)
}
