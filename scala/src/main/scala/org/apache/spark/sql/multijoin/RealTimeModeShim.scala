package org.apache.spark.sql.multijoin

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo

/** What Spark's real-time mode gives the multi-join on this line, and its allowlist. */
object RealTimeModeShim extends RealTimeModeLineShim with RealTimeAllowlistLineShim

/**
 * What Spark's validation and writing of an operator's state schema takes, in format `version`,
 * for a micro-batch of `session`'s running query (which may run in real-time mode).
 */
case class StateSchemaWrite(
    hadoopConf: Configuration,
    batchId: Long,
    version: Int,
    info: StatefulOperatorStateInfo,
    schemaDir: Path,
    session: SparkSession,
    realTime: Boolean)
