package io.github.sparkmultijoin.optimizer

import org.apache.spark.sql.catalyst.plans.{Inner, JoinType}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.multijoin.MultiJoinConf
import org.apache.spark.sql.types.DataType

/**
 * What [[CollapseStreamingJoinChains]] decided about a plan: which inputs fused into which
 * multi-join on which key, and why each join or input it leaves to Spark stays.
 *
 * Why values rather than log lines: the log, the rule's tests and the advisor's differential
 * test read the same decisions, and showing them anywhere else (EXPLAIN) needs them as data. Each
 * verdict is a code with its arguments, so it can be matched on or worded another way;
 * [[FusionVerdict.render]] is the one place that words them, and its words are what the Python
 * advisor gives as its reasons.
 */
sealed trait FusionVerdict {

  /** Whether the user should act on it: the rule logs it as a WARNING. */
  def isWarning: Boolean = false

  def message: String = FusionVerdict.render(this)
}

object FusionVerdict {

  /** An input, by its output columns: how the verdicts name inputs that have no name. */
  case class Input(columns: Seq[String])

  object Input {
    def of(plan: LogicalPlan): Input = Input(plan.output.map(_.name))
  }

  /**
   * Inputs of a chain that fused, on a key (per key column, its members' SQL), into the
   * multi-joins with `operatorIds` (several where max-tables splits them).
   */
  case class FusedGroup(inputs: Seq[Input], key: Seq[Seq[String]], operatorIds: Seq[Long])

  /** Why an input of a collapsed chain is joined by Spark's join instead. */
  sealed trait LeftToSpark { def input: Input }
  case class StaticInput(input: Input) extends LeftToSpark
  case class OffTheKey(input: Input) extends LeftToSpark

  // What fused.

  /** A chain collapsed into the multi-joins of `groups`; `byHint` where the hint enabled it. */
  case class Collapsed(groups: Seq[FusedGroup], joinedBySpark: Seq[LeftToSpark], byHint: Boolean)
    extends FusionVerdict

  /** An outer join of a chain runs as `runsAs`, as a condition above rejects its padded rows. */
  case class OuterJoinMadeInner(joinType: JoinType, padded: Seq[Input], runsAs: JoinType)
    extends FusionVerdict

  /** An input of a multi-join whose rows stay in state for good; `eventTime` its column. */
  case class UnboundedInput(operatorId: Long, input: Input, eventTime: Option[String])
    extends FusionVerdict {
    override def isWarning: Boolean = true
  }

  /**
   * A STATE_TTL hint names `input` of the multi-join `operatorId`, which has outer joins and so
   * takes no TTL.
   */
  case class TtlNotAppliedWithOuter(operatorId: Long, input: Input) extends FusionVerdict {
    override def isWarning: Boolean = true
  }

  // Why every streaming join of the plan runs as Spark planned it.

  case object ConfDisabled extends FusionVerdict

  /** The session's state store cannot hold a multi-join's state, and `reason` says why. */
  case class StoreUnsupported(reason: String) extends FusionVerdict {
    override def isWarning: Boolean = true
  }

  // Why one join, or a chain, stays as Spark planned it.

  case class UnsupportedJoinType(joinType: JoinType) extends FusionVerdict

  /** A chain that stays as Spark planned it; `inputs`, where a case has them, are its inputs. */
  sealed trait ChainKept extends FusionVerdict

  /** The join's `condition` (its SQL) is not deterministic. */
  case class NondeterministicCondition(condition: String) extends ChainKept

  /** The conf is off, and the hint names some inputs of a chain with outer joins, not all. */
  case class HintMissesOuterInputs(inputs: Seq[Input]) extends ChainKept

  /** Fewer than three of the chain's streaming inputs may fuse. */
  case class TooFewStreamingInputs(inputs: Seq[Input]) extends ChainKept
  case class OuterWithStaticInput(inputs: Seq[Input]) extends ChainKept

  /** No key is equal across three or more streaming inputs; `conditions` the chain's, as SQL. */
  case class NoSharedKey(inputs: Seq[Input], conditions: Seq[String]) extends ChainKept

