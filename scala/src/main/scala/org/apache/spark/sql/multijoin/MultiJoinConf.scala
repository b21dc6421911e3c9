package org.apache.spark.sql.multijoin

import io.github.sparkmultijoin.ttl.StateTtl

import org.apache.spark.internal.config.{ConfigBuilder, ConfigEntry}
import org.apache.spark.network.util.ByteUnit
import org.apache.spark.sql.internal.SQLConf
import org.json4s.{JArray, JNull, JObject, JString}
import org.json4s.jackson.JsonMethods.{pretty, render}

/**
 * The extension's configuration: each entry declared once, here.
 *
 * The entries are registered with SQLConf when this object is initialized, so a bad value fails
 * at `spark.conf.set` with Spark's INVALID_CONF_VALUE error naming the key, and `SET -v` lists
 * them. Each user-facing key has a `spark.`-prefixed alias, because `spark-submit --conf` and
 * spark-defaults ignore keys without that prefix: the entry reads the alias when its own key is
 * not set. SQLConf validates a value only under a registered key, so the same declaration also
 * registers the alias as an internal entry, with the same type and checks.
 *
 * It lives in a Spark package only because Spark's config builder is Spark-private.
 *
 * The Python package's typed view of the settings (`multi_join(spark)`) is generated from
 * [[description]] when the package is built (scripts/conf_view.py, run by setup.py), so each
 * documented entry also says what it takes ([[Takes]]).
 */
object MultiJoinConf {

  /**
   * What a documented entry takes: the type of its values (`boolean`, `int` or `string`) and, for
   * the other types, which values it allows, in words that finish "takes ...".
   */
  final case class Takes(valueType: String, words: String)

  private val TakesBoolean = Takes("boolean", "true or false")

  private val AtLeastThree = "an integer of at least 3"

  /** What each documented entry takes, by key, in the order they are declared. */
  private val takes = scala.collection.mutable.LinkedHashMap.empty[String, Takes]

  /** The version of spark-multijoin in which the entries below first appeared. */
  private val Since = "0.1.0"

  val ENABLED: ConfigEntry[Boolean] = withAlias("multi-join.enabled", TakesBoolean,
    "When true, chains of three or more streaming joins (inner, and left, right or full outer " +
      "with event-time bounds) on one shared key run as one StreamingMultiJoin operator that " +
      "keeps only the input rows in state. Read when a streaming query starts; a query keeps the " +
      "value it started with.") {
    _.booleanConf.createWithDefault(false)
  }

  val MAX_TABLES: ConfigEntry[Option[Int]] = withAlias(
    "multi-join.max-tables", Takes("int", AtLeastThree),
    "The most inputs one StreamingMultiJoin takes. A longer chain is split, left to right, into " +
      "several multi-joins of at most this many inputs each; the later ones then store the " +
      "output of the earlier ones as Spark's chain does, and a last input left over is joined " +
      "by Spark's own join. Unset means no limit.") {
    _.intConf
      .checkValue(_ >= 3,
        s"must be $AtLeastThree (a multi-join of two inputs would save nothing over " +
          "Spark's join of two); unset it for no limit.")
      .createOptional
  }

  val STATE_TTL: ConfigEntry[Option[String]] = withAlias(
    "multi-join.state-ttl", Takes("string", StateTtl.Examples),
    "How long, in processing time, a multi-join keeps an input row: a row stored by a " +
      "micro-batch that started longer ago than this is dropped at the start of a later one " +
      "and joins nothing after. This changes the answer: rows that would have matched after " +
      "their TTL no longer do. A duration as withWatermark takes it ('1 day', '90 minutes') or " +
      "as '1d', '30m'. Applies to every input of a multi-join of inner joins that no " +
      "STATE_TTL hint names; in a multi-join with outer joins, whose inputs are all bounded by " +
      "time, to none. Unset keeps rows until time bounds evict them, or for good.") {
    _.stringConf
      .checkValue(StateTtl.parseMs(_).isRight,
        s"must be ${StateTtl.Examples}; unset it for no TTL.")
      .createOptional
  }

  val BATCH_ROWS_MEMORY: ConfigEntry[Long] = SQLConf.buildConf("multi-join.batch-rows-memory")
    .internal()
    .doc("How many bytes of a micro-batch's new rows one partition of a StreamingMultiJoin " +
      "keeps in memory (estimated), twice over: copies, so that joining them does not read them " +
      "back from the state store, and the rows not yet written, so that each key's are written " +
      "with one merge. Past it, they are read back, and written at once. Internal: tests set " +
      "it low to take those paths.")
    .version(Since)
    .bytesConf(ByteUnit.BYTE)
    .checkValue(_ >= 0, "must be a size of at least 0 bytes.")
    .createWithDefaultString("32m")

