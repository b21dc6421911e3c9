package io.github.sparkmultijoin.analysis

import org.apache.spark.sql.internal.SQLConf

/**
 * How a multi-join lays out its state, which the session's state store provider decides: the
 * rule fuses chains only where there is a layout for the session's store, and the operator opens
 * its store with that layout. The provider is part of a query's checkpoint (Spark
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
   * value per key, no order. It holds every input's rows under a join key as one value; evicting
   * by event time, or by a state TTL, reads every row.
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
}
