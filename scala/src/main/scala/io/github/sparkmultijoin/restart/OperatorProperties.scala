package io.github.sparkmultijoin.restart

import io.github.sparkmultijoin.model.{JoinTree, StateLayoutVersion}
import io.github.sparkmultijoin.ttl.StateTtl
import org.apache.spark.SPARK_VERSION
import org.apache.spark.sql.execution.streaming.state.StateStoreErrors
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.multijoin.{MultiJoinConf, StateStoreShim}
import org.apache.spark.sql.types.StructType

/**
 * What a stateful operator's state depends on, recorded in its operator metadata (the properties
 * JSON of Spark's OperatorStateMetadataV2, which the `state-metadata` source shows) so that a
 * restart can say what changed: the one restart record of the multi-join, the changelog join and
 * its ordering by row id. The planner's restart check and the operators both read it, hence its
 * place here.
 *
 * Why: a multi-join's state keeps every input's rows, each in its input's columns, in one layout.
 * A restart whose multi-join has another layout, other inputs (`multi-join.max-tables` regroups a
 * long chain into other multi-joins), other input columns, or other outer joins cannot use it. A
 * changelog join's state holds each input's rows by row id under its key: a restart that
 * declares them otherwise would read them wrongly. Spark's schema check refuses most such
 * restarts, but with STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE, which names neither the input nor
 * the setting that changed. And no operator's state restarts on an older Spark line than the one
 * that wrote it.
 *
 * Every property is optional when read: a checkpoint of an earlier version records less (a
 * multi-join only its layout, or nothing; an ordering by row id only its state format), and what
 * it does not record is not compared. The JSON keys are those earlier versions wrote.
 *
 * @param layoutVersion      a multi-join's state layout ([[StateLayoutVersion]]), recorded as
 *                           `stateFormatVersion`
 * @param maxTables          `multi-join.max-tables` when the multi-join was planned; Some(None):
 *                           unset
 * @param inputSchemas       the schema of each multi-join input's rows, in input order
 * @param tree               how the multi-join's inputs are joined
 * @param stateTtlsMs        per multi-join input, its state TTL (ms), if it has one. A checkpoint
 *                           of an earlier version recorded only whether every input had one
 *                           (`storeTimes`): its TTLs read as [[UnknownTtl]]
 * @param sparkVersion       the version of the Spark that planned the operator
 * @param changelogInputs    per changelog input, what its state depends on
 *                           ([[ChangelogDeclarations]]), recorded as `inputs`
 * @param changelogStateFormat the changelog state format its state is kept in, recorded as
 *                           `stateFormat` (none recorded: the first)
 */
case class OperatorProperties(
    layoutVersion: Option[Int],
    maxTables: Option[Option[Int]],
    inputSchemas: Option[Seq[StructType]],
    tree: Option[JoinTree],
    stateTtlsMs: Option[Seq[Option[Long]]] = None,
    sparkVersion: Option[String] = None,
    changelogInputs: Option[Seq[Map[String, String]]] = None,
    changelogStateFormat: Option[Int] = None) {

  import OperatorProperties._

  def json: String = PropertiesJson.write(this)

  /**
   * Fails if a restart whose operator (`operator`, as errors name it) has the properties
   * `current` cannot use state written with these, saying what changed and how to fix it. Of a
   * multi-join, where `multi-join.max-tables` changed too, that is the cause: Spark's own error
   * for a setting changed between restarts names it. A changed setting that leaves this
   * operator's layout as it was (a chain no longer than either value) restarts.
   */
  def checkRestart(current: OperatorProperties, operator: String): Unit = {
    checkSparkLine(current, operator)
    current.changelogInputs.foreach(ChangelogDeclarations.checkRestart(changelogInputs, _,
      operator))
    if (current.layoutVersion.isDefined) checkMultiJoin(current, operator)
  }

  private def checkMultiJoin(current: OperatorProperties, operator: String): Unit = {
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

  /** A Spark version's line: "4.1" of "4.1.1". */
  private def lineOf(version: String): String = version.split("[.-]").take(2).mkString(".")

  /** Whether Spark `version` is of a newer line than Spark `than`. */
  private def newerLine(version: String, than: String): Boolean = {
    def numbers(v: String) = lineOf(v).split('.').map(_.toInt).toSeq
    Ordering.Implicits.seqOrdering[Seq, Int].gt(numbers(version), numbers(than))
  }

  /** The properties of an operator planned now that are none of a multi-join's. */
  def plannedNow: OperatorProperties = OperatorProperties(None, None, None, None,
    sparkVersion = Some(SPARK_VERSION))

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
  def fromJson(json: String): OperatorProperties = PropertiesJson.read(json)

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
