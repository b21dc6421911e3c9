package io.github.sparkmultijoin.restart

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.execution.streaming.state.StateStoreErrors
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.multijoin.MultiJoinConf

/**
 * Whether a restarted query's multi-joins are the ones its checkpoint was written with, and if
 * not, the error that names the setting that changed.
 *
 * Why: a checkpoint holds the state of the stateful operators its query ran. Where
 * `multi-join.enabled` or `multi-join.max-tables` changed since, the query plans other
 * operators, and Spark refuses it with STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA,
 * which lists operator ids but names no setting. This compares the multi-joins only, and reads
 * the checkpoint's operators as Spark's check does, so it refuses only restarts that Spark
 * refuses too. Where the multi-joins are the same, each one's own metadata check follows
 * ([[OperatorMetadataFile]]).
 */
object MultiJoinRestart {

  /**
   * Fails if the multi-joins `now` (by operator id) of the first micro-batch of a restart are not
   * those of the checkpoint whose state is at `stateLocation`, as of `previousBatch`.
   */
  def check(
      now: Seq[Long],
      stateLocation: Path,
      previousBatch: Long,
      hadoopConf: Configuration,
      conf: SQLConf): Unit = {
    val recorded = RecordedOperators.statefulOperators(stateLocation, previousBatch, hadoopConf)
    val before = RecordedOperators.multiJoins(recorded).map { case (id, metadata) =>
      id -> OperatorProperties.fromJson(metadata.operatorPropertiesJson)
    }
    if (recorded.exists(_._2.isDefined)) {
      refusal(before, now, conf).foreach(error => throw error)
    }
  }

  /**
   * Why a restart whose plan has the multi-joins `now` (by operator id) cannot use a checkpoint
   * that has `before` (with their recorded properties), if it cannot, naming the setting that
   * changed where one of `conf`'s explains it.
   */
  def refusal(
      before: Seq[(Long, OperatorProperties)],
      now: Seq[Long],
      conf: SQLConf): Option[Throwable] =
    if (before.map(_._1).toSet == now.toSet) None
    else Some(changedOperators(before, now, conf))

  /** The error for a restart whose multi-joins are `now` where the checkpoint has `before`. */
  private def changedOperators(
      before: Seq[(Long, OperatorProperties)],
      now: Seq[Long],
      conf: SQLConf): Throwable = {
    def ids(operators: Seq[Long]) =
      if (operators.isEmpty) "none" else operators.sorted.mkString(", ")
    val what = s"the checkpoint has the multi-joins ${ids(before.map(_._1))} (by stateful " +
      s"operator id) and the query now plans ${ids(now)}"
    val enabled = MultiJoinConf.enabled(conf)
    val maxTablesNow = MultiJoinConf.maxTables(conf)
    lazy val maxTablesBefore = before.flatMap(_._2.maxTables).headOption
    if (before.nonEmpty && now.isEmpty && !enabled) {
      StateStoreErrors.invalidConfigChangedAfterRestart(MultiJoinConf.ENABLED.key, "true", "false")
    } else if (before.isEmpty && enabled) {
      new IllegalStateException(s"This query cannot resume from its checkpoint: $what. The " +
        s"checkpoint holds the state of Spark's own joins, written while " +
        s"${MultiJoinConf.ENABLED.key} was false, or by a version of spark-multijoin that did " +
        "not fuse these joins. Set the setting back for this query, or start a new checkpoint.")
    } else if (maxTablesBefore.exists(_ != maxTablesNow)) {
      StateStoreErrors.invalidConfigChangedAfterRestart(MultiJoinConf.MAX_TABLES.key,
        OperatorProperties.describe(maxTablesBefore.get), OperatorProperties.describe(maxTablesNow))
    } else {
      new IllegalStateException(s"This query cannot resume from its checkpoint: $what. Its " +
        "joins changed since the checkpoint was written (the driver log says why a chain " +
        "keeps Spark's joins): change them back, or start a new checkpoint.")
    }
  }
}
