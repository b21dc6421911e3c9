package io.github.sparkmultijoin.execution

import java.util.concurrent.TimeUnit.NANOSECONDS

import io.github.sparkmultijoin.execution.state.MultiJoinStateManager

/**
 * Eviction in real-time mode: a little at a time while rows arrive, instead of all at the
 * batch's end.
 *
 * Why: a long batch's end holds every row that comes due until the next batch reads; evicting
 * there what the batch's watermark lets go (a whole batch's rows, at long batch lengths) made
 * that pause grow with the batch. Here a batch evicts, as its rows arrive, what its late-rows
 * watermark lets go: the rows a batch in micro-batches would have evicted at the previous
 * batch's end. No row of this batch can join them: any that could is older than the late-rows
 * watermark, and dropped as late. So the joins are the same, and the state holds one batch's
 * rows more between batches. What is still due when the rows end goes then: little, while the
 * rates hold.
 *
 * @param bounds per evictable input, the bound (micros) under the batch's late-rows watermark
 */
private[execution] class EvictionOnArrival(state: MultiJoinStateManager, bounds: Seq[(Int, Long)]) {

  import EvictionOnArrival._

  // Whether a chunk last found as many due rows as it could take: there may be more.
  private var morePending = bounds.nonEmpty
  private var arrived = 0L
  private var removalNs = 0L

  /** `rows`, evicting a chunk after every [[ChunkEvery]] of them while rows are due. */
  def whileArriving[T](rows: Iterator[T]): Iterator[T] = rows.map { row =>
    arrived += 1
    if (morePending && arrived % ChunkEvery == 0) {
      morePending = timed(state.evictAtMost(ChunkRows, bounds)) >= ChunkRows
    }
    row
  }

  /** The time (ms) removals took so far. */
  def removalMs: Long = NANOSECONDS.toMillis(removalNs)

  /** Removes what is still due, once the rows ended; the time (ms) all removals took. */
  def remainder(): Long = {
    if (bounds.nonEmpty) timed(state.evict(bounds: _*))
    removalMs
  }

  private def timed(evict: => Long): Long = {
    val start = System.nanoTime
    try evict
    finally removalNs += System.nanoTime - start
  }
}

private[execution] object EvictionOnArrival {

  /** Rows that arrive between two chunks. */
  val ChunkEvery = 64

  /**
   * Rows of an input a chunk removes at the most: twice those that arrive meanwhile, so that
   * eviction catches up within a batch whose rate is no lower than the previous batch's.
   */
  val ChunkRows: Int = 2 * ChunkEvery
}
