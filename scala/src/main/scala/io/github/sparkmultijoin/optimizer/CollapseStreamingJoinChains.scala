package io.github.sparkmultijoin.optimizer

import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import scala.collection.mutable

import io.github.sparkmultijoin.logical.{MultiJoin, MultiJoinHint}
import io.github.sparkmultijoin.model.{Conjunct, EventTimeBounds, StateLayoutVersion}
import io.github.sparkmultijoin.optimizer.ChainFlattening.{continuesChain, isStreamingChainJoin}
import io.github.sparkmultijoin.optimizer.FusionVerdict._
import io.github.sparkmultijoin.ttl.{StateTtlHint, StateTtls}

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.expressions.AttributeSet
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.multijoin.{MicroBatchShim, MultiJoinConf, RealTimeModeShim}

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
 * clause. With outer joins, the inputs form a [[io.github.sparkmultijoin.model.JoinTree]]
 * ([[OuterTreeChecks]] says when one can run them). The rewritten plan has exactly the output
 * attributes of the original and the rest of the plan is untouched.
 *
 * What it decided is a [[FusionVerdict]] each, attached to the plan (for EXPLAIN) and logged once
 * a query: what fused, why anything else stays as Spark planned it, and warnings (an input that
 * no interval condition bounds, a state store that cannot hold the state). Batch plans are never
 * touched.
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
    val run = MicroBatchShim.current.map(_.runId)
    verdicts.foreach(logOnce(run, _))
    rewritten
  }

  /**
   * The plan the rule makes of `hintedPlan`, and its verdicts, which are also on the plan
   * ([[FusionVerdict.Tag]]): each chain's on the node that stands for it (the chain's top join
   * where it stays, and the plan that replaces it and its multi-joins where it collapses), and
   * those on the whole plan on each of its streaming joins.
   */
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
      onStreamingJoins(plan, ConfDisabled)
    } else if (realTimeModeRefusal.isDefined) {
      onStreamingJoins(plan, RealTimeModeUnsupported(realTimeModeRefusal.get))
    } else {
      StateLayoutVersion.forSession(conf) match {
        case Left(reason) => onStreamingJoins(plan, StoreUnsupported(reason))
        case Right(_) => collapseAll(plan, eligibility, ttls)
      }
    }
  }

  /** Why this line keeps Spark's joins, where the query being planned runs in real-time mode. */
  private def realTimeModeRefusal: Option[String] =
    RealTimeModeShim.realTimeModeRefusal
      .filter(_ => MicroBatchShim.current.exists(_.isRealTimeMode))

  /** `plan`, each of its streaming joins tagged with `verdict`, which is about them all. */
  private def onStreamingJoins(
      plan: LogicalPlan,
      verdict: FusionVerdict): (LogicalPlan, Seq[FusionVerdict]) = {
    plan.foreach {
      case join: Join if join.left.isStreaming && join.right.isStreaming =>
        tagged(join, Seq(verdict))
      case _ =>
    }
    (plan, Seq(verdict))
  }

  /**
   * `plan`, tagged with `verdicts`, and so are its multi-joins that carry no verdict yet and,
   * where it is a join, its condition. Why those too: later rules may replace the top node by a
   * copy without its tags (RemoveRedundantAliases copies every Join), while a multi-join, and a
   * condition no rule rewrites, stay the same objects, or are rewritten by transforms, which copy
   * tags. A multi-join's own verdict stays where a join of the plan above it is judged as a
   * chain of its own.
   */
  private def tagged(plan: LogicalPlan, verdicts: Seq[FusionVerdict]): LogicalPlan = {
    plan.setTagValue(Tag, verdicts)
    plan.foreach {
      case multiJoin: MultiJoin if multiJoin.getTagValue(Tag).isEmpty =>
        multiJoin.setTagValue(Tag, verdicts)
      case _ =>
    }
    plan match {
      case join: Join => join.condition.foreach(_.setTagValue(Tag, verdicts))
      case _ =>
    }
    plan
  }

  /**
   * Every chain of `plan` collapsed where it can be, top down, with the verdicts on each.
   *
   * The walk goes on into the plan that replaces a chain, for the joins inside its inputs; the
   * joins of Spark that plan puts above its multi-joins (to its static inputs, its inputs off the
   * key, another group's multi-join, the input max-tables leaves over) are not judged again: they
   * are the chain's, and its COLLAPSED verdict already says which inputs they join and why.
   * Judged as a chain of their own, they would be reported as one more chain, of a multi-join's
   * output and the chain's own inputs, that "stays as Spark planned it". They carry the chain's
   * verdicts instead, and so do their conditions: those are the query's own expressions, which
   * may still carry the verdicts of an earlier plan of the query (with the conf off, say).
   */
  private def collapseAll(
      plan: LogicalPlan,
      eligibility: Eligibility,
      ttls: StateTtls): (LogicalPlan, Seq[FusionVerdict]) = {
    val verdicts = mutable.ArrayBuffer.empty[FusionVerdict]
    val nextOperatorId = Iterator.iterate(FirstOperatorId)(_ + 1)
    val readOf = columnsRead(plan)
    val names = new InputNames(plan)
    // The joins the rule assembled around its multi-joins, by identity.
    val assembled = java.util.Collections.newSetFromMap(
      new java.util.IdentityHashMap[LogicalPlan, java.lang.Boolean]())
    val rewritten = plan.transformDown {
      case join: Join if assembled.contains(join) => join
      case join: Join if isStreamingChainJoin(join) =>
        val read = Option(readOf.get(join)).getOrElse(join.outputSet)
        collapse(join, read, nextOperatorId, eligibility, ttls, names) match {
          case Right((collapsed, inputs, said)) =>
            verdicts ++= said
            joinsAbove(collapsed, inputs).foreach { built =>
              assembled.add(built)
              tagged(built, said)
            }
            tagged(collapsed, said)
          case Left(kept) => verdicts += kept; tagged(join, Seq(kept))
        }
      case join @ Join(left, right, joinType, _, _) if left.isStreaming && right.isStreaming =>
        verdicts += UnsupportedJoinType(joinType)
        tagged(join, Seq(UnsupportedJoinType(joinType)))
    }
    (rewritten, verdicts.toSeq)
  }

  /** The joins of `plan` outside its `inputs` (by identity). */
  private def joinsAbove(plan: LogicalPlan, inputs: Seq[LogicalPlan]): Seq[Join] =
    if (inputs.exists(_ eq plan)) Nil
    else {
      val here = plan match {
        case join: Join => Seq(join)
        case _ => Nil
      }
      here ++ plan.children.flatMap(joinsAbove(_, inputs))
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
   * `join` collapsed with the chain below it, with the chain's inputs and the verdicts on it; or
   * why it stays as Spark planned it. `read` are the columns of its output the plan above it
   * reads.
   */
  private def collapse(
      join: Join,
      read: AttributeSet,
      nextOperatorId: Iterator[Long],
      eligibility: Eligibility,
      ttls: StateTtls,
      names: InputNames)
      : Either[FusionVerdict, (LogicalPlan, Seq[LogicalPlan], Seq[FusionVerdict])] =
    if (!continuesChain(join)) {
      Left(NondeterministicCondition(join.condition.map(_.sql).getOrElse("")))
    } else {
      val (chain, madeInner) = ChainFlattening.flatten(join, names)
      val groupSize = MultiJoinConf.maxTables(conf).getOrElse(chain.inputs.length)
      for {
        groups <- KeyGroups.of(chain, eligibility)
        tree <- OuterTreeChecks.joinTree(chain, groups.head, groupSize)
        assembled <- PlanAssembly.joinedGroups(read, chain, groups, tree, groupSize,
          nextOperatorId)
      } yield {
        val (joined, operatorIds) = assembled
        val (withTtls, ttlsNotApplied) = ttls.applied(joined, names)
        val fused = collapsed(chain, groups, operatorIds, eligibility)
        (PlanAssembly.withOutputOf(join, named(withTtls, names), chain), chain.inputs,
          unboundedInputs(withTtls, names) ++ ttlsNotApplied ++ (fused +: madeInner))
      }
    }

  /** `collapsed` with its multi-joins' inputs named, for the errors that name the operator. */
  private def named(collapsed: LogicalPlan, names: InputNames): LogicalPlan =
    collapsed.transformDown {
      case multiJoin: MultiJoin if multiJoin.inputNames.isEmpty =>
        multiJoin.copy(inputNames = multiJoin.children.map(names.of(_).shown))
    }

  /** What fused of `chain`: `groups`, into the multi-joins of `operatorIds` (per group). */
  private def collapsed(
      chain: Chain,
      groups: Seq[KeyGroup],
      operatorIds: Seq[Seq[Long]],
      eligibility: Eligibility): Collapsed = {
    val fused = groups.zip(operatorIds).map { case (group, ids) =>
      FusedGroup(group.inputs.map(chain.described),
        group.keyClasses.map(_.map(_._2.sql)), ids)
    }
    val others = chain.inputs.indices.filterNot(groups.flatMap(_.inputs).contains).map { input =>
      val described = chain.described(input)
      if (chain.inputs(input).isStreaming) OffTheKey(described) else StaticInput(described)
    }
    Collapsed(fused, others, byHint = eligibility.isInstanceOf[Eligibility.ByHint])
  }

  /**
   * Where some inputs have event times, the state is meant to be bounded: the inputs that no
   * interval condition bounds and no state TTL limits, as their rows then stay in state for good.
   */
  private def unboundedInputs(collapsed: LogicalPlan, names: InputNames): Seq[UnboundedInput] =
    collapsed.collect { case multiJoin: MultiJoin => unboundedInputs(multiJoin, names) }.flatten

  private def unboundedInputs(multiJoin: MultiJoin, names: InputNames): Seq[UnboundedInput] = {
    val outputs = multiJoin.children.map(_.output)
    val times = EventTimeBounds.eventTimeColumns(outputs)
    if (times.exists(_.isDefined)) {
      val conjuncts = Conjunct.all(multiJoin.condition, multiJoin.outerConditions)
      val offsets = EventTimeBounds.evictionOffsets(outputs, conjuncts, multiJoin.tree)
      multiJoin.children.indices.collect {
        case input if offsets(input).isEmpty && multiJoin.stateTtlsMs(input).isEmpty =>
          UnboundedInput(multiJoin.operatorId, names.of(multiJoin.children(input)),
            times(input).map(_.name))
      }
    } else {
      Nil
    }
  }

  /** The messages logged, by the run of the streaming query they were logged for (or None). */
  private val loggedMessages = ConcurrentHashMap.newKeySet[(Option[UUID], String)]()

  /**
   * Logs `verdict` unless it was logged for the same run of a streaming query (`run`) already:
   * the optimizer runs on every micro-batch, and a verdict is worth reading once a query. Plans
   * outside a running query (`df.explain()`) log each message once.
   */
  private def logOnce(run: Option[UUID], verdict: FusionVerdict): Unit = {
    val message = verdict.message
    // Forgetting now and then bounds the memory of a driver that starts many queries.
    if (loggedMessages.size > 10000) loggedMessages.clear()
    if (loggedMessages.add(run -> message)) {
      if (verdict.isWarning) logWarning(message) else logInfo(message)
    }
  }
}
