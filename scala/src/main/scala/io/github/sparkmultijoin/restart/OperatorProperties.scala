package io.github.sparkmultijoin.restart

import io.github.sparkmultijoin.model.{JoinTree, StateLayoutVersion}
import io.github.sparkmultijoin.ttl.StateTtl
import org.json4s.{JArray, JBool, JInt, JNothing, JNull, JObject, JString, JValue}
import org.json4s.jackson.JsonMethods.{compact, parse, parseOpt, render}

import org.apache.spark.SPARK_VERSION
import org.apache.spark.sql.execution.streaming.state.StateStoreErrors
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.multijoin.{MultiJoinConf, StateStoreShim}
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
 * @param layoutVersion      the number of its multi-join state layout ([[StateLayoutVersion]]),
 *                           recorded as `stateFormatVersion`
 * @param maxTables          `multi-join.max-tables` when the operator was planned; Some(None):
 *                           unset
 * @param inputSchemas       the schema of each input's rows, in input order
 * @param tree               how the inputs are joined
 * @param stateTtlsMs        per input, its state TTL (ms), if it has one. A checkpoint of an
 *                           earlier version recorded only whether every input had one
 *                           (`storeTimes`): its TTLs read as [[UnknownTtl]]
 * @param sparkVersion       the version of the Spark that planned it
 */
