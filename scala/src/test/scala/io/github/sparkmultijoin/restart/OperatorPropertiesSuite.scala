package io.github.sparkmultijoin.restart

import io.github.sparkmultijoin.model.{JoinTree, StateLayoutVersion}
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.SparkThrowable
import org.apache.spark.sql.types.StructType

/**
 * What the multi-join and the changelog operators record in their operator metadata, and which
 * restarts they refuse, and how.
 */
class OperatorPropertiesSuite extends AnyFunSuite {

  private def schema(ddl: String) = StructType.fromDDL(ddl)

  // The operator as errors name it (the logical node's description).
  private val Operator = "The multi-join of o, c, p (stateful operator 7)"

  private val inputs = Seq(schema("k INT, v0 INT"), schema("k INT, v1 STRING"),
    schema("k INT, v2 INT NOT NULL"))

  private val leftOuter = JoinTree(Seq(None, None, Some(1)), Seq(2))

  private def planned(
      maxTables: Option[Int] = Some(3),
      schemas: Seq[StructType] = inputs,
      tree: JoinTree = JoinTree.inner(3),
      stateTtlsMs: Seq[Option[Long]] = Seq(None, None, None),
      layout: StateLayoutVersion = StateLayoutVersion.ColumnFamilies) =
    OperatorProperties.planned(layout, maxTables, schemas, tree, stateTtlsMs)

  /** The properties as the checkpoint records them, restarted with `current`: the error. */
  private def restart(recorded: OperatorProperties, current: OperatorProperties): Throwable =
    intercept[Exception](OperatorProperties.fromJson(recorded.json).checkRestart(current, Operator))

