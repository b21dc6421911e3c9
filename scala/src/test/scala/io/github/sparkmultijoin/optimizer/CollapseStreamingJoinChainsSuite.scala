package io.github.sparkmultijoin.optimizer

import java.sql.Timestamp

import io.github.sparkmultijoin.{LogCapture, MultiJoinSuiteBase}
import io.github.sparkmultijoin.analysis.ResolveMultiJoinHint
import io.github.sparkmultijoin.logical.{MultiJoin, MultiJoinHint}

import org.apache.spark.sql.{DataFrame, Encoder}
import org.apache.spark.sql.catalyst.plans.{Inner, LeftOuter}
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions.{col, expr}
import org.apache.spark.sql.multijoin.MultiJoinConf
import org.apache.spark.sql.types.BinaryType

/**
 * Which streaming joins the rule collapses, into what, and which it leaves as Spark planned them
 * and why. Plans only: nothing runs here, so every shape costs milliseconds. That the answers
 * are Spark's is the differential tests' job (tests/execution in Python, and
 * StreamingMultiJoinExecSuite).
 */
class CollapseStreamingJoinChainsSuite extends MultiJoinSuiteBase {
  import spark.implicits._

  private def stream[A: Encoder](columns: String*): DataFrame =
    MemoryStream[A](implicitly[Encoder[A]], spark).toDF().toDF(columns: _*)

  /** Input i: columns k<i>, v<i>. */
  private def keyed(n: Int): Seq[DataFrame] = {
    (0 until n).map(i => stream[(Int, Int)](s"k$i", s"v$i"))
  }

  /** Input i: columns k<i>, v<i> and the event time t<i> with a watermark. */
  private def timed(n: Int): Seq[DataFrame] = {
    (0 until n).map { i =>
      stream[(Int, Int, Timestamp)](s"k$i", s"v$i", s"t$i").withWatermark(s"t$i", "10 seconds")
    }
  }

  private def onKeys(j: Int, p: Int) = col(s"k$p") === col(s"k$j")

  private def within(j: Int, p: Int, seconds: Int) =
    expr(s"t$j BETWEEN t$p - INTERVAL $seconds SECONDS AND t$p + INTERVAL $seconds SECONDS")

  private def chain(frames: Seq[DataFrame]): DataFrame =
    frames.indices.tail.foldLeft(frames.head)((joined, j) => joined.join(frames(j), onKeys(j, 0)))

  /**
   * The optimized plan of `frame` with the multi-join on or off (optimized anew each time). A
   * batch QueryExecution refuses streaming plans unless that check is off, as `explain()`'s is.
   */
  private def optimized(frame: DataFrame, enabled: Boolean): LogicalPlan =
    withConf("spark.sql.streaming.unsupportedOperationCheck" -> "false") {
      withMultiJoin(enabled) {
        spark.sessionState.executePlan(frame.queryExecution.logical).optimizedPlan
      }
    }

  private def multiJoins(frame: DataFrame): Seq[MultiJoin] =
    optimized(frame, enabled = true).collect { case multiJoin: MultiJoin => multiJoin }

  /** What the rule says of `frame`'s plan as the rule sees it, with the multi-join enabled. */
  private def notes(frame: DataFrame): Seq[String] = {
    val before = optimized(frame, enabled = false)
    withMultiJoin(enabled = true)(CollapseStreamingJoinChains.rewrite(before)._2.map(_.message))
  }

  /** `frame` keeps Spark's plan exactly, and the rule says why, in words containing `reason`. */
  private def assertKeptAsPlanned(frame: DataFrame, reason: String): Unit = {
    assert(optimized(frame, enabled = true) == optimized(frame, enabled = false))
    val said = notes(frame)
    assert(said.exists(_.contains(reason)), said.mkString("\n"))
  }

  test("a chain of inner joins on one key collapses into one multi-join of all its inputs") {
    val Seq(only) = multiJoins(chain(keyed(4)))
    assert(only.children.length == 4 && only.keys.forall(_.length == 1))
    assert(only.tree.outerInputs.isEmpty && only.condition.isEmpty)
  }

