package io.github.sparkmultijoin.model

import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.multijoin.CheckpointShim

/**
 * A multi-join state layout: how a multi-join keeps its input rows in a state store. The
 * session's state store provider decides which one a new query takes: the rule fuses chains only
 * where there is a layout for that store, and the operator opens its store with it. The operator
 * records the layout's number in its operator metadata (as `stateFormatVersion`, the name that
 * checkpoints have), and a restart with another layout is refused ([[OperatorProperties]]).
 *
 * Why "multi-join state layout N" wherever the number shows: Spark's
 * `spark.sql.streaming.join.stateFormatVersion` numbers the state of its own stream-stream join,
 * and our layout 4 is not Spark's join state format 4.
 *
 * @param version  the number recorded for the layout
 * @param what     what sets it apart, as messages name it
 * @param provider the simple class name of the state store provider it is for
 */
sealed abstract class StateLayoutVersion(val version: Int, what: String, val provider: String) {
  override def toString: String = s"${StateLayoutVersion.describe(version)} ($what)"

  def providerClass: String = s"org.apache.spark.sql.execution.streaming.state.$provider"
}

object StateLayoutVersion {

  /** RocksDB: column families, several values under a key, keys ordered for range scans. */
  case object ColumnFamilies
    extends StateLayoutVersion(3, "column families", "RocksDBStateStoreProvider")

  /** Spark's in-memory store, its default: one keyspace, one value per key, no order. */
  case object OneValuePerKey
    extends StateLayoutVersion(4, "one value per key", "HDFSBackedStateStoreProvider")

  val all: Seq[StateLayoutVersion] = Seq(ColumnFamilies, OneValuePerKey)

  /**
   * Layouts 1 (which recorded no number) and 2 kept each input's rows in a family of its own in
   * RocksDB; layout 3 moves their rows into its own when it opens their stores.
   */
  private val MovedIntoColumnFamilies = Set(1, 2)

  /** A layout's number as every message names it. */
  def describe(version: Int): String = s"multi-join state layout $version"

  /**
   * The layout a checkpoint that recorded `version` opens with, or why there is none: a number
   * this build does not know was recorded by a later one.
   */
  def recorded(version: Option[Int]): Either[String, StateLayoutVersion] = version match {
    case None => Right(ColumnFamilies)
    case Some(old) if MovedIntoColumnFamilies(old) => Right(ColumnFamilies)
    case Some(number) =>
      all.find(_.version == number).toRight(s"${describe(number)} is not one this version of " +
        s"spark-multijoin knows (it knows ${all.mkString(" and ")}, and moves layouts " +
        s"${MovedIntoColumnFamilies.toSeq.sorted.mkString(" and ")} into layout 3): a later " +
        "version of spark-multijoin wrote it")
  }

  private val CheckpointFormatKey = "spark.sql.streaming.stateStore.checkpointFormatVersion"

  /**
   * The layout for the session's state store, or why the multi-join cannot run on it.
   *
   * State store checkpoint format v2 (checkpoint ids in the commit log) runs on RocksDB, as
   * Spark's own operators do; Spark's in-memory store refuses it for every operator
   * (`HDFSBackedStateStoreProvider does not support checkpointFormatVersion > 1`), so there the
   * joins stay as Spark planned them, to fail as Spark's own do.
   */
  def forSession(conf: SQLConf): Either[String, StateLayoutVersion] = {
    val provider = conf.stateStoreProviderClass
    val checkpointFormat = conf.getConfString(CheckpointFormatKey, "1")
    all.find(layout => provider.endsWith(s".${layout.provider}")) match {
      case Some(OneValuePerKey) if checkpointFormat != "1" =>
        Left(s"Spark's in-memory state store supports only state store checkpoint format " +
          s"version 1, and $CheckpointFormatKey is $checkpointFormat. Set " +
          s"${SQLConf.STATE_STORE_PROVIDER_CLASS.key} to ${ColumnFamilies.providerClass} for " +
          "a new query.")
      case Some(_)
          if checkpointFormat != "1" && CheckpointShim.checkpointFormatV2Refusal.nonEmpty =>
        Left(s"${CheckpointShim.checkpointFormatV2Refusal.get}, and $CheckpointFormatKey is " +
          s"$checkpointFormat. Set it to 1 for a new query, or run on a newer Spark line.")
      case Some(layout) => Right(layout)
      case None => Left(
          s"the multi-join keeps its state in RocksDB or in Spark's in-memory state store, and " +
            s"${SQLConf.STATE_STORE_PROVIDER_CLASS.key} is '$provider'. Set it to " +
            s"${ColumnFamilies.providerClass} (the Python helper configure_spark_with_multijoin " +
            "does this) for a new query.")
    }
  }
}
