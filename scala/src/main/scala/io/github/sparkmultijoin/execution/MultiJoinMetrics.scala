package io.github.sparkmultijoin.execution

import org.apache.spark.sql.execution.streaming.operators.stateful.{StatefulOperatorCustomMetric, StatefulOperatorCustomSumMetric}

/**
 * The metrics a StreamingMultiJoin reports, each named and described once, here: the operator
 * updates them by these names, docs/metrics.md lists them ([[markdownTable]]), and the tests
 * read their names from here, so that renaming one cannot leave a test reading a key that is
 * no longer reported.
 *
 * Unlike MultiJoinConf it needs nothing Spark-private, so it lives with the operator that
 * reports the metrics rather than in a Spark package.
 */
object MultiJoinMetrics {

  /** Who declares a metric, and where a streaming query's progress reports it. */
  sealed abstract class Kind(val described: String)

  object Kind {

    /**
     * A metric of every stateful operator, which Spark's StateStoreWriter declares (a SQLMetric)
     * and the operator fills in. A progress reports it in each `stateOperators` entry under
     * `progressField`; one without shows only in the SQL tab of Spark's UI.
     */
    final case class StatefulOperator(progressField: Option[String])
      extends Kind("Spark's stateful operator metric (SQLMetric)")

    /**
     * Declared by the operator (customStatefulOperatorMetrics), summed over its partitions; a
     * progress reports it in the `customMetrics` of its `stateOperators` entry.
     */
    case object Custom extends Kind("custom stateful operator metric, summed over partitions")

    /** A custom metric per input: `<i>` in its name and description is the input's index. */
    case object CustomPerInput
      extends Kind("custom stateful operator metric, one per input i, summed over partitions")
  }

  /**
   * @param name        the metric's name, as the operator updates it and Spark's UI shows it
   * @param description what it counts here (Spark's UI shows it for the custom metrics)
   */
  final case class Metric(name: String, description: String, kind: Kind) {

    /**
     * The key that reports it in a progress's `stateOperators` entry, or for a custom metric in
     * that entry's `customMetrics`; None where the progress does not report it.
     */
    def progressKey: Option[String] = kind match {
      case Kind.StatefulOperator(field) => field
      case Kind.Custom | Kind.CustomPerInput => Some(name)
    }

    /** The name of input `input`'s own metric, of a metric per input. */
    def ofInput(input: Int): String = forInput(name, input)

    private[MultiJoinMetrics] def forInput(text: String, input: Int): String = {
      require(kind == Kind.CustomPerInput, s"$name is not a metric per input")
      text.replace(InputIndex, input.toString)
    }
  }

  private val InputIndex = "<i>"

  private def ofEveryOperator(name: String, progressField: String, description: String) =
    Metric(name, description, Kind.StatefulOperator(Some(progressField)))

  val NUM_OUTPUT_ROWS: Metric = Metric("numOutputRows", "rows emitted, joined and null-padded",
    Kind.StatefulOperator(progressField = None))

  val NUM_ROWS_DROPPED_BY_WATERMARK: Metric = ofEveryOperator("numRowsDroppedByWatermark",
    "numRowsDroppedByWatermark",
    "late input rows dropped: those at or below the previous micro-batch's watermark")

  val NUM_UPDATED_STATE_ROWS: Metric = ofEveryOperator("numUpdatedStateRows", "numRowsUpdated",
    "input rows the micro-batch stored")

  val NUM_REMOVED_STATE_ROWS: Metric = ofEveryOperator("numRemovedStateRows", "numRowsRemoved",
    "input rows removed from state: evicted by the time bounds, or expired by the state TTL")

  val NUM_TOTAL_STATE_ROWS: Metric = ofEveryOperator("numTotalStateRows", "numRowsTotal",
    "input rows in state, of all inputs (the indexes kept beside them are not counted)")

  val ALL_UPDATES_TIME_MS: Metric = ofEveryOperator("allUpdatesTimeMs", "allUpdatesTimeMs",
    "task time storing the new rows and emitting the output rows (ms)")

