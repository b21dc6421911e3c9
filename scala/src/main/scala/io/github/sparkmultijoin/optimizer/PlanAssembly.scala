package io.github.sparkmultijoin.optimizer

import io.github.sparkmultijoin.logical.MultiJoin
import io.github.sparkmultijoin.model.{Conjunct, JoinTree}
import io.github.sparkmultijoin.optimizer.FusionVerdict.{Input, MultipleEventTimeColumns}

import org.apache.spark.sql.catalyst.expressions.{Alias, And, AttributeSet, EqualTo, Expression, Literal, NamedExpression}
import org.apache.spark.sql.catalyst.plans.Inner
import org.apache.spark.sql.catalyst.plans.logical.{EventTimeWatermark, Join, JoinHint, LogicalPlan, Project}
import org.apache.spark.sql.multijoin.CatalystShim

/**
 * The plan that replaces a chain: its key groups' multi-joins, with the chain's other inputs
 * joined to them by Spark's joins, under the chain's output.
 *
 * Why it is built this way: the first group's multi-join at the bottom, then the static inputs
 * (they keep no state and may drop rows before a stateful join stores them), then the other
 * groups' multi-joins and the streaming inputs left, each as soon as a condition links it to what
 * is below it rather than as a cross join. Each conjunct goes to the lowest join that has every
 * column it reads. The Projects of the chain are folded into conditions and recomputed on top,
 * so the rest of the plan sees exactly the chain's output.
 */
private[optimizer] object PlanAssembly {

  /**
   * The groups' multi-joins with the chain's other inputs joined to them by Spark's joins, with
   * the operator ids of each group's multi-joins; or why Spark's joins could not run them. `read`
   * are the columns of the chain's output the plan above it reads; `groupSize` the most inputs
   * a multi-join takes.
   */
  def joinedGroups(
      read: AttributeSet,
      chain: Chain,
      groups: Seq[KeyGroup],
      tree: JoinTree,
      groupSize: Int,
      nextOperatorId: Iterator[Long]): Either[FusionVerdict, (LogicalPlan, Seq[Seq[Long]])] = {
    val inputs = chain.inputs
    val (first, afterFirst) = fused(groups.head.inputs.map(inputs), chain.conjuncts,
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
    val operatorIds = (first +: others).map(_.collect { case m: MultiJoin => m.operatorId }.sorted)
    // A part is an input of the chain, named as the chain names it, or a multi-join.
    def described(part: LogicalPlan): Input =
      inputs.indexWhere(_ eq part) match {
        case -1 => Input.of(part)
        case input => chain.described(input)
      }
    joinedAbove(first, static ++ others ++ streaming, pending, neededAbove, described)
      .map(_ -> operatorIds)
  }

  /** `collapsed` with the output attributes of `join`, recomputing the chain's aliases on top. */
  def withOutputOf(join: Join, collapsed: LogicalPlan, chain: Chain): LogicalPlan = {
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
    val normalizedKeys = keys.map(_.map(CatalystShim.normalizeFloatingNumbers))
    // The inputs' state TTLs are set once the chain is assembled (StateTtls).
    (MultiJoin(inputs, normalizedKeys, core, tree, onClauses, nextOperatorId.next(),
      inputs.map(_ => None)), rest)
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
      neededAbove: AttributeSet,
      described: LogicalPlan => Input): Either[FusionVerdict, LogicalPlan] =
    parts.find(linked(below, _, pending)).orElse(parts.headOption) match {
      case None =>
        assert(pending.isEmpty, s"conditions not placed in any join: $pending")
        Right(below)
      case Some(next) =>
        val needed = neededAbove ++ AttributeSet(pending.flatMap(_.expression.references))
        eventTimeProblem(below, next, needed, described) match {
          case Some(problem) => Left(problem)
          case None =>
            val (joined, rest) = binaryJoin(below, next, pending)
            joinedAbove(joined, parts.filterNot(_ eq next), rest, neededAbove, described)
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
      needed: AttributeSet,
      described: LogicalPlan => Input): Option[MultipleEventTimeColumns] =
    if (!below.isStreaming || !next.isStreaming) None
    else {
      Seq(below, next).map(_.output.filter { column =>
        column.metadata.contains(EventTimeWatermark.delayKey) && needed.contains(column)
      }).find(_.length > 1).map { columns =>
        MultipleEventTimeColumns(columns.map(_.name), described(next))
      }
    }
}
