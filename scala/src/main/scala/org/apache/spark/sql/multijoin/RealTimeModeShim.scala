package org.apache.spark.sql.multijoin

/** What Spark's real-time mode gives the multi-join on this line, and its allowlist. */
object RealTimeModeShim extends RealTimeModeLineShim with RealTimeAllowlistLineShim
