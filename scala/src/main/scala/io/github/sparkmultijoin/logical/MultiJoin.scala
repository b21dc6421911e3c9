package io.github.sparkmultijoin.logical

import io.github.sparkmultijoin.model.JoinTree

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * A join of several streaming inputs on one shared key, evaluated by one stateful operator that
 * keeps only the input rows in state. How the inputs are joined (INNER, or LEFT or FULL OUTER
 * off a parent) is `tree`, described in [[JoinTree]].
 *
 * @param children   the inputs, in the order their columns appear in the output
 * @param keys       per input, the expressions of the shared key over that input's output; all
 *                   inputs' keys have the same length and types, and a combination of rows
 *                   joins only when all their keys are equal (and free of nulls)
 * @param condition  the inner joins' conditions besides the key (deterministic); it reads inner
 *                   inputs only, and holds in every output row with them
 * @param tree       which inputs are outer, their parents and the order their joins apply in
 * @param onClauses  per input, its ON clause if it is an outer input (key equalities included,
 *                   as they decide where an input it reads is padded), TRUE for an inner input.
 *                   A plain Seq of expressions, so that Catalyst sees their references
 * @param operatorId the stateful operator id of the planned operator: fixed by the plan's shape,
 *                   so identical on every micro-batch and after a restart, and far from the ids
 *                   0..k-1 that Spark gives its own stateful operators
 * @param stateTtlsMs per input, its state TTL (ms of processing time), if it has one
 * @param inputNames per input, the name the query gives it as the verdicts show it; empty until
 *                   the rule names them
 */
case class MultiJoin(
    children: Seq[LogicalPlan],
    keys: Seq[Seq[Expression]],
    condition: Option[Expression],
    tree: JoinTree,
    onClauses: Seq[Expression],
    operatorId: Long,
    stateTtlsMs: Seq[Option[Long]],
    inputNames: Seq[String] = Nil) extends LogicalPlan {

  require(children.length >= 2, "a multi-join needs at least two inputs")
  require(
    keys.length == children.length && onClauses.length == children.length &&
      tree.parents.length == children.length && stateTtlsMs.length == children.length,
    "every input of a multi-join needs its key")

  /**
   * The operator as errors name it, the way EXPLAIN names its inputs, so that a user with several
   * multi-joins knows which one.
   */
  def description: String = {
    val names = if (inputNames.nonEmpty) inputNames else children.indices.map(i => s"input$i")
    s"The multi-join of ${names.mkString(", ")} (stateful operator $operatorId)"
  }

  /** Per input, its ON clause if it is an outer input. */
  def outerConditions: Seq[Option[Expression]] =
    children.indices.map(input => Some(onClauses(input)).filter(_ => tree.isOuter(input)))

  override def output: Seq[Attribute] = tree.joinedColumns(children.map(_.output))

  override lazy val resolved: Boolean =
    childrenResolved && keys.forall(_.forall(_.resolved)) && condition.forall(_.resolved) &&
      onClauses.forall(_.resolved)

  override protected def withNewChildrenInternal(
      newChildren: IndexedSeq[LogicalPlan]): MultiJoin = copy(children = newChildren)
}

object MultiJoin {

  /** The name its operator has in a checkpoint's operator metadata (Spark's `shortName`). */
  val OperatorName = "multiJoin"
}
