package io.github.sparkmultijoin.ttl

import io.github.sparkmultijoin.execution.state.MultiJoinStateManager
import io.github.sparkmultijoin.ttl.StateTtl

import org.apache.spark.util.AccumulatorV2

/**
 * The state TTLs of a multi-join's inputs, as the operator applies them. At the start of each
 * micro-batch, before any row is joined, the rows whose TTL has passed by the batch's start time
 * (as the offset log records it, so that a retried batch expires alike) are removed. At its end,
 * each partition reports when its earliest stored row falls due.
 *
 * Why report it: without new data, Spark runs a micro-batch only where a stateful operator asks
 * for one, and an idle stream would keep its expired rows for good. Asking on every trigger, as
 * Spark's transformWithState does in processing-time mode, would run a micro-batch every trigger
 * interval for nothing; so the operator asks once its earliest row is due, under a
 * processing-time trigger. Under availableNow the query stops once its data is processed, and
 * the rows go at the next micro-batch, as without a TTL they would be evicted then.
 *
 * @param ttlsMs per input, its state TTL (ms), if it has one
 */
private[sparkmultijoin] class StateTtlExpiry(ttlsMs: Seq[Option[Long]]) extends Serializable {

  /** The inputs with a TTL, whose rows keep the time they were stored. */
  val inputs: Set[Int] = ttlsMs.indices.filter(ttlsMs(_).isDefined).toSet

  def isSet: Boolean = inputs.nonEmpty

  /** Removes the rows whose TTL passed by `nowMs`, returning how many. */
  def expire(state: MultiJoinStateManager, nowMs: Long): Long =
    state.expire(inputs.toSeq.sorted.map(input => input -> (nowMs - ttlsMs(input).get)): _*)

  /** When the earliest row stored in `state` falls due (ms), if one is stored. */
  def nextDueMs(state: MultiJoinStateManager): Option[Long] =
    state.earliestStoreTimes.map { case (input, storedAt) => storedAt + ttlsMs(input).get }
      .minOption

  /** An input's TTL as EXPLAIN shows it: ` ttl=1d`, or nothing. */
  def shown(input: Int): String =
    ttlsMs(input).map(ms => s" ttl=${StateTtl.show(ms)}").getOrElse("")
}

/**
 * The least of the values its tasks add, merged on the driver: when a multi-join's earliest
 * stored row falls due. Long.MaxValue where none was added. A retried task adds the same value
 * again, which changes no minimum.
 */
private[sparkmultijoin] class MinimumAccumulator extends AccumulatorV2[Long, Long] {

  private var minimum = Long.MaxValue

  override def isZero: Boolean = minimum == Long.MaxValue

  override def copy(): MinimumAccumulator = {
    val copied = new MinimumAccumulator
    copied.minimum = minimum
    copied
  }

  override def reset(): Unit = minimum = Long.MaxValue

  override def add(value: Long): Unit = minimum = minimum min value

  override def merge(other: AccumulatorV2[Long, Long]): Unit = add(other.value)

  override def value: Long = minimum
}
