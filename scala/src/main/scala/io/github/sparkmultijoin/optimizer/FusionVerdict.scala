package io.github.sparkmultijoin.optimizer

import io.github.sparkmultijoin.analysis.ResolveMultiJoinHint
import io.github.sparkmultijoin.optimizer.VerdictArg._
import org.json4s.{JBool, JNull, JObject, JString, JValue}

import org.apache.spark.sql.catalyst.plans.{Inner, JoinType}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.multijoin.MultiJoinConf
import org.apache.spark.sql.types.DataType

/**
 * What [[CollapseStreamingJoinChains]] decided about a plan: which inputs fused into which
 * multi-join on which key, and why each join or input it leaves to Spark stays.
 *
 * Why values rather than log lines: the log, EXPLAIN, the rule's tests and the Python advisor
 * read the same decisions. Each verdict is a `code` with its `args`; the words are the code's
 * template in [[VerdictTemplates]], filled with the arguments' text, and [[FusionVerdict.json]]
 * gives the arguments as JSON, so that a reader need not parse the words.
 */
sealed trait FusionVerdict {

  /** The verdict's code (UPPER_SNAKE), the key of its template. */
  def code: String

  /** The verdict's arguments: every placeholder of its template, and maybe more. */
  def args: Seq[(String, VerdictArg)]

  /** Whether the user should act on it: the rule logs it as a WARNING. */
  def isWarning: Boolean = false

  def message: String = FusionVerdict.render(this)
}

object FusionVerdict {

  /**
   * The verdicts the rule made of a chain (or of the whole plan), on the node of the plan it
   * returns that stands for the chain: what EXPLAIN shows, reached from the physical plan through
   * its logical links.
   */
  val Tag: TreeNodeTag[Seq[FusionVerdict]] = TreeNodeTag("spark-multijoin.fusionVerdicts")

  /**
   * An input: by the name the query gave it (its alias, or its table or view) where the plan
   * still knows it, and by its output columns.
   */
  case class Input(name: Option[String], columns: Seq[String]) {
    def shown: String = name.getOrElse(columns.mkString("[", ", ", "]"))
  }

  object Input {

    /** `plan` by its columns alone. */
    def of(plan: LogicalPlan): Input = Input(None, plan.output.map(_.name))
  }

  /**
   * Inputs of a chain that fused, on a key (per key column, its members' SQL), into the
   * multi-joins with `operatorIds` (several where max-tables splits them).
   */
  case class FusedGroup(inputs: Seq[Input], key: Seq[Seq[String]], operatorIds: Seq[Long]) {
    def arg: VerdictArg = part("COLLAPSED.GROUP", "inputs" -> inputList(inputs),
      "keyColumns" -> number(key.length), "key" -> list(key.map(c => list(c.map(text)))),
      "operatorIds" -> list(operatorIds.map(number)))
  }

  /** Why an input of a collapsed chain is joined by Spark's join instead. */
  sealed trait LeftToSpark {
    def input: Input
    def arg: VerdictArg
  }
  case class StaticInput(input: Input) extends LeftToSpark {
    def arg: VerdictArg = part("COLLAPSED.STATIC_INPUT", "input" -> VerdictArg.input(input),
      "reason" -> text("STATIC_INPUT"))
  }
  case class OffTheKey(input: Input) extends LeftToSpark {
    def arg: VerdictArg = part("COLLAPSED.OFF_THE_KEY", "input" -> VerdictArg.input(input),
      "reason" -> text("OFF_THE_KEY"))
  }

  // What fused.

