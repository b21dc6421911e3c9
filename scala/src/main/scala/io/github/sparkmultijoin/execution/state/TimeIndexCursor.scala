package io.github.sparkmultijoin.execution.state

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.StateStore

/**
 * One scan of a time index family (keys: a time, then a row's id) that eviction in chunks
 * continues from call to call, until it is closed (or its task ends).
 *
 * Why: a key removed from RocksDB leaves a deletion marker that a scan from the index's start
 * reads again. Chunk after chunk, a scan from the start read every key the chunks before had
 * removed, and a long batch's chunks slowed down as they went. The scan sees the store as of its
 * start (a RocksDB iterator's view): a key stored after it is left to a later scan.
 */
private[state] class TimeIndexCursor(store: StateStore, family: String) {

  private val entries = store.iterator(family)
  private val buffered = entries.buffered
  private var closed = false
  Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => close()))

  /** The next keys whose time is at or below `bound`, `limit` at the most, copied. */
  def take(bound: Long, limit: Int): Array[UnsafeRow] = {
    val keys = ArrayBuffer.empty[UnsafeRow]
    while (keys.length < limit && buffered.hasNext && buffered.head.key.getLong(0) <= bound) {
      keys += buffered.next().key.copy()
    }
    keys.toArray
  }

  def close(): Unit = if (!closed) {
    closed = true
    entries.close()
  }
}
