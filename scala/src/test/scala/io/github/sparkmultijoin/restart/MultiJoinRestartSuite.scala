package io.github.sparkmultijoin.restart

import io.github.sparkmultijoin.model.{JoinTree, StateLayoutVersion}
import io.github.sparkmultijoin.optimizer.CollapseStreamingJoinChains
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.SparkThrowable
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.multijoin.MultiJoinConf
import org.apache.spark.sql.types.StructType

/**
 * Which restarts the restart check refuses, by the multi-joins of the checkpoint and of the
 * plan, and what its errors name. (tests/execution/test_restart.py restarts real queries.)
 */
class MultiJoinRestartSuite extends AnyFunSuite {

  private val first = CollapseStreamingJoinChains.FirstOperatorId

  private def recorded(maxTables: Option[Int] = None) =
    OperatorProperties.planned(StateLayoutVersion.ColumnFamilies, maxTables,
      Seq.fill(3)(StructType.fromDDL("k INT")), JoinTree.inner(3), Seq.fill(3)(None))

  private def conf(settings: (String, String)*): SQLConf = {
    val conf = new SQLConf
    MultiJoinConf.register()
    ((MultiJoinConf.ENABLED.key -> "true") +: settings).foreach { case (key, value) =>
      conf.setConfString(key, value)
    }
    conf
  }

  private def refusal(
      before: Seq[(Long, OperatorProperties)],
      now: Seq[Long],
      settings: (String, String)*): String =
    MultiJoinRestart.refusal(before, now, conf(settings: _*)).get.getMessage

  test("the same multi-joins restart; the per-operator check follows") {
    assert(MultiJoinRestart.refusal(Seq(first -> recorded()), Seq(first), conf()).isEmpty)
    assert(MultiJoinRestart.refusal(Nil, Nil, conf()).isEmpty)
  }

  test("multi-join.enabled turned off names the setting with Spark's error for it") {
    val error = MultiJoinRestart.refusal(Seq(first -> recorded()), Nil,
      conf(MultiJoinConf.ENABLED.key -> "false")).get
    assert(error.asInstanceOf[SparkThrowable].getCondition ==
      "STATE_STORE_INVALID_CONFIG_AFTER_RESTART")
    assert(error.getMessage.contains(
      "Cannot change multi-join.enabled from true to false between restarts"))
  }

  test("a checkpoint of Spark's joins restarted as multi-joins names the settings") {
    val said = refusal(Nil, Seq(first))
    assert(
      said.contains("the checkpoint has the multi-joins none") &&
        said.contains(s"now plans $first") && said.contains("multi-join.enabled was false"),
      said)
  }

  test("max-tables changing the operators names it with its old value") {
    val said = refusal(Seq(first -> recorded(Some(3)), first + 1 -> recorded(Some(3))),
      Seq(first), MultiJoinConf.MAX_TABLES.key -> "4")
    assert(said.contains("Cannot change multi-join.max-tables from 3 to 4"), said)
    assert(refusal(Seq(first -> recorded(None)), Seq(first, first + 1),
      MultiJoinConf.MAX_TABLES.key -> "3").contains("from (unset) to 3"))
  }

  test("other changes of the joins say so, without blaming a setting") {
    val said = refusal(Seq(first -> recorded()), Seq(first, first + 1))
    assert(said.contains("Its joins changed since the checkpoint was written"), said)
  }
}
