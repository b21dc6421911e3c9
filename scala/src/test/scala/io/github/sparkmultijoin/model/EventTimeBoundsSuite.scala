package io.github.sparkmultijoin.model

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.expressions.{And, AttributeReference, Expression, GreaterThanOrEqual, LessThanOrEqual, Literal, TimestampAddInterval}
import org.apache.spark.sql.catalyst.plans.logical.EventTimeWatermark
import org.apache.spark.sql.types.{DayTimeIntervalType, IntegerType, MetadataBuilder, TimestampType}

class EventTimeBoundsSuite extends AnyFunSuite {

  private val watermarked = new MetadataBuilder().putLong(EventTimeWatermark.delayKey, 0L).build()

  // Input i: a key and an event time t<i> with a watermark.
  private def inputs(n: Int) = (0 until n).map { i =>
    Seq(AttributeReference(s"k$i", IntegerType)(),
      AttributeReference(s"t$i", TimestampType, metadata = watermarked)())
  }

  private def seconds(value: Long): Expression =
    Literal(value * 1000000L, DayTimeIntervalType())

  /** t_later BETWEEN t_earlier - low AND t_earlier + high (seconds). */
  private def between(later: AttributeReference, earlier: AttributeReference, low: Long,
      high: Long): Expression =
    And(GreaterThanOrEqual(later, TimestampAddInterval(earlier, seconds(-low))),
      LessThanOrEqual(later, TimestampAddInterval(earlier, seconds(high))))

  private def time(all: Seq[Seq[AttributeReference]], i: Int) = all(i)(1)

  private def inner(condition: Expression) = Conjunct.split(Some(condition), None)

  test("bounds compose through other inputs") {
    // b within [a - 30 s, a + 60 s], c within [b - 20 s, b + 40 s]. By hand:
    // a needs future b (b <= a + 60) and future c (c <= b + 40 <= a + 100): kept while
    // a > W - 100 s. b: a >= b - 30 and c <= b + 40: b > W - 40 s. c: b >= c - 40 and
    // a >= b - 30 >= c - 50: c > W - 50 s. Spark's own bound for a single condition is
    // exact to the millisecond; composing adds at most 1 ms per step.
    val all = inputs(3)
    val condition = And(between(time(all, 1), time(all, 0), 30, 60),
      between(time(all, 2), time(all, 1), 20, 40))
    val offsets = EventTimeBounds.evictionOffsets(all, inner(condition), JoinTree.inner(3))
    val expected = Seq(-100000L, -40000L, -50000L)
    offsets.zip(expected).foreach { case (offset, bound) =>
      assert(offset.isDefined && offset.get <= bound && offset.get >= bound - 3, offsets)
    }
  }

  test("an input bounded against only some inputs is unbounded") {
    val all = inputs(3)
    val onlyAAndB = between(time(all, 1), time(all, 0), 10, 10)
    val offsets = EventTimeBounds.evictionOffsets(all, inner(onlyAAndB), JoinTree.inner(3))
    assert(offsets.forall(_.isEmpty), offsets)
  }

  test("the deciding input's rows keep the rows they can join") {
    // b within [a - 10 s, a + 10 s], c within [a - 10 s, a + 50 s]. By hand, lower bounds:
    // a >= b - 10, a >= c - 50, b >= a - 10, c >= a - 10, and through a: b >= c - 60,
    // c >= b - 20. Own offsets: a -50 s, b -60 s, c -20 s. With a deciding (a rows kept while
    // a > W - 50), c is also kept while an a row it joins is: c >= a - 10 > W - 60.
    val all = inputs(3)
    val condition = And(between(time(all, 1), time(all, 0), 10, 10),
      between(time(all, 2), time(all, 0), 10, 50))
    val own = EventTimeBounds.evictionOffsets(all, inner(condition), JoinTree.inner(3))
    // b and c outer, hanging off a: a decides.
    val outer = JoinTree(Seq(None, Some(0), Some(0)), Seq(1, 2))
    val conjuncts = Conjunct.split(Some(between(time(all, 1), time(all, 0), 10, 10)), Some(1)) ++
      Conjunct.split(Some(between(time(all, 2), time(all, 0), 10, 50)), Some(2))
    val deciding = EventTimeBounds.evictionOffsets(all, conjuncts, outer)
    def near(offset: Option[Long], bound: Long) = offset.exists(o => o <= bound && o >= bound - 3)
    assert(near(own(0), -50000L) && near(own(1), -60000L) && near(own(2), -20000L), own)
    assert(near(deciding(0), -50000L) && near(deciding(1), -60000L) &&
        near(deciding(2), -60000L), deciding)
  }

  test("a bound from an outer input's ON clause holds only in rows that input is present in") {
    // a inner; c LEFT OUTER on a (c within 100 s of a); then b LEFT OUTER on a and c (b within
    // 10 s of a and 1 s of c). An output row may have c without b, so c's bound against a is
    // its own 100 s, not the 11 s through b. By hand: c needs future a (a <= c + 100) and
    // future b (b <= c + 1): own offset -100 s; a needs future c (-100 s) and b (-10 s): -100 s.
    // With a deciding, c is kept while an a row it joins is kept: -100 s - 100 s = -200 s.
    // Through b the same would have been -22 s, and rows with c and no b would be lost.
    val all = inputs(3)
    val tree = JoinTree(Seq(None, Some(2), Some(0)), Seq(2, 1))
    val cOnA = Conjunct.split(Some(between(time(all, 2), time(all, 0), 100, 100)), Some(2))
    val bOnAAndC = Conjunct.split(Some(And(between(time(all, 1), time(all, 0), 10, 10),
        between(time(all, 1), time(all, 2), 1, 1))), Some(1))
    val offsets = EventTimeBounds.evictionOffsets(all, cOnA ++ bOnAAndC, tree)
    def near(offset: Option[Long], bound: Long) = offset.exists(o => o <= bound && o >= bound - 5)
    assert(near(offsets(0), -100000L) && near(offsets(2), -200000L), offsets)
  }

  test("a FULL OUTER input decides its own rows: each decider keeps the rows it can join") {
    // a and b inner, b within 10 s of a; c FULL OUTER on b, within 20 s of b. Rows with a and c
    // both have b (c's ON clause read it), so c is within 30 s of a. By hand, final offsets
    // (no row to come joins the row): a min(-10, -30) = -30 s, b min(-10, -20) = -20 s,
    // c min(-30, -20) = -30 s. a and c decide, so each input is kept while a row of either it
    // can join is not final: a -30 - 30 = -60 s, b min(-30 - 10, -30 - 20) = -50 s,
    // c -30 - 30 = -60 s.
    val all = inputs(3)
    val tree = JoinTree(Seq(None, None, Some(1)), Seq(2), fullOuter = Set(2))
    val conjuncts = inner(between(time(all, 1), time(all, 0), 10, 10)) ++
      Conjunct.split(Some(between(time(all, 2), time(all, 1), 20, 20)), Some(2))
    def near(offsets: Seq[Option[Long]], expected: Seq[Long]) =
      offsets.zip(expected).forall { case (offset, bound) =>
        offset.exists(o => o <= bound && o >= bound - 5)
      }
    val finals = EventTimeBounds.finalOffsets(all, conjuncts, tree)
    assert(near(finals, Seq(-30000L, -20000L, -30000L)), finals)
    val evictions = EventTimeBounds.evictionOffsets(all, conjuncts, tree)
    assert(near(evictions, Seq(-60000L, -50000L, -60000L)), evictions)
  }
}
