package io.github.sparkmultijoin.model

/**
 * What the multi-join needs of the micro-batch it runs in, read once while the batch is planned
 * and passed into the operator, as Spark passes its own joins their watermarks.
 *
 * @param realTime             whether the query runs in Spark's real-time mode: long batches
 *                             whose stateful operators get their rows as the sources read them
 * @param batchTimestampMs     the batch's start time as its offset log records it (so a retried
 *                             batch sees the same)
 * @param lateRowsWatermarkMs  the input watermark below which rows are late, once Spark's
 *                             watermark propagation has run for the batch (after planning)
 * @param evictionWatermarkMs  the input watermark that state is evicted by, likewise
 * @param nextBatchStartMs     under a processing-time trigger, the start time of the batch being
 *                             constructed after this one (Spark sets it before it asks the
 *                             operators whether to run a batch without data); driver only
 */
case class MicroBatchContext(
    realTime: Boolean,
    batchTimestampMs: Long,
    lateRowsWatermarkMs: Option[Long],
    evictionWatermarkMs: Option[Long],
    @transient nextBatchStartMs: () => Option[Long]) {

  override def toString: String =
    s"MicroBatchContext(realTime=$realTime, batchTimestampMs=$batchTimestampMs, " +
      s"watermarks=$lateRowsWatermarkMs/$evictionWatermarkMs)"
}
