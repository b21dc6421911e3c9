package io.github.sparkmultijoin.analysis

import org.apache.spark.sql.internal.SQLConf

/**
 * How a multi-join lays out its state, which the session's state store provider decides: the
 * rule fuses a chain only where the layout can hold what the multi-join keeps, and the operator
 * opens its store with the same layout. The provider is part of a query's checkpoint (Spark
 * restores it on a restart), so a query keeps its layout.
 *
 * @param formatVersion the state format version the operator records for this layout
 */
sealed abstract class StateLayout(val formatVersion: Int)

object StateLayout {

  /**
   * RocksDB: column families, several values under a key, keys ordered for range scans; time
   * indexes make eviction read only the rows it removes.
   */
  case object ColumnFamilies extends StateLayout(3)

  /**
   * Spark's in-memory store (`HDFSBackedStateStoreProvider`, Spark's default): one keyspace, one
   * value per key, no order. It holds every input's rows under a join key as one value, which
   * suits state that nothing removes: inner joins without time bounds or a TTL.
   */
  case object OneValuePerKey extends StateLayout(4)

  private val RocksDbProvider = "RocksDBStateStoreProvider"
  private val InMemoryProvider = "HDFSBackedStateStoreProvider"
  private val CheckpointFormatKey = "spark.sql.streaming.stateStore.checkpointFormatVersion"

  /** The layout for the session's state store, or why the multi-join cannot run on it. */
  def forSession(conf: SQLConf): Either[String, StateLayout] = {
    val provider = conf.stateStoreProviderClass
    if (conf.getConfString(CheckpointFormatKey, "1") != "1") {
      Left(s"the multi-join supports only state store checkpoint format version 1; " +
        s"$CheckpointFormatKey is ${conf.getConfString(CheckpointFormatKey)}.")
    } else if (provider.endsWith(s".$RocksDbProvider")) {
      Right(ColumnFamilies)
    } else if (provider.endsWith(s".$InMemoryProvider")) {
      Right(OneValuePerKey)
    } else {
      Left(s"the multi-join keeps its state in RocksDB or in Spark's in-memory state store, and " +
        s"${SQLConf.STATE_STORE_PROVIDER_CLASS.key} is '$provider'. Set it to " +
        s"org.apache.spark.sql.execution.streaming.state.$RocksDbProvider (the Python helper " +
        "configure_spark_with_multijoin does this) for a new query.")
    }
  }

  /**
   * Why `layout` cannot hold a multi-join's state, if so: the in-memory layout has no order to
   * evict or expire rows by, so it takes only state that nothing removes.
   *
   * @param evictionOffsets per input, how far below the watermark its rows are kept (derived
   *                        only for the layout that needs them)
   * @param hasStateTtl     whether the operator would drop rows by a state TTL
   */
  def cannotHold(
      layout: StateLayout,
      tree: JoinTree,
      evictionOffsets: => Seq[Option[Long]],
      hasStateTtl: Boolean): Option[String] = layout match {
    case ColumnFamilies => None
    case OneValuePerKey =>
      val removal =
        if (tree.outerOrder.nonEmpty) Some("outer joins")
        else if (evictionOffsets.exists(_.isDefined)) Some("time bounds")
        else if (hasStateTtl) Some("a state TTL")
        else None
      removal.map(what =>
        s"with Spark's in-memory state store the multi-join runs only inner " +
          s"joins whose rows stay in state, and this chain has $what, which remove rows by time. " +
          s"Set ${SQLConf.STATE_STORE_PROVIDER_CLASS.key} to " +
          s"org.apache.spark.sql.execution.streaming.state.$RocksDbProvider for a new query.")
  }
}
