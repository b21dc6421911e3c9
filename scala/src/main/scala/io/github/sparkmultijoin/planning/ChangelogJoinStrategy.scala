package io.github.sparkmultijoin.planning

import io.github.sparkmultijoin.analysis.ChangelogJoinException
import io.github.sparkmultijoin.execution.{ChangelogJoinExec, ChangelogNetChangesExec, ChangelogNormalizeExec, TaggedInputs}
import io.github.sparkmultijoin.execution.state.ChangelogStateFormat
import io.github.sparkmultijoin.logical.{ChangelogInput, ChangelogJoin, ChangelogNormalize}
import io.github.sparkmultijoin.model.{ChangelogJoinShape, JoinTree}
import io.github.sparkmultijoin.restart.RecordedChangelogFormat

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Literal
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.multijoin.{CheckpointShim, MicroBatchShim, MultiJoinConf}

/**
 * Plans a [[ChangelogJoin]] as a [[ChangelogJoinExec]] over its inputs tagged and unioned
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
        join.formats, join.names, join.keys, join.condition, join.tree, join.onClauses,
        join.filter)
      val changeColumns =
        if (join.raw) join.changeColumns
        else Seq(join.changeColumns.head.newInstance(), ChangelogJoin.rowVersion())
      val stateInfo = running.flatMap(_.stateInfo(join.operatorId))
      val exec = ChangelogJoinExec(shape, changeColumns, join.description, stateInfo,
        running.flatMap(_.context), stateFormat(stateInfo, join.description),
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
        Seq(normalize.format), Seq(normalize.name), Seq(Nil), None, JoinTree.inner(1),
        Seq(Literal.TrueLiteral), None)
      val description = normalize.description
      val running = MicroBatchShim.running(session)
      val stateInfo = running.flatMap(_.stateInfo(normalize.operatorId))
      ChangelogNormalizeExec(shape, description, stateInfo, running.flatMap(_.context),
        normalize.rowId ++ normalize.keyColumns, stateFormat(stateInfo, description),
        planLater(normalize.child)) :: Nil
    case input: ChangelogInput => throw new ChangelogJoinException(s"A ${input.format} " +
        "changelog is written or read without a join: it is a stream of changes, which only a " +
        "changelog join reads (docs/changelog-joins.md).")
    case _ => Nil
  }

  /**
   * The state format of the operator of `stateInfo`: the session's for a new query, the
   * checkpoint's on a restart; the session's where the plan is not a micro-batch's (EXPLAIN).
   */
  private def stateFormat(stateInfo: Option[StatefulOperatorStateInfo], description: String)
      : ChangelogStateFormat = {
    val forNewQuery = MultiJoinConf.changelogStateFormat(session.sessionState.conf)
    val recorded = stateInfo.fold(Option(forNewQuery)) { info =>
      RecordedChangelogFormat.of(info, description, CheckpointShim.newHadoopConf(session),
        forNewQuery)
    }
    ChangelogStateFormat.recorded(recorded).fold(
      problem =>
        throw new IllegalStateException(s"$description cannot resume from its " +
          s"checkpoint: its $problem. Run it with that version, or from a new checkpoint."),
      identity)
  }
}
