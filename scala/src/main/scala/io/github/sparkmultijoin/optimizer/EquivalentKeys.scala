package io.github.sparkmultijoin.optimizer

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.{EqualTo, Expression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * The classes of expressions that a chain's equality conditions make equal, directly or through
 * other members (a.k = b.k and b.k = c.k put a.k, b.k and c.k in one class).
 *
 * Only deterministic expressions over a single input can be members: they are what an input can
 * be partitioned and looked up by.
 */
private[optimizer] object EquivalentKeys {

  /** A class, as (input index, member) pairs in the order the members first appear. */
  type KeyClass = Seq[(Int, Expression)]

  /**
   * The classes that have a member over every one of `inputs`, in order of first appearance,
   * from the chain's `conjuncts` and the equalities each input guarantees itself (Spark pushes
   * `b.x = b.y` from a join condition down into input b, where it can still link two classes).
   */
  def spanning(inputs: Seq[LogicalPlan], conjuncts: Seq[Expression]): Seq[KeyClass] =
    all(inputs, conjuncts).filter(keyClass => keyClass.map(_._1).distinct.length == inputs.length)

  /** Every class, as [[spanning]] finds them, whichever inputs it has members over. */
  def all(inputs: Seq[LogicalPlan], conjuncts: Seq[Expression]): Seq[KeyClass] = {
    val guaranteed = inputs.flatMap(_.constraints.toSeq.collect { case e: EqualTo => e })
    def inputOf(expression: Expression): Option[Int] =
      if (expression.references.isEmpty || !expression.deterministic) None
      else Some(inputs.indexWhere(input => expression.references.subsetOf(input.outputSet)))
        .filter(_ >= 0)

    // Union-find over canonical forms, so a.k = b.k and b.k = a.k name the same members.
    val parent = mutable.LinkedHashMap.empty[Expression, Expression]
    val members = mutable.LinkedHashMap.empty[Expression, (Int, Expression)]
    def root(canonical: Expression): Expression = {
      val up = parent(canonical)
      if (up == canonical) canonical else { val top = root(up); parent(canonical) = top; top }
    }
    def add(input: Int, member: Expression): Expression = {
      val canonical = member.canonicalized
      if (!parent.contains(canonical)) {
        parent(canonical) = canonical
        members(canonical) = (input, member)
      }
      canonical
    }

    (conjuncts ++ guaranteed).foreach {
      case EqualTo(left, right) =>
        (inputOf(left), inputOf(right)) match {
          case (Some(leftInput), Some(rightInput)) =>
            val leftRoot = root(add(leftInput, left))
            val rightRoot = root(add(rightInput, right))
            if (leftRoot != rightRoot) parent(rightRoot) = leftRoot
          case _ =>
        }
      case _ =>
    }

    members.keys.toSeq.groupBy(root).values.toSeq
      .map(_.map(members))
      .sortBy(keyClass => members.values.toSeq.indexOf(keyClass.head))
  }
}
