package org.apache.spark.sql.multijoin

import org.apache.spark.sql.{SparkSession, classic}
import org.apache.spark.sql.execution.streaming.operators.stateful.{StatefulOpStateStoreCheckpointInfo, StatefulOperatorStateInfo}
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreCoordinatorRef}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{DataType, StructType}

/** Spark's state stores, as the multi-join's state reads and commits them. */
object StateStoreShim extends StateStoreLineShim {

  /**
   * Whether state rows stored with `stored` can be read as rows of `schema`, by the rule of
   * Spark's state schema check (StateSchemaCompatibilityChecker): the same types, field names
   * aside, and no field that could hold nulls now non-nullable.
   */
  def stateSchemaCompatible(stored: StructType, schema: StructType): Boolean =
    DataType.equalsIgnoreNameAndCompatibleNullability(stored, schema)

  /**
   * What a partition's `store`, just committed, reports for the query's commit log under state
   * store checkpoint format v2 (its checkpoint's id, and the id of the one it loaded), as Spark's
   * single-store operators report it; None under format v1, which records no ids.
   */
  def committedCheckpoint(
      store: StateStore,
      conf: SQLConf): Option[StatefulOpStateStoreCheckpointInfo] =
    Some(store).filter(_ => StatefulOperatorStateInfo.enableStateStoreCheckpointIds(conf)).map {
      store =>
        val info = store.getStateStoreCheckpointInfo()
        StatefulOpStateStoreCheckpointInfo(info.partitionId, info.batchVersion,
          info.stateStoreCkptId.map(Array(_)), info.baseStateStoreCkptId.map(Array(_)))
    }

  /** The coordinator that tracks where each state store is loaded, for task locality. */
  def stateStoreCoordinator(session: SparkSession): StateStoreCoordinatorRef =
    session.asInstanceOf[classic.SparkSession].sessionState.streamingQueryManager
      .stateStoreCoordinator
}
