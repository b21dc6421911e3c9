package io.github.sparkmultijoin.restart

import io.github.sparkmultijoin.model.ChangelogJoinShape

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.catalyst.types.DataTypeUtils

/**
 * What a changelog operator's state depends on, per input, in its [[OperatorProperties]]: the
 * input's format, its row id, its key and its current row's columns (and, of a join, how it
 * joins). The state holds each input's rows by row id under its key; a restart that declares
 * them otherwise would read them wrongly, so it is refused naming the input and what changed.
 */
object ChangelogDeclarations {

  /** The properties of a changelog join of `shape` whose state is in format `stateFormat`. */
  def ofJoin(shape: ChangelogJoinShape, stateFormat: Int): OperatorProperties =
    OperatorProperties.plannedNow.copy(
      changelogInputs = Some(shape.inputs.indices.map { i =>
        declared(shape, i) +
          ("join" ->
            (if (shape.tree.isOuter(i)) shape.tree.joinType(i)
             else "INNER"))
      }),
      changelogStateFormat = Some(stateFormat))

  /**
   * The properties of the ordering by row id of the one input of `shape`, which keeps of a row
   * `kept` (its row id and the columns its join key reads), in format `stateFormat`.
   */
  def ofOrdering(shape: ChangelogJoinShape, kept: Seq[Attribute], stateFormat: Int)
      : OperatorProperties =
    OperatorProperties.plannedNow.copy(
      changelogInputs =
        Some(Seq(declared(shape, 0) - "key" + ("kept" -> kept.map(_.name).mkString(", ")))),
      changelogStateFormat = Some(stateFormat))

  // How the query names the input: recorded for the errors, not compared (a query may rename).
  private val Name = "name"

  private def declared(shape: ChangelogJoinShape, i: Int): Map[String, String] = Map(
    Name -> shape.names(i),
    "format" -> shape.formats(i),
    "row id" -> shape.rowIds(i).map(_.name).mkString(", "),
    "key" -> shape.keys(i).map(_.transform { case a: AttributeReference =>
      a.withQualifier(Nil)
    }.sql).mkString(", "),
    "columns" -> DataTypeUtils.fromAttributes(shape.currentColumns(i)).toDDL)

  /**
   * Fails if a restart declaring `now` cannot use state written with the inputs `recorded`
   * declared (not compared where the checkpoint recorded none).
   */
  def checkRestart(
      recorded: Option[Seq[Map[String, String]]],
      now: Seq[Map[String, String]],
      operator: String): Unit = recorded.foreach { before =>
    if (before.length != now.length) throw new IllegalStateException(s"$operator cannot " +
      s"resume from this checkpoint: it joined ${before.length} changelog inputs, now " +
      s"${now.length}. Start the query from a new checkpoint.")
    before.zip(now).zipWithIndex.foreach { case ((was, is), input) =>
      val changed = was.keys.toSeq.sorted.filter(_ != Name).find(key => is.get(key) != was.get(key))
      changed.foreach { key =>
        val named = is.get(Name).fold(s"input $input")(name => s"input $input ($name)")
        throw new IllegalStateException(s"$operator cannot resume from this checkpoint: the " +
          s"$key of its $named was ${was(key)}, now ${is.getOrElse(key, "none")}. The " +
          "state holds that input's rows as it was declared; declare it as before, or start " +
          "the query from a new checkpoint.")
      }
    }
  }
}