  /** A chain collapsed into the multi-joins of `groups`; `byHint` where the hint enabled it. */
  case class Collapsed(groups: Seq[FusedGroup], joinedBySpark: Seq[LeftToSpark], byHint: Boolean)
    extends FusionVerdict {
    def code: String = "COLLAPSED"
    def args: Seq[(String, VerdictArg)] = {
      val others = list(joinedBySpark.map(_.arg))
      Seq(
        "chainLength" -> number(groups.map(_.inputs.length).sum + joinedBySpark.length),
        "multiJoins" -> number(groups.length),
        "groups" -> list(groups.map(_.arg), "; "),
        "joinedBySpark" -> VerdictArg(
          if (joinedBySpark.isEmpty) ""
          else VerdictTemplates.fill("COLLAPSED.JOINED_BY_SPARK", Seq("inputs" -> others.text)),
          others.json),
        "byHint" -> VerdictArg(
          if (byHint) VerdictTemplates.fill("COLLAPSED.BY_HINT", Seq("hint" -> hintName)) else "",
          JBool(byHint)))
    }
  }

  /** An outer join of a chain runs as `runsAs`, as a condition above rejects its padded rows. */
  case class OuterJoinMadeInner(joinType: JoinType, padded: Seq[Input], runsAs: JoinType)
    extends FusionVerdict {
    def code: String = "OUTER_JOIN_MADE_INNER"
    def args: Seq[(String, VerdictArg)] = Seq(
      "joinType" -> text(joinType.sql),
      "padded" -> VerdictArg(padded.map(_.shown).mkString(" and "), inputList(padded).json),
      "runsAs" -> VerdictArg(if (runsAs == Inner) "an INNER" else s"a ${runsAs.sql}",
        JString(runsAs.sql)))
  }

  /** An input of a multi-join whose rows stay in state for good; `eventTime` its column. */
  case class UnboundedInput(operatorId: Long, input: Input, eventTime: Option[String])
    extends FusionVerdict {
    def code: String = "UNBOUNDED_INPUT"
    override def isWarning: Boolean = true
    def args: Seq[(String, VerdictArg)] = Seq(
      "operatorId" -> number(operatorId),
      "input" -> VerdictArg.input(input),
      "eventTime" -> VerdictArg(eventTime.getOrElse(""), eventTime.fold[JValue](JNull)(JString)),
      "why" -> text(eventTime.fold(VerdictTemplates.fill("UNBOUNDED_INPUT.NO_EVENT_TIME", Nil)) {
        time => VerdictTemplates.fill("UNBOUNDED_INPUT.NOT_BOUNDED", Seq("eventTime" -> time))
      }))
  }

  /**
   * A STATE_TTL hint names `input` of the multi-join `operatorId`, which has outer joins and so
   * takes no TTL.
   */
  case class TtlNotAppliedWithOuter(operatorId: Long, input: Input) extends FusionVerdict {
    def code: String = "TTL_NOT_APPLIED_WITH_OUTER"
    override def isWarning: Boolean = true
    def args: Seq[(String, VerdictArg)] = Seq("operatorId" -> number(operatorId),
      "input" -> VerdictArg.input(input), "hint" -> text(ResolveMultiJoinHint.StateTtlHintName))
  }

  // Why every streaming join of the plan runs as Spark planned it.

  case object ConfDisabled extends FusionVerdict {
    def code: String = "CONF_DISABLED"
    def args: Seq[(String, VerdictArg)] =
      Seq("conf" -> text(MultiJoinConf.ENABLED.key), "hint" -> text(hintName))
  }

  /** The session's state store cannot hold a multi-join's state, and `reason` says why. */
  case class StoreUnsupported(reason: String) extends FusionVerdict {
    def code: String = "STORE_UNSUPPORTED"
    override def isWarning: Boolean = true
    def args: Seq[(String, VerdictArg)] = Seq("reason" -> text(reason))
  }

  case class RealTimeModeUnsupported(reason: String) extends FusionVerdict {
    def code: String = "REAL_TIME_MODE_UNSUPPORTED"
    override def isWarning: Boolean = true
    def args: Seq[(String, VerdictArg)] = Seq("reason" -> text(reason))
  }

  // Why one join, or a chain, stays as Spark planned it.

