package org.apache.spark.sql.multijoin

import org.apache.spark.sql.execution.streaming.operators.stateful.SchemaValidationUtils
import org.apache.spark.sql.execution.streaming.state.StateSchemaValidationResult

/** What real-time mode (`trigger(realTime=...)`) gives the multi-join, on 4.1 and 4.2. */
private[multijoin] trait RealTimeModeLineShim {

  /** Why chains keep Spark's joins in real-time mode on this line, if they do. */
  val realTimeModeRefusal: Option[String] = Some(
    s"on Spark ${BuiltFor.SparkLine} real-time mode runs no stateful operator (a real-time " +
      "batch pipelines its shuffles from Spark 4.3 on); run the query with another trigger, or " +
      "on Spark 4.3")

  /** Spark's validation and writing of `operator`'s state schema. */
  def validateAndWriteStateSchema(
      operator: SchemaValidationUtils,
      write: StateSchemaWrite): List[StateSchemaValidationResult] =
    operator.validateAndWriteStateSchema(write.hadoopConf, write.batchId, write.version,
      write.info, write.schemaDir, write.session)

  /** Nothing to warm up: this line runs no multi-join in real-time mode. */
  def warmUpBatchEnd(): Unit = ()
}
