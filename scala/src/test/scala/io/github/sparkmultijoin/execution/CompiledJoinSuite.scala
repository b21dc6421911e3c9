package io.github.sparkmultijoin.execution

import scala.util.Random

import io.github.sparkmultijoin.execution.CompiledJoin.addingIntervalsAsMicros
import io.github.sparkmultijoin.execution.ProbePlanSuite.{inputs, rows}
import io.github.sparkmultijoin.model.{Conjunct, JoinTree}
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Add, AttributeReference, BoundReference, GreaterThan, Literal, TimestampAddInterval}
import org.apache.spark.sql.catalyst.util.DateTimeConstants.MICROS_PER_DAY
import org.apache.spark.sql.types.{DayTimeIntervalType, TimestampType}

class CompiledJoinSuite extends AnyFunSuite {

  test("a compiled join is lent to one task at a time, and kept per operator and join") {
    // v1 > v0 + bound, over three inputs of one column each.
    def spec(operatorId: Long, bound: Int = 0,
        attributes: Seq[Seq[AttributeReference]] = inputs(3)): CompiledJoins.Spec = {
      val condition = GreaterThan(attributes(1).head, Add(attributes(0).head, Literal(bound)))
      new CompiledJoins.Spec((new java.util.UUID(7, 7), operatorId), attributes, attributes,
        attributes.flatten, Conjunct.all(Some(condition), Seq.fill(3)(None)), JoinTree.inner(3))
    }
    val first = CompiledJoins.lend(spec(0))
    val second = CompiledJoins.lend(spec(0))
    assert(first ne second, "a join lent and not taken back is lent to no other task")
    first.bindOnly(0, rows(Seq(5)).head)
    CompiledJoins.takeBack(spec(0), first)
    assert(first.bound.row.isNullAt(0), "a join taken back holds none of its task's rows")
    assert(CompiledJoins.lend(spec(1)) ne first, "each operator has joins of its own")
    assert(CompiledJoins.lend(spec(0, bound = 1)) ne first, "another condition, another join")
    val sameJoinNextBatch = spec(0, attributes = inputs(3).map(_.map(_.newInstance())))
    assert(CompiledJoins.lend(sameJoinNextBatch) eq first, "columns are compared by position")
    assert(CompiledJoins.lend(spec(0)) ne first)
  }

  test("an interval shorter than a day added as microseconds gives Spark's answer, across " +
    "changes of a zone's offset") {
    val random = new Random(11)
    val day = MICROS_PER_DAY
    val intervals = Seq(0L, 30000000L, -30000000L, 3600000000L, -5400000000L, day - 1, 1 - day) ++
      Seq.fill(20)(random.nextLong() % day)
    // Instants around offset changes (America/New_York, Europe/Berlin, Australia/Lord_Howe's
    // half hour), and anywhere from 1900 to 2100.
    val changes = Seq("2026-03-08T07:00:00Z", "2026-11-01T06:00:00Z", "2026-03-29T01:00:00Z",
      "2026-10-25T01:00:00Z", "2026-04-05T15:00:00Z", "2026-10-04T15:30:00Z")
      .map(at => java.time.Instant.parse(at).getEpochSecond * 1000000L)
    val instants =
      changes.flatMap(at => Seq.fill(40)(at + random.nextLong() % (3 * 3600000000L))) ++
        Seq.fill(100)(random.nextLong() % (100L * 365 * day))
    val time = BoundReference(0, TimestampType, nullable = true)
    for (zone <- Seq("America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata",
        "UTC");
      interval <- intervals) {
      val spark = TimestampAddInterval(time, Literal(interval, DayTimeIntervalType()), Some(zone))
      val ours = addingIntervalsAsMicros(spark)
      assert(ours != spark)
      for (micros <- instants :+ null.asInstanceOf[Any]) {
        val row = InternalRow(micros)
        assert(ours.eval(row) == spark.eval(row), s"$micros + $interval in $zone")
      }
      if (interval > 0) {
        intercept[ArithmeticException](spark.eval(InternalRow(Long.MaxValue - 1)))
        intercept[ArithmeticException](ours.eval(InternalRow(Long.MaxValue - 1)))
      }
    }
    // A whole day follows the zone's calendar, so it stays as Spark adds it.
    val wholeDay = TimestampAddInterval(time, Literal(day, DayTimeIntervalType()), Some("UTC"))
    assert(addingIntervalsAsMicros(wholeDay) == wholeDay)
  }
}