  /** The key's `keyType` cannot be compared by its bytes, as the operator's state does. */
  case class UnstableKeyType(inputs: Seq[Input], keyType: DataType) extends ChainKept

  /** Spark's stream-stream join of `next` to the rest would see several event-time `columns`. */
  case class MultipleEventTimeColumns(columns: Seq[String], next: Input) extends ChainKept

  /** Why a chain with outer joins is not one [[io.github.sparkmultijoin.analysis.JoinTree]]. */
  sealed trait OuterChainKept extends ChainKept { def inputs: Seq[Input] }
  case class MaxTablesSplitsOuter(inputs: Seq[Input], maxTables: Int) extends OuterChainKept
  case class OuterAboveFullOuter(inputs: Seq[Input]) extends OuterChainKept

  /** The ON clause of `fullOuter` has a conjunct, `condition`, that can hold on nulls. */
  case class FullOuterHoldsOnNull(inputs: Seq[Input], fullOuter: Input, condition: String)
    extends OuterChainKept

  /** An inner condition reads an outer join's null-padded side. */
  case class ConditionReadsPadded(inputs: Seq[Input], condition: String) extends OuterChainKept

  /** The inner joins do not equate `key` (its members' SQL) among the inner inputs. */
  case class InnerInputsMissKey(inputs: Seq[Input], key: Seq[String]) extends OuterChainKept

  /** The ON clause of `outer` equates `key` to no input joined before it. */
  case class OuterInputMissesKey(inputs: Seq[Input], outer: Input, key: Seq[String])
    extends OuterChainKept
  case class OuterInputsUnbounded(inputs: Seq[Input]) extends OuterChainKept

  /** The words of `verdict`: what the rule logs, and what the advisor's reasons must match. */
  def render(verdict: FusionVerdict): String = verdict match {
    case collapsed: Collapsed => collapsedMessage(collapsed)
    case OuterJoinMadeInner(joinType, padded, runsAs) =>
      val as = if (runsAs == Inner) "an INNER" else s"a ${runsAs.sql}"
      s"The ${joinType.sql} join that pads ${padded.map(show).mkString(" and ")} with nulls " +
        s"runs as $as join: a condition above it rejects those null-padded rows (Spark's " +
        "optimizer does the same where that condition is a filter right above the join)."
    case UnboundedInput(_, input, eventTime) =>
      val why = eventTime.fold("it has no event-time column with a watermark") { time =>
        s"no interval condition bounds $time against every other input's event time, " +
          "directly or through other inputs"
      }
      s"Input ${show(input)} of a streaming multi-join is unbounded: $why, so its rows are " +
        "kept in state for good."
    case TtlNotAppliedWithOuter(_, input) =>
      s"The ${ResolveMultiJoinHint.StateTtlHintName} hint on ${show(input)} does not apply: it " +
        "is an input of a multi-join with outer joins, which keeps each input's rows exactly as " +
        "long as its time bounds say. Null-padded rows are decided by the rows of every input; " +
        "a row a TTL dropped sooner could have a row come out both matched and null-padded, " +
        "and an emitted row cannot be retracted."
    case ConfDisabled =>
      s"Streaming joins run as Spark planned them: ${MultiJoinConf.ENABLED.key} is false. Set " +
        "it to true to run chains of joins on one key as one StreamingMultiJoin (or name a " +
        s"chain's inputs in the ${ResolveMultiJoinHint.HintName} hint)."
    case StoreUnsupported(reason) => s"Streaming joins run as Spark planned them: $reason"
    case UnsupportedJoinType(joinType) =>
      s"A streaming $joinType join keeps Spark's binary operator: multi-joins are of INNER, " +
        "LEFT OUTER, RIGHT OUTER and FULL OUTER joins."
    case kept: ChainKept => chainKeptMessage(kept)
  }