  test("keys equal only transitively, composite keys, and bushy trees collapse") {
    val Seq(a, b, c, d) = keyed(4)
    val transitive = a.join(b, onKeys(1, 0)).join(c, onKeys(2, 1)).join(d, onKeys(3, 2))
    assert(multiJoins(transitive).map(_.children.length) == Seq(4))

    val composite = a.join(b, onKeys(1, 0) && col("v0") === col("v1"))
      .join(c, onKeys(2, 1) && col("v1") === col("v2"))
    assert(multiJoins(composite).map(_.keys.head.length) == Seq(2))

    val bushy = a.join(b, onKeys(1, 0)).join(c.join(d, onKeys(3, 2)), onKeys(2, 0))
    assert(multiJoins(bushy).map(_.children.length) == Seq(4))
  }

  test("other conditions stay with the multi-join, and the output is the chain's") {
    val Seq(a, b, c) = keyed(3)
    val frame = a.join(b, onKeys(1, 0) && col("v1") > col("v0"))
      .withColumn("s", col("v0") + col("v1"))
      .join(c, onKeys(2, 1) && col("v2") < col("s"))
    val Seq(only) = multiJoins(frame)
    assert(only.condition.isDefined)
    def described(plan: LogicalPlan) = plan.output.map(a => (a.exprId, a.name, a.dataType))
    assert(described(optimized(frame, enabled = true)) ==
      described(optimized(frame, enabled = false)))
  }

  test("max-tables splits a chain into multi-joins of three to that many inputs") {
    val frame = chain(keyed(5))
    // With 4, the input left over is joined by Spark's join, not by a multi-join of two.
    for ((maxTables, sizes, joins) <- Seq((3, Seq(3, 3), 0), (4, Seq(4), 1), (5, Seq(5), 0))) {
      withConf(MultiJoinConf.MAX_TABLES.key -> maxTables.toString) {
        val plan = optimized(frame, enabled = true)
        assert(plan.collect { case multiJoin: MultiJoin => multiJoin.children.length } == sizes,
          s"max $maxTables")
        assert(plan.collect { case join: Join => join.joinType } == Seq.fill(joins)(Inner))
      }
    }
    assert(intercept[IllegalArgumentException] {
      withConf(MultiJoinConf.MAX_TABLES.key -> "2")(())
    }.getMessage.contains("at least 3"))
  }

  test("LEFT and RIGHT OUTER joins bounded in event time collapse, outer inputs marked") {
    val Seq(a, b, c) = timed(3)
    val left = a.join(b, onKeys(1, 0) && within(1, 0, 10), "left_outer")
      .join(c, onKeys(2, 0) && within(2, 0, 20), "left_outer")
    assert(multiJoins(left).map(_.tree.outerInputs) == Seq(Seq(1, 2)))
    val right = b.join(a, onKeys(1, 0) && within(1, 0, 10), "right_outer")
      .join(c, onKeys(2, 0) && within(2, 0, 20))
    assert(multiJoins(right).map(_.tree.outerInputs) == Seq(Seq(0)))
  }

  test("batch queries are never rewritten") {
    val tables = (0 until 3).map(i => Seq((1, i)).toDF(s"k$i", s"v$i"))
    assert(multiJoins(chain(tables)).isEmpty)
  }

  test("nothing changes while the multi-join is disabled, and the rule says so") {
    val frame = chain(keyed(3))
    val disabled = optimized(frame, enabled = false)
    val said = CollapseStreamingJoinChains.rewrite(disabled)._2.map(_.message)
    assert(said.exists(_.contains(s"${MultiJoinConf.ENABLED.key} is false")), said)
  }

  test("two inputs, or no key shared by three streaming inputs, keep Spark's plan") {
    val Seq(a, b, c) = keyed(3)
    assertKeptAsPlanned(a.join(b, onKeys(1, 0)), "two inputs")
    assertKeptAsPlanned(a.join(b, onKeys(1, 0)).join(c, col("v2") === col("v1")),
      "no common key")
    val static = Seq((1, 1)).toDF("k9", "v9")
    assertKeptAsPlanned(a.join(static, col("k9") === col("k0")).join(b, onKeys(1, 0)),
      "two inputs")
  }

