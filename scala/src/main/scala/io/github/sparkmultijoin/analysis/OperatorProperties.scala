package io.github.sparkmultijoin.analysis

import org.json4s.{JArray, JBool, JInt, JNothing, JNull, JObject, JString, JValue}
import org.json4s.jackson.JsonMethods.{compact, parse, parseOpt, render}

import org.apache.spark.SPARK_VERSION
import org.apache.spark.sql.execution.streaming.state.StateStoreErrors
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.multijoin.{MultiJoinConf, SparkInternals}
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * A multi-join's state layout and what the state depends on, recorded in its operator metadata
 * (the properties JSON of Spark's OperatorStateMetadataV2, which the `state-metadata` source
 * shows) so that a restart can say what changed. The planner's restart check and the operator
 * both read it, hence its place here.
 *
 * Why: the state keeps every input's rows, each in its input's columns, in one layout. A restart
 * whose multi-join has another layout, other inputs (`multi-join.max-tables` regroups a long
 * chain into other multi-joins), other input columns, or other outer joins cannot use it.
 * Spark's schema check refuses most such restarts, but with
 * STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE, which names neither the input nor the setting that
 * changed.
 *
 * Every property is optional when read: a checkpoint of an earlier version has only the layout
 * (or nothing), and what it does not record is not compared.
 *
 * @param layoutVersion      the number of its multi-join state layout ([[StateLayout]]),
 *                           recorded as `stateFormatVersion`
 * @param maxTables          `multi-join.max-tables` when the operator was planned; Some(None):
 *                           unset
 * @param inputSchemas       the schema of each input's rows, in input order
 * @param tree               how the inputs are joined
 * @param storeTimes         whether rows are indexed by the time they were stored (a state TTL)
 * @param sparkVersion       the version of the Spark that planned it
 */
case class OperatorProperties(
    layoutVersion: Option[Int],
    maxTables: Option[Option[Int]],
    inputSchemas: Option[Seq[StructType]],
    tree: Option[JoinTree],
    storeTimes: Option[Boolean] = None,
    sparkVersion: Option[String] = None) {

  import OperatorProperties._

  def json: String = {
    val fields: List[(String, JValue)] = List(
      layoutVersion.map(version => LayoutVersionKey -> JInt(version)),
      maxTables.map(value => "maxTables" -> value.map(JInt(_)).getOrElse(JNull)),
      inputSchemas.map(schemas => "inputSchemas" -> JArray(schemas.map(schemaJson).toList)),
      tree.map(joins => "joinTree" -> treeJson(joins)),
      storeTimes.map(indexed => "storeTimes" -> JBool(indexed)),
      sparkVersion.map(version => SparkVersionKey -> JString(version))).flatten
    compact(render(JObject(fields)))
  }

  /**
   * Fails if a restart whose operator `operatorId` has the properties `current` cannot use state
   * written with these, saying what changed and how to fix it. Where `multi-join.max-tables`
   * changed too, that is the cause: Spark's own error for a setting changed between restarts
   * names it. A changed setting that leaves this operator's layout as it was (a chain no longer
   * than either value) restarts.
   */
  def checkRestart(current: OperatorProperties, operatorId: Long): Unit = {
    checkSparkLine(current, operatorId)
    checkLayout(current, operatorId)
    checkStoreTimes(current, operatorId)
    val changes = layoutChanges(current)
    if (changes.nonEmpty) {
      (maxTables, current.maxTables) match {
        case (Some(before), Some(now)) if before != now =>
          throw StateStoreErrors.invalidConfigChangedAfterRestart(
            MultiJoinConf.MAX_TABLES.key, describe(before), describe(now))
        case _ =>
          throw new IllegalStateException(s"The multi-join (stateful operator $operatorId) " +
            s"cannot resume from this checkpoint: ${changes.mkString("; ")}. The query's joins " +
            "changed since the checkpoint was written: change them back, or start a new " +
            "checkpoint.")
      }
    }
  }

  /**
   * Fails if the state was written in another layout than `current` would use: the layout
   * decides how every row is read, so a store of one layout cannot be read as another.
   */
  private def checkLayout(current: OperatorProperties, operatorId: Long): Unit = {
    val cannot = s"The multi-join (stateful operator $operatorId) cannot resume from this " +
      "checkpoint:"
    (StateLayout.recorded(layoutVersion), StateLayout.recorded(current.layoutVersion)) match {
      case (Left(unknown), _) =>
        throw new IllegalStateException(s"$cannot $unknown. Run the query with that version, " +
          "or start a new checkpoint.")
      case (Right(before), Right(now)) if before != now =>
        throw new IllegalStateException(s"$cannot its state is in $before, which " +
          s"${before.provider} keeps, and this session would use $now, for ${now.provider}. " +
          s"Run the query with ${SQLConf.STATE_STORE_PROVIDER_CLASS.key} set to " +
          s"${before.providerClass}, or start a new checkpoint.")
      case _ =>
    }
  }

  /**
   * Fails if the state was written by a newer Spark line than the one restarting it. Spark
   * promises that a checkpoint restarts on a newer version, not on an older one, and the state
   * files of a newer line (its state schema and operator metadata formats) are not promised to
   * read on an older one: refused here, before anything of the state is read.
   */
  private def checkSparkLine(current: OperatorProperties, operatorId: Long): Unit =
    for (before <- sparkVersion; now <- current.sparkVersion if newerLine(before, now)) {
      throw new IllegalStateException(s"The multi-join (stateful operator $operatorId) cannot " +
        s"resume from this checkpoint: it was written by Spark $before, and this is Spark $now, " +
        "an older line. A checkpoint restarts on the Spark line that wrote it or a newer one: " +
        s"run the query on Spark ${lineOf(before)} or newer, or start a new " +
        "checkpoint.")
    }

  /** Fails if `multi-join.state-ttl` was set or unset since the checkpoint was written. */
  private def checkStoreTimes(current: OperatorProperties, operatorId: Long): Unit =
    (storeTimes, current.storeTimes) match {
      case (Some(before), Some(now)) if before != now =>
        def state(indexed: Boolean) = if (indexed) "set" else "unset"
        throw new IllegalStateException(s"The multi-join (stateful operator $operatorId) cannot " +
          s"resume from this checkpoint: ${MultiJoinConf.STATE_TTL.key} was ${state(before)} " +
          s"when it was written and is ${state(now)} now, and a TTL needs the time each row " +
          s"was stored, which the state keeps only where it was set. " +
          s"${if (before) "Set" else "Unset"} it again (any duration serves), or start a new " +
          "checkpoint.")
      case _ =>
    }

  /** What differs in `current` that the state depends on, as far as both record it. */
  private def layoutChanges(current: OperatorProperties): Seq[String] = {
    val inputs = (inputSchemas, current.inputSchemas) match {
      case (Some(before), Some(now)) if before.length != now.length =>
        Seq(s"it joined ${before.length} inputs and now joins ${now.length}")
      case (Some(before), Some(now)) =>
        before.zip(now).zipWithIndex.collect {
          case ((stored, schema), input) if !SparkInternals.stateSchemaCompatible(stored, schema) =>
            s"input $input had the columns (${columns(stored)}) and now has (${columns(schema)})"
        }
      case _ => Nil
    }
    val joins = (tree, current.tree) match {
      case (Some(before), Some(now)) if before != now =>
        Seq(s"its inputs were joined with ${describe(before)} and now with ${describe(now)}")
      case _ => Nil
    }
    inputs ++ joins
  }
}