  test("the properties read back as written, unset max-tables included") {
    for (properties <- Seq(planned(), planned(maxTables = None, tree = leftOuter),
        planned(stateTtlsMs = Seq(Some(86400000L), None, Some(1500L))))) {
      assert(OperatorProperties.fromJson(properties.json) == properties)
    }
    assert(planned(maxTables = None, tree = leftOuter).json.contains(
      """"maxTables":null,"inputSchemas":[{"type":"struct","fields":[{"name":"k""""))
    assert(planned(tree = leftOuter).json.endsWith(
      """"joinTree":{"parents":[null,null,1],"outerOrder":[2],"fullOuter":[]},""" +
        s""""stateTtlsMs":[null,null,null],"sparkVersion":"${org.apache.spark.SPARK_VERSION}"}"""))
    assert(planned(stateTtlsMs = Seq(Some(86400000L), None, None)).json.contains(
      """"stateTtlsMs":[86400000,null,null]"""))
  }

  test("an input's state TTL added or removed since the checkpoint was written is refused") {
    val day = Some(86400000L)
    val added = restart(planned(), planned(stateTtlsMs = Seq(None, day, None)))
    assert(added.getMessage ==
      "The multi-join of o, c, p (stateful operator 7) cannot resume from this " +
      "checkpoint: input 1 had no state TTL when it was written and has a state TTL of 1d " +
      "now. A TTL needs the time each row of its input was stored, which the state keeps only " +
      "for the inputs that had a TTL when it was written. Give each input a TTL again where it " +
      "had one and none where it had none (multi-join.state-ttl, or a STATE_TTL hint; any " +
      "duration serves), or start a new checkpoint.")
    assert(restart(planned(stateTtlsMs = Seq(day, day, None)),
      planned(stateTtlsMs =
        Seq(day, None, None))).getMessage.contains("input 1 had a state TTL of 1d when it was " +
      "written and has no state TTL now"))
    // A changed duration restarts.
    OperatorProperties.fromJson(planned(stateTtlsMs = Seq(day, None, None)).json)
      .checkRestart(planned(stateTtlsMs = Seq(Some(1000L), None, None)), Operator)
    // Written before the TTL existed: nothing recorded, nothing compared.
    OperatorProperties.fromJson(planned().json.replace(""","stateTtlsMs":[null,null,null]""",
      "")).checkRestart(planned(stateTtlsMs = Seq(day, day, day)), Operator)
  }

  test("a checkpoint that recorded only whether a TTL was set reads as every input's") {
    def legacy(set: Boolean) = OperatorProperties.fromJson(planned().json.replace(
      """"stateTtlsMs":[null,null,null]""", s""""storeTimes":$set"""))
    val day = Some(86400000L)
    legacy(set = true).checkRestart(planned(stateTtlsMs = Seq(day, day, day)), Operator)
    legacy(set = false).checkRestart(planned(), Operator)
    val error = intercept[IllegalStateException](
      legacy(set = true).checkRestart(planned(stateTtlsMs = Seq(day, None, day)), Operator))
    assert(error.getMessage.contains("input 1 had a state TTL when it was written and has no " +
      "state TTL now"))
  }

  test("state written by a newer Spark line is refused, by the same or an older line not") {
    def writtenBy(version: String) = planned().copy(sparkVersion = Some(version))
    val refused = restart(writtenBy("4.3.0"), writtenBy("4.1.1")).getMessage
    assert(refused.contains("it was written by Spark 4.3.0, and this is Spark 4.1.1, an older " +
      "line") && refused.contains("run the query on Spark 4.3 or newer, or start a new checkpoint"))
    assert(restart(writtenBy("10.0.0"), writtenBy("4.10.0")).getMessage.contains("Spark 10.0"))
    for ((before, now) <- Seq("4.1.4" -> "4.1.0", "4.1.1" -> "4.3.0", "4.2.1" -> "4.10.0")) {
      OperatorProperties.fromJson(writtenBy(before).json).checkRestart(writtenBy(now), Operator)
    }
    // Written before the version was recorded: not compared.
    OperatorProperties.fromJson(planned().copy(sparkVersion = None).json)
      .checkRestart(writtenBy("4.1.0"), Operator)
    assert(planned().sparkVersion.contains(org.apache.spark.SPARK_VERSION))
  }

  test("a checkpoint of an earlier version, without the properties, restarts") {
    for (recorded <- Seq("""{"stateFormatVersion":2}""", "", "not json")) {
      OperatorProperties.fromJson(recorded).checkRestart(planned(schemas = inputs.take(2)),
        Operator)
    }
    assert(OperatorProperties.fromJson("""{"stateFormatVersion":2}""") ==
      OperatorProperties(Some(2), None, None, None))
  }

  test("the layout's number is recorded as stateFormatVersion, as checkpoints have it") {
    assert(planned(layout = StateLayoutVersion.OneValuePerKey).json.startsWith(
      """{"stateFormatVersion":4,"maxTables":3,"""))
  }

  test("state of another layout than the session's, or of an unknown one, is refused") {
    val inMemory = planned(layout = StateLayoutVersion.OneValuePerKey)
    assert(restart(inMemory, planned()).getMessage ==
      "The multi-join of o, c, p (stateful operator 7) " +
      "cannot resume from this checkpoint: its state is in multi-join state layout 4 (one value " +
      "per key), which HDFSBackedStateStoreProvider keeps, and this session would use " +
      "multi-join state layout 3 (column families), for RocksDBStateStoreProvider. Run the " +
      "query with spark.sql.streaming.stateStore.providerClass set to " +
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider, or start " +
      "a new checkpoint.")
    assert(restart(planned(), inMemory).getMessage.contains("its state is in multi-join state " +
      "layout 3 (column families), which RocksDBStateStoreProvider keeps, and this session " +
      "would use multi-join state layout 4 (one value per key)"))
    // Layouts 1 (no number) and 2 were RocksDB's before layout 3, which reads them.
    for (recorded <- Seq("""{"stateFormatVersion":2}""", "")) {
      assert(OperatorProperties.fromJson(recorded).layoutVersion.forall(_ == 2))
      assert(intercept[IllegalStateException](OperatorProperties.fromJson(recorded)
        .checkRestart(inMemory, Operator)).getMessage.contains("its state is in multi-join state " +
        "layout 3 (column families)"))
    }
    val later = OperatorProperties.fromJson("""{"stateFormatVersion":5}""")
    assert(intercept[IllegalStateException](later.checkRestart(planned(), Operator)).getMessage ==
      "The multi-join of o, c, p (stateful operator 7) cannot resume from this checkpoint: multi-join " +
      "state layout 5 is not one this version of spark-multijoin knows (it knows multi-join " +
      "state layout 3 (column families) and multi-join state layout 4 (one value per key), " +
      "and moves layouts 1 and 2 into layout 3): a later version of spark-multijoin wrote it. " +
      "Run the query with that version, or start a new checkpoint.")
  }

  test("a changed max-tables that changed the operator's inputs is named, as Spark names one") {
    val error = restart(planned(Some(3)), planned(Some(4), inputs :+ schema("k INT, v3 INT")))
    assert(error.asInstanceOf[SparkThrowable].getCondition ==
      "STATE_STORE_INVALID_CONFIG_AFTER_RESTART")
    assert(error.getMessage.startsWith("[STATE_STORE_INVALID_CONFIG_AFTER_RESTART] Cannot " +
      "change multi-join.max-tables from 3 to 4 between restarts. Please set " +
      "multi-join.max-tables to 3, or restart with a new checkpoint directory."))
    assert(restart(planned(None), planned(Some(2), inputs.take(2))).getMessage.contains(
      "from (unset) to 2"))
  }

  test("a changed max-tables that leaves the operator's inputs as they were restarts") {
    OperatorProperties.fromJson(planned(Some(3)).json).checkRestart(planned(Some(5)), Operator)
    OperatorProperties.fromJson(planned(None).json).checkRestart(planned(Some(3)), Operator)
  }

  test("changed inputs or joins are named, with how to fix it") {
    val fix = "The query's joins changed since the checkpoint was written: change them back, " +
      "or start a new checkpoint."
    val moreInputs = restart(planned(), planned(schemas = inputs :+ schema("k INT, v3 INT")))
    assert(moreInputs.getMessage ==
      "The multi-join of o, c, p (stateful operator 7) cannot resume from " +
      s"this checkpoint: it joined 3 inputs and now joins 4. $fix")
    val retyped = restart(planned(),
      planned(schemas = inputs.updated(1, schema("k INT, v1 BIGINT"))))
    assert(retyped.getMessage.contains(
      "input 1 had the columns (k INT, v1 STRING) and now has (k INT, v1 BIGINT)."))
    val outer = restart(planned(), planned(tree = leftOuter))
    assert(outer.getMessage.contains("its inputs were joined with inner joins only and now " +
      "with inner joins, then input2 LEFT OUTER to input1."))
  }

  test("input changes Spark's state schema check accepts restart: renamed, nullable now") {
    val renamedAndNullable = inputs.updated(0, schema("key INT, value0 INT"))
      .updated(2, schema("k INT, v2 INT"))
    OperatorProperties.fromJson(planned().json).checkRestart(
      planned(schemas = renamedAndNullable), Operator)
    // Rows stored with nulls cannot be read as non-nullable ones.
    assert(restart(planned(),
      planned(schemas = inputs.updated(0, schema("k INT NOT NULL, v0 INT"))))
      .getMessage.contains("input 0 had the columns (k INT, v0 INT) and now has (k INT NOT NULL"))
  }

  // A changelog join's inputs as it records them.
  private val orders = Map("format" -> "debezium", "row id" -> "order_id",
    "key" -> "customer_id", "columns" -> "order_id INT,customer_id INT", "join" -> "INNER")
  private val customers = orders ++ Map("row id" -> "customer_id",
    "columns" -> "customer_id INT,name STRING", "join" -> "LEFT OUTER")

  private def changelog(inputs: Seq[Map[String, String]] = Seq(orders, customers),
      format: Option[Int] = Some(2)) = OperatorProperties.plannedNow.copy(
    changelogInputs = Some(inputs), changelogStateFormat = format)

  private val ChangelogOperator = "The changelog join of o, c (stateful operator 3)"

  test("a changelog join's properties read back, under the keys earlier versions wrote") {
    assert(OperatorProperties.fromJson(changelog().json) == changelog())
    val earlier = """{"inputs":[{"columns":"order_id INT,customer_id INT",""" +
      """"format":"debezium","join":"INNER","key":"customer_id","row id":"order_id"}],""" +
      """"stateFormat":2}"""
    assert(OperatorProperties.fromJson(earlier) ==
      OperatorProperties(None, None, None, None, changelogInputs = Some(Seq(orders)),
        changelogStateFormat = Some(2)))
    assert(changelog(Seq(orders)).copy(sparkVersion = None).json == earlier)
    // An ordering by row id of an earlier version recorded no inputs, a format 1 state none.
    assert(OperatorProperties.fromJson("""{"inputs":[],"stateFormat":1}""").changelogInputs
      .isEmpty)
    assert(OperatorProperties.fromJson("""{"inputs":[]}""").changelogStateFormat.isEmpty)
    OperatorProperties.fromJson("""{"inputs":[],"stateFormat":1}""")
      .checkRestart(changelog(Seq(orders)), ChangelogOperator)
  }

  test("a changelog input declared otherwise than in the checkpoint is refused, naming it") {
    def refused(now: Seq[Map[String, String]]) = intercept[IllegalStateException](
      OperatorProperties.fromJson(changelog().json).checkRestart(changelog(now),
        ChangelogOperator)).getMessage
    assert(refused(Seq(orders, customers + ("row id" -> "name"))) == s"$ChangelogOperator " +
      "cannot resume from this checkpoint: the row id of its input 1 was customer_id, now " +
      "name. The state holds that input's rows as it was declared; declare it as before, or " +
      "start the query from a new checkpoint.")
    assert(refused(Seq(orders)).contains("it joined 2 changelog inputs, now 1."))
    OperatorProperties.fromJson(changelog().json).checkRestart(changelog(), ChangelogOperator)
  }

  test("a changelog checkpoint of a newer Spark line is refused as a multi-join's is") {
    def writtenBy(version: String) = changelog().copy(sparkVersion = Some(version))
    val refused = intercept[IllegalStateException](
      OperatorProperties.fromJson(writtenBy("4.3.0").json).checkRestart(writtenBy("4.1.1"),
        ChangelogOperator)).getMessage
    val multiJoin = restart(planned().copy(sparkVersion = Some("4.3.0")),
      planned().copy(sparkVersion = Some("4.1.1"))).getMessage
    assert(refused == multiJoin.replace(Operator, ChangelogOperator))
    OperatorProperties.fromJson(writtenBy("4.1.1").json).checkRestart(writtenBy("4.3.0"),
      ChangelogOperator)
  }
}
