package io.github.sparkmultijoin.planning

import java.io.ByteArrayOutputStream
import java.sql.Timestamp

import io.github.sparkmultijoin.{LogCapture, MultiJoinSuiteBase}
import io.github.sparkmultijoin.optimizer.CollapseStreamingJoinChains
import org.json4s._
import org.json4s.jackson.JsonMethods

import org.apache.spark.sql.{DataFrame, Encoder, classic}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions.col

/**
 * What EXPLAIN, FusionReport and the driver log say of a plan's streaming joins. The reference
 * is the rule itself: its verdicts on the plan, as CollapseStreamingJoinChainsSuite gets them.
 */
class FusionExplainSuite extends MultiJoinSuiteBase {
  import spark.implicits._

  private implicit val formats: Formats = DefaultFormats

  private val Providers = "spark.sql.extendedExplainProviders"
  private val Heading = s"== Extended Information (${FusionExplainGenerator.Title}) =="

  private def stream[A: Encoder](columns: String*): DataFrame =
    MemoryStream[A](implicitly[Encoder[A]], spark).toDF().toDF(columns: _*)

  /** Input i: columns k<i>, v<i>, aliased by its name. */
  private def named(names: String*): Seq[DataFrame] = names.zipWithIndex.map { case (name, i) =>
    stream[(Int, Int)](s"k$i", s"v$i").alias(name)
  }

  private def withExplained[T](body: => T): T =
    withConf(Providers -> classOf[FusionExplainGenerator].getName)(withMultiJoin(true)(body))

  private def printed(body: => Unit): String = {
    val out = new ByteArrayOutputStream
    Console.withOut(out)(body)
    out.toString
  }

  /** The section the generator adds to EXPLAIN's `text`, or None. */
  private def section(text: String): Option[String] =
    Some(text.indexOf(Heading)).filter(_ >= 0)
      .map(start => text.substring(start + Heading.length).trim)

  /** The rule's verdicts' messages on `frame`, from the plan Spark's optimizer gives it. */
  private def ruleMessages(frame: DataFrame): Seq[String] = {
    val before = withConf("spark.sql.streaming.unsupportedOperationCheck" -> "false") {
      withMultiJoin(enabled = false) {
        spark.sessionState.executePlan(frame.queryExecution.logical).optimizedPlan
      }
    }
    withMultiJoin(enabled = true)(CollapseStreamingJoinChains.rewrite(before)._2.map(_.message))
  }

  private def report(frame: DataFrame): JValue = withMultiJoin(enabled = true) {
    JsonMethods.parse(FusionReport.json(frame.asInstanceOf[classic.Dataset[_]]))
  }

  test("EXPLAIN shows what fused into which multi-join on which key, inputs named as written") {
    Seq("orders", "payments", "shipments").zipWithIndex.foreach { case (view, i) =>
      stream[(Int, Int)]("order_id", s"v$i").createOrReplaceTempView(view)
    }
    val frame = spark.sql("SELECT * FROM STREAM(orders) o " +
      "JOIN STREAM(payments) p ON o.order_id = p.order_id " +
      "JOIN STREAM(shipments) s ON s.order_id = o.order_id")
    val Some(explained) = section(withExplained(printed(frame.explain())))
    val id = CollapseStreamingJoinChains.FirstOperatorId
    assert(explained.linesIterator.exists(_.startsWith(s"  StreamingMultiJoin $id: o, p, s on ")),
      explained)
    ruleMessages(frame).foreach(message => assert(explained.contains(message), explained))
    val Seq(collapsed) = (report(frame) \ "verdicts").children
    val Seq(group) = (collapsed \ "args" \ "groups").children
    assert((group \ "inputs").children.map(i => (i \ "name").extract[String]) ==
      Seq("o", "p", "s"))
    assert((group \ "operatorIds").extract[Seq[Long]] == Seq(id))
  }

  test("a chain that does not fuse shows why, in the rule's words, in the modes Spark adds it") {
    val Seq(a, b, c) = named("a", "b", "c")
    val frame = a.join(b, col("k1") === col("k0")).join(c, col("v2") === col("v1"))
    val messages = ruleMessages(frame)
    assert(messages.exists(_.contains("no common key")), messages)
    Seq("simple", "extended", "formatted").foreach { mode =>
      val Some(explained) = section(withExplained(printed(frame.explain(mode))))
      messages.foreach(message => assert(explained.contains(message), s"$mode: $explained"))
    }
    Seq("cost", "codegen").foreach { mode =>
      assert(section(withExplained(printed(frame.explain(mode)))).isEmpty, mode)
    }
    assert(section(printed(frame.explain())).isEmpty, "without the provider set")
  }

