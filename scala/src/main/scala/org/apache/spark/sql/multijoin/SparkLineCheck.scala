package org.apache.spark.sql.multijoin

import org.apache.spark.SPARK_VERSION

/** The Spark line this jar is built for, against the Spark that loads it. */
object SparkLineCheck {

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
}
