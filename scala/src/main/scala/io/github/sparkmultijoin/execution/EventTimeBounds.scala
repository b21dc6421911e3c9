package io.github.sparkmultijoin.execution

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.logical.EventTimeWatermark
import org.apache.spark.sql.multijoin.SparkInternals
import org.apache.spark.sql.types.TimestampType

/**
 * How long a multi-join must keep each input's rows, derived from the interval conditions
 * between the inputs' event times.
 *
 * A conjunct that compares the event times of inputs i and j, such as
 * `b.t BETWEEN a.t - INTERVAL 10 MINUTES AND a.t + INTERVAL 1 HOUR`, bounds the difference of
 * the two times in any joined combination: a lower bound `t_i >= t_j + L(i, j)`. Bounds compose
 * along paths (`t_i >= t_j + L(i, j)` and `t_j >= t_k + L(j, k)` give
 * `t_i >= t_k + L(i, j) + L(j, k)`), so the tightest bound between every pair is a longest path
 * over these difference constraints (Floyd-Warshall, as the inputs are few).
 *
 * A stored row of input i can only join again in a combination with a row still to come; rows to
 * come from input k have `t_k` above the watermark W (Spark drops later ones), so the stored row
 * needs `t_i >= t_k + L*(i, k) > W + L*(i, k)` for some k. Once `t_i <= W + min_k L*(i, k)`, it
 * can never join again and is evicted. Without a bound to some input, an input is unbounded.
 */
object EventTimeBounds extends PredicateHelper {

  /** The event-time column of each input: the one carrying a watermark, if exactly one. */
  def eventTimeColumns(inputs: Seq[Seq[Attribute]]): Seq[Option[Attribute]] =
    inputs.map { output =>
      output.filter(_.metadata.contains(EventTimeWatermark.delayKey)) match {
        case Seq(column) if column.dataType == TimestampType => Some(column)
        case _ => None
      }
    }

  /**
   * Per input, the offset (milliseconds) from the operator's input watermark at or below which
   * its rows are evicted; None where the input is unbounded.
   *
   * With LEFT OUTER inputs, the `deciding` input's rows decide null-padding when they are
   * evicted, and then need the rows of the other inputs they join with. So another input's row
   * is also kept while a deciding row it can join is kept: while
   * `t_j > W + offset(deciding) + L*(j, deciding)`.
   */
  def evictionOffsets(
      inputs: Seq[Seq[Attribute]],
      condition: Option[Expression],
      deciding: Option[Int] = None): Seq[Option[Long]] = {
    val lowerBounds = closure(directLowerBounds(inputs, condition))
    val own = inputs.indices.map { input =>
      val others = inputs.indices.filter(_ != input).map(lowerBounds(input)(_))
      if (others.forall(_.isDefined)) Some(others.flatten.min) else None
    }
    deciding match {
      case None => own
      case Some(decider) => own.zipWithIndex.map {
        case (offset, input) if input == decider => offset
        case (offset, input) =>
          for {
            kept <- offset
            deciderKept <- own(decider)
            toDecider <- lowerBounds(input)(decider)
          } yield math.min(kept, deciderKept + toDecider)
      }
    }
  }

  // A watermark far above zero, so that Spark's millisecond rounding of the bound it solves for
  // is a floor, whatever the sign of the interval.
  private val ProbeWatermarkMs = 1000000000000L

  /** L(i, j) from single conjuncts comparing exactly the event times of i and j. */
  private def directLowerBounds(
      inputs: Seq[Seq[Attribute]],
      condition: Option[Expression]): Array[Array[Option[Long]]] = {
    val columns = eventTimeColumns(inputs)
    val conjuncts = condition.toSeq.flatMap(splitConjunctivePredicates)
    Array.tabulate(inputs.length, inputs.length) { (i, j) =>
      (columns(i), columns(j)) match {
        case (Some(time), Some(otherTime)) if i != j =>
          val bounds = conjuncts.filter(_.references == AttributeSet(Seq(time, otherTime)))
            .flatMap { conjunct =>
              SparkInternals.stateValueWatermark(
                AttributeSet(time), AttributeSet(otherTime), conjunct, ProbeWatermarkMs)
            }
          // Rows of i at or below the solved value cannot join rows of j above the watermark,
          // which is t_i > t_j + (solved - watermark): the bound, up to Spark's rounding down.
          bounds.map(_ - ProbeWatermarkMs).maxOption
        case _ => None
      }
    }
  }

  /** Longest paths: the tightest lower bound on t_i - t_j implied by all the direct ones. */
  private def closure(direct: Array[Array[Option[Long]]]): Array[Array[Option[Long]]] = {
    val n = direct.length
    val bounds = direct.map(_.clone())
    for (via <- 0 until n; i <- 0 until n; j <- 0 until n if i != j && i != via && j != via) {
      (bounds(i)(via), bounds(via)(j)) match {
        case (Some(first), Some(second)) =>
          val throughVia = first + second
          if (bounds(i)(j).forall(_ < throughVia)) bounds(i)(j) = Some(throughVia)
        case _ =>
      }
    }
    bounds
  }
}
