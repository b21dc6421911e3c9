package io.github.sparkmultijoin

import io.github.sparkmultijoin.analysis.{CheckChangelogJoins, RewriteChangelogJoins, ResolveMultiJoinHint}
import io.github.sparkmultijoin.optimizer.{CollapseStreamingJoinChains, InputNames, NumberChangelogJoins, ValidateMultiJoinRestart}
import io.github.sparkmultijoin.planning.{AddMultiJoinWatermarks, ChangelogJoinStrategy, CheckRealTimeAllowlist, MultiJoinStrategy}

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.multijoin.{MultiJoinConf, SparkLineCheck}

/**
 * Installs spark-multijoin into a SparkSession: nothing but wiring, grouped by phase.
 *
 * Enable it from Scala with
 * {{{
 *   SparkSession.builder()
 *     .config("spark.sql.extensions", "io.github.sparkmultijoin.MultiJoinExtension")
 *     .config("spark.sql.streaming.stateStore.providerClass",
 *       "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
 *     .getOrCreate()
 *   spark.conf.set("multi-join.enabled", true)
 * }}}
 * and from Python with `configure_spark_with_multijoin(builder)` from `spark_multijoin`, which
 * also adds the jar and the RocksDB state store provider. (Spark's default, in-memory store
 * serves too.)
 *
 * Order: the analyzer rule takes the hints (MULTI_JOIN, STATE_TTL) while their names still mean
 * something (Spark drops unknown hints after resolution, and the optimizer drops the aliases
 * that carry the names), and they are bound anew to the columns under those names before every optimization, as a
 * streaming query's inputs get new columns every micro-batch; the names of the inputs are
 * recorded on their relations then too, for the verdicts to name them. The optimizer rule runs once,
 * after Spark's operator optimizations (pre-CBO), so that it sees joins with filters and
 * projections already pushed down and never sees its own output again; the restart check right
 * after it compares the multi-joins it planned with the checkpoint's, before Spark's own check
 * of the stateful operators (at physical planning) refuses a changed plan without naming the
 * setting that changed it. The planner strategy plans the resulting MultiJoin; it cannot plan streaming joins
 * themselves, because Spark's streaming strategies run before extension strategies.
 */
class MultiJoinExtension extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    SparkLineCheck.requireBuiltLine()
    MultiJoinConf.register()

    // Analyzer, then plan normalization (before every optimization, per micro-batch too)
    extensions.injectResolutionRule(_ => ResolveMultiJoinHint)
    extensions.injectResolutionRule(_ => RewriteChangelogJoins)
    extensions.injectCheckRule(_ => CheckChangelogJoins)
    extensions.injectPlanNormalizationRule(_ => ResolveMultiJoinHint.Bind)
    extensions.injectPlanNormalizationRule(_ => InputNames.Record)

    // Optimizer
    extensions.injectPreCBORule(_ => CollapseStreamingJoinChains)
    extensions.injectPreCBORule(ValidateMultiJoinRestart(_))
    extensions.injectPreCBORule(_ => NumberChangelogJoins)

    // Planner, then the physical plan: the watermarks, and real-time mode's allowlist check
    extensions.injectPlannerStrategy(MultiJoinStrategy)
    extensions.injectPlannerStrategy(ChangelogJoinStrategy)
    extensions.injectColumnar(AddMultiJoinWatermarks(_))
    extensions.injectColumnar(CheckRealTimeAllowlist(_))
  }
}