case class OperatorProperties(
    layoutVersion: Option[Int],
    maxTables: Option[Option[Int]],
    inputSchemas: Option[Seq[StructType]],
    tree: Option[JoinTree],
    stateTtlsMs: Option[Seq[Option[Long]]] = None,
    sparkVersion: Option[String] = None) {

  import OperatorProperties._

  def json: String = {
    val fields: List[(String, JValue)] = List(
      layoutVersion.map(version => LayoutVersionKey -> JInt(version)),
      maxTables.map(value => "maxTables" -> value.map(JInt(_)).getOrElse(JNull)),
      inputSchemas.map(schemas => "inputSchemas" -> JArray(schemas.map(schemaJson).toList)),
      tree.map(joins => "joinTree" -> treeJson(joins)),
      stateTtlsMs.map(ttls =>
        "stateTtlsMs" -> JArray(ttls.map(_.map(JInt(_)).getOrElse(JNull)).toList)),
      sparkVersion.map(version => SparkVersionKey -> JString(version))).flatten
    compact(render(JObject(fields)))
  }

  /**
   * Fails if a restart whose operator (`operator`, as errors name it) has the properties
   * `current` cannot use state written with these, saying what changed and how to fix it. Where `multi-join.max-tables`
   * changed too, that is the cause: Spark's own error for a setting changed between restarts
   * names it. A changed setting that leaves this operator's layout as it was (a chain no longer
   * than either value) restarts.
   */
  def checkRestart(current: OperatorProperties, operator: String): Unit = {
    checkSparkLine(current, operator)
    checkLayout(current, operator)
    val changes = layoutChanges(current)
    if (changes.nonEmpty) {
      (maxTables, current.maxTables) match {
        case (Some(before), Some(now)) if before != now =>
          throw StateStoreErrors.invalidConfigChangedAfterRestart(
            MultiJoinConf.MAX_TABLES.key, describe(before), describe(now))
        case _ =>
          throw new IllegalStateException(s"$operator " +
            s"cannot resume from this checkpoint: ${changes.mkString("; ")}. The query's joins " +
            "changed since the checkpoint was written: change them back, or start a new " +
            "checkpoint.")
      }
    }
    checkStateTtls(current, operator)
  }

  /**
   * Fails if the state was written in another layout than `current` would use: the layout
   * decides how every row is read, so a store of one layout cannot be read as another.
   */
  private def checkLayout(current: OperatorProperties, operator: String): Unit = {
    val cannot = s"$operator cannot resume from this " +
      "checkpoint:"
    (StateLayoutVersion.recorded(layoutVersion),
      StateLayoutVersion.recorded(current.layoutVersion)) match {
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
  private def checkSparkLine(current: OperatorProperties, operator: String): Unit =
    for (before <- sparkVersion; now <- current.sparkVersion if newerLine(before, now)) {
      throw new IllegalStateException(s"$operator cannot " +
        s"resume from this checkpoint: it was written by Spark $before, and this is Spark $now, " +
        "an older line. A checkpoint restarts on the Spark line that wrote it or a newer one: " +
        s"run the query on Spark ${lineOf(before)} or newer, or start a new checkpoint.")
    }

  /**
   * Fails if an input that had a state TTL when the state was written has none now, or the
   * reverse: a TTL needs the time each row of its input was stored, which the state keeps only
   * for the inputs that had one (a changed duration restarts).
   */
  private def checkStateTtls(current: OperatorProperties, operator: String): Unit =
    (stateTtlsMs, current.stateTtlsMs) match {
      case (Some(before), Some(now)) if before.length == now.length =>
        val changed = before.indices.filter(i => before(i).isDefined != now(i).isDefined)
        if (changed.nonEmpty) {
          val what = changed.map { input =>
            s"input $input had ${describeTtl(before(input))} when it was written and has " +
              s"${describeTtl(now(input))} now"
          }
          throw new IllegalStateException(s"$operator " +
            s"cannot resume from this checkpoint: ${what.mkString("; ")}. A TTL needs the time " +
            "each row of its input was stored, which the state keeps only for the inputs that " +
            "had a TTL when it was written. Give each input a TTL again where it had one and " +
            s"none where it had none (${MultiJoinConf.STATE_TTL.key}, or a STATE_TTL hint; any " +
            "duration serves), or start a new checkpoint.")
        }
      case _ =>
    }

  /** What differs in `current` that the state depends on, as far as both record it. */
  private def layoutChanges(current: OperatorProperties): Seq[String] = {
    val inputs = (inputSchemas, current.inputSchemas) match {
      case (Some(before), Some(now)) if before.length != now.length =>
        Seq(s"it joined ${before.length} inputs and now joins ${now.length}")
      case (Some(before), Some(now)) =>
        before.zip(now).zipWithIndex.collect {
          case ((stored, schema), input) if !StateStoreShim.stateSchemaCompatible(stored, schema) =>
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
      layout: StateLayoutVersion,
      maxTables: Option[Int],
      inputSchemas: Seq[StructType],
      tree: JoinTree,
      stateTtlsMs: Seq[Option[Long]]): OperatorProperties =
    OperatorProperties(Some(layout.version), Some(maxTables), Some(inputSchemas), Some(tree),
      Some(stateTtlsMs), Some(SPARK_VERSION))

  /** The TTL of an input of a checkpoint that recorded only that it had one (earlier builds). */
  val UnknownTtl: Long = 0L

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
      stateTtls(recorded, inputSchemas.map(_.length)),
      (recorded \ SparkVersionKey).toOption.collect { case JString(version) => version })
  }

  /** Per input its TTL, as recorded; from `storeTimes`, where only that was, for `numInputs`. */
  private def stateTtls(recorded: JValue, numInputs: Option[Int]): Option[Seq[Option[Long]]] =
    (recorded \ "stateTtlsMs", recorded \ "storeTimes") match {
      case (JArray(ttls), _) => Some(ttls.map {
          case JInt(ms) => Some(ms.toLong)
          case _ => None
        })
      case (_, JBool(indexed)) => numInputs.map(Seq.fill(_)(Option.when(indexed)(UnknownTtl)))
      case _ => None
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

  /** An input's state TTL as restart errors name it. */
  private def describeTtl(ttlMs: Option[Long]): String = ttlMs match {
    case None => "no state TTL"
    case Some(UnknownTtl) => "a state TTL"
    case Some(ms) => s"a state TTL of ${StateTtl.show(ms)}"
  }

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
