package io.github.sparkmultijoin.restart

import io.github.sparkmultijoin.model.ChangelogJoinShape
import org.json4s.{JArray, JInt, JObject, JString, JValue}
import org.json4s.jackson.JsonMethods.{compact, parse, render}

import org.apache.spark.sql.catalyst.expressions.AttributeReference
import org.apache.spark.sql.catalyst.types.DataTypeUtils

/**
 * What a changelog join's state depends on, per input, recorded in its operator metadata so
 * that a restart can say which input changed: its format, its row id, its key and its current
 * row's columns. The state holds each input's rows by row id under its key; a restart that
 * declares them otherwise would read them wrongly. With them, the number of the state format
 * the state is kept in (none before formats were recorded).
 */
case class ChangelogDeclarations(inputs: Seq[Map[String, String]], stateFormat: Option[Int]) {

  def json: String = compact(render(JObject(
    ("inputs" -> JArray(inputs.map(input =>
      JObject(input.toList.sorted.map { case (k, v) => k -> (JString(v): JValue) })).toList)) ::
      stateFormat.map(n => "stateFormat" -> (JInt(n): JValue)).toList)))

  /** Fails if a restart declaring `current` cannot use state written with these. */
  def checkRestart(current: ChangelogDeclarations, operator: String): Unit = {
    if (inputs.length != current.inputs.length) throw new IllegalStateException(s"$operator " +
      s"cannot restart from its checkpoint: it joined ${inputs.length} changelog inputs, now " +
      s"${current.inputs.length}. Start the query from a new checkpoint.")
    inputs.zip(current.inputs).zipWithIndex.foreach { case ((before, now), input) =>
      before.keys.toSeq.sorted.find(key => now.get(key) != before.get(key)).foreach { key =>
        throw new IllegalStateException(s"$operator cannot restart from its checkpoint: the " +
          s"$key of its input $input was ${before(key)}, now ${now.getOrElse(key, "none")}. " +
          "The state holds that input's rows as it was declared; declare it as before, or " +
          "start the query from a new checkpoint.")
      }
    }
  }
}

object ChangelogDeclarations {

  /** The declarations of a join of `shape` whose state is kept in format `stateFormat`. */
  def of(shape: ChangelogJoinShape, stateFormat: Int): ChangelogDeclarations =
    ChangelogDeclarations(
      shape.inputs.indices.map { i =>
        Map(
          "format" -> shape.formats(i),
          "row id" -> shape.rowIds(i).map(_.name).mkString(", "),
          "key" -> shape.keys(i).map(_.transform { case a: AttributeReference =>
            a.withQualifier(Nil)
          }.sql).mkString(", "),
          "columns" -> DataTypeUtils.fromAttributes(shape.currentColumns(i)).toDDL,
          "join" -> (if (shape.tree.isOuter(i)) shape.tree.joinType(i) else "INNER"))
      }, Some(stateFormat))

  def fromJson(json: String): ChangelogDeclarations = {
    val parsed = parse(json)
    val inputs = parsed \ "inputs" match {
      case JArray(values) => values.map {
          case JObject(fields) => fields.collect { case (k, JString(v)) => k -> v }.toMap
          case _ => Map.empty[String, String]
        }
      case _ => Nil
    }
    ChangelogDeclarations(inputs,
      parsed \ "stateFormat" match {
        case JInt(n) => Some(n.toInt)
        case _ => None
      })
  }
}