  test("the verdicts are values: what fused into which multi-join on which key, and why not") {
    import FusionVerdict._
    def verdicts(frame: DataFrame) = withMultiJoin(enabled = true) {
      CollapseStreamingJoinChains.rewrite(optimized(frame, enabled = false))._2
    }
    val Seq(a, b, c, d) = keyed(4)
    val Seq(Collapsed(Seq(group), Nil, false)) = verdicts(chain(Seq(a, b, c, d)))
    assert(group.inputs == (0 until 4).map(i => Input(None, Seq(s"k$i", s"v$i"))))
    assert(group.key.map(_.length) == Seq(4), group.key)
    assert(group.operatorIds == Seq(CollapseStreamingJoinChains.FirstOperatorId))
    // The chain stays for want of a key, and then its join of two inputs for want of a third.
    val noKey = verdicts(a.join(b, onKeys(1, 0)).join(c, col("v2") === col("v1")))
    val Seq(NoSharedKey(inputs, conditions), TooFewStreamingInputs(pair)) = noKey
    assert(inputs.length == 3 && pair.length == 2 && conditions.nonEmpty, noKey)
    assert(noKey.forall(verdict => verdict.message == FusionVerdict.render(verdict)))
  }

  test("static inputs and inputs on another key, anywhere in an inner chain, join above it") {
    val Seq(a, b, c, d) = keyed(4)
    val static = Seq((1, 1)).toDF("k9", "v9")
    // The static input in the middle, d (on v) first: a, b and c still fuse.
    val frame = d.join(a, col("v3") === col("v0")).join(b, onKeys(1, 0))
      .join(static, col("k9") === col("k1")).join(c, onKeys(2, 0))
    val plan = optimized(frame, enabled = true)
    val Seq(only) = plan.collect { case multiJoin: MultiJoin => multiJoin }
    assert(only.children.map(_.output.head.name) == Seq("k0", "k1", "k2"))
    // The static input is joined first, then d: two of Spark's joins above the multi-join.
    val joins = plan.collect { case join: Join => join }
    assert(joins.map(_.joinType) == Seq(Inner, Inner))
    assert(joins.head.right.output.map(_.name) == Seq("k3", "v3") &&
      joins.last.right.output.map(_.name) == Seq("k9", "v9"))
    def described(plan: LogicalPlan) = plan.output.map(a => (a.exprId, a.name, a.dataType))
    assert(described(plan) == described(optimized(frame, enabled = false)))
    assert(notes(frame).exists(note =>
        note.contains("[k3, v3] does not share the key") &&
          note.contains("[k9, v9] is static")), notes(frame))
  }

  test("Spark's joins the rule puts above its multi-joins are the chain's, and not judged again") {
    import FusionVerdict._
    def verdicts(frame: DataFrame) = withMultiJoin(enabled = true) {
      CollapseStreamingJoinChains.rewrite(optimized(frame, enabled = false))._2
    }
    val Seq(a, b, c, d, e, f) = keyed(6)
    val static = Seq((1, 1)).toDF("k9", "v9")
    // A static input in the middle of a, b and c, and d on another column above them: one
    // verdict, COLLAPSED, which names both as joined by Spark; no chain of the multi-join and d.
    val offKey = a.join(b, onKeys(1, 0)).join(static, col("k9") === col("k1"))
      .join(c, onKeys(2, 0)).join(d, col("v3") === col("v0"))
    val Seq(Collapsed(Seq(group), Seq(StaticInput(dim), OffTheKey(other)), false)) =
      verdicts(offKey)
    assert(group.inputs.map(_.columns.head) == Seq("k0", "k1", "k2"))
    assert(dim.columns == Seq("k9", "v9") && other.columns == Seq("k3", "v3"))
    // Two groups (a, b, c on k and d, e, f on v, linked on k3) joined by Spark's join, and the
    // input max-tables leaves over: one verdict each too.
    def onValues(j: Int, p: Int) = col(s"v$p") === col(s"v$j")
    val twoGroups = chain(Seq(a, b, c)).join(d, col("k3") === col("v0"))
      .join(e, onValues(4, 3)).join(f, onValues(5, 3))
    val Seq(Collapsed(Seq(_, _), Nil, false)) = verdicts(twoGroups)
    withConf(MultiJoinConf.MAX_TABLES.key -> "4") {
      val Seq(Collapsed(Seq(five), Nil, false)) = verdicts(chain(Seq(a, b, c, d, e)))
      assert(five.operatorIds.length == 1 && five.inputs.length == 5, five)
    }
  }

