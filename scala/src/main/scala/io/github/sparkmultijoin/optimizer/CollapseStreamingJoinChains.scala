package io.github.sparkmultijoin.optimizer

import java.util.concurrent.ConcurrentHashMap

import scala.collection.mutable

import io.github.sparkmultijoin.analysis.{Conjunct, EventTimeBounds, InputColumns, JoinTree, StateLayout}
import io.github.sparkmultijoin.logical.{MultiJoin, MultiJoinHint}

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.expressions.{Alias, And, Attribute, AttributeSet, EqualTo, ExprId, Expression, IsNotNull, Literal, NamedExpression, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.{FullOuter, Inner, JoinType, LeftOuter, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{EventTimeWatermark, Filter, Join, JoinHint, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.util.UnsafeRowUtils
import org.apache.spark.sql.multijoin.{MultiJoinConf, SparkInternals}
import org.apache.spark.sql.types.DataType

/**
 * Rewrites a chain of streaming joins on one shared key into one [[MultiJoin]].
 *
 * Why: Spark runs `a JOIN b JOIN c ...` as one binary stateful join per JOIN, and every join
 * after the first stores the joined output of the joins below it. With fan-out that state grows
 * with the product of the inputs. One operator over all inputs needs only the input rows.
 *
 * What qualifies: a maximal tree of INNER, LEFT, RIGHT and FULL OUTER joins whose two sides
 * are both streaming (and inner joins of a streaming side with a static one), seen through the
 * deterministic Projects and Filters that Spark's optimizer leaves between joins, whose
 * equi-join conditions put three or more streaming inputs on one key: a class of expressions
 * made equal, directly or transitively, with a member over each (several such classes make a
 * composite key). With outer joins, every input must be streaming and on the key. With inner
 * joins only, which commute and associate, the streaming inputs are grouped by key: one
 * multi-join per group of three or more, the largest first, and the other inputs (static ones
 * first, then the other groups and the streaming inputs left) are joined to it by Spark's own
 * joins. Inner conjuncts not implied by a group's key stay with its multi-join as its
 * condition; each outer input keeps its whole ON clause.
 * With outer joins, the inputs form a [[JoinTree]] ([[outerJoinTree]] says when one can run
 * them). Projects between the joins are folded in (their aliases are substituted into the
 * conditions and recomputed on top), so the rewritten plan has exactly the output attributes of
 * the original and the rest of the plan is untouched.
 *
 * Anything else stays as Spark planned it and the reason is logged once: the extension is
 * disabled, an input is static, a join is of another type, there is no common key, the key's
 * type cannot be compared by its bytes, an outer chain breaks a rule of the tree, one of Spark's
 * stream-stream joins above a multi-join would see more than one event-time column, or the
 * state store cannot hold the state. Where the inputs have event times, an input that no
 * interval condition bounds is warned of. Batch plans are never touched.
 *
 * It runs once, after Spark's operator optimizations (as a pre-CBO rule), so the joins it sees
 * have their filters and projections pushed down (and most outer joins whose nulls a later
 * condition rejects already made inner; [[outerJoinsMadeInner]] does the rest in a chain), and
 * it never sees its own output again.
 */
object CollapseStreamingJoinChains extends Rule[LogicalPlan] with PredicateHelper with Logging {

  /**
   * Operator id of the first multi-join in a plan; the following ones count up from it. Spark
   * numbers its own stateful operators 0, 1, 2, ... so these cannot collide with them, and since
   * they follow the plan's shape they are the same on every micro-batch and after a restart.
   */
  val FirstOperatorId: Long = 1L << 30

  override def apply(plan: LogicalPlan): LogicalPlan = {
    val (rewritten, notes) = rewrite(plan)
    notes.foreach(logOnce)
    rewritten
  }

  /**
   * What the rule says about a plan, logged once each: why a join stays as Spark planned it,
   * what was collapsed, and warnings (as a WARNING) the user should act on.
   */
  case class Note(message: String, isWarning: Boolean = false)

  /** The plan the rule makes of `plan`, with what it has to say about it. */
  def rewrite(hintedPlan: LogicalPlan): (LogicalPlan, Seq[Note]) = {
    val notes = mutable.ArrayBuffer.empty[Note]
    // The MULTI_JOIN hint's inputs, by their output; its node goes from every plan.
    val hinted = hintedPlan.collect { case hint: MultiJoinHint => hint.bound }.flatten
    val plan = hintedPlan.transformUp { case hint: MultiJoinHint => hint.child }
    val named = if (MultiJoinConf.enabled(conf)) None else Some(hinted)
    val rewritten = if (!plan.isStreaming || !plan.exists(isStreamingChainJoin)) {
      plan
    } else if (named.exists(_.isEmpty)) {
      notes += Note(s"Streaming joins run as Spark planned them: ${MultiJoinConf.ENABLED.key} " +
        "is false. Set it to true to run chains of joins on one key as one StreamingMultiJoin " +
        s"(or name a chain's inputs in the ${ResolveMultiJoinHint.HintName} hint).")
      plan
    } else {
      StateLayout.forSession(conf) match {
        case Left(reason) =>
          notes += Note(s"Streaming joins run as Spark planned them: $reason", isWarning = true)
          plan
        case Right(_) =>
          val nextOperatorId = Iterator.iterate(FirstOperatorId)(_ + 1)
          val readOf = columnsRead(plan)
          plan.transformDown {
            case join: Join if isStreamingChainJoin(join) =>
              val read = Option(readOf.get(join)).getOrElse(join.outputSet)
              collapse(join, read, nextOperatorId, notes, named) match {
                case Right(collapsed) => collapsed
                case Left(reason) => notes += Note(reason); join
              }
            case join @ Join(left, right, joinType, _, _)
                if left.isStreaming && right.isStreaming =>
              notes += Note(s"A streaming $joinType join keeps Spark's binary operator: " +
                "multi-joins are of INNER, LEFT OUTER, RIGHT OUTER and FULL OUTER joins.")
              join
          }
      }
    }
    (rewritten, notes.toSeq)
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

  private def isStreamingChainJoin(plan: LogicalPlan): Boolean = plan match {
    case Join(left, right, Inner | LeftOuter | RightOuter | FullOuter, _, _) =>
      left.isStreaming && right.isStreaming
    case _ => false
  }

  /**
   * The inputs and conditions of a chain, with the aliases of the Projects inside it. A conjunct
   * of an outer join's ON clause is owned by the join's input (the null-padded one of a LEFT
   * OUTER join, the right one of a FULL OUTER join); `outerOrder` has those inputs in the order
   * their joins apply, from the bottom of the plan up. `joinedAboveFullOuter` notes an inner
   * input, inner condition or LEFT OUTER join that applies above a FULL OUTER join.
   */
  private class Chain {
    val inputs = mutable.ArrayBuffer.empty[LogicalPlan]
    val outerOrder = mutable.ArrayBuffer.empty[Int]
    val fullOuter = mutable.LinkedHashSet.empty[Int]
    val conjuncts = mutable.ArrayBuffer.empty[Conjunct]
    val aliases = mutable.HashMap.empty[ExprId, Expression]
    var joinedAboveFullOuter = false

    def addInput(input: LogicalPlan): Int = {
      inputs += input
      inputs.length - 1
    }

    def addInnerInput(input: LogicalPlan): Int = {
      joinedAboveFullOuter ||= fullOuter.nonEmpty
      addInput(input)
    }

    def addOuterJoin(padded: Int, condition: Option[Expression]): Unit = {
      joinedAboveFullOuter ||= fullOuter.nonEmpty
      outerOrder += padded
      conjuncts ++= Conjunct.split(condition, Some(padded))
    }

    def addFullOuterJoin(right: Int, condition: Option[Expression]): Unit = {
      fullOuter += right
      outerOrder += right
      conjuncts ++= Conjunct.split(condition, Some(right))
    }

    def addConjuncts(condition: Option[Expression]): Unit = {
      joinedAboveFullOuter ||= fullOuter.nonEmpty
      conjuncts ++= Conjunct.split(condition, None)
    }

    def inline(expression: Expression): Expression = expression.transformUp {
      case attribute: Attribute if aliases.contains(attribute.exprId) => aliases(attribute.exprId)
    }
  }

  /**
   * Whether `plan`, seen through Projects and Filters, is a join the chain can go into: a join of
   * two streaming sides, or an inner join of a streaming side and a static one (which the chain
   * joins by Spark's own stateless join, and around which it fuses the streaming inputs).
   */
  private def continuesChain(plan: LogicalPlan): Boolean = plan match {
    case Project(projectList, child) => projectList.forall(_.deterministic) && continuesChain(child)
    case Filter(condition, child) => condition.deterministic && continuesChain(child)
    case join @ Join(left, right, joinType, condition, _) =>
      val streamStatic = joinType == Inner && left.isStreaming != right.isStreaming
      (isStreamingChainJoin(join) || streamStatic) && condition.forall(_.deterministic)
    case _ => false
  }

  private def flatten(plan: LogicalPlan, chain: Chain): Unit = plan match {
    case Join(left, right, Inner, condition, _) if continuesChain(plan) =>
      flatten(left, chain)
      flatten(right, chain)
      chain.addConjuncts(condition)
    case Join(left, right, LeftOuter, condition, _) if continuesChain(plan) =>
      flatten(left, chain)
      chain.addOuterJoin(chain.addInput(right), condition)
    case Join(left, right, RightOuter, condition, _) if continuesChain(plan) =>
      // The same as a LEFT OUTER join with the sides swapped; the output keeps their order.
      val padded = chain.addInput(left)
      flatten(right, chain)
      chain.addOuterJoin(padded, condition)
    case Join(left, right, FullOuter, condition, _) if continuesChain(plan) =>
      flatten(left, chain)
      chain.addFullOuterJoin(chain.addInput(right), condition)
    case Project(projectList, child) if continuesChain(plan) =>
      flatten(child, chain)
      projectList.foreach {
        case alias: Alias => chain.aliases(alias.exprId) = chain.inline(alias.child)
        case _ =>
      }
    case Filter(condition, child) if continuesChain(plan) =>
      flatten(child, chain)
      chain.addConjuncts(Some(condition))
    case input =>
      chain.addInnerInput(input)
  }

  /**
   * `plan` with the outer joins of its chain made inner where a condition applied above them
   * rejects their null-padded rows; `rejected` are the columns whose nulls a condition above
   * `plan` rejects.
   *
   * Why: a conjunct of an inner join or a filter that is null wherever a column of an outer join's
   * padded side is null drops every padded row, so the outer join gives the rows an inner join
   * gives. Spark's EliminateOuterJoin makes such joins inner for the filters right above them,
   * which include the IS NOT NULL filters that Spark infers, once, from the conditions above. A
   * join that Spark itself makes inner only after that inference gets no such filter below it,
   * and the outer join under it stays: its padded side is then read by an inner condition, which
   * one multi-join cannot run. It follows the chain as `flatten` does, so nothing outside the
   * chain changes.
   */
  private def outerJoinsMadeInner(
      plan: LogicalPlan,
      rejected: AttributeSet,
      converted: mutable.Buffer[Note]): LogicalPlan =
    plan match {
      case join @ Join(left, right, joinType, condition, _) if continuesChain(join) =>
        def padsRejected(side: LogicalPlan) = rejected.intersect(side.outputSet).nonEmpty
        // A FULL OUTER join whose right side only is rejected stays: as a RIGHT OUTER join it
        // would flatten another way, and the rule runs nothing inner above a FULL OUTER join.
        val kept = (joinType, padsRejected(left), padsRejected(right)) match {
          case (LeftOuter, _, true) | (RightOuter, true, _) | (FullOuter, true, true) => Inner
          case (FullOuter, true, false) => LeftOuter
          case _ => joinType
        }
        if (kept != joinType) converted += madeInnerNote(join, kept, padsRejected)
        // An outer join's ON clause pads the rows it does not match instead of dropping them.
        val below = if (kept == Inner) rejected ++ nullRejectedColumns(condition) else rejected
        def within(side: LogicalPlan) =
          outerJoinsMadeInner(side, below.intersect(side.outputSet), converted)
        kept match {
          case Inner => join.copy(left = within(left), right = within(right), joinType = Inner)
          case RightOuter => join.copy(right = within(right))
          case _ => join.copy(left = within(left), joinType = kept)
        }
      case project @ Project(projectList, child) if continuesChain(project) =>
        val rejectedBelow = projectList.flatMap {
          case attribute: Attribute if rejected.contains(attribute) => Seq(attribute)
          case alias: Alias if rejected.contains(alias.toAttribute) =>
            nullIntolerantColumns(alias.child)
          case _ => Nil
        }
        project.copy(child = outerJoinsMadeInner(child, AttributeSet(rejectedBelow), converted))
      case filter @ Filter(condition, child) if continuesChain(filter) =>
        filter.copy(child =
          outerJoinsMadeInner(child, rejected ++ nullRejectedColumns(Some(condition)), converted))
      case input => input
    }

  private def madeInnerNote(join: Join, kept: JoinType, rejected: LogicalPlan => Boolean): Note = {
    val padded = join.joinType match {
      case LeftOuter => Seq(join.right)
      case RightOuter => Seq(join.left)
      case _ => Seq(join.left, join.right).filter(rejected)
    }
    val runsAs = if (kept == Inner) "an INNER" else s"a ${kept.sql}"
    Note(s"The ${join.joinType.sql} join that pads ${padded.map(describe).mkString(" and ")} " +
      s"with nulls runs as $runsAs join: a condition above it rejects those null-padded rows " +
      "(Spark's optimizer does the same where that condition is a filter right above the join).")
  }

  /** The columns whose nulls make a conjunct of `condition` null or false, dropping the row. */
  private def nullRejectedColumns(condition: Option[Expression]): AttributeSet =
    AttributeSet(condition.toSeq.flatMap(splitConjunctivePredicates).flatMap {
      case IsNotNull(child) => nullIntolerantColumns(child)
      case conjunct => nullIntolerantColumns(conjunct)
    })

  /** The columns of `expression` that make it null where they are null (as Spark infers them). */
  private def nullIntolerantColumns(expression: Expression): Seq[Attribute] = expression match {
    case attribute: Attribute => Seq(attribute)
    case other if other.nullIntolerant => other.children.flatMap(nullIntolerantColumns)
    case _ => Nil
  }

  /**
   * `join` collapsed with the chain below it, or why it stays as Spark planned it. `read` are
   * the columns of its output the plan above it reads.
   */
  private def collapse(
      join: Join,
      read: AttributeSet,
      nextOperatorId: Iterator[Long],
      notes: mutable.Buffer[Note],
      named: Option[Seq[Set[ExprId]]]): Either[String, LogicalPlan] = {
    if (!continuesChain(join)) {
      return Left(s"A streaming join stays as Spark planned it: its condition is not " +
        s"deterministic: ${join.condition.map(_.sql).getOrElse("")}")
    }
    val chain = new Chain
    val madeInner = mutable.ArrayBuffer.empty[Note]
    flatten(outerJoinsMadeInner(join, AttributeSet.empty, madeInner), chain)
    val conjuncts = chain.conjuncts.map(c => c.copy(expression = chain.inline(c.expression))).toSeq
    val groupSize = MultiJoinConf.maxTables(conf).getOrElse(chain.inputs.length)
    for {
      groups <- keyGroups(chain, conjuncts, named)
      tree <- joinTree(chain, groups.head.inputs, conjuncts, groups.head.keyClasses, groupSize)
      joined <- joinedGroups(read, chain, groups, conjuncts, tree, groupSize, nextOperatorId)
    } yield {
      notes ++= unboundedInputWarnings(joined)
      notes += collapsedNote(chain.inputs.toSeq, groups, named)
      notes ++= madeInner
      withOutputOf(join, joined, chain)
    }
  }

  /** Streaming inputs of a chain (by index) one multi-join takes, and the classes of its key. */
  private case class KeyGroup(inputs: Seq[Int], keyClasses: Seq[EquivalentKeys.KeyClass])

  private def collapsedNote(
      inputs: Seq[LogicalPlan],
      groups: Seq[KeyGroup],
      named: Option[Seq[Set[ExprId]]]): Note = {
    val fused = groups.map { group =>
      s"${group.inputs.map(i => describe(inputs(i))).mkString(", ")} on " +
        s"${group.keyClasses.length} key column(s)"
    }
    val others = inputs.indices.filterNot(groups.flatMap(_.inputs).contains).map { input =>
      val reason =
        if (inputs(input).isStreaming) "does not share the key of three or more streaming inputs"
        else "is static"
      s"${describe(inputs(input))} $reason"
    }
    Note(s"Collapsed a chain of ${inputs.length} joins into ${groups.length} multi-join(s) of " +
      s"streaming inputs: ${fused.mkString("; ")}" +
      (if (others.isEmpty) "" else s". Joined by Spark's joins: ${others.mkString(", ")}.") +
      named.map(_ => s" (by the ${ResolveMultiJoinHint.HintName} hint)").getOrElse(""))
  }

  /**
   * The key groups of a chain, the first to be joined as its [[JoinTree]], or why there is none.
   * With outer joins, one group of every input (all streaming) on a key spanning them all. With
   * inner joins only, which commute and associate, the streaming inputs sharing the key class
   * that has members over the most of them, at least three; then, from the streaming inputs
   * left, the next such group, and so on; the other inputs join above them. Only the inputs the
   * MULTI_JOIN hint `named`, where that is what enables the rule.
   */
  private def keyGroups(
      chain: Chain,
      conjuncts: Seq[Conjunct],
      named: Option[Seq[Set[ExprId]]]): Either[String, Seq[KeyGroup]] = {
    val inputs = chain.inputs.toSeq
    lazy val names = inputs.map(describe).mkString(", ")
    val isNamed = (input: Int) =>
      named.forall(_.exists { ids =>
        inputs(input).collectLeaves().exists(_.output.exists(column => ids(column.exprId)))
      })
    if (chain.outerOrder.nonEmpty && !inputs.indices.forall(isNamed)) {
      return Left(s"A chain of streaming joins with outer joins stays as Spark planned it: the " +
        s"${ResolveMultiJoinHint.HintName} hint does not name all its inputs ($names).")
    }
    val streaming = inputs.indices.filter(input => inputs(input).isStreaming && isNamed(input))
    if (streaming.length < 3) {
      return Left(s"A streaming join of two inputs stays as Spark planned it: Spark's join of " +
        s"two inputs already keeps only input rows ($names).")
    }
    if (chain.outerOrder.nonEmpty && streaming.length < inputs.length) {
      return Left(s"A chain of streaming joins with outer joins and a static input stays as " +
        s"Spark planned it ($names).")
    }
    val classes = EquivalentKeys.all(inputs, conjuncts.map(_.expression))
    val first = largestGroup(classes, streaming.toSet)
    if (first.inputs.length < 3 ||
      (chain.outerOrder.nonEmpty && first.inputs.length < inputs.length)) {
      return Left(s"A chain of ${inputs.length} streaming joins stays as Spark planned it: no " +
        s"common key, the equi-join conditions do not make one key equal across three or more " +
        s"streaming inputs ($names). Conditions: " +
        conjuncts.map(_.expression.sql).mkString(" AND "))
    }
    unstableKeyType(first).foreach { dataType =>
      return Left(s"A chain of ${inputs.length} streaming joins stays as Spark planned it: " +
        s"its key type ${dataType.sql} cannot be compared by its bytes ($names).")
    }
    Right(first +: moreKeyGroups(classes, streaming.toSet -- first.inputs))
  }

  /** The inputs of `candidates` in the key class with members over the most of them. */
  private def largestGroup(
      classes: Seq[EquivalentKeys.KeyClass],
      candidates: Set[Int]): KeyGroup = {
    val group = classes.map(_.map(_._1).toSet.intersect(candidates)).maxByOption(_.size)
      .getOrElse(Set.empty[Int])
    val keyClasses = classes.filter(keyClass => group.subsetOf(keyClass.map(_._1).toSet))
      .map(_.filter { case (input, _) => group(input) })
    KeyGroup(group.toSeq.sorted, keyClasses)
  }

  /** The groups of three or more of the streaming inputs `left` on a key, largest first. */
  private def moreKeyGroups(
      classes: Seq[EquivalentKeys.KeyClass],
      left: Set[Int]): Seq[KeyGroup] = {
    val group = largestGroup(classes, left)
    if (group.inputs.length < 3 || unstableKeyType(group).isDefined) Nil
    else group +: moreKeyGroups(classes, left -- group.inputs)
  }

  private def unstableKeyType(group: KeyGroup): Option[DataType] =
    group.keyClasses.map(_.head._2.dataType).find(!UnsafeRowUtils.isBinaryStable(_))

  /**
   * The groups' multi-joins with the chain's other inputs joined to them by Spark's joins, or why
   * Spark's joins could not run them: the first group's multi-join at the bottom, then the static
   * inputs (they keep no state and may drop rows before a stateful join stores them), then the
   * other groups' multi-joins and the streaming inputs left, each as soon as a condition links it
   * to what is below it.
   */
  private def joinedGroups(
      read: AttributeSet,
      chain: Chain,
      groups: Seq[KeyGroup],
      conjuncts: Seq[Conjunct],
      tree: JoinTree,
      groupSize: Int,
      nextOperatorId: Iterator[Long]): Either[String, LogicalPlan] = {
    val inputs = chain.inputs.toSeq
    val (first, afterFirst) = fused(groups.head.inputs.map(inputs), conjuncts,
      groups.head.keyClasses, tree, groupSize, nextOperatorId)
    val (others, pending) = groups.tail.foldLeft((Seq.empty[LogicalPlan], afterFirst)) {
      case ((plans, pending), group) =>
        val (plan, rest) = fused(group.inputs.map(inputs), pending, group.keyClasses,
          JoinTree.inner(groupSize min group.inputs.length), groupSize, nextOperatorId)
        (plans :+ plan, rest)
    }
    val (static, streaming) = inputs.indices.filterNot(groups.flatMap(_.inputs).contains)
      .map(inputs).partition(!_.isStreaming)
    val neededAbove = AttributeSet(read.toSeq.flatMap { attribute =>
      chain.aliases.get(attribute.exprId).map(_.references.toSeq).getOrElse(Seq(attribute))
    })
    joinedAbove(first, static ++ others ++ streaming, pending, neededAbove)
  }

  /**
   * `below` and `parts` joined by Spark's inner joins, each part as soon as a conjunct of
   * `pending` links it to what is below it, or why Spark's joins could not run them.
   * `neededAbove` are the columns the plan above the chain reads.
   */
  @scala.annotation.tailrec
  private def joinedAbove(
      below: LogicalPlan,
      parts: Seq[LogicalPlan],
      pending: Seq[Conjunct],
      neededAbove: AttributeSet): Either[String, LogicalPlan] =
    parts.find(linked(below, _, pending)).orElse(parts.headOption) match {
      case None =>
        assert(pending.isEmpty, s"conditions not placed in any join: $pending")
        Right(below)
      case Some(next) =>
        val needed = neededAbove ++ AttributeSet(pending.flatMap(_.expression.references))
        eventTimeProblem(below, next, needed) match {
          case Some(problem) => Left(problem)
          case None =>
            val (joined, rest) = binaryJoin(below, next, pending)
            joinedAbove(joined, parts.filterNot(_ eq next), rest, neededAbove)
        }
    }

  private def linked(below: LogicalPlan, part: LogicalPlan, pending: Seq[Conjunct]): Boolean =
    pending.exists { conjunct =>
      val references = conjunct.expression.references
      references.subsetOf(below.outputSet ++ part.outputSet) &&
      references.intersect(below.outputSet).nonEmpty &&
      references.intersect(part.outputSet).nonEmpty
    }

  /**
   * Why Spark's stream-stream join of `below` and `next` could not run, if so: a side of it
   * would carry more than one event-time column that it or the plan above it reads (`needed`;
   * Spark prunes the others), and Spark's stateful operators take one
   * (MULTIPLE_EVENT_TIME_COLUMNS). Spark's chain then fails too, unless its joins saw the
   * columns in another order; it is left to try.
   */
  private def eventTimeProblem(
      below: LogicalPlan,
      next: LogicalPlan,
      needed: AttributeSet): Option[String] =
    if (!below.isStreaming || !next.isStreaming) None
    else {
      Seq(below, next).map(_.output.filter { column =>
        column.metadata.contains(EventTimeWatermark.delayKey) && needed.contains(column)
      }).find(_.length > 1).map { columns =>
        s"A chain of streaming joins stays as Spark planned it: its inputs outside a " +
          s"multi-join are joined by Spark's stream-stream join, which would see the event-time " +
          s"columns ${columns.map(_.name).mkString(", ")} on one side and takes only one. Drop " +
          s"all but one of them before ${describe(next)} is joined, or join it on the key."
      }
    }

  /** How the group's inputs are joined, or why one multi-join cannot run them. */
  private def joinTree(
      chain: Chain,
      group: Seq[Int],
      conjuncts: Seq[Conjunct],
      keyClasses: Seq[EquivalentKeys.KeyClass],
      groupSize: Int): Either[String, JoinTree] =
    if (chain.outerOrder.isEmpty) {
      Right(JoinTree.inner(groupSize min group.length))
    } else {
      val inputs = chain.inputs.toSeq
      outerJoinTree(inputs, chain, conjuncts, keyClasses, groupSize).left.map { problem =>
        s"A chain of ${inputs.length} streaming joins with outer joins stays as Spark planned " +
          s"it: $problem (${inputs.map(describe).mkString(", ")})."
      }
    }

  /**
   * The multi-joins of `inputs`: one, or with max-tables below their number, one of the first
   * `groupSize` inputs with the next ones joined above it `groupSize - 1` at a time (a last one
   * left over by Spark's join); with the conjuncts left for the joins above.
   */
  private def fused(
      inputs: Seq[LogicalPlan],
      conjuncts: Seq[Conjunct],
      keyClasses: Seq[EquivalentKeys.KeyClass],
      tree: JoinTree,
      groupSize: Int,
      nextOperatorId: Iterator[Long]): (LogicalPlan, Seq[Conjunct]) = {
    val firstGroup = multiJoin(inputs.take(groupSize), conjuncts, keyClasses, tree, nextOperatorId)
    inputs.drop(groupSize).grouped(groupSize - 1)
      .foldLeft[(LogicalPlan, Seq[Conjunct])](firstGroup) {
        case ((below, pending), Seq(last)) => binaryJoin(below, last, pending)
        case ((below, pending), group) =>
          multiJoin(below +: group, pending, keyClasses, JoinTree.inner(group.length + 1),
            nextOperatorId)
      }
  }

  /**
   * A multi-join of `inputs` joined as `tree`, with the conjuncts of `pending` that only its
   * inputs reference, and the conjuncts left for the multi-joins above it.
   */
  private def multiJoin(
      inputs: Seq[LogicalPlan],
      pending: Seq[Conjunct],
      keyClasses: Seq[EquivalentKeys.KeyClass],
      tree: JoinTree,
      nextOperatorId: Iterator[Long]): (MultiJoin, Seq[Conjunct]) = {
    val output = AttributeSet(inputs.flatMap(_.output))
    val (placed, rest) = pending.partition(_.expression.references.subsetOf(output))
    val keys = inputs.map { input =>
      keyClasses.map { members =>
        members.collectFirst {
          case (_, member) if member.references.subsetOf(input.outputSet) => member
        }.get
      }
    }
    // Owners index the chain's inputs, which are this multi-join's inputs when there are outer
    // joins (such chains are never split). An ON clause keeps its key equalities: where the
    // input they equate it to is padded, they are what makes it match nothing.
    val core = placed.filter(_.outerInput.isEmpty).map(_.expression)
      .filterNot(impliedByKeys(_, keys)).reduceOption(And)
    val onClauses = inputs.indices.map { input =>
      placed.filter(_.outerInput.contains(input)).map(_.expression).reduceOption(And)
        .getOrElse(Literal.TrueLiteral)
    }
    val normalizedKeys = keys.map(_.map(SparkInternals.normalizeFloatingNumbers))
    (MultiJoin(inputs, normalizedKeys, core, tree, onClauses, nextOperatorId.next()), rest)
  }

  /**
   * Spark's join of `below` and the one input left over when max-tables splits a chain, with the
   * conjuncts of `pending` they reference (its key equalities among them): a multi-join of two
   * inputs would keep the same rows as Spark's.
   */
  private def binaryJoin(
      below: LogicalPlan,
      last: LogicalPlan,
      pending: Seq[Conjunct]): (LogicalPlan, Seq[Conjunct]) = {
    val output = below.outputSet ++ last.outputSet
    val (placed, rest) = pending.partition(_.expression.references.subsetOf(output))
    (Join(below, last, Inner, placed.map(_.expression).reduceOption(And), JoinHint.NONE), rest)
  }

  /**
   * How a chain with outer joins joins its inputs ([[JoinTree]]), or why one multi-join cannot
   * run it. Null-padded rows come out once the deciding inputs' rows can join no row to come, so
   * every input must be bounded in event time. The inner joins' conditions may not read an outer
   * input (its nulls would reach them; the outer joins whose padded rows such a condition rejects
   * are inner by now: [[outerJoinsMadeInner]]). And every join must equate the key itself, as the
   * multi-join looks every input's rows up by the shared key: an outer input's ON clause to an
   * input joined before it, the inner joins among the inner inputs. FULL OUTER joins have rules
   * of their own ([[fullOuterProblem]]).
   */
  private def outerJoinTree(
      inputs: Seq[LogicalPlan],
      chain: Chain,
      conjuncts: Seq[Conjunct],
      keyClasses: Seq[EquivalentKeys.KeyClass],
      groupSize: Int): Either[String, JoinTree] = {
    if (groupSize < inputs.length) {
      return Left(s"${MultiJoinConf.MAX_TABLES.key} = $groupSize would split it")
    }
    if (MultiJoinConf.stateTtlMs(conf).isDefined) {
      return Left(s"${MultiJoinConf.STATE_TTL.key} is set, and a TTL would drop rows that " +
        "null-padded rows are decided by; unset it to run outer joins as one multi-join")
    }
    fullOuterProblem(inputs, chain, conjuncts).foreach(problem => return Left(problem))
    val outerOrder = chain.outerOrder.toSeq
    val columns = new InputColumns(inputs.map(_.output))
    val inner = inputs.indices.filterNot(outerOrder.contains)
    conjuncts.find { conjunct =>
      conjunct.outerInput.isEmpty &&
      columns.inputsOf(conjunct.expression).exists(outerOrder.contains)
    }.foreach { conjunct =>
      return Left(s"${conjunct.expression.sql} uses the null-padded side of an outer join")
    }
    innerKeyProblem(inputs, inner, conjuncts, keyClasses).foreach(problem => return Left(problem))
    val joinOrder = inner ++ outerOrder
    val parents = outerOrder.zipWithIndex.map { case (outer, place) =>
      val joinedBefore = joinOrder.take(inner.length + place)
      val onClause = conjuncts.filter(_.outerInput.contains(outer)).map(_.expression)
      outerKeyProblem(inputs, outer, onClause, joinedBefore, keyClasses)
        .foreach(problem => return Left(problem))
      val reads = onClause.flatMap(columns.inputsOf).toSet - outer
      outer -> joinedBefore.filter(reads).lastOption.getOrElse(inner.head)
    }.toMap
    val tree = JoinTree(inputs.indices.map(parents.get), outerOrder, chain.fullOuter.toSet)
    val offsets = EventTimeBounds.evictionOffsets(inputs.map(_.output), conjuncts, tree)
    if (offsets.exists(_.isEmpty)) {
      return Left("an outer join's null-padded rows come out once the watermark shows a row " +
        "can no longer match, which needs watermarks and interval conditions bounding every " +
        "input's event time")
    }
    Right(tree)
  }

  /**
   * Why a chain's FULL OUTER joins cannot run in one multi-join, if so. A FULL OUTER join pads
   * every input joined before it, so only FULL OUTER joins may apply above it: an inner join or
   * condition above it would read those nulls, and a LEFT OUTER join above it would need a tree
   * of its own. Its ON clause must be false wherever an input it reads is padded (as comparisons
   * are): a row of the joins before it then matches only with its inputs' own rows, which the
   * operator keeps while they can match.
   */
  private def fullOuterProblem(
      inputs: Seq[LogicalPlan],
      chain: Chain,
      conjuncts: Seq[Conjunct]): Option[String] =
    if (chain.joinedAboveFullOuter) {
      Some("an inner join, a filter or a LEFT OUTER join applies above a FULL OUTER join; " +
        "only FULL OUTER joins may follow one")
    } else {
      conjuncts.find { conjunct =>
        conjunct.outerInput.exists(chain.fullOuter) &&
        !EventTimeBounds.nullWhenAnyColumnIsNull(conjunct.expression)
      }.map { conjunct =>
        s"the FULL OUTER join of ${describe(inputs(conjunct.outerInput.get))} has a condition " +
          s"that can hold where a column it reads is null: ${conjunct.expression.sql}"
      }
    }

  /** Why the inner inputs do not share the key through the inner joins' conditions, if so. */
  private def innerKeyProblem(
      inputs: Seq[LogicalPlan],
      inner: Seq[Int],
      conjuncts: Seq[Conjunct],
      keyClasses: Seq[Seq[(Int, Expression)]]): Option[String] = {
    lazy val innerClasses = EquivalentKeys.spanning(inner.map(inputs),
      conjuncts.filter(_.outerInput.isEmpty).map(_.expression))
    keyClasses.find { members =>
      val innerMembers = members.filter { case (input, _) => inner.contains(input) }.map(_._2)
      inner.length > 1 && !innerClasses.exists { innerClass =>
        innerMembers.forall(member => innerClass.exists(_._2.semanticEquals(member)))
      }
    }.map { members =>
      s"the inner joins do not equate the key (${members.map(_._2.sql).mkString(", ")}) " +
        "among the inner inputs themselves"
    }
  }

  /** Why `outer`'s ON clause does not equate its key to an input joined before it, if so. */
  private def outerKeyProblem(
      inputs: Seq[LogicalPlan],
      outer: Int,
      onClause: Seq[Expression],
      joinedBefore: Seq[Int],
      keyClasses: Seq[Seq[(Int, Expression)]]): Option[String] =
    keyClasses.find { members =>
      def memberOf(side: Expression, of: Int => Boolean) =
        members.exists { case (input, member) => of(input) && member.semanticEquals(side) }
      !onClause.exists {
        case EqualTo(left, right) =>
          (memberOf(left, _ == outer) && memberOf(right, joinedBefore.contains)) ||
          (memberOf(right, _ == outer) && memberOf(left, joinedBefore.contains))
        case _ => false
      }
    }.map { members =>
      s"the ON clause of ${describe(inputs(outer))} does not equate its key " +
        s"(${members.map(_._2.sql).mkString(", ")}) to that of an input joined before it"
    }

  /** Whether `conjunct` equates two inputs' keys at the same position, which the join enforces. */
  private def impliedByKeys(conjunct: Expression, keys: Seq[Seq[Expression]]): Boolean = {
    def position(side: Expression): Set[Int] = keys.flatMap(_.zipWithIndex.collect {
      case (key, index) if key.semanticEquals(side) => index
    }).toSet
    conjunct match {
      case EqualTo(left, right) => position(left).intersect(position(right)).nonEmpty
      case _ => false
    }
  }

  /** `collapsed` with the output attributes of `join`, recomputing the chain's aliases on top. */
  private def withOutputOf(join: Join, collapsed: LogicalPlan, chain: Chain): LogicalPlan = {
    val projectList: Seq[NamedExpression] = join.output.map { attribute =>
      chain.aliases.get(attribute.exprId) match {
        case Some(expression) =>
          Alias(expression, attribute.name)(attribute.exprId, attribute.qualifier)
        case None => attribute
      }
    }
    if (projectList == collapsed.output) collapsed else Project(projectList, collapsed)
  }

  /**
   * Where some inputs have event times, the state is meant to be bounded: say which inputs no
   * interval condition bounds, as their rows then stay in state for good.
   */
  private def unboundedInputWarnings(collapsed: LogicalPlan): Seq[Note] =
    collapsed.collect { case multiJoin: MultiJoin => unboundedInputWarnings(multiJoin) }.flatten

  private def unboundedInputWarnings(multiJoin: MultiJoin): Seq[Note] = {
    val outputs = multiJoin.children.map(_.output)
    val times = EventTimeBounds.eventTimeColumns(outputs)
    if (times.exists(_.isDefined)) {
      val conjuncts = Conjunct.all(multiJoin.condition, multiJoin.outerConditions)
      EventTimeBounds.evictionOffsets(outputs, conjuncts, multiJoin.tree)
        .zip(multiJoin.children)
        .zip(times).collect { case ((None, input), time) =>
          val why = if (time.isEmpty) "it has no event-time column with a watermark"
          else
            s"no interval condition bounds ${time.get.name} against every other input's event " +
              "time, directly or through other inputs"
          Note(s"Input ${describe(input)} of a streaming multi-join is unbounded: $why, so its " +
              "rows are kept in state for good.", isWarning = true)
        }
    } else {
      Nil
    }
  }

  private def describe(input: LogicalPlan): String =
    input.output.map(_.name).mkString("[", ", ", "]")

  private val loggedMessages = ConcurrentHashMap.newKeySet[String]()

  // The optimizer runs on every micro-batch; a note is worth reading once.
  private def logOnce(note: Note): Unit =
    if (loggedMessages.add(note.message)) {
      if (note.isWarning) logWarning(note.message) else logInfo(note.message)
    }
}
