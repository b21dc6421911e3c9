package io.github.sparkmultijoin.model

import org.apache.spark.sql.catalyst.expressions.Attribute

/**
 * How the inputs of a multi-join are joined: derived once by the rule from the chain of binary
 * joins it replaces, and read by the operator.
 *
 * The inner inputs are joined to each other, and together they are the root of the tree. Every
 * other input is an outer input that hangs off a parent, joined LEFT OUTER (a RIGHT OUTER join
 * is a LEFT OUTER join with its sides swapped) or FULL OUTER. Its ON clause may read itself and
 * any input joined before it, as SQL lets it; where one of those is null-padded its columns are
 * null, the key included, so the ON clause decides exactly as in Spark's chain.
 *
 * The outer joins apply in `outerOrder`, the FULL OUTER ones last: each FULL OUTER join joins
 * its input to the result of every join before it. An output row is thus one of:
 *  - a row of each inner input, and of each outer input a row that satisfies its ON clause
 *    against the rest of the row or, where none does, nulls;
 *  - without FULL OUTER joins, only those. With them, also a row of a FULL OUTER input that no
 *    row of the joins before it satisfies its ON clause with: nulls for every input joined
 *    before it, and the FULL OUTER inputs after it matched or padded as above.
 * Spark's chain applies the LEFT OUTER joins in the order of the plan; any order in which each
 * comes after the inputs its ON clause reads gives the same rows, as two LEFT OUTER joins of
 * which neither reads the other commute.
 *
 * @param parents    per input: None for an inner input; for an outer input, the input its ON
 *                   clause reads that is joined last (an inner input where it reads only those)
 * @param outerOrder the outer inputs in the order their joins apply
 * @param fullOuter  the outer inputs joined FULL OUTER, which come last in `outerOrder`
 */
case class JoinTree(
    parents: Seq[Option[Int]],
    outerOrder: Seq[Int],
    fullOuter: Set[Int] = Set.empty) {

  require(outerOrder.sorted == parents.indices.filter(parents(_).isDefined),
    s"every outer input, and only those, has its place in the join order: $this")
  require(parents.exists(_.isEmpty), "a multi-join has at least one inner input")
  require(outerOrder.takeRight(fullOuter.size).toSet == fullOuter,
    s"the FULL OUTER joins apply after every LEFT OUTER join: $this")

  def isOuter(input: Int): Boolean = parents(input).isDefined

  def isFullOuter(input: Int): Boolean = fullOuter.contains(input)

  def innerInputs: Seq[Int] = parents.indices.filterNot(isOuter)

  /** How an outer input is joined, in SQL's words (EXPLAIN and errors show it). */
  def joinType(outer: Int): String = if (isFullOuter(outer)) "FULL OUTER" else "LEFT OUTER"

  def outerInputs: Seq[Int] = outerOrder.sorted

  /** Whether an output row may have nulls for `input`: every input may, below a FULL OUTER join. */
  def isNullable(input: Int): Boolean = isOuter(input) || fullOuter.nonEmpty

  /**
   * The inputs whose rows decide null-padded rows once no row to come can join them: the first
   * inner input, which every output row without a FULL OUTER input's padding has a row of, and
   * each FULL OUTER input, for the rows in which it is the first input with a row. Empty without
   * outer inputs.
   */
  def decidingInputs: Seq[Int] =
    if (outerOrder.isEmpty) Nil else innerInputs.head +: outerOrder.filter(isFullOuter)

  /**
   * The inputs every output row has a row of: the inner inputs, unless a FULL OUTER join can pad
   * them.
   */
  def alwaysPresent: Set[Int] = if (fullOuter.isEmpty) innerInputs.toSet else Set.empty

  /** The joined columns of inputs with `columns`: nullable where an input may be padded. */
  def joinedColumns(columns: Seq[Seq[Attribute]]): Seq[Attribute] =
    columns.zipWithIndex.flatMap {
      case (inputColumns, input) if isNullable(input) => inputColumns.map(_.withNullability(true))
      case (inputColumns, _) => inputColumns
    }
}

object JoinTree {

  /** The tree of `numInputs` inputs joined INNER. */
  def inner(numInputs: Int): JoinTree = JoinTree(Seq.fill(numInputs)(None), Nil)
}