  test("each group of three or more streaming inputs on a key fuses into a multi-join of its own") {
    // Input i: columns k<i>, v<i>, w<i>. a, b, c on k and d, e, f on v, interleaved, a static
    // input between them, and a and d linked on w.
    val Seq(a, b, c, d, e, f) = (0 until 6).map(i =>
      stream[(Int, Int, Int)](s"k$i", s"v$i", s"w$i"))
    val static = Seq((1, 1)).toDF("k9", "v9")
    def onValues(j: Int, p: Int) = col(s"v$p") === col(s"v$j")
    val frame = d.join(a, col("w3") === col("w0")).join(e, onValues(4, 3)).join(b, onKeys(1, 0))
      .join(static, col("k9") === col("k1")).join(f, onValues(5, 4)).join(c, onKeys(2, 0))
    val plan = optimized(frame, enabled = true)
    val groups = plan.collect { case multiJoin: MultiJoin => multiJoin }
    assert(groups.map(_.children.map(_.output.head.name)).toSet ==
      Set(Seq("k0", "k1", "k2"), Seq("k3", "k4", "k5")))
    assert(groups.map(_.operatorId).distinct.length == 2)
    // Spark's joins above the first multi-join: the other one (linked to it on w), then the
    // static input (linked to the other one's k1).
    val joins = plan.collect { case join: Join => join }
    assert(joins.length == 2 && joins.forall(_.joinType == Inner), plan)
    assert(joins.last.right.isInstanceOf[MultiJoin] &&
        joins.head.right.output.map(_.name) == Seq("k9", "v9"), plan)
    def described(plan: LogicalPlan) = plan.output.map(a => (a.exprId, a.name, a.dataType))
    assert(described(plan) == described(optimized(frame, enabled = false)))
    assert(notes(frame).exists(_.contains("into 2 multi-join(s)")), notes(frame))
  }

  test("a stream joined above a multi-join by Spark's join sees one event time, or no fusion") {
    val Seq(a, b, c, d) = timed(4)
    val onValue = col("v3") === col("v0")
    // d, on another column, sits between b and c: the chain of a, b and c fuses, and d is
    // joined above it by Spark's stream-stream join, which takes one event-time column a side.
    def frame(keepTimes: Boolean) = {
      def dropped(frame: DataFrame, column: String) =
        if (keepTimes) frame else frame.drop(column)
      val ab = dropped(a.join(b, onKeys(1, 0) && within(1, 0, 5)), "t1")
      val abd = dropped(ab.join(d, onValue && within(3, 0, 5)), "t3")
      dropped(abd.join(c, onKeys(2, 0) && within(2, 0, 5)), "t2")
    }
    assert(multiJoins(frame(keepTimes = false)).map(_.children.length) == Seq(3),
      notes(frame(keepTimes = false)))
    assertKeptAsPlanned(frame(keepTimes = true), "would see the event-time columns t0, t1, t2")
  }

  test("an outer join a multi-join cannot run stays binary, and the chain below collapses") {
    val Seq(a, b, c, d) = keyed(4)
    val frame = chain(Seq(a, b, c)).join(d, onKeys(3, 0), "left_outer")
    val plan = optimized(frame, enabled = true)
    assert(plan.collect { case multiJoin: MultiJoin => multiJoin.children.length } == Seq(3))
    assert(plan.collect { case join: Join => join.joinType } == Seq(LeftOuter))
  }

  test("a collated string key is joined by its collation key, which compares by its bytes") {
    // Spark rewrites a join on a UTF8_LCASE string into a join on its binary collation key
    // before this rule runs; StreamingMultiJoinExecSuite checks the answer.
    val lowerCase = keyed(3).zipWithIndex.map { case (frame, i) =>
      frame.select(expr(s"collate(cast(k$i AS STRING), 'UTF8_LCASE')").as(s"s$i"), col(s"v$i"))
    }
    val frame = lowerCase(0).join(lowerCase(1), col("s0") === col("s1"))
      .join(lowerCase(2), col("s1") === col("s2"))
    val Seq(only) = multiJoins(frame)
    assert(only.keys.flatten.map(_.dataType).distinct == Seq(BinaryType), only.keys)
  }

  test("Spark's in-memory store takes every chain, with a state TTL too; other stores none") {
    val provider = "spark.sql.streaming.stateStore.providerClass"
    withConf(provider ->
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider") {
      assert(multiJoins(chain(keyed(3))).map(_.children.length) == Seq(3))
      val Seq(a, b, c) = timed(3)
      val bounded = a.join(b, onKeys(1, 0) && within(1, 0, 10), "left_outer")
        .join(c, onKeys(2, 0) && within(2, 0, 10))
      assert(multiJoins(bounded).map(_.tree.outerInputs) == Seq(Seq(1)))
      withConf(MultiJoinConf.STATE_TTL.key -> "1h") {
        assert(multiJoins(chain(keyed(3))).map(_.children.length) == Seq(3))
      }
    }
    withConf(provider -> "com.example.MyStateStoreProvider") {
      assertKeptAsPlanned(chain(keyed(3)), s"$provider is 'com.example.MyStateStoreProvider'")
    }
  }

