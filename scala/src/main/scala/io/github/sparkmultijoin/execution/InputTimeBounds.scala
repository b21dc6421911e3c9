package io.github.sparkmultijoin.execution

import io.github.sparkmultijoin.execution.state.MultiJoinStateManager
import io.github.sparkmultijoin.model.{Conjunct, EventTimeBounds, JoinTree}

import org.apache.spark.sql.catalyst.expressions.{Attribute, UnsafeRow}

/**
 * A multi-join's time bounds, per input ([[EventTimeBounds]]): its event-time column, how far
 * below the watermark its rows are kept and when they are final. Derived once, on the driver,
 * where the operator is planned: the tasks get them with the plan instead of each redoing the
 * analysis. Bounds are in microseconds where they meet rows, which keep their event times so.
 */
class InputTimeBounds(inputs: Seq[Seq[Attribute]], conjuncts: Seq[Conjunct], tree: JoinTree)
  extends Serializable {

  /** Each input's event-time column. */
  val eventTimes: Seq[Option[Attribute]] = EventTimeBounds.eventTimeColumns(inputs)

  /** Each input's event-time column's ordinal in its rows. */
  val timeOrdinals: Seq[Option[Int]] = eventTimes.zip(inputs).map {
    case (time, columns) => time.map(column => columns.indexWhere(_.exprId == column.exprId))
  }

  /** Per input, how far below the watermark its rows are kept (ms); None keeps them all. */
  val evictionOffsets: Seq[Option[Long]] =
    EventTimeBounds.evictionOffsets(inputs, conjuncts, tree)

  /** Per input, how far below the watermark its rows can join no row to come (ms). */
  private val finalOffsets: Seq[Option[Long]] =
    EventTimeBounds.finalOffsets(inputs, conjuncts, tree)

  /** The inputs whose rows are evicted by the watermark. */
  val evictable: Seq[Int] =
    inputs.indices.filter(input => eventTimes(input).isDefined && evictionOffsets(input).isDefined)

  /** Per evictable input, the bound its rows are evicted at or below under `watermarkMs`. */
  def evictionBounds(watermarkMs: Option[Long]): Seq[(Int, Long)] =
    evictable.flatMap { input =>
      watermarkMs.map(watermark => input -> (watermark + evictionOffsets(input).get) * 1000)
    }

  /**
   * The watermark of the operator's output: every row to come joins rows above their inputs'
   * eviction bounds (null-padded rows too, as their anchor row is above its bound until
   * evicted), so an operator after this one must not take those as late.
   */
  def outputWatermarkMs(inputWatermarkMs: Long): Long =
    (inputWatermarkMs +: evictable.map(inputWatermarkMs + evictionOffsets(_).get)).min

  /** What EXPLAIN says input `input` keeps. */
  def kept(input: Int): String = (eventTimes(input), evictionOffsets(input)) match {
    case (Some(time), Some(offset)) =>
      s" keeps ${time.name} > watermark ${if (offset < 0) "-" else "+"} ${offset.abs}ms"
    case (Some(time), None) => s" keeps all (${time.name} unbounded)"
    case _ => ""
  }

  /**
   * The rows of `decider` that became final between the previous batch's watermark and this
   * one's: the rows that decide their null-padded rows in this batch.
   */
  def newlyFinalRows(
      state: MultiJoinStateManager,
      decider: Int,
      lateRowsWatermarkMs: Option[Long],
      evictionWatermarkMs: Option[Long]): Option[Array[UnsafeRow]] =
    for {
      watermark <- evictionWatermarkMs
      previous <- lateRowsWatermarkMs
      offset <- finalOffsets(decider)
    } yield state.newlyFinalRows(decider, (watermark + offset) * 1000, (previous + offset) * 1000)
}
