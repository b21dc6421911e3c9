package io.github.sparkmultijoin.optimizer

import scala.io.Source

import org.json4s.{JObject, JString}
import org.json4s.jackson.JsonMethods

/**
 * The words of every [[FusionVerdict]]: one template per code, with `<name>` placeholders, read
 * from the JSON file the jar carries ([[VerdictTemplates.Resource]]), in the manner of Spark's
 * `error-conditions.json`. A code with a dot (`COLLAPSED.GROUP`) is a part another template's
 * placeholder takes.
 *
 * Why a file: the rule, EXPLAIN and the Python side (which reads the same file out of the jar)
 * word the verdicts alike, and rewording one is an edit of the file, not of code.
 */
object VerdictTemplates {

  /** Where the jar carries the templates. */
  val Resource = "spark-multijoin/fusion-verdicts.json"

  private val Placeholder = "<([A-Za-z]+)>".r

  /** Every template, by code. */
  lazy val all: Map[String, String] = {
    val stream = getClass.getClassLoader.getResourceAsStream(Resource)
    require(stream != null, s"the jar carries no $Resource")
    val text =
      try Source.fromInputStream(stream, "UTF-8").mkString
      finally stream.close()
    JsonMethods.parse(text) match {
      case JObject(entries) =>
        entries.map {
          case (code, JObject(fields)) =>
            code -> fields.collectFirst { case ("message", JString(message)) => message }
              .getOrElse(throw new IllegalStateException(s"$Resource: $code has no message"))
          case (code, _) => throw new IllegalStateException(s"$Resource: $code is no object")
        }.toMap
      case _ => throw new IllegalStateException(s"$Resource is no JSON object")
    }
  }

  /** The names of the placeholders of `code`'s template. */
  def placeholders(code: String): Set[String] =
    Placeholder.findAllMatchIn(template(code)).map(_.group(1)).toSet

  /**
   * `code`'s template with each placeholder filled from `args` (which may hold more, for JSON
   * readers); an error if one is missing, so that code and file cannot drift apart unseen.
   */
  def fill(code: String, args: Seq[(String, String)]): String = {
    val values = args.toMap
    require(placeholders(code).subsetOf(values.keySet),
      s"$code takes ${placeholders(code).mkString(", ")}; given ${values.keys.mkString(", ")}")
    Placeholder.replaceAllIn(template(code),
      m => scala.util.matching.Regex.quoteReplacement(values(m.group(1))))
  }

  private def template(code: String): String =
    all.getOrElse(code, throw new IllegalArgumentException(s"$Resource has no $code"))
}
