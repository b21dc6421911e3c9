package io.github.sparkmultijoin.optimizer

import java.util.concurrent.ConcurrentHashMap

import scala.collection.mutable

import io.github.sparkmultijoin.analysis.{Conjunct, EventTimeBounds, StateLayout}
import io.github.sparkmultijoin.logical.{MultiJoin, MultiJoinHint, StateTtlHint}
import io.github.sparkmultijoin.optimizer.ChainFlattening.{continuesChain, isStreamingChainJoin}
import io.github.sparkmultijoin.optimizer.FusionVerdict._

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.expressions.AttributeSet
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.multijoin.MultiJoinConf

/**
 * Rewrites a chain of streaming joins on one shared key into one [[MultiJoin]].
 *
 * Why: Spark runs `a JOIN b JOIN c ...` as one binary stateful join per JOIN, and every join
 * after the first stores the joined output of the joins below it. With fan-out that state grows
 * with the product of the inputs. One operator over all inputs needs only the input rows.
 *
 * What qualifies: a maximal tree of INNER, LEFT, RIGHT and FULL OUTER joins whose two sides
 * are both streaming (and inner joins of a streaming side with a static one), seen through the
 * deterministic Projects and Filters that Spark's optimizer leaves between joins
 * ([[ChainFlattening]]), whose equi-join conditions put three or more streaming inputs on one
 * key: a class of expressions made equal, directly or transitively, with a member over each
 * (several such classes make a composite key). With outer joins, every input must be streaming
 * and on the key. With inner joins only, which commute and associate, the streaming inputs are
 * grouped by key ([[KeyGroups]]): one multi-join per group of three or more, and the other
 * inputs are joined to it by Spark's own joins ([[PlanAssembly]]). Inner conjuncts not implied by
 * a group's key stay with its multi-join as its condition; each outer input keeps its whole ON
 * clause. With outer joins, the inputs form a [[io.github.sparkmultijoin.analysis.JoinTree]]
 * ([[OuterTreeChecks]] says when one can run them). The rewritten plan has exactly the output
 * attributes of the original and the rest of the plan is untouched.
 *
 * What it decided is a [[FusionVerdict]] each, logged once: what fused, why anything else stays
 * as Spark planned it, and warnings (an input that no interval condition bounds, a state store
 * that cannot hold the state). Batch plans are never touched.
 *
 * It runs once, after Spark's operator optimizations (as a pre-CBO rule), so the joins it sees
 * have their filters and projections pushed down (and most outer joins whose nulls a later
 * condition rejects already made inner; flattening makes the rest in a chain inner), and it never
 * sees its own output again.
 */
object CollapseStreamingJoinChains extends Rule[LogicalPlan] with Logging {

  /**
   * Operator id of the first multi-join in a plan; the following ones count up from it. Spark
   * numbers its own stateful operators 0, 1, 2, ... so these cannot collide with them, and since
   * they follow the plan's shape they are the same on every micro-batch and after a restart.
   */
  val FirstOperatorId: Long = 1L << 30

  override def apply(plan: LogicalPlan): LogicalPlan = {
    val (rewritten, verdicts) = rewrite(plan)
    verdicts.foreach(logOnce)
    rewritten
  }

  /** The plan the rule makes of `hintedPlan`, with its verdicts on it. */
  def rewrite(hintedPlan: LogicalPlan): (LogicalPlan, Seq[FusionVerdict]) = {
    // The hints' inputs, by their output; the hints' nodes go from every plan.
    val hinted = hintedPlan.collect { case hint: MultiJoinHint => hint.bound }.flatten
    val ttls = StateTtls(MultiJoinConf.stateTtlMs(conf),
      hintedPlan.collect { case hint: StateTtlHint => hint.bound }.flatten)
    val plan = hintedPlan.transformUp {
      case hint: MultiJoinHint => hint.child
      case hint: StateTtlHint => hint.child
    }
    val eligibility = Eligibility.of(MultiJoinConf.enabled(conf), hinted)
    if (!plan.isStreaming || !plan.exists(isStreamingChainJoin)) {
      (plan, Nil)
    } else if (eligibility == Eligibility.Disabled) {
      (plan, Seq(ConfDisabled))
    } else {
      StateLayout.forSession(conf) match {
        case Left(reason) => (plan, Seq(StoreUnsupported(reason)))
        case Right(_) => collapseAll(plan, eligibility, ttls)
      }
    }
  }