  val CHANGELOG_STATE_FORMAT: ConfigEntry[Int] =
    SQLConf.buildConf("multi-join.changelog-state-format")
      .internal()
      .doc("The state format a new changelog join writes (a restart keeps its checkpoint's), " +
        "as spark.sql.streaming.join.stateFormatVersion picks Spark's join's. Internal: tests " +
        "set 1 to write a checkpoint as earlier versions did.")
      .version(Since)
      .intConf
      .checkValue(Set(1, 2), "must be 1 or 2.")
      .createWithDefault(2)

  /** The documented entries, in the order the README lists them. */
  val entries: Seq[ConfigEntry[_]] = Seq(ENABLED, MAX_TABLES, STATE_TTL)

  /**
   * The entry `key`, read under `spark.<key>` too, declared by `typed` (type, checks, default).
   * The alias is registered as an internal entry of the same declaration, so that a value set
   * under it is validated and an error names the key that was set.
   */
  private def withAlias[T](key: String, what: Takes, doc: String)(
      typed: ConfigBuilder => ConfigEntry[T]): ConfigEntry[T] = {
    val alias = s"spark.$key"
    takes(key) = what
    typed(SQLConf.buildConf(alias).internal().doc(s"Alias of $key.").version(Since))
    typed(SQLConf.buildConf(key).withAlternative(alias).doc(doc).version(Since))
  }

  def enabled(conf: SQLConf): Boolean = conf.getConf(ENABLED)

  def maxTables(conf: SQLConf): Option[Int] = conf.getConf(MAX_TABLES)

  def batchRowsMemory(conf: SQLConf): Long = conf.getConf(BATCH_ROWS_MEMORY)

  def changelogStateFormat(conf: SQLConf): Int = conf.getConf(CHANGELOG_STATE_FORMAT)

  /** The session's state TTL in milliseconds (validated when set). */
  def stateTtlMs(conf: SQLConf): Option[Long] = conf.getConf(STATE_TTL).map { text =>
    StateTtl.parseMs(text).fold(
      problem => throw new IllegalArgumentException(s"${STATE_TTL.key}: $problem"), identity)
  }

  /** The README's configuration table (tests/test_docs_tables.py keeps the README in step). */
  def markdownTable: String = {
    val header = Seq(
      "| key | alias | default | since | meaning |",
      "| --- | --- | --- | --- | --- |")
    val rows = entries.map { entry =>
      val default = entry.defaultValueString match {
        case "<undefined>" => "(none)"
        case value => s"`$value`"
      }
      val alias = entry.alternatives.map(a => s"`$a`").mkString(", ")
      s"| `${entry.key}` | $alias | $default | ${entry.version} | ${entry.doc} |"
    }
    (header ++ rows).mkString("\n")
  }

  /**
   * The documented entries as JSON, for the build to generate the Python view from:
   * {{{
   * {"entries": [                      // as `entries` orders them
   *   {"key": "multi-join.max-tables",
   *    "alternatives": ["spark.multi-join.max-tables"],
   *    "type": "int",                  // boolean, int or string
   *    "takes": "an integer of at least 3",
   *    "default": null,                // the default as Spark writes it; null: none
   *    "since": "0.1.0",
   *    "doc": "The most inputs ..."}
   * ]}
   * }}}
   */
  def description: String = pretty(render(JObject("entries" -> JArray(entries.toList.map {
    entry =>
      val what = takes(entry.key)
      JObject(
        "key" -> JString(entry.key),
        "alternatives" -> JArray(entry.alternatives.map(JString(_))),
        "type" -> JString(what.valueType),
        "takes" -> JString(what.words),
        "default" ->
          entry.defaultValue.map(_ => JString(entry.defaultValueString)).getOrElse(JNull),
        "since" -> JString(entry.version),
        "doc" -> JString(entry.doc))
  }))))

  /** Prints [[description]]: what scripts/conf_view.py runs with the jar and Spark's jars. */
  def main(args: Array[String]): Unit = println(description)

  /**
   * Registers the entries with SQLConf. Initializing this object does it; the extension calls
   * this when it is installed, so that the keys are known before any query reads them.
   */
  def register(): Unit = ()
}
