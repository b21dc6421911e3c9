package io.github.sparkmultijoin.optimizer

import io.github.sparkmultijoin.optimizer.FusionVerdict.Input

import org.json4s.{JArray, JLong, JNull, JObject, JString, JValue}

/**
 * An argument of a [[FusionVerdict]], twice: as the `text` its template takes, and as `json`,
 * the structure a reader of [[FusionVerdict.json]] takes without parsing the words.
 */
case class VerdictArg(text: String, json: JValue)

object VerdictArg {

  def text(value: String): VerdictArg = VerdictArg(value, JString(value))

  def number(value: Long): VerdictArg = VerdictArg(value.toString, JLong(value))

  /** Named as the query names it (or by its columns); in JSON, its name (or null) and columns. */
  def input(input: Input): VerdictArg = VerdictArg(input.shown,
    JObject("name" -> input.name.fold[JValue](JNull)(JString),
      "columns" ->
        JArray(input.columns.map(JString).toList)))

  def inputList(inputs: Seq[Input]): VerdictArg = list(inputs.map(input))

  def list(items: Seq[VerdictArg], separator: String = ", "): VerdictArg =
    VerdictArg(items.map(_.text).mkString(separator), JArray(items.map(_.json).toList))

  /** A part of a message: `code`'s template filled; in JSON, the arguments as an object. */
  def part(code: String, args: (String, VerdictArg)*): VerdictArg = VerdictArg(
    VerdictTemplates.fill(code, args.map { case (name, arg) => name -> arg.text }),
    JObject(args.map { case (name, arg) => name -> arg.json }.toList))
}
