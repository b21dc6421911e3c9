package io.github.sparkmultijoin.logical

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * A join of several streaming inputs on one shared key, evaluated by one stateful operator that
 * keeps only the input rows in state. Inputs are joined INNER, or LEFT OUTER to one inner input
 * (their anchor): every output row has a row of each inner input, and of each outer input either
 * a row matching its anchor's row by its ON clause or, where none ever matches, nulls.
 *
 * @param children   the inputs, in the order their columns appear in the output
 * @param keys       per input, the expressions of the shared key over that input's output; all
 *                   inputs' keys have the same length and types, and a combination of rows
 *                   joins only when all their keys are equal (and free of nulls)
 * @param condition  what else the rows of a combination must satisfy (deterministic); it never
 *                   references an outer input
 * @param outerInputs the inputs joined LEFT OUTER
 * @param onClauses  for each of `outerInputs`, its ON clause besides the key (TRUE if nothing
 *                   else), referencing only itself and its anchor. A plain Seq of expressions, so
 *                   that Catalyst sees their references (it does not look into Options in a Seq)
 * @param outerAnchors for each of `outerInputs`, the inner input its ON clause joins it to
 * @param decidingInput with outer inputs, the inner input whose evicted rows decide null-padding
 * @param operatorId the stateful operator id of the planned operator: fixed by the plan's shape,
 *                   so identical on every micro-batch and after a restart, and far from the ids
 *                   0..k-1 that Spark gives its own stateful operators
 */
case class MultiJoin(
    children: Seq[LogicalPlan],
    keys: Seq[Seq[Expression]],
    condition: Option[Expression],
    outerInputs: Seq[Int],
    onClauses: Seq[Expression],
    outerAnchors: Seq[Int],
    decidingInput: Option[Int],
    operatorId: Long) extends LogicalPlan {

  require(children.length >= 2, "a multi-join needs at least two inputs")
  require(keys.length == children.length, "every input of a multi-join needs its key")
  require(outerInputs.length == onClauses.length && outerInputs.length == outerAnchors.length)
  require(outerInputs.isEmpty == decidingInput.isEmpty,
    "outer inputs are decided by a deciding input")

  /** Per input, its ON clause if it is an outer input. */
  def outerConditions: Seq[Option[Expression]] = perInput(onClauses)

  /** Per input, its anchor if it is an outer input. */
  def anchors: Seq[Option[Int]] = perInput(outerAnchors)

  private def perInput[A](values: Seq[A]): Seq[Option[A]] =
    children.indices.map(input => Some(outerInputs.indexOf(input)).filter(_ >= 0).map(values))

  override def output: Seq[Attribute] = children.zipWithIndex.flatMap {
    case (child, input) if outerInputs.contains(input) =>
      child.output.map(_.withNullability(true))
    case (child, _) => child.output
  }

  override lazy val resolved: Boolean =
    childrenResolved && keys.forall(_.forall(_.resolved)) && condition.forall(_.resolved) &&
      onClauses.forall(_.resolved)

  override protected def withNewChildrenInternal(
      newChildren: IndexedSeq[LogicalPlan]): MultiJoin = copy(children = newChildren)
}