  case class UnsupportedJoinType(joinType: JoinType) extends FusionVerdict {
    def code: String = "UNSUPPORTED_JOIN_TYPE"
    def args: Seq[(String, VerdictArg)] = Seq("joinType" -> text(joinType.toString))
  }

  /** A chain that stays as Spark planned it; `inputs`, where a case has them, are its inputs. */
  sealed trait ChainKept extends FusionVerdict

  /** A kept chain that names its inputs: its arguments are theirs, their count, and `more`. */
  sealed trait InputsKept extends ChainKept {
    def inputs: Seq[Input]
    protected def more: Seq[(String, VerdictArg)]
    def args: Seq[(String, VerdictArg)] =
      Seq("inputs" -> inputList(inputs), "chainLength" -> number(inputs.length)) ++ more
  }

  /** The join's `condition` (its SQL) is not deterministic. */
  case class NondeterministicCondition(condition: String) extends ChainKept {
    def code: String = "NONDETERMINISTIC_CONDITION"
    def args: Seq[(String, VerdictArg)] = Seq("condition" -> text(condition))
  }

  /** The conf is off, and the hint names some inputs of a chain with outer joins, not all. */
  case class HintMissesOuterInputs(inputs: Seq[Input]) extends InputsKept {
    def code: String = "HINT_MISSES_OUTER_INPUTS"
    protected def more: Seq[(String, VerdictArg)] = Seq("hint" -> text(hintName))
  }

  /** Fewer than three of the chain's streaming inputs may fuse. */
  case class TooFewStreamingInputs(inputs: Seq[Input]) extends InputsKept {
    def code: String = "TOO_FEW_STREAMING_INPUTS"
    protected def more: Seq[(String, VerdictArg)] = Nil
  }
  case class OuterWithStaticInput(inputs: Seq[Input]) extends InputsKept {
    def code: String = "OUTER_WITH_STATIC_INPUT"
    protected def more: Seq[(String, VerdictArg)] = Nil
  }

  /** No key is equal across three or more streaming inputs; `conditions` the chain's, as SQL. */
  case class NoSharedKey(inputs: Seq[Input], conditions: Seq[String]) extends InputsKept {
    def code: String = "NO_SHARED_KEY"
    protected def more: Seq[(String, VerdictArg)] =
      Seq("conditions" -> list(conditions.map(text), " AND "))
  }

  /** The key's `keyType` cannot be compared by its bytes, as the operator's state does. */
  case class UnstableKeyType(inputs: Seq[Input], keyType: DataType) extends InputsKept {
    def code: String = "UNSTABLE_KEY_TYPE"
    protected def more: Seq[(String, VerdictArg)] = Seq("keyType" -> text(keyType.sql))
  }

  /** Spark's stream-stream join of `next` to the rest would see several event-time `columns`. */
  case class MultipleEventTimeColumns(columns: Seq[String], next: Input) extends ChainKept {
    def code: String = "MULTIPLE_EVENT_TIME_COLUMNS"
    def args: Seq[(String, VerdictArg)] =
      Seq("columns" -> list(columns.map(text)), "next" -> input(next))
  }

  /** Why a chain with outer joins is not one [[io.github.sparkmultijoin.model.JoinTree]]. */
  sealed trait OuterChainKept extends InputsKept
  case class MaxTablesSplitsOuter(inputs: Seq[Input], maxTables: Int) extends OuterChainKept {
    def code: String = "MAX_TABLES_SPLITS_OUTER"
    protected def more: Seq[(String, VerdictArg)] =
      Seq("conf" -> text(MultiJoinConf.MAX_TABLES.key), "maxTables" -> number(maxTables))
  }
  case class OuterAboveFullOuter(inputs: Seq[Input]) extends OuterChainKept {
    def code: String = "OUTER_ABOVE_FULL_OUTER"
    protected def more: Seq[(String, VerdictArg)] = Nil
  }

