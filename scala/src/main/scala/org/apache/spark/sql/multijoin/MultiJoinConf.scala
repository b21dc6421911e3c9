package org.apache.spark.sql.multijoin

import org.apache.spark.internal.config.ConfigEntry
import org.apache.spark.network.util.ByteUnit
import org.apache.spark.sql.internal.SQLConf

/**
 * The extension's configuration, declared once.
 *
 * The entries are registered with Spark's SQLConf, so a bad value fails at `spark.conf.set`
 * with Spark's INVALID_CONF_VALUE error naming the key, and `SET -v` lists them. Each key has a
 * `spark.`-prefixed alias, because `spark-submit --conf` and spark-defaults ignore keys without
 * that prefix; the alias is validated the same way and read when the short key is not set.
 *
 * It lives in a Spark package only because Spark's config builder is Spark-private.
 */
object MultiJoinConf {

  /** The version the entries below first appeared in. */
  private val FirstVersion = "0.1.0"

  private val EnabledDoc =
    "When true, chains of three or more streaming joins (inner, and left or right outer with " +
      "event-time bounds) on one shared key run as one StreamingMultiJoin operator that keeps " +
      "only the input rows in state. Read when a streaming query starts; a query keeps the " +
      "value it started with."

  private val MaxTablesDoc =
    "The most inputs one StreamingMultiJoin takes. A longer chain is split, left to right, into " +
      "several multi-joins of at most this many inputs each; the later ones then store the " +
      "output of the earlier ones as Spark's chain does. Unset means no limit."

  private def entry(key: String, doc: String, alias: Option[String]) =
    alias.foldLeft(SQLConf.buildConf(key))(_.withAlternative(_)).doc(doc).version(FirstVersion)

  private def enabled(key: String, doc: String, alias: Option[String] = None) =
    entry(key, doc, alias).booleanConf

  private def maxTables(key: String, doc: String, alias: Option[String] = None) =
    entry(key, doc, alias).intConf
      .checkValue(_ >= 2, s"$key must be an integer of at least 2 (a multi-join needs two " +
        "inputs); unset it for no limit.")

  val ENABLED: ConfigEntry[Boolean] =
    enabled("multi-join.enabled", EnabledDoc, Some("spark.multi-join.enabled"))
      .createWithDefault(false)

  val MAX_TABLES: ConfigEntry[Option[Int]] =
    maxTables("multi-join.max-tables", MaxTablesDoc, Some("spark.multi-join.max-tables"))
      .createOptional

  val BATCH_ROWS_MEMORY: ConfigEntry[Long] =
    entry("multi-join.batch-rows-memory",
      "How many bytes of a micro-batch's new rows one partition of a StreamingMultiJoin keeps " +
        "in memory (estimated), so that joining them does not read them back from the state " +
        "store. Past it, they are read back. Internal: tests set it low to take that path.",
      alias = None)
      .internal()
      .bytesConf(ByteUnit.BYTE)
      .checkValue(_ >= 0, "multi-join.batch-rows-memory must be a size of at least 0 bytes.")
      .createWithDefaultString("32m")

  // The `spark.`-prefixed aliases are registered too, so that setting one is validated and an
  // error names the key that was set.
  private val aliases: Seq[ConfigEntry[_]] = Seq(
    enabled("spark.multi-join.enabled", s"Alias of ${ENABLED.key}.").createWithDefault(false),
    maxTables("spark.multi-join.max-tables", s"Alias of ${MAX_TABLES.key}.").createOptional)

  /** The documented entries, in the order the README lists them. */
  val entries: Seq[ConfigEntry[_]] = Seq(ENABLED, MAX_TABLES)

  def enabled(conf: SQLConf): Boolean = conf.getConf(ENABLED)

  def maxTables(conf: SQLConf): Option[Int] = conf.getConf(MAX_TABLES)

  def batchRowsMemory(conf: SQLConf): Long = conf.getConf(BATCH_ROWS_MEMORY)

  /** The README's configuration table (tests/test_readme.py keeps the README in step with it). */
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

  /** Registers the entries with SQLConf; called when the extension is installed. */
  def register(): Unit = aliases.size
}
