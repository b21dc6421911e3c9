package org.apache.spark.sql.multijoin

import scala.reflect.ClassTag

import org.apache.hadoop.conf.Configuration

import org.apache.spark.{Partition, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{SparkSession, classic}
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, StateStore, StateStoreConf, StateStoreCoordinatorRef, StateStoreRDD}
import org.apache.spark.sql.internal.SessionState
import org.apache.spark.sql.types.StructType

/**
 * Spark's `mapPartitionsWithStateStore` for an operator that counts its state rows itself: its
 * RocksDB stores do not count keys.
 *
 * Why: counting (`trackTotalNumberOfRows`, on by default) reads a key before each write to it.
 * The multi-join writes every row it stores by appending it to its join key's list of rows, and
 * that read merges the whole list, for every row. The multi-join reports the rows it counts
 * itself (`numRowsTotal`), never the store's count of keys, so the read buys nothing.
 */
object SelfCountingStoreShim {

  val TrackRowsKey = "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows"

  def mapPartitionsWithStateStore[T: ClassTag, U: ClassTag](
      rdd: RDD[T],
      info: StatefulOperatorStateInfo,
      keySchema: StructType,
      valueSchema: StructType,
      keyEncoder: KeyStateEncoderSpec,
      session: SparkSession,
      useColumnFamilies: Boolean,
      hadoopSettings: Map[String, String])(
      update: (StateStore, Iterator[T]) => Iterator[U]): RDD[U] = {
    val cleaned = rdd.sparkContext.clean(update)
    // As Spark's own: a task that fails before its commit aborts the store's changes.
    val abortingUncommitted = (store: StateStore, rows: Iterator[T]) => {
      TaskContext.get().addTaskCompletionListener[Unit] { _ =>
        if (!store.hasCommitted) store.abort()
      }
      cleaned(store, rows)
    }
    val sessionState = session.asInstanceOf[classic.SparkSession].sessionState
    val settings = sessionState.conf.clone()
    settings.setConfString(TrackRowsKey, "false")
    new SelfCountingStoreRDD(rdd, abortingUncommitted, info, keySchema, valueSchema, keyEncoder,
      sessionState, Some(StateStoreShim.stateStoreCoordinator(session)), useColumnFamilies,
      new StateStoreConf(settings), hadoopSettings)
  }

  /** The store settings that the tasks of `rdd`, made by this shim, open their stores with. */
  def storeConfOf(rdd: RDD[_]): StateStoreConf = rdd match {
    case selfCounting: SelfCountingStoreRDD[_, _] => selfCounting.openedWith
  }

  /** The Hadoop settings that the tasks of `rdd`, made by this shim, add to open their stores. */
  def hadoopSettingsOf(rdd: RDD[_]): Map[String, String] = rdd match {
    case selfCounting: SelfCountingStoreRDD[_, _] => selfCounting.hadoopSettings
  }

  /** The Hadoop configuration broadcast to the tasks of `rdd`, made by this shim. */
  def hadoopConfOf(rdd: RDD[_]): Configuration = rdd match {
    case selfCounting: SelfCountingStoreRDD[_, _] => selfCounting.broadcastHadoopConf
  }
}

/** Spark's RDD of a stateful operator's tasks, its stores opened with `settings`. */
private class SelfCountingStoreRDD[T: ClassTag, U: ClassTag](
    rdd: RDD[T],
    update: (StateStore, Iterator[T]) => Iterator[U],
    info: StatefulOperatorStateInfo,
    keySchema: StructType,
    valueSchema: StructType,
    keyEncoder: KeyStateEncoderSpec,
    sessionState: SessionState,
    coordinator: Option[StateStoreCoordinatorRef],
    useColumnFamilies: Boolean,
    settings: StateStoreConf,
    val hadoopSettings: Map[String, String])
  extends StateStoreRDD[T, U](rdd, update, info.checkpointLocation, info.queryRunId,
    info.operatorId, info.storeVersion, info.stateStoreCkptIds, info.stateSchemaMetadata,
    keySchema, valueSchema, keyEncoder, sessionState, coordinator, useColumnFamilies) {

  // Spark's tasks read it through this member when they open their store.
  override protected val storeConf: StateStoreConf = settings

  def openedWith: StateStoreConf = storeConf

  def broadcastHadoopConf: Configuration = hadoopConfBroadcast.value.value

  /**
   * Opens the partition's store with `hadoopSettings` added to the Hadoop configuration that
   * Spark broadcast for this RDD's tasks: the executor's copy, which only they read. Broadcasting
   * a configuration of its own instead would add a broadcast to every micro-batch, on top of
   * Spark's.
   */
  override def compute(partition: Partition, context: TaskContext): Iterator[U] = {
    val hadoopConf = broadcastHadoopConf
    hadoopSettings.foreach { case (key, value) =>
      if (hadoopConf.get(key) != value) hadoopConf.set(key, value)
    }
    super.compute(partition, context)
  }
}