  /** The ON clause of `fullOuter` has a conjunct, `condition`, that can hold on nulls. */
  case class FullOuterHoldsOnNull(inputs: Seq[Input], fullOuter: Input, condition: String)
    extends OuterChainKept {
    def code: String = "FULL_OUTER_HOLDS_ON_NULL"
    protected def more: Seq[(String, VerdictArg)] =
      Seq("fullOuter" -> input(fullOuter), "condition" -> text(condition))
  }

  /** An inner condition reads an outer join's null-padded side. */
  case class ConditionReadsPadded(inputs: Seq[Input], condition: String) extends OuterChainKept {
    def code: String = "CONDITION_READS_PADDED"
    protected def more: Seq[(String, VerdictArg)] = Seq("condition" -> text(condition))
  }

  /** The inner joins do not equate `key` (its members' SQL) among the inner inputs. */
  case class InnerInputsMissKey(inputs: Seq[Input], key: Seq[String]) extends OuterChainKept {
    def code: String = "INNER_INPUTS_MISS_KEY"
    protected def more: Seq[(String, VerdictArg)] = Seq("key" -> list(key.map(text)))
  }

  /** The ON clause of `outer` equates `key` to no input joined before it. */
  case class OuterInputMissesKey(inputs: Seq[Input], outer: Input, key: Seq[String])
    extends OuterChainKept {
    def code: String = "OUTER_INPUT_MISSES_KEY"
    protected def more: Seq[(String, VerdictArg)] =
      Seq("outer" -> input(outer), "key" -> list(key.map(text)))
  }
  case class OuterInputsUnbounded(inputs: Seq[Input]) extends OuterChainKept {
    def code: String = "OUTER_INPUTS_UNBOUNDED"
    protected def more: Seq[(String, VerdictArg)] = Nil
  }

  // Changelog joins, made in analysis (RewriteChangelogJoins).

  /** Changelog inputs joined in one changelog join on `key`, each with its declaration. */
  case class ChangelogJoined(inputs: Seq[Input], declarations: Seq[String], key: Seq[String])
    extends FusionVerdict {
    def code: String = "CHANGELOG_JOINED"
    def args: Seq[(String, VerdictArg)] = Seq(
      "inputs" -> list(inputs.zip(declarations).map { case (joined, declaration) =>
        part("CHANGELOG_JOINED.INPUT", "input" -> input(joined), "declaration" -> text(declaration))
      }),
      "key" -> list(key.map(text)))
  }

  /**
   * The changelog join of `inputs` is read as one input, its changes, of the `joinType` join
   * above it: that join is on another key (`otherKey`), or its shape is not one tree.
   */
  case class ChangelogStacked(inputs: Seq[Input], joinType: JoinType, otherKey: Boolean)
    extends FusionVerdict {
    def code: String = "CHANGELOG_STACKED"
    def args: Seq[(String, VerdictArg)] = Seq(
      "inputs" -> inputList(inputs),
      "joinType" -> text(joinType.sql),
      "why" -> text(VerdictTemplates.fill(
        if (otherKey) "CHANGELOG_STACKED.OTHER_KEY" else "CHANGELOG_STACKED.JOIN_SHAPE", Nil)))
  }

  /** The words of `verdict`: its code's template filled with its arguments' text. */
  def render(verdict: FusionVerdict): String =
    VerdictTemplates.fill(verdict.code, verdict.args.map { case (name, arg) => name -> arg.text })

  /** `verdict` as JSON: `{"code", "args", "message", "warning"}`. */
  def json(verdict: FusionVerdict): JObject = JObject(
    "code" -> JString(verdict.code),
    "args" -> JObject(verdict.args.map { case (name, arg) => name -> arg.json }.toList),
    "message" -> JString(verdict.message),
    "warning" -> JBool(verdict.isWarning))

  private def hintName: String = ResolveMultiJoinHint.HintName
}