  /** Every chain of `plan` collapsed where it can be, top down, with the verdicts on each. */
  private def collapseAll(
      plan: LogicalPlan,
      eligibility: Eligibility,
      ttls: StateTtls): (LogicalPlan, Seq[FusionVerdict]) = {
    val verdicts = mutable.ArrayBuffer.empty[FusionVerdict]
    val nextOperatorId = Iterator.iterate(FirstOperatorId)(_ + 1)
    val readOf = columnsRead(plan)
    val rewritten = plan.transformDown {
      case join: Join if isStreamingChainJoin(join) =>
        val read = Option(readOf.get(join)).getOrElse(join.outputSet)
        collapse(join, read, nextOperatorId, eligibility, ttls) match {
          case Right((collapsed, said)) => verdicts ++= said; collapsed
          case Left(kept) => verdicts += kept; join
        }
      case join @ Join(left, right, joinType, _, _) if left.isStreaming && right.isStreaming =>
        verdicts += UnsupportedJoinType(joinType)
        join
    }
    (rewritten, verdicts.toSeq)
  }

  /**
   * The columns the plan reads of each join's output, by the Project above it, by identity.
   * Spark's column pruning, which runs before this rule, puts a Project above a join whose
   * output is not all read; a join without one counts as having all its output read.
   */
  private def columnsRead(
      plan: LogicalPlan): java.util.IdentityHashMap[LogicalPlan, AttributeSet] = {
    val read = new java.util.IdentityHashMap[LogicalPlan, AttributeSet]()
    plan.foreach {
      case project @ Project(_, join: Join) => read.put(join, project.references)
      case _ =>
    }
    read
  }

  /**
   * `join` collapsed with the chain below it, with the verdicts on it; or why it stays as Spark
   * planned it. `read` are the columns of its output the plan above it reads.
   */
  private def collapse(
      join: Join,
      read: AttributeSet,
      nextOperatorId: Iterator[Long],
      eligibility: Eligibility,
      ttls: StateTtls): Either[FusionVerdict, (LogicalPlan, Seq[FusionVerdict])] =
    if (!continuesChain(join)) {
      Left(NondeterministicCondition(join.condition.map(_.sql).getOrElse("")))
    } else {
      val (chain, madeInner) = ChainFlattening.flatten(join)
      val groupSize = MultiJoinConf.maxTables(conf).getOrElse(chain.inputs.length)
      for {
        groups <- KeyGroups.of(chain, eligibility)
        tree <- OuterTreeChecks.joinTree(chain, groups.head, groupSize)
        assembled <- PlanAssembly.joinedGroups(read, chain, groups, tree, groupSize,
          nextOperatorId)
      } yield {
        val (joined, operatorIds) = assembled
        val (withTtls, ttlsNotApplied) = ttls.applied(joined)
        val fused = collapsed(chain, groups, operatorIds, eligibility)
        (PlanAssembly.withOutputOf(join, withTtls, chain),
          unboundedInputs(withTtls) ++ ttlsNotApplied ++ (fused +: madeInner))
      }
    }

  /** What fused of `chain`: `groups`, into the multi-joins of `operatorIds` (per group). */
  private def collapsed(
      chain: Chain,
      groups: Seq[KeyGroup],
      operatorIds: Seq[Seq[Long]],
      eligibility: Eligibility): Collapsed = {
    val fused = groups.zip(operatorIds).map { case (group, ids) =>
      FusedGroup(group.inputs.map(input => Input.of(chain.inputs(input))),
        group.keyClasses.map(_.map(_._2.sql)), ids)
    }
    val others = chain.inputs.indices.filterNot(groups.flatMap(_.inputs).contains).map { input =>
      val described = Input.of(chain.inputs(input))
      if (chain.inputs(input).isStreaming) OffTheKey(described) else StaticInput(described)
    }
    Collapsed(fused, others, byHint = eligibility.isInstanceOf[Eligibility.ByHint])
  }

  /**
   * Where some inputs have event times, the state is meant to be bounded: the inputs that no
   * interval condition bounds and no state TTL limits, as their rows then stay in state for good.
   */
  private def unboundedInputs(collapsed: LogicalPlan): Seq[UnboundedInput] =
    collapsed.collect { case multiJoin: MultiJoin => unboundedInputs(multiJoin) }.flatten

  private def unboundedInputs(multiJoin: MultiJoin): Seq[UnboundedInput] = {
    val outputs = multiJoin.children.map(_.output)
    val times = EventTimeBounds.eventTimeColumns(outputs)
    if (times.exists(_.isDefined)) {
      val conjuncts = Conjunct.all(multiJoin.condition, multiJoin.outerConditions)
      val offsets = EventTimeBounds.evictionOffsets(outputs, conjuncts, multiJoin.tree)
      multiJoin.children.indices.collect {
        case input if offsets(input).isEmpty && multiJoin.stateTtlsMs(input).isEmpty =>
          UnboundedInput(multiJoin.operatorId, Input.of(multiJoin.children(input)),
            times(input).map(_.name))
      }
    } else {
      Nil
    }
  }

  private val loggedMessages = ConcurrentHashMap.newKeySet[String]()

  // The optimizer runs on every micro-batch; a verdict is worth reading once.
  private def logOnce(verdict: FusionVerdict): Unit = {
    val message = verdict.message
    if (loggedMessages.add(message)) {
      if (verdict.isWarning) logWarning(message) else logInfo(message)
    }
  }
}