  test("a multi-join keeps its verdict, and Spark's join above it is its chain's") {
    Seq("orders", "payments", "shipments", "reviews", "customers").zipWithIndex.foreach {
      case (view, i) => stream[(Int, Int)]("order_id", s"v$i").createOrReplaceTempView(view)
    }
    val frame = spark.sql("SELECT o.order_id, o.v0, p.v1, s.v2, r.v3, c.v4 FROM STREAM(orders) o " +
      "JOIN STREAM(payments) p ON p.order_id = o.order_id " +
      "JOIN STREAM(shipments) s ON s.order_id = p.order_id " +
      "JOIN STREAM(reviews) r ON r.order_id = o.order_id AND r.v3 >= 3 " +
      "JOIN STREAM(customers) c ON c.v4 = o.v0")
    val messages = ruleMessages(frame)
    assert(messages.exists(_.startsWith("Collapsed")), messages)
    val Some(explained) = section(withExplained(printed(frame.explain())))
    messages.foreach(message => assert(explained.contains(message), explained))
  }

  test("EXPLAIN shows Spark's joins above a multi-join in its chain's section, not as another") {
    val Seq(t1, t2, t3, t4) = named("t1", "t2", "t3", "t4")
    val dim = Seq((1, 1)).toDF("k9", "v9").alias("dim")
    // Three streams on k, a static table in the middle of them, a stream on v above.
    val frame = t1.join(t2, col("k1") === col("k0")).join(dim, col("k9") === col("k1"))
      .join(t3, col("k2") === col("k0")).join(t4, col("v3") === col("v0"))
    val Some(explained) = section(withExplained(printed(frame.explain())))
    assert(explained.linesIterator.count(_.startsWith("Streaming join chain")) == 1, explained)
    assert(!explained.contains("join of two inputs"), explained)
    assert(explained.contains("dim is static") && explained.contains("t4 does not share the key"),
      explained)
    val messages = ruleMessages(frame)
    assert(messages.length == 1 && messages.head.startsWith("Collapsed"), messages)
    messages.foreach(message => assert(explained.contains(message), explained))
  }

  test("FusionReport gives the rule's verdicts and EXPLAIN's very text") {
    val Seq(a, b, c, d) = named("a", "b", "c", "d")
    val static = Seq((1, 1)).toDF("k9", "v9")
    Seq(
      a.join(b, col("k1") === col("k0")).join(c, col("k2") === col("k0")),
      a.join(b, col("k1") === col("k0")).join(static, col("k9") === col("k0"))
        .join(c, col("k2") === col("k1")).join(d, col("v3") === col("v0")),
      a.join(b, col("k1") === col("k0")).join(c, col("v2") === col("v1"))).foreach { frame =>
      val json = report(frame)
      val messages = (json \ "verdicts").children.map(v => (v \ "message").extract[String])
      assert(messages == ruleMessages(frame).distinct)
      assert(section(withExplained(printed(frame.explain()))) ==
        Some((json \ "explain").extract[String].trim))
    }
  }

  test("a running query's explain() shows the section; the log says each verdict once a query") {
    val streams = (0 until 3).map(_ =>
      MemoryStream[(Int, Int, Timestamp)](implicitly[Encoder[(Int, Int, Timestamp)]], spark))
    def timed(i: Int) = streams(i).toDF().toDF(s"k$i", s"v$i", s"t$i")
      .withWatermark(s"t$i", "10 seconds").alias(s"n$i")
    // Bounded by no interval condition: the rule warns of every input. The micro-batches' plans
    // name them as the plan before the start does.
    val frame = timed(0).join(timed(1), col("k1") === col("k0")).join(timed(2),
      col("k2") === col("k0"))
    val warnings = ruleMessages(frame).filter(_.contains("is unbounded"))
    assert(warnings.length == 3 && warnings.forall(_.startsWith("Input n")), warnings)
    withExplained(printed(frame.explain()))
    val logged = LogCapture.of(CollapseStreamingJoinChains.getClass) {
      (1 to 2).foreach { _ =>
        withTempDir { checkpoint =>
          withExplained {
            val query = frame.writeStream.format("noop")
              .option("checkpointLocation", checkpoint.getPath).start()
            try {
              (1 to 3).foreach { second =>
                streams.foreach(_.addData((second, second, new Timestamp(second * 1000L))))
                query.processAllAvailable()
              }
              val Some(explained) = section(printed(query.explain()))
              warnings.foreach(warning => assert(explained.contains(warning), explained))
            } finally query.stop()
          }
        }
      }
    }
    val said = logged.filter(_.startsWith("WARN ")).map(_.stripPrefix("WARN "))
    assert(warnings.forall(warning => said.count(_ == warning) == 2), said)
  }

}
