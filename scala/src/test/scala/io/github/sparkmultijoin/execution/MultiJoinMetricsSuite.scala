package io.github.sparkmultijoin.execution

import io.github.sparkmultijoin.{MultiJoinSuiteBase, SteppedInputs}
import io.github.sparkmultijoin.execution.MultiJoinMetrics.Kind
import org.json4s.{JNothing, JValue}
import org.json4s.jackson.JsonMethods.parse

import org.apache.spark.sql.functions.col

class MultiJoinMetricsSuite extends MultiJoinSuiteBase {
  import spark.implicits._

  /** The `stateOperators` entry of a 3-way multi-join's last progress, as JSON. */
  private def progressEntry(): JValue = withTempDir { dir =>
    val inputs = new SteppedInputs[(Int, Int)](spark, (0 until 3).map(i => Seq(s"k$i", s"v$i")))
    val Seq(a, b, c) = inputs.streaming
    val query = withMultiJoin(enabled = true) {
      a.join(b, col("k0") === col("k1")).join(c, col("k2") === col("k0")).writeStream
        .format("noop").option("checkpointLocation", dir.getPath).start()
    }
    try {
      (0 until 3).foreach(input => inputs.add(input, (1, input)))
      query.processAllAvailable()
      val entries = (parse(query.lastProgress.json) \ "stateOperators").children
      assert(entries.map(entry => (entry \ "operatorName").values) == Seq("multiJoin"))
      entries.head
    } finally query.stop()
  }

  test("a query's progress reports each metric under its progress key") {
    val entry = progressEntry()
    val custom = entry \ "customMetrics"
    for (metric <- MultiJoinMetrics.all) {
      val reported = metric.kind match {
        case Kind.StatefulOperator(field) => field.map(entry \ _).toSeq
        case Kind.Custom => Seq(custom \ metric.progressKey.get)
        case Kind.CustomPerInput => (0 until 3).map(input => custom \ metric.ofInput(input))
      }
      assert(reported.forall(_ != JNothing), s"${metric.name} in $entry")
    }
  }

  test("each metric is named once, and the table lists each") {
    val names = MultiJoinMetrics.all.map(_.name)
    assert(names.distinct == names)
    val table = MultiJoinMetrics.markdownTable.split("\n")
    assert(table.length == 2 + names.length)
    names.zip(table.drop(2)).foreach { case (name, row) => assert(row.startsWith(s"| `$name` |")) }
  }

  test("a metric per input is named after the input") {
    assert(MultiJoinMetrics.ROWS_OF_INPUT.ofInput(3) == "numRowsInput3")
    intercept[IllegalArgumentException](MultiJoinMetrics.NUM_KEY_READS.ofInput(3))
  }
}
