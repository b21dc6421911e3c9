package io.github.sparkmultijoin.restart

import io.github.sparkmultijoin.model.JoinTree
import org.json4s.{JArray, JBool, JInt, JNothing, JNull, JObject, JString, JValue}
import org.json4s.jackson.JsonMethods.{compact, parse, parseOpt, render}

import org.apache.spark.sql.types.{DataType, StructType}

/**
 * [[OperatorProperties]] as the properties JSON of an operator's metadata, under the keys every
 * earlier version wrote, so that their checkpoints keep restarting: a multi-join's layout as
 * `stateFormatVersion`, a changelog operator's inputs as `inputs` and its state format as
 * `stateFormat`.
 */
private[restart] object PropertiesJson {

  private val LayoutVersionKey = "stateFormatVersion"
  private val SparkVersionKey = "sparkVersion"
  private val ChangelogInputsKey = "inputs"
  private val ChangelogStateFormatKey = "stateFormat"

  def write(properties: OperatorProperties): String = {
    import properties._
    val fields: List[(String, JValue)] = List(
      changelogInputs.map(inputs =>
        ChangelogInputsKey -> JArray(inputs.map(input =>
          JObject(input.toList.sorted.map { case (k, v) => k -> (JString(v): JValue) })).toList)),
      changelogStateFormat.map(n => ChangelogStateFormatKey -> JInt(n)),
      layoutVersion.map(version => LayoutVersionKey -> JInt(version)),
      maxTables.map(value => "maxTables" -> value.map(JInt(_)).getOrElse(JNull)),
      inputSchemas.map(schemas => "inputSchemas" -> JArray(schemas.map(schemaJson).toList)),
      tree.map(joins => "joinTree" -> treeJson(joins)),
      stateTtlsMs.map(ttls =>
        "stateTtlsMs" -> JArray(ttls.map(_.map(JInt(_)).getOrElse(JNull)).toList)),
      sparkVersion.map(version => SparkVersionKey -> JString(version))).flatten
    compact(render(JObject(fields)))
  }

  def read(json: String): OperatorProperties = {
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
      int(recorded \ LayoutVersionKey),
      maxTables, inputSchemas, (recorded \ "joinTree").toOption.map(treeFromJson),
      stateTtls(recorded, inputSchemas.map(_.length)),
      (recorded \ SparkVersionKey).toOption.collect { case JString(version) => version },
      readChangelogInputs(recorded \ ChangelogInputsKey),
      int(recorded \ ChangelogStateFormatKey))
  }

  private def int(value: JValue): Option[Int] = value.toOption.collect { case JInt(v) => v.toInt }

  // An ordering by row id of an earlier version recorded an empty list: none.
  private def readChangelogInputs(recorded: JValue): Option[Seq[Map[String, String]]] =
    recorded match {
      case JArray(inputs) if inputs.nonEmpty =>
        Some(inputs.map {
          case JObject(fields) => fields.collect { case (k, JString(v)) => k -> v }.toMap
          case _ => Map.empty[String, String]
        })
      case _ => None
    }

  /** Per input its TTL, as recorded; from `storeTimes`, where only that was, for `numInputs`. */
  private def stateTtls(recorded: JValue, numInputs: Option[Int]): Option[Seq[Option[Long]]] =
    (recorded \ "stateTtlsMs", recorded \ "storeTimes") match {
      case (JArray(ttls), _) => Some(ttls.map {
          case JInt(ms) => Some(ms.toLong)
          case _ => None
        })
      case (_, JBool(indexed)) =>
        numInputs.map(Seq.fill(_)(Option.when(indexed)(OperatorProperties.UnknownTtl)))
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
}
