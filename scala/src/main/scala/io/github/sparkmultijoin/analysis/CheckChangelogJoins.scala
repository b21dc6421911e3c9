package io.github.sparkmultijoin.analysis

import io.github.sparkmultijoin.logical.{ChangelogInput, ChangelogJoin}

import org.apache.spark.sql.catalyst.plans.logical.{Filter, InsertIntoStatement, LogicalPlan, Project, RepartitionOperation, SubqueryAlias, V2WriteCommand, View}
import org.apache.spark.sql.catalyst.streaming.{WriteToStream, WriteToStreamStatement}
import org.apache.spark.sql.execution.streaming.sources.{WriteToMicroBatchDataSource, WriteToMicroBatchDataSourceV1}

/**
 * Refuses an operator over the changes of a changelog join or input other than the ones that
 * read changes as changes: the output's own rows and sinks. Each change is one row, so an
 * aggregation, a deduplication, a join or a window above them would count changes as rows and
 * give a wrong answer.
 *
 * Why a check and not a fallback: without the changelog join the query has no meaning Spark
 * could run; an error that names the operator is what the user can act on.
 */
object CheckChangelogJoins extends (LogicalPlan => Unit) {

  override def apply(plan: LogicalPlan): Unit = plan.foreach { node =>
    node.children.filter(carriesChanges).foreach { changes =>
      if (!reads(node)) throw new ChangelogJoinException(s"${node.nodeName} cannot read the " +
        s"changes of a changelog ${what(changes)}: each change is a row of it, so it would " +
        "count changes as rows. Above a changelog join only selects and filters run (they are " +
        "taken into it); write its changes to a sink that applies them, such as " +
        "spark_multijoin.changelog.delta_merge.")
    }
  }

  // Sinks take the changes as rows, which is what they are; a join of changelogs is one.
  private def reads(node: LogicalPlan): Boolean = node match {
    case _: ChangelogJoin | _: SubqueryAlias | _: View | _: ChangelogInput => true
    case _: Project | _: Filter | _: RepartitionOperation => true
    case _: WriteToStreamStatement | _: WriteToStream | _: WriteToMicroBatchDataSource |
        _: WriteToMicroBatchDataSourceV1 | _: V2WriteCommand | _: InsertIntoStatement => true
    case _ => false
  }

  private def carriesChanges(plan: LogicalPlan): Boolean = plan match {
    case cj: ChangelogJoin => !cj.raw
    case _: ChangelogInput => true
    case SubqueryAlias(_, child) => carriesChanges(child)
    case view: View => carriesChanges(view.child)
    case Project(_, child) => carriesChanges(child)
    case Filter(_, child) => carriesChanges(child)
    case _ => false
  }

  private def what(plan: LogicalPlan): String = plan match {
    case _: ChangelogJoin => "join"
    case input: ChangelogInput => s"input (${input.format})"
    case other => what(other.children.head)
  }
}
