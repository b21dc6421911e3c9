package io.github.sparkmultijoin.optimizer

import io.github.sparkmultijoin.{LogCapture, MultiJoinSuiteBase, RealTimeInputs}

import org.apache.spark.sql.streaming.{StreamingQueryException, Trigger}

/**
 * Spark 4.2's real-time mode runs no stateful operator: chains keep Spark's joins, and say why.
 * (Spark 4.1 refuses a stream-stream join in the Update output mode that real-time mode needs,
 * before the rule runs.)
 */
class RealTimeModeRefusedSuite extends MultiJoinSuiteBase {

  test("in real-time mode chains keep Spark's joins, and a WARNING says why") {
    val inputs = new RealTimeInputs(spark, 3)
    val Seq(a, b, c) = inputs.frames
    val chain = a.join(b, a("k0") === b("k1")).join(c, a("k0") === c("k2"))
    val logged = withMultiJoin(enabled = true) {
      withTempDir { checkpoint =>
        LogCapture.of(CollapseStreamingJoinChains.getClass) {
          val query = chain.writeStream.format("console").outputMode("update")
            .option("checkpointLocation", checkpoint.getPath)
            .trigger(Trigger.RealTime("5 seconds")).start()
          try intercept[StreamingQueryException](query.awaitTermination(60000))
          finally query.stop()
        }
      }
    }
    assert(
      logged.exists(line =>
        line.startsWith("WARN Streaming joins run as Spark planned " +
          "them in real-time mode: on Spark 4.2") && line.contains("run the query with another " +
          "trigger, or on Spark 4.3.")), logged)
  }
}