  test("nested outer joins collapse into a tree: each outer input off the input it reads last") {
    val Seq(a, b, c, d) = timed(4)
    // Orders, shipments (LEFT OUTER on the order), scans (LEFT OUTER on the shipment).
    val nested = a.join(b, onKeys(1, 0) && within(1, 0, 10), "left_outer")
      .join(c, onKeys(2, 1) && within(2, 1, 10), "left_outer")
    assert(multiJoins(nested).map(_.tree.parents) == Seq(Seq(None, Some(0), Some(1))))
    // The regression shape: c equates its key to b's and bounds its time by a's; it reads b, so
    // it hangs off b, and where b is padded it matches nothing.
    val onPaddedKey = a.join(b, onKeys(1, 0) && within(1, 0, 10), "left_outer")
      .join(c, onKeys(2, 1) && expr("t2 BETWEEN t0 AND t0 + INTERVAL 20 SECONDS"), "left_outer")
    assert(multiJoins(onPaddedKey).map(_.tree.parents) == Seq(Seq(None, Some(0), Some(1))))
    // RIGHT OUTER is LEFT OUTER swapped: d (padded) is first in the output, joined last.
    val right = d.join(a.join(b, onKeys(1, 0) && within(1, 0, 10)),
      onKeys(3, 1) &&
        within(3, 1, 10), "right_outer")
    val Seq(swapped) = multiJoins(right)
    assert(swapped.tree.outerOrder == Seq(0) && swapped.tree.parents.head.isDefined)
  }

  test("outer chains a multi-join cannot run keep Spark's plan, and say why") {
    val Seq(a, b, c) = timed(3)
    val unbounded = a.join(b, onKeys(1, 0), "left_outer")
      .join(c, onKeys(2, 0) && within(2, 0, 10), "left_outer")
    assertKeptAsPlanned(unbounded,
      "bounding every input's event time (a state TTL cannot " +
        "stand in for them")
    // A TTL on the unbounded input changes nothing: null-padded rows would depend on its rows.
    withConf(MultiJoinConf.STATE_TTL.key -> "1h") {
      assertKeptAsPlanned(unbounded.hint("STATE_TTL", "b", "1h"), "bounding every input's")
    }

    // b's key is equated to the others' only by c's ON clause: b itself matches any key.
    val keyOnlyLater = a.join(b, within(1, 0, 10), "left_outer")
      .join(c, onKeys(2, 0) && onKeys(2, 1) && within(2, 0, 10), "left_outer")
    assertKeptAsPlanned(keyOnlyLater, "does not equate its key")

    // The inner input c shares the key with a only through b's ON clause.
    val innerKeyThroughOuter = a.join(c, within(2, 0, 10))
      .join(b, onKeys(1, 0) && onKeys(1, 2) && within(1, 0, 10), "left_outer")
    assertKeptAsPlanned(innerKeyThroughOuter, "among the inner inputs themselves")

    // A condition after an outer join that accepts its padded rows.
    val readsPadded = a.join(b, onKeys(1, 0) && within(1, 0, 10), "left_outer")
      .join(c, onKeys(2, 0) && within(2, 0, 10) && expr("v1 IS NULL OR v2 >= v1"))
    assertKeptAsPlanned(readsPadded, "uses the null-padded side of an outer join")
  }