  val ALL_REMOVALS_TIME_MS: Metric = ofEveryOperator("allRemovalsTimeMs", "allRemovalsTimeMs",
    "task time evicting the rows no longer needed (ms)")

  val COMMIT_TIME_MS: Metric = ofEveryOperator("commitTimeMs", "commitTimeMs",
    "task time writing the micro-batch's rows and committing the state store (ms)")

  val STATE_MEMORY: Metric = ofEveryOperator("stateMemory", "memoryUsedBytes",
    "memory the state store reports in use (bytes)")

  val ROWS_OF_INPUT: Metric =
    Metric("numRowsInput<i>", "rows of input <i> in state", Kind.CustomPerInput)

  val NUM_NULL_PADDED_ROWS: Metric =
    Metric("numNullPaddedRows", "null-padded rows emitted", Kind.Custom)

  val NUM_ROWS_EXPIRED_BY_TTL: Metric =
    Metric("numRowsExpiredByTtl", "rows dropped by the state TTL", Kind.Custom)

  val NUM_KEY_READS: Metric = Metric("numKeyReads",
    "reads of the rows stored under a key that went to the state store (one point lookup " +
      "each for every input's rows)", Kind.Custom)

  val KEY_READ_TIME_MS: Metric =
    Metric("keyReadTimeMs", "task time of the reads that numKeyReads counts (ms)", Kind.Custom)

  val NUM_OUTDATED_CHANGES: Metric = Metric("numOutdatedChanges",
    "changelog joins: changes ignored as they come at or before the version of their row " +
      "already applied (a duplicate delivery, a late older version)", Kind.Custom)

  val NUM_IDEMPOTENT_CHANGES: Metric = Metric("numIdempotentChanges",
    "changelog joins: an insert of a row already live or a delete of one absent, applied as " +
      "the row it leaves", Kind.Custom)

  /** Every metric, in the order docs/metrics.md lists them. */
  val all: Seq[Metric] = Seq(NUM_OUTPUT_ROWS, NUM_ROWS_DROPPED_BY_WATERMARK,
    NUM_UPDATED_STATE_ROWS, NUM_REMOVED_STATE_ROWS, NUM_TOTAL_STATE_ROWS, ALL_UPDATES_TIME_MS,
    ALL_REMOVALS_TIME_MS, COMMIT_TIME_MS, STATE_MEMORY, ROWS_OF_INPUT, NUM_NULL_PADDED_ROWS,
    NUM_ROWS_EXPIRED_BY_TTL, NUM_KEY_READS, KEY_READ_TIME_MS, NUM_OUTDATED_CHANGES,
    NUM_IDEMPOTENT_CHANGES)

  /** The custom metrics of an operator of `numInputs` inputs, as it declares them to Spark. */
  def customStatefulOperatorMetrics(numInputs: Int): Seq[StatefulOperatorCustomMetric] =
    all.flatMap { metric =>
      metric.kind match {
        case Kind.CustomPerInput => (0 until numInputs).map { input =>
            StatefulOperatorCustomSumMetric(metric.ofInput(input),
              metric.forInput(metric.description, input))
          }
        case Kind.Custom => Seq(StatefulOperatorCustomSumMetric(metric.name, metric.description))
        case Kind.StatefulOperator(_) => Nil
      }
    }

  /** docs/metrics.md's table (tests/test_docs_tables.py keeps the file in step with it). */
  def markdownTable: String = {
    val header = Seq(
      "| metric | reported in a progress's `stateOperators` entry as | kind | meaning |",
      "| --- | --- | --- | --- |")
    val rows = all.map { metric =>
      val inProgress = (metric.kind, metric.progressKey) match {
        case (Kind.StatefulOperator(_), Some(key)) => s"`$key`"
        case (_, Some(key)) => s"`customMetrics.$key`"
        case (_, None) => "(SQL tab only)"
      }
      // Markdown would read `<i>` outside code as HTML.
      val meaning = metric.description.replace(InputIndex, "i")
      s"| `${metric.name}` | $inProgress | ${metric.kind.described} | $meaning |"
    }
    (header ++ rows).mkString("\n")
  }
}
