package io.github.sparkmultijoin.optimizer

import scala.collection.mutable

import io.github.sparkmultijoin.model.Conjunct
import io.github.sparkmultijoin.optimizer.FusionVerdict.{Input, OuterJoinMadeInner}

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeSet, ExprId, Expression, IsNotNull, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.{FullOuter, Inner, JoinType, LeftOuter, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, Project}

/**
 * The inputs and conditions of a chain of joins, as one flat list, with the aliases of the
 * Projects inside it.
 *
 * @param inputs               the inputs, in the order their columns appear in the output
 * @param outerOrder           the inputs the outer joins pad (the null-padded one of a LEFT OUTER
 *                             join, the right one of a FULL OUTER join), in the order their joins
 *                             apply, from the bottom of the plan up
 * @param fullOuter            those of them joined FULL OUTER
 * @param conjuncts            the conjuncts of every join and filter, aliases substituted; one of
 *                             an outer join's ON clause is owned by its padded input
 * @param aliases              the Projects' aliases, by the id of the column they define
 * @param joinedAboveFullOuter whether an inner input, inner condition or LEFT OUTER join applies
 *                             above a FULL OUTER join
 * @param described            the inputs as the verdicts name them
 */
private[optimizer] case class Chain(
    inputs: Seq[LogicalPlan],
    outerOrder: Seq[Int],
    fullOuter: Set[Int],
    conjuncts: Seq[Conjunct],
    aliases: Map[ExprId, Expression],
    joinedAboveFullOuter: Boolean,
    described: Seq[Input]) {

  def hasOuterJoins: Boolean = outerOrder.nonEmpty
}

/**
 * Takes a tree of joins, seen through the deterministic Projects and Filters that Spark's
 * optimizer leaves between them, apart into a [[Chain]].
 *
 * Why flat: inner joins commute and associate, and outer joins are decided by their ON clauses
 * alone, so which input joined which in Spark's tree matters only through the conditions. A flat
 * list is what key groups and the multi-join's [[io.github.sparkmultijoin.model.JoinTree]] are
 * derived from.
 */