  test("an outer join whose padded rows an inner join above rejects is inner, and collapses") {
    val Seq(a, b, c, d, e) = timed(5)
    // d's inner join makes c's LEFT OUTER join inner (Spark's optimizer does that), whose
    // condition k2 = k1 then rejects b's padded rows: Spark infers no filter for it any more, and
    // leaves b's join LEFT OUTER under an inner condition that reads b.
    val cascade = a.join(b, onKeys(1, 0) && within(1, 0, 10), "left_outer")
      .join(c, onKeys(2, 1) && within(2, 1, 10), "left_outer")
      .join(d, onKeys(3, 2) && within(3, 2, 10))
    val asPlanned = optimized(cascade, enabled = false)
    assert(asPlanned.collect { case join: Join => join.joinType.toString }.sorted ==
        Seq("Inner", "Inner", "LeftOuter"), "the shape this case is about")
    val Seq(allInner) = multiJoins(cascade)
    assert(allInner.tree.outerOrder.isEmpty && allInner.children.length == 4)
    // The same columns; b's are no longer nullable, as where Spark makes an outer join inner.
    val fused = optimized(cascade, enabled = true)
    assert(fused.output.map(c => (c.exprId, c.dataType)) ==
      asPlanned.output.map(c => (c.exprId, c.dataType)))
    // Only the outer join whose padded side is rejected: d stays LEFT OUTER off a.
    val partly = a.join(b, onKeys(1, 0) && within(1, 0, 10), "left_outer")
      .join(c, onKeys(2, 1) && within(2, 1, 10), "left_outer")
      .join(d, onKeys(3, 0) && within(3, 0, 10), "left_outer")
      .join(e, onKeys(4, 2) && within(4, 2, 10))
    val Seq(oneOuter) = multiJoins(partly)
    assert(oneOuter.tree.outerOrder == Seq(3) && oneOuter.children.length == 5)
    // The log says which joins run as inner, and only those.
    val madeInner = notes(partly).filter(_.contains("runs as an INNER join"))
    assert(madeInner.length == 1 && madeInner.head.contains("LEFT OUTER join that pads [k1,"),
      notes(partly))
    // A condition that holds on b's nulls rejects none of its padded rows: Spark's plan stays.
    assertKeptAsPlanned(
      a.join(b, onKeys(1, 0) && within(1, 0, 10), "left_outer")
        .join(c, onKeys(2, 0) && within(2, 0, 10), "left_outer")
        .join(d, onKeys(3, 2) && within(3, 2, 10) && expr("k1 <=> k3 OR v1 IS NULL")),
      "uses the null-padded side of an outer join")
  }

  test("FULL OUTER joins above the rest of a chain collapse; every input is then nullable") {
    val Seq(a, b, c, d) = timed(4)
    val innerThenFull = a.join(b, onKeys(1, 0) && within(1, 0, 10))
      .join(c, onKeys(2, 1) && within(2, 1, 10), "full_outer")
    val Seq(first) = multiJoins(innerThenFull)
    assert(first.tree.fullOuter == Set(2) && first.tree.parents == Seq(None, None, Some(1)))
    assert(first.output.forall(_.nullable))
    // A LEFT OUTER join below, two FULL OUTER joins above, the second on the first's key.
    val nested = a.join(b, onKeys(1, 0) && within(1, 0, 10), "left_outer")
      .join(c, onKeys(2, 0) && within(2, 0, 10), "full_outer")
      .join(d, onKeys(3, 2) && within(3, 2, 10), "full_outer")
    val Seq(second) = multiJoins(nested)
    assert(second.tree.outerOrder == Seq(1, 2, 3) && second.tree.fullOuter == Set(2, 3))
    assert(second.tree.decidingInputs == Seq(0, 2, 3))
  }

  test("FULL OUTER chains a multi-join cannot run keep Spark's plan, and say why") {
    val Seq(a, b, c) = timed(3)
    val fullOuter = a.join(b, onKeys(1, 0) && within(1, 0, 10), "full_outer")
    // A LEFT OUTER join above a FULL OUTER join.
    assertKeptAsPlanned(fullOuter.join(c, onKeys(2, 1) && within(2, 1, 10), "left_outer"),
      "only FULL OUTER joins may follow one")
    // A filter that keeps padded rows (so Spark's optimizer leaves the join FULL OUTER).
    assertKeptAsPlanned(fullOuter.where("v0 IS NULL OR v0 > 1")
        .join(c, onKeys(2, 1) && within(2, 1, 10), "full_outer"),
      "only FULL OUTER joins may follow one")
    // An ON clause that can hold on a padded input's nulls.
    assertKeptAsPlanned(fullOuter.join(c,
      onKeys(2, 1) && within(2, 1, 10) &&
        expr("v0 IS NULL OR v2 > v0"), "full_outer"), "can hold where a column it reads is null")
  }

