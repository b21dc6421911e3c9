package org.apache.spark.sql.multijoin

import java.io.ByteArrayOutputStream
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.atomic.AtomicBoolean

import scala.util.control.NonFatal

import org.apache.hadoop.fs.FSDataOutputStream

import org.apache.spark.internal.Logging
import org.apache.spark.sql.execution.streaming.checkpointing.CommitMetadataV2
import org.apache.spark.sql.execution.streaming.state.{OperatorInfoV1, OperatorStateMetadataUtils, OperatorStateMetadataV2, RocksDBCheckpointMetadata, StateStoreId, StateStoreMetadataV2}

/**
 * Serializes, once per JVM and off the query's threads, one of each of the files that the end
 * of a real-time batch writes: the commit log's entry and the multi-join's operator metadata (on
 * the driver), and the metadata of a RocksDB snapshot (in the tasks: the first version's, which
 * the tasks upload themselves, as it creates the column families).
 *
 * Why: Spark writes these through json4s and Jackson, which build each class's serializer by
 * reflection when they first meet it. In a driver's first real-time query that happens at the
 * end of its first long batch, while every row waits for the next batch to start. Built here,
 * while the first batch runs, the serializers are ready by then. Nothing is written anywhere.
 */
object BatchEndWarmUp extends Logging {

  private val started = new AtomicBoolean(false)

  /** Starts the warm-up in a daemon thread, the first time this JVM asks for it. */
  def start(): Unit = if (started.compareAndSet(false, true)) {
    val thread = new Thread(() => {
        try serializeEach()
        catch {
          case NonFatal(e) => logDebug("The warm-up of a real-time batch's end failed", e)
        }
      }, "multi-join batch end warm-up")
    thread.setDaemon(true)
    thread.start()
  }

  /** One of each file, serialized as Spark writes it. */
  def serializeEach(): Seq[String] = {
    val commit = CommitMetadataV2(0L, Some(Map(0L -> Array(Array("warm-up"))))).json
    val bytes = new ByteArrayOutputStream
    val out = new FSDataOutputStream(bytes, null)
    OperatorStateMetadataUtils.serialize(out,
      OperatorStateMetadataV2(
        OperatorInfoV1(0L, "warm-up"),
        Array(StateStoreMetadataV2(StateStoreId.DEFAULT_STORE_NAME, 0, 1, Nil)), "{}"))
    out.close()
    val snapshot = RocksDBCheckpointMetadata(Seq.empty, Seq.empty, 0L, 0L,
      Map("warm-up" -> 0.toShort), Map("warm-up" -> false), 0.toShort).json
    Seq(commit, new String(bytes.toByteArray, UTF_8), snapshot)
  }
}