private[optimizer] object ChainFlattening extends PredicateHelper {

  def isStreamingChainJoin(plan: LogicalPlan): Boolean = plan match {
    case Join(left, right, Inner | LeftOuter | RightOuter | FullOuter, _, _) =>
      left.isStreaming && right.isStreaming
    case _ => false
  }

  /**
   * Whether `plan`, seen through Projects and Filters, is a join the chain can go into: a join of
   * two streaming sides, or an inner join of a streaming side and a static one (which the chain
   * joins by Spark's own stateless join, and around which it fuses the streaming inputs).
   */
  def continuesChain(plan: LogicalPlan): Boolean = plan match {
    case Project(projectList, child) => projectList.forall(_.deterministic) && continuesChain(child)
    case Filter(condition, child) => condition.deterministic && continuesChain(child)
    case join @ Join(left, right, joinType, condition, _) =>
      val streamStatic = joinType == Inner && left.isStreaming != right.isStreaming
      (isStreamingChainJoin(join) || streamStatic) && condition.forall(_.deterministic)
    case _ => false
  }

  /** The chain of `join`, with the outer joins in it that run as inner ones. */
  def flatten(join: Join, names: InputNames): (Chain, Seq[OuterJoinMadeInner]) = {
    val (plan, madeInner) = outerJoinsMadeInner(join, AttributeSet.empty, names)
    val builder = new ChainBuilder
    builder.add(plan)
    (builder.result(names), madeInner)
  }

  /** A chain as flattening finds it, bottom up. */
  private class ChainBuilder {
    private val inputs = mutable.ArrayBuffer.empty[LogicalPlan]
    private val outerOrder = mutable.ArrayBuffer.empty[Int]
    private val fullOuter = mutable.LinkedHashSet.empty[Int]
    private val conjuncts = mutable.ArrayBuffer.empty[Conjunct]
    private val aliases = mutable.HashMap.empty[ExprId, Expression]
    private var joinedAboveFullOuter = false

    def add(plan: LogicalPlan): Unit = plan match {
      case Join(left, right, Inner, condition, _) if continuesChain(plan) =>
        add(left)
        add(right)
        addConjuncts(condition)
      case Join(left, right, LeftOuter, condition, _) if continuesChain(plan) =>
        add(left)
        addOuterJoin(addInput(right), condition)
      case Join(left, right, RightOuter, condition, _) if continuesChain(plan) =>
        // The same as a LEFT OUTER join with the sides swapped; the output keeps their order.
        val padded = addInput(left)
        add(right)
        addOuterJoin(padded, condition)
      case Join(left, right, FullOuter, condition, _) if continuesChain(plan) =>
        add(left)
        addFullOuterJoin(addInput(right), condition)
      case Project(projectList, child) if continuesChain(plan) =>
        add(child)
        projectList.foreach {
          case alias: Alias => aliases(alias.exprId) = inline(alias.child)
          case _ =>
        }
      case Filter(condition, child) if continuesChain(plan) =>
        add(child)
        addConjuncts(Some(condition))
      case input =>
        joinedAboveFullOuter ||= fullOuter.nonEmpty
        addInput(input)
    }

    def result(names: InputNames): Chain = Chain(inputs.toSeq, outerOrder.toSeq,
      fullOuter.toSet, conjuncts.map(c => c.copy(expression = inline(c.expression))).toSeq,
      aliases.toMap, joinedAboveFullOuter, inputs.toSeq.map(names.of))

    private def addInput(input: LogicalPlan): Int = {
      inputs += input
      inputs.length - 1
    }

    private def addOuterJoin(padded: Int, condition: Option[Expression]): Unit = {
      joinedAboveFullOuter ||= fullOuter.nonEmpty
      outerOrder += padded
      conjuncts ++= Conjunct.split(condition, Some(padded))
    }

    private def addFullOuterJoin(right: Int, condition: Option[Expression]): Unit = {
      fullOuter += right
      outerOrder += right
      conjuncts ++= Conjunct.split(condition, Some(right))
    }

    private def addConjuncts(condition: Option[Expression]): Unit = {
      joinedAboveFullOuter ||= fullOuter.nonEmpty
      conjuncts ++= Conjunct.split(condition, None)
    }

    private def inline(expression: Expression): Expression = expression.transformUp {
      case attribute: Attribute if aliases.contains(attribute.exprId) => aliases(attribute.exprId)
    }
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
   * one multi-join cannot run. It follows the chain as flattening does, so nothing outside the
   * chain changes.
   */
  private def outerJoinsMadeInner(
      plan: LogicalPlan,
      rejected: AttributeSet,
      names: InputNames): (LogicalPlan, Seq[OuterJoinMadeInner]) =
    plan match {
      case join: Join if continuesChain(join) => joinMadeInner(join, rejected, names)
      case project @ Project(projectList, child) if continuesChain(project) =>
        val rejectedBelow = projectList.flatMap {
          case attribute: Attribute if rejected.contains(attribute) => Seq(attribute)
          case alias: Alias if rejected.contains(alias.toAttribute) =>
            nullIntolerantColumns(alias.child)
          case _ => Nil
        }
        val (below, madeInner) = outerJoinsMadeInner(child, AttributeSet(rejectedBelow), names)
        (project.copy(child = below), madeInner)
      case filter @ Filter(condition, child) if continuesChain(filter) =>
        val (below, madeInner) =
          outerJoinsMadeInner(child, rejected ++ nullRejectedColumns(Some(condition)), names)
        (filter.copy(child = below), madeInner)
      case input => (input, Nil)
    }

  /** [[outerJoinsMadeInner]] of a join of the chain: it first, then its sides, left first. */
  private def joinMadeInner(
      join: Join,
      rejected: AttributeSet,
      names: InputNames): (LogicalPlan, Seq[OuterJoinMadeInner]) = {
    def padsRejected(side: LogicalPlan) = rejected.intersect(side.outputSet).nonEmpty
    // A FULL OUTER join whose right side only is rejected stays: as a RIGHT OUTER join it
    // would flatten another way, and the rule runs nothing inner above a FULL OUTER join.
    val kept = (join.joinType, padsRejected(join.left), padsRejected(join.right)) match {
      case (LeftOuter, _, true) | (RightOuter, true, _) | (FullOuter, true, true) => Inner
      case (FullOuter, true, false) => LeftOuter
      case (joinType, _, _) => joinType
    }
    val verdict =
      if (kept == join.joinType) Nil else Seq(madeInner(join, kept, padsRejected, names))
    // An outer join's ON clause pads the rows it does not match instead of dropping them.
    val below = if (kept == Inner) rejected ++ nullRejectedColumns(join.condition) else rejected
    def within(side: LogicalPlan) =
      outerJoinsMadeInner(side, below.intersect(side.outputSet), names)
    kept match {
      case Inner =>
        val ((left, leftVerdicts), (right, rightVerdicts)) = (within(join.left), within(join.right))
        (join.copy(left = left, right = right, joinType = Inner),
          verdict ++ leftVerdicts ++ rightVerdicts)
      case RightOuter =>
        val (right, rightVerdicts) = within(join.right)
        (join.copy(right = right), verdict ++ rightVerdicts)
      case _ =>
        val (left, leftVerdicts) = within(join.left)
        (join.copy(left = left, joinType = kept), verdict ++ leftVerdicts)
    }
  }

  private def madeInner(
      join: Join,
      kept: JoinType,
      rejected: LogicalPlan => Boolean,
      names: InputNames): OuterJoinMadeInner = {
    val padded = join.joinType match {
      case LeftOuter => Seq(join.right)
      case RightOuter => Seq(join.left)
      case _ => Seq(join.left, join.right).filter(rejected)
    }
    OuterJoinMadeInner(join.joinType, padded.map(names.of), kept)
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
}
