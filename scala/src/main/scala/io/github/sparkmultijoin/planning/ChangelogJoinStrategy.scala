package io.github.sparkmultijoin.planning

import io.github.sparkmultijoin.analysis.ChangelogJoinException
import io.github.sparkmultijoin.execution.{ChangelogMultiJoinExec, ChangelogNetChangesExec, ChangelogNormalizeExec, TaggedInputs}
import io.github.sparkmultijoin.logical.{ChangelogInput, ChangelogJoin, ChangelogNormalize}
import io.github.sparkmultijoin.model.{ChangelogJoinShape, JoinTree}

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Literal
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.multijoin.MicroBatchShim

/**
 * Plans a [[ChangelogJoin]] as a [[ChangelogMultiJoinExec]] over its inputs tagged and unioned
 * ([[TaggedInputs]]), with its state info and micro-batch as [[MultiJoinStrategy]] fills them
 * in; the join a query writes gets its net changes per identity ([[ChangelogNetChangesExec]]),
 * a join that another changelog join reads is read as it emits them.
 *
 * A changelog input outside a changelog join is refused here: it is a stream of changes, which
 * written as rows would lose what its deletes and updates mean.
 */
case class ChangelogJoinStrategy(session: SparkSession) extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case join: ChangelogJoin =>
      val running = MicroBatchShim.running(session)
      val shape = ChangelogJoinShape(join.children.map(_.output), join.widths, join.rowIds,
        join.formats, join.keys, join.condition, join.tree, join.onClauses, join.filter)
      val changeColumns =
        if (join.raw) join.changeColumns
        else Seq(join.changeColumns.head.newInstance(), ChangelogJoin.rowVersion())
      val exec = ChangelogMultiJoinExec(shape, changeColumns, join.description,
        running.flatMap(_.stateInfo(join.operatorId)), running.flatMap(_.context),
        TaggedInputs.plan(join.keys, join.children.map(planLater)))
      if (join.raw) exec :: Nil
      else {
        ChangelogNetChangesExec(join.identity, join.changeColumns.head, exec,
          byIdentity = !shape.identityKeepsKey) :: Nil
      }
    case normalize: ChangelogNormalize =>
      val columns = normalize.child.output
      val width = columns.length - ChangelogJoin.InputChangeColumns.length
      val shape = ChangelogJoinShape(Seq(columns), Seq(width), Seq(normalize.rowId),
        Seq(normalize.format), Seq(Nil), None, JoinTree.inner(1), Seq(Literal.TrueLiteral), None)
      ChangelogNormalizeExec(shape,
        s"The ordering by row id of a ${normalize.format} " +
          s"changelog (stateful operator ${normalize.operatorId})",
        MicroBatchShim.running(session).flatMap(_.stateInfo(normalize.operatorId)),
        planLater(normalize.child)) :: Nil
    case input: ChangelogInput => throw new ChangelogJoinException(s"A ${input.format} " +
        "changelog is written or read without a join: it is a stream of changes, which only a " +
        "changelog join reads (docs/changelog-joins.md).")
    case _ => Nil
  }
}
