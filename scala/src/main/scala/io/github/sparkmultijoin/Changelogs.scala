package io.github.sparkmultijoin

import scala.jdk.CollectionConverters._

import io.github.sparkmultijoin.analysis.ChangelogJoinException
import io.github.sparkmultijoin.logical.ChangelogInput

import org.apache.spark.sql.{DataFrame, classic}
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, SubqueryAlias}
import org.apache.spark.sql.multijoin.CatalystShim
import org.apache.spark.sql.types.{ByteType, DataType, IntegerType, LongType, ShortType, StringType}

/**
 * Declares streams of changes changelogs, the inputs of changelog joins
 * (docs/changelog-joins.md); Python's `spark_multijoin.changelog` calls it.
 */
object Changelogs {

  /**
   * `frame`, whose rows are changes of the rows identified by `rowId`, as a changelog input:
   * the frame of its current rows, without the change columns.
   *
   * @param rowVersion the integer columns that order the changes of one identity
   * @param changeType the column of the change type (`ChangeTypes`)
   * @param consumed   other change columns to leave out of the current rows
   * @param format     where the changes come from (EXPLAIN and the errors name it)
   * @param fullChangelog whether every removal carries the row's whole old image and a row's
   *                      changes arrive in version order
   */
  def declare(
      frame: DataFrame,
      rowId: java.util.List[String],
      rowVersion: java.util.List[String],
      changeType: String,
      consumed: java.util.List[String],
      format: String,
      fullChangelog: Boolean): DataFrame = {
    val plan = frame.asInstanceOf[classic.Dataset[_]].queryExecution.analyzed
    val named = this.named(plan, format)
    if (!plan.isStreaming) throw new ChangelogJoinException(s"The $named is not a stream: a " +
      "changelog input is a stream of changes (readStream); a table's current rows are what a " +
      "batch query joins.")
    val resolver = frame.sparkSession.sessionState.conf.resolver
    def column(role: String)(name: String): Attribute =
      plan.output.find(a => resolver(a.name, name)).getOrElse(throw new ChangelogJoinException(
        s"The $named has no column `$name` for its $role: its columns are " +
          plan.output.map(a => s"`${a.name}`").mkString(", ") + "."))
    val ids = rowId.asScala.toSeq.map(column("row id"))
    val versions = rowVersion.asScala.toSeq.map(column("row version"))
    val kind = column("change type")(changeType)
    checkTypes(named, ids, versions, kind)
    val input = ChangelogInput(ids, versions, kind,
      consumed.asScala.toSeq.map(column("consumed columns")), format, fullChangelog, plan)
    ids.filterNot(input.output.contains).foreach { id =>
      throw new ChangelogJoinException(
        s"The row id `${id.name}` of the $named is one of its change columns.")
    }
    CatalystShim.dataFrame(frame.sparkSession, input)
  }

  /** The changelog `plan` declares, as errors name it: the debezium changelog `orders`. */
  private def named(plan: LogicalPlan, format: String): String =
    ChangelogInput.kind(format) +
      (plan match {
        case SubqueryAlias(name, _) => s" `${name.name}`"
        case _ => ""
      })

  private def checkTypes(
      named: String,
      ids: Seq[Attribute],
      versions: Seq[Attribute],
      kind: Attribute): Unit = {
    require(ids.nonEmpty && versions.nonEmpty, "a changelog needs a row id and a row version")
    versions.filterNot(v =>
      Set[DataType](ByteType, ShortType, IntegerType, LongType)(v.dataType)).foreach {
      v =>
        throw new ChangelogJoinException(s"The row version `${v.name}` of the $named is " +
          s"${v.dataType.sql}: a row version is of integers (cast it to BIGINT).")
    }
    if (kind.dataType != StringType) throw new ChangelogJoinException(s"The change type " +
      s"`${kind.name}` of the $named is ${kind.dataType.sql}, not STRING.")
  }
}
