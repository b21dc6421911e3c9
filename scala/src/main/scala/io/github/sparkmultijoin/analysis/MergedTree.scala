package io.github.sparkmultijoin.analysis

import io.github.sparkmultijoin.model.JoinTree

import org.apache.spark.sql.catalyst.plans.{FullOuter, Inner, JoinType, LeftOuter, RightOuter}

/**
 * The tree of two changelog joins' inputs joined in one: which joins of two groups of inputs
 * `JoinTree` expresses, and how. An outer join's null-supplying side is one input; a LEFT
 * OUTER input joins before the FULL OUTER ones; an inner join reads no outer input (it would
 * drop their padded rows, which the tree pads after the inner joins).
 */
private[analysis] object MergedTree {

  /**
   * Whether the side of `tree` (left or right) can take the other side's inputs in a join of
   * `joinType` whose ON clause reads `read` of its inputs.
   */
  def canTake(tree: JoinTree, joinType: JoinType, isLeft: Boolean, read: Set[Int]): Boolean = {
    val single = tree.parents.length == 1
    joinType match {
      case Inner => tree.fullOuter.isEmpty && read.forall(!tree.isOuter(_))
      case LeftOuter => if (isLeft) tree.fullOuter.isEmpty else single
      case RightOuter => if (isLeft) single else tree.fullOuter.isEmpty
      case FullOuter => true
      case _ => false
    }
  }

  /** Whether two groups of several inputs join as one. */
  def canJoin(left: JoinTree, right: JoinTree, joinType: JoinType): Boolean =
    joinType == Inner && (left.outerOrder.isEmpty || right.outerOrder.isEmpty)

  /**
   * The tree of `left`'s `n` inputs and `right`'s after them, joined by `joinType` whose ON
   * clause reads `read` (of the merged inputs).
   */
  def apply(left: JoinTree, right: JoinTree, n: Int, joinType: JoinType,
      read: Set[Int]): JoinTree = {
    // The right side's inputs come after the left's n.
    val (rightParents, rightOrder, rightFull) = (right.parents.map(_.map(_ + n)),
      right.outerOrder.map(_ + n), right.fullOuter.map(_ + n))
    def parentAmong(tree: JoinTree, offset: Int, itself: Int): Option[Int] = {
      val order = (tree.innerInputs ++ tree.outerOrder).map(_ + offset)
      Some(order.filter(i => i != itself && read.contains(i)).lastOption.getOrElse(order.head))
    }
    joinType match {
      case Inner => JoinTree(left.parents ++ rightParents, left.outerOrder ++ rightOrder,
          left.fullOuter ++ rightFull)
      case LeftOuter | FullOuter if right.parents.length == 1 =>
        JoinTree(left.parents :+ parentAmong(left, 0, n), left.outerOrder :+ n,
          left.fullOuter ++ Some(n).filter(_ => joinType == FullOuter))
      case RightOuter | FullOuter =>
        JoinTree(parentAmong(right, 1, 0) +: right.parents.map(_.map(_ + 1)),
          right.outerOrder.map(_ + 1) :+ 0,
          right.fullOuter.map(_ + 1) ++ Some(0).filter(_ => joinType == FullOuter))
      case other => throw new IllegalArgumentException(s"no tree for $other")
    }
  }
}