  test("the MULTI_JOIN hint fuses the chain of the inputs it names while the conf is off") {
    val Seq(a, b, c, d) = keyed(4).zip(Seq("a", "b", "c", "d")).map { case (f, n) => f.alias(n) }
    val chain = a.join(b, onKeys(1, 0)).join(c, onKeys(2, 0)).join(d, onKeys(3, 0))
    def fused(frame: DataFrame) = optimized(frame, enabled = false).collect {
      case multiJoin: MultiJoin => multiJoin.children.map(_.output.head.name)
    }
    assert(fused(chain).isEmpty)
    // From the DataFrame API: the named inputs fuse, d joins above them.
    assert(fused(chain.hint("MULTI_JOIN", "a", "b", "c")) == Seq(Seq("k0", "k1", "k2")))
    // From SQL text, with the inputs as views.
    Seq("a" -> a, "b" -> b, "c" -> c).foreach { case (name, frame) =>
      frame.createOrReplaceTempView(name)
    }
    val sql = spark.sql("SELECT /*+ MULTI_JOIN(a, b, c) */ * FROM a JOIN b ON a.k0 = b.k1 " +
      "JOIN c ON c.k2 = a.k0")
    assert(fused(sql) == Seq(Seq("k0", "k1", "k2")))
    // Two named inputs (and a name that matches none, which is warned of) fuse nothing, and no
    // plan keeps the hint's node, batch plans included.
    assert(fused(chain.hint("MULTI_JOIN", "a", "b", "nowhere")).isEmpty)
    val batch = (0 until 3).map(i => Seq((1, i)).toDF(s"k$i", s"v$i"))
    val batchChain = batch(0).join(batch(1), onKeys(1, 0)).join(batch(2), onKeys(2, 0))
    Seq(chain.hint("MULTI_JOIN", "a", "b"), batchChain.hint("MULTI_JOIN", "x")).foreach {
      frame =>
        assert(optimized(frame, enabled = false).collect { case h: MultiJoinHint => h }.isEmpty)
    }
    assert(batchChain.hint("MULTI_JOIN", "x").collect().length == 1)
  }

  test("a state TTL never takes fusion away from an outer chain, and applies to none of it") {
    val Seq(a, b, c) = timed(3)
    // A LEFT OUTER star whose second join sees two event times: Spark's chain fails on it.
    val star = a.join(b, onKeys(1, 0) && within(1, 0, 10), "left_outer")
      .join(c, onKeys(2, 0) && within(2, 0, 10), "left_outer")
    // c's event time is bounded by nothing: without a TTL, every input is warned of.
    val inner = a.join(b, onKeys(1, 0) && within(1, 0, 10)).join(c, onKeys(2, 0))
    assert(notes(inner).count(_.contains("is unbounded")) == 3, notes(inner))
    withConf(MultiJoinConf.STATE_TTL.key -> "1 day") {
      assert(multiJoins(star).map(_.stateTtlsMs) == Seq(Seq(None, None, None)))
      assert(multiJoins(inner).map(_.stateTtlsMs) == Seq(Seq.fill(3)(Some(86400000L))),
        "with inner joins only, every input takes it, bounded by time or not")
      assert(!notes(inner).exists(_.contains("is unbounded")), "the TTL bounds them")
    }
  }

  test("the STATE_TTL hint gives the inputs it names their TTL; the others take the session's") {
    val Seq(a, b, c) = keyed(3).zip(Seq("a", "b", "c")).map { case (f, n) => f.alias(n) }
    val frame = chain(Seq(a, b, c))
    def ttls(frame: DataFrame) = multiJoins(frame).map(_.stateTtlsMs)
    val (day, halfDay, halfHour) = (Some(86400000L), Some(43200000L), Some(1800000L))
    assert(ttls(frame) == Seq(Seq(None, None, None)))
    assert(ttls(frame.hint("STATE_TTL", "a", "1 day")) == Seq(Seq(day, None, None)))
    withConf(MultiJoinConf.STATE_TTL.key -> "30m") {
      assert(ttls(frame.hint("STATE_TTL", "b", "1d")) == Seq(Seq(halfHour, day, halfHour)))
    }
    // From SQL: several hints, or several pairs in one; the shortest where two name an input.
    Seq("a" -> a, "b" -> b, "c" -> c).foreach { case (name, f) => f.createOrReplaceTempView(name) }
    val joins = "* FROM a JOIN b ON a.k0 = b.k1 JOIN c ON c.k2 = a.k0"
    assert(ttls(spark.sql(s"SELECT /*+ STATE_TTL(a, '1 day'), STATE_TTL(c, '12 hours') */ " +
      joins)) == Seq(Seq(day, None, halfDay)))
    assert(ttls(spark.sql(s"SELECT /*+ STATE_TTL(a, '1d', c, '30 minutes', a, '12h') */ " +
      joins)) == Seq(Seq(halfDay, None, halfHour)))
    // The hint alone fuses nothing while the conf is off.
    assert(optimized(frame.hint("STATE_TTL", "a", "1d"), enabled = false)
      .collect { case multiJoin: MultiJoin => multiJoin }.isEmpty)
    val badDuration = intercept[IllegalArgumentException](frame.hint("STATE_TTL", "a", "soon"))
    assert(badDuration.getMessage == "Hint STATE_TTL(a, soon): 'soon' is not a positive " +
      "duration such as '1 day', '90 minutes' or '10 seconds' (as withWatermark takes them), " +
      "or '1d', '30m', '10s'. Write STATE_TTL(input, 'duration'), for example STATE_TTL(o, " +
      "'1 day'), or several pairs: STATE_TTL(o, '1 day', p, '12 hours').")
    assert(intercept[IllegalArgumentException](frame.hint("STATE_TTL", "a")).getMessage
      .contains("it takes pairs of an input's name and a duration."))
  }

