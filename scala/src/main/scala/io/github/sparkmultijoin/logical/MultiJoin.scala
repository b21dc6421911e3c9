package io.github.sparkmultijoin.logical

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * An inner join of several streaming inputs on one shared key, evaluated by one stateful
 * operator that keeps only the input rows in state.
 *
 * @param children   the inputs, in the order their columns appear in the output
 * @param keys       per input, the expressions of the shared key over that input's output; all
 *                   inputs' keys have the same length and types, and a combination of rows
 *                   joins only when all their keys are equal (and free of nulls)
 * @param condition  what else the rows of a combination must satisfy (deterministic)
 * @param operatorId the stateful operator id of the planned operator: fixed by the plan's shape,
 *                   so identical on every micro-batch and after a restart, and far from the ids
 *                   0..k-1 that Spark gives its own stateful operators
 */
case class MultiJoin(
    children: Seq[LogicalPlan],
    keys: Seq[Seq[Expression]],
    condition: Option[Expression],
    operatorId: Long) extends LogicalPlan {

  require(children.length >= 2, "a multi-join needs at least two inputs")
  require(keys.length == children.length, "every input of a multi-join needs its key")

  override def output: Seq[Attribute] = children.flatMap(_.output)

  override lazy val resolved: Boolean =
    childrenResolved && keys.forall(_.forall(_.resolved)) && condition.forall(_.resolved)

  override protected def withNewChildrenInternal(
      newChildren: IndexedSeq[LogicalPlan]): MultiJoin = copy(children = newChildren)
}