  private def collapsedMessage(collapsed: Collapsed): String = {
    val fused = collapsed.groups.map { group =>
      s"${shown(group.inputs)} on ${group.key.length} key column(s)"
    }
    val others = collapsed.joinedBySpark.map {
      case StaticInput(input) => s"${show(input)} is static"
      case OffTheKey(input) =>
        s"${show(input)} does not share the key of three or more streaming inputs"
    }
    val chainLength = collapsed.groups.map(_.inputs.length).sum + others.length
    s"Collapsed a chain of $chainLength joins into ${collapsed.groups.length} multi-join(s) of " +
      s"streaming inputs: ${fused.mkString("; ")}" +
      (if (others.isEmpty) "" else s". Joined by Spark's joins: ${others.mkString(", ")}.") +
      (if (collapsed.byHint) s" (by the ${ResolveMultiJoinHint.HintName} hint)" else "")
  }

  private def chainKeptMessage(kept: ChainKept): String = kept match {
    case NondeterministicCondition(condition) =>
      "A streaming join stays as Spark planned it: its condition is not deterministic: " +
        condition
    case HintMissesOuterInputs(inputs) =>
      "A chain of streaming joins with outer joins stays as Spark planned it: the " +
        s"${ResolveMultiJoinHint.HintName} hint does not name all its inputs (${shown(inputs)})."
    case TooFewStreamingInputs(inputs) =>
      "A streaming join of two inputs stays as Spark planned it: Spark's join of two inputs " +
        s"already keeps only input rows (${shown(inputs)})."
    case OuterWithStaticInput(inputs) =>
      "A chain of streaming joins with outer joins and a static input stays as Spark planned " +
        s"it (${shown(inputs)})."
    case NoSharedKey(inputs, conditions) =>
      s"A chain of ${inputs.length} streaming joins stays as Spark planned it: no common key, " +
        "the equi-join conditions do not make one key equal across three or more streaming " +
        s"inputs (${shown(inputs)}). Conditions: ${conditions.mkString(" AND ")}"
    case UnstableKeyType(inputs, keyType) =>
      s"A chain of ${inputs.length} streaming joins stays as Spark planned it: its key type " +
        s"${keyType.sql} cannot be compared by its bytes (${shown(inputs)})."
    case MultipleEventTimeColumns(columns, next) =>
      "A chain of streaming joins stays as Spark planned it: its inputs outside a multi-join " +
        "are joined by Spark's stream-stream join, which would see the event-time columns " +
        s"${columns.mkString(", ")} on one side and takes only one. Drop all but one of them " +
        s"before ${show(next)} is joined, or join it on the key."
    case outer: OuterChainKept =>
      s"A chain of ${outer.inputs.length} streaming joins with outer joins stays as Spark " +
        s"planned it: ${outerProblem(outer)} (${shown(outer.inputs)})."
  }

  private def outerProblem(outer: OuterChainKept): String = outer match {
    case MaxTablesSplitsOuter(_, maxTables) =>
      s"${MultiJoinConf.MAX_TABLES.key} = $maxTables would split it"
    case OuterAboveFullOuter(_) =>
      "an inner join, a filter or a LEFT OUTER join applies above a FULL OUTER join; only " +
        "FULL OUTER joins may follow one"
    case FullOuterHoldsOnNull(_, fullOuter, condition) =>
      s"the FULL OUTER join of ${show(fullOuter)} has a condition that can hold where a column " +
        s"it reads is null: $condition"
    case ConditionReadsPadded(_, condition) =>
      s"$condition uses the null-padded side of an outer join"
    case InnerInputsMissKey(_, key) =>
      s"the inner joins do not equate the key (${key.mkString(", ")}) among the inner inputs " +
        "themselves"
    case OuterInputMissesKey(_, outer, key) =>
      s"the ON clause of ${show(outer)} does not equate its key (${key.mkString(", ")}) to " +
        "that of an input joined before it"
    case OuterInputsUnbounded(_) =>
      "an outer join's null-padded rows come out once the watermark shows a row can no longer " +
        "match, which needs watermarks and interval conditions bounding every input's event " +
        "time (a state TTL cannot stand in for them: null-padded rows would depend on the rows " +
        "it drops)"
  }

  private def show(input: Input): String = input.columns.mkString("[", ", ", "]")

  private def shown(inputs: Seq[Input]): String = inputs.map(show).mkString(", ")
}