  test("a STATE_TTL hint on an input of an outer chain is warned of, and the chain fuses") {
    val Seq(a, b, c) = timed(3).zip(Seq("a", "b", "c")).map { case (f, n) => f.alias(n) }
    val star = a.join(b, onKeys(1, 0) && within(1, 0, 10), "left_outer")
      .join(c, onKeys(2, 0) && within(2, 0, 10), "left_outer").hint("STATE_TTL", "b", "1h")
    // The rule logs each verdict once, this one first here: the hint names no other input. The
    // input is named by its alias.
    val warned = LogCapture.of(CollapseStreamingJoinChains.getClass) {
      assert(multiJoins(star).map(_.stateTtlsMs) == Seq(Seq(None, None, None)))
    }.filter(_.startsWith("WARN ")).map(_.stripPrefix("WARN "))
    assert(
      warned == Seq("The STATE_TTL hint on b does not apply: it is an input of " +
        "a multi-join with outer joins, which keeps each input's rows exactly as long as its " +
        "time bounds say. Null-padded rows are decided by the rows of every input; a row a TTL " +
        "dropped sooner could have a row come out both matched and null-padded, and an emitted " +
        "row cannot be retracted."), warned)
  }

  test("a STATE_TTL hint naming no input of the query is a WARNING naming it") {
    val Seq(a, b, c) = keyed(3).zip(Seq("a", "b", "c")).map { case (f, n) => f.alias(n) }
    val logged = LogCapture.of(ResolveMultiJoinHint.getClass) {
      assert(multiJoins(chain(Seq(a, b, c)).hint("STATE_TTL", "a", "1h", "nowhere", "2h"))
        .map(_.stateTtlsMs) == Seq(Seq(Some(3600000L), None, None)))
    }
    assert(
      logged.exists(line =>
        line.startsWith("WARN Hint STATE_TTL(nowhere): no input of " +
          "the query is named nowhere, so the hint does not apply to it.")), logged)
    assert(!logged.exists(_.contains("STATE_TTL(a)")), logged)
  }

  test("EXPLAIN shows each input's state TTL") {
    val Seq(a, b, c) = keyed(3).zip(Seq("a", "b", "c")).map { case (f, n) => f.alias(n) }
    val frame = chain(Seq(a, b, c)).hint("STATE_TTL", "a", "90 minutes")
    val explained = new java.io.ByteArrayOutputStream
    withMultiJoin(enabled = true)(Console.withOut(explained)(frame.explain()))
    val line = explained.toString.linesIterator.find(_.contains("StreamingMultiJoin")).get
    assert(line.matches(".*input0 key=\\[[^\\]]*\\] ttl=90m, input1 key=.*"), line)
    assert(line.split(" ttl=").length == 2, s"one input has a TTL: $line")
  }

  test("errors name a multi-join by its inputs, as EXPLAIN's verdicts name them") {
    val Seq(a, b, c) = keyed(3).zip(Seq("a", "b", "c")).map { case (f, n) => f.alias(n) }
    val Seq(named) = multiJoins(chain(Seq(a, b, c)))
    assert(named.description == "The multi-join of a, b, c (stateful operator " +
      s"${CollapseStreamingJoinChains.FirstOperatorId})")
    // Unnamed inputs go by their columns, as the verdicts show them.
    val Seq(unnamed) = multiJoins(chain(keyed(3)))
    assert(unnamed.description.startsWith("The multi-join of [k0, v0], [k1, v1], [k2, v2] ("),
      unnamed.description)
  }
}
