package io.github.sparkmultijoin.optimizer

import scala.reflect.runtime.universe._

import io.github.sparkmultijoin.optimizer.FusionVerdict._
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.plans.{FullOuter, Inner, LeftOuter, LeftSemi}
import org.apache.spark.sql.types.BinaryType
import org.json4s._

/** The verdicts' templates: one for every case, filled from its arguments, and the JSON. */
class FusionVerdictSuite extends AnyFunSuite {

  private val (a, b) = (Input(Some("a"), Seq("k0", "v0")), Input(None, Seq("k1", "v1")))
  private val group = FusedGroup(Seq(a, b), Seq(Seq("a.k0", "k1")), Seq(1L << 30, (1L << 30) + 1))

  /** A verdict of every case, and of every branch of a case's words. */
  private val samples: Seq[FusionVerdict] = Seq(
    Collapsed(Seq(group), Seq(StaticInput(b), OffTheKey(a)), byHint = true),
    Collapsed(Seq(group), Nil, byHint = false),
    OuterJoinMadeInner(LeftOuter, Seq(b), Inner),
    OuterJoinMadeInner(FullOuter, Seq(a, b), LeftOuter),
    UnboundedInput(7, a, Some("t0")),
    UnboundedInput(7, b, None),
    TtlNotAppliedWithOuter(7, a),
    ConfDisabled,
    StoreUnsupported("the store says no"),
    RealTimeModeUnsupported("this line says no"),
    UnsupportedJoinType(LeftSemi),
    NondeterministicCondition("(rand() > 0.5)"),
    HintMissesOuterInputs(Seq(a, b)),
    TooFewStreamingInputs(Seq(a, b)),
    OuterWithStaticInput(Seq(a, b)),
    NoSharedKey(Seq(a, b), Seq("(k0 = k1)", "(v0 = v1)")),
    UnstableKeyType(Seq(a, b), BinaryType),
    MultipleEventTimeColumns(Seq("t0", "t1"), b),
    MaxTablesSplitsOuter(Seq(a, b), 3),
    OuterAboveFullOuter(Seq(a, b)),
    FullOuterHoldsOnNull(Seq(a, b), b, "(v0 IS NULL)"),
    ConditionReadsPadded(Seq(a, b), "(v1 IS NULL)"),
    InnerInputsMissKey(Seq(a, b), Seq("k0", "k1")),
    OuterInputMissesKey(Seq(a, b), b, Seq("k0", "k1")),
    OuterInputsUnbounded(Seq(a, b)),
    ChangelogJoined(Seq(a, b), Seq("delta, row id k0", "upsert, row id k1, LEFT OUTER"),
      Seq("a.k0 = k1")),
    ChangelogStacked(Seq(a, b), FullOuter, otherKey = true),
    ChangelogStacked(Seq(a, b), LeftOuter, otherKey = false))

  /** The names of the concrete cases of a sealed type. */
  private def cases(symbol: ClassSymbol): Set[String] =
    if (!symbol.isSealed) Set(symbol.name.toString)
    else symbol.knownDirectSubclasses.flatMap(sub => cases(sub.asClass))

  test("every case of a verdict has a sample here, and a template") {
    val sampled = samples.map(_.getClass.getSimpleName.stripSuffix("$")).toSet
    assert(cases(typeOf[FusionVerdict].typeSymbol.asClass) == sampled)
    val codes = samples.map(_.code).toSet
    assert(codes.forall(VerdictTemplates.all.contains), codes -- VerdictTemplates.all.keySet)
    // Every template is a verdict's, or a part of one (COLLAPSED.GROUP), and none is unused.
    val (parts, verdicts) = VerdictTemplates.all.keySet.partition(_.contains('.'))
    assert(verdicts == codes)
    assert(parts.map(_.takeWhile(_ != '.')).subsetOf(codes), parts)
    assert(codes.forall(_.matches("[A-Z]+(_[A-Z]+)*")), codes)
  }

  test("every placeholder of a verdict's template is one of its arguments, and is filled") {
    samples.foreach { verdict =>
      val args = verdict.args.map(_._1).toSet
      assert(VerdictTemplates.placeholders(verdict.code).subsetOf(args), verdict)
      assert(!verdict.message.matches(".*<[A-Za-z]+>.*"), verdict.message)
    }
    assert(intercept[IllegalArgumentException](VerdictTemplates.fill("NO_SHARED_KEY", Nil))
      .getMessage.contains("NO_SHARED_KEY takes"))
  }

  test("the words name inputs by their names, or else by their columns") {
    assert(NoSharedKey(Seq(a, b), Seq("(k0 = k1)", "(v0 = v1)")).message ==
      "A chain of 2 streaming joins stays as Spark planned it: no common key, the equi-join " +
      "conditions do not make one key equal across three or more streaming inputs (a, " +
      "[k1, v1]). Conditions: (k0 = k1) AND (v0 = v1)")
    assert(samples.head.message == "Collapsed a chain of 4 joins into 1 multi-join(s) of " +
      "streaming inputs: a, [k1, v1] on 1 key column(s). Joined by Spark's joins: [k1, v1] is " +
      "static, a does not share the key of three or more streaming inputs. (by the MULTI_JOIN " +
      "hint)")
  }

  test("as JSON, the arguments are structured: inputs, lists and numbers") {
    implicit val formats: Formats = DefaultFormats
    val json = FusionVerdict.json(samples.head)
    assert((json \ "code").extract[String] == "COLLAPSED")
    assert((json \ "warning").extract[Boolean] == false)
    val args = json \ "args"
    val Seq(fused) = (args \ "groups").children
    assert((fused \ "operatorIds").extract[Seq[Long]] == group.operatorIds)
    assert((fused \ "inputs").children.map(_ \ "name") == Seq(JString("a"), JNull))
    assert((fused \ "inputs").children.map(i => (i \ "columns").extract[Seq[String]]) ==
      Seq(a.columns, b.columns))
    assert((fused \ "key").extract[Seq[Seq[String]]] == group.key)
    assert((args \ "joinedBySpark").children.map(j => (j \ "reason").extract[String]) ==
      Seq("STATIC_INPUT", "OFF_THE_KEY"))
    val unbounded = FusionVerdict.json(UnboundedInput(7, a, None)) \ "args"
    assert((unbounded \ "operatorId").extract[Long] == 7 &&
      (unbounded \ "input" \ "name").extract[String] == "a" &&
      (unbounded \ "eventTime") == JNull)
  }
}
