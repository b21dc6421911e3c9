package org.apache.spark.sql.multijoin

import org.apache.spark.sql.connector.catalog.Table
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.RealTimeModeAllowlist

/** Spark's real-time mode allowlist, for 4.1 (in Spark's `streaming` package). */
private[multijoin] trait RealTimeAllowlistLineShim {

  /**
   * Spark's own check that every operator above a real-time source, and `sink`, may run in
   * real-time mode, failing the query where one may not, whatever
   * `spark.sql.streaming.realTimeMode.allowlistCheck` says.
   */
  def checkRealTimeAllowlist(plan: SparkPlan, sink: Table): Unit = {
    RealTimeModeAllowlist.checkAllowedPhysicalOperator(plan, true)
    RealTimeModeAllowlist.checkAllowedSink(sink, true)
  }
}
