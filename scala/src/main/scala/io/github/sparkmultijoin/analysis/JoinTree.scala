package io.github.sparkmultijoin.analysis

/**
 * How the inputs of a multi-join are joined: derived once by the rule from the chain of binary
 * joins it replaces, and read by the operator.
 *
 * The inner inputs are joined to each other: every output row has a row of each, and together
 * they are the root of the tree. Every other input is joined LEFT OUTER (a RIGHT OUTER join is a
 * LEFT OUTER join with its sides swapped) and hangs off a parent. Its ON clause may read itself
 * and any input joined before it, as SQL lets it; where one of those is null-padded its columns
 * are null, the key included, so the ON clause decides exactly as in Spark's chain. An output
 * row has, of each outer input, a row that satisfies its ON clause against the rest of the
 * row, or, where none does, nulls.
 *
 * The outer joins apply in `outerOrder`. Spark's chain applies them in the order of the plan;
 * any order in which each comes after the inputs its ON clause reads gives the same rows, as
 * two LEFT OUTER joins of which neither reads the other commute.
 *
 * @param parents    per input: None for an inner input; for an outer input, the input its ON
 *                   clause reads that is joined last (an inner input where it reads only those)
 * @param outerOrder the outer inputs in the order their joins apply
 */
case class JoinTree(parents: Seq[Option[Int]], outerOrder: Seq[Int]) {

  require(outerOrder.sorted == parents.indices.filter(parents(_).isDefined),
    s"every outer input, and only those, has its place in the join order: $this")
  require(parents.exists(_.isEmpty), "a multi-join has at least one inner input")

  def isOuter(input: Int): Boolean = parents(input).isDefined

  def innerInputs: Seq[Int] = parents.indices.filterNot(isOuter)

  def outerInputs: Seq[Int] = outerOrder.sorted

  /**
   * The input whose rows, when evicted, decide null-padding: the first inner input, which every
   * output row has a row of. None without outer inputs.
   */
  def decidingInput: Option[Int] = if (outerOrder.isEmpty) None else Some(innerInputs.head)
}

object JoinTree {

  /** The tree of `numInputs` inputs joined INNER. */
  def inner(numInputs: Int): JoinTree = JoinTree(Seq.fill(numInputs)(None), Nil)
}