object OperatorProperties {

  // The name checkpoints record the layout's number under.
  private val LayoutVersionKey = "stateFormatVersion"

  private val SparkVersionKey = "sparkVersion"

  /** A Spark version's line: "4.1" of "4.1.1". */
  private def lineOf(version: String): String = version.split("[.-]").take(2).mkString(".")

  /** Whether Spark `version` is of a newer line than Spark `than`. */
  private def newerLine(version: String, than: String): Boolean = {
    def numbers(v: String) = lineOf(v).split('.').map(_.toInt).toSeq
    Ordering.Implicits.seqOrdering[Seq, Int].gt(numbers(version), numbers(than))
  }

  /** The properties of a multi-join planned now. */
  def planned(
      layout: StateLayout,
      maxTables: Option[Int],
      inputSchemas: Seq[StructType],
      tree: JoinTree,
      storeTimes: Boolean = false): OperatorProperties =
    OperatorProperties(Some(layout.version), Some(maxTables), Some(inputSchemas), Some(tree),
      Some(storeTimes), Some(SPARK_VERSION))

  /** The properties recorded in `json`; none for a blank or unreadable one. */
  def fromJson(json: String): OperatorProperties = {
    val recorded = parseOpt(json).getOrElse(JNothing)
    val maxTables = recorded \ "maxTables" match {
      case JNothing => None
      case JInt(value) => Some(Some(value.toInt))
      case _ => Some(None)
    }
    val inputSchemas = recorded \ "inputSchemas" match {
      case JArray(schemas) => Some(schemas.map(schemaFromJson))
      case _ => None
    }
    OperatorProperties(
      (recorded \ LayoutVersionKey).toOption.collect { case JInt(v) => v.toInt },
      maxTables, inputSchemas, (recorded \ "joinTree").toOption.map(treeFromJson),
      (recorded \ "storeTimes").toOption.collect { case JBool(indexed) => indexed },
      (recorded \ SparkVersionKey).toOption.collect { case JString(version) => version })
  }

  private def schemaJson(schema: StructType): JValue = parse(schema.json)

  private def schemaFromJson(json: JValue): StructType =
    DataType.fromJson(compact(render(json))).asInstanceOf[StructType]

  private def treeJson(tree: JoinTree): JValue = JObject(
    "parents" -> JArray(tree.parents.map(_.map(JInt(_)).getOrElse(JNull)).toList),
    "outerOrder" -> JArray(tree.outerOrder.map(JInt(_)).toList),
    "fullOuter" -> JArray(tree.fullOuter.toList.sorted.map(JInt(_))))

  private def treeFromJson(json: JValue): JoinTree = {
    def ints(field: String) = (json \ field).children.collect { case JInt(v) => v.toInt }
    val parents = (json \ "parents").children.map {
      case JInt(parent) => Some(parent.toInt)
      case _ => None
    }
    JoinTree(parents, ints("outerOrder"), ints("fullOuter").toSet)
  }

  private def columns(schema: StructType): String = schema.fields.map(_.toDDL).mkString(", ")

  /** A value of `multi-join.max-tables` as its restart errors name it. */
  private[sparkmultijoin] def describe(maxTables: Option[Int]): String =
    maxTables.map(_.toString).getOrElse("(unset)")

  /** The joins of `tree` as EXPLAIN shows them: `input2 LEFT OUTER to input0`. */
  private def describe(tree: JoinTree): String =
    if (tree.outerOrder.isEmpty) {
      "inner joins only"
    } else {
      tree.outerOrder.map { input =>
        s"input$input ${tree.joinType(input)} to input${tree.parents(input).get}"
      }.mkString("inner joins, then ", ", then ", "")
    }
}
