package io.github.sparkmultijoin.analysis

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.EventTimeWatermark
import org.apache.spark.sql.multijoin.SparkInternals
import org.apache.spark.sql.types.TimestampType

/**
 * How long a multi-join must keep each input's rows, derived from the interval conditions
 * between the inputs' event times.
 *
 * A conjunct that compares the event times of inputs i and j, such as
 * `b.t BETWEEN a.t - INTERVAL 10 MINUTES AND a.t + INTERVAL 1 HOUR`, bounds the difference of
 * the two times in any output row it holds in: a lower bound `t_i >= t_j + L(i, j)`. Bounds
 * compose along paths (`t_i >= t_j + L(i, j)` and `t_j >= t_k + L(j, k)` give
 * `t_i >= t_k + L(i, j) + L(j, k)`), so the tightest bound between two inputs is a longest path
 * over these difference constraints (Floyd-Warshall, as the inputs are few).
 *
 * A conjunct of the inner joins holds in every output row. A conjunct of an outer input's ON
 * clause holds only where that input is present (matched, not padded), so a path may use it
 * only for rows in which that input is surely present: for a pair i, k, those with rows of i
 * and k, of every inner input, and of every input whose presence these imply (a present outer
 * input's ON clause held, so every input read by a conjunct of it that is null whenever a column
 * it reads is null was present too).
 *
 * A stored row of input i can only join again in an output row with a row still to come; rows
 * to come from input k have `t_k` above the watermark W (Spark drops later ones), so the stored
 * row needs `t_i >= t_k + L*(i, k) > W + L*(i, k)` for some k. Once `t_i <= W + min_k L*(i, k)`,
 * it can never join again and is evicted. Without a bound to some input, an input is unbounded.
 */
object EventTimeBounds {

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
   * With outer inputs, the deciding input's rows decide null-padding when they are evicted, and
   * then need every row they can be joined with. So another input's row is also kept while a
   * deciding row it can join is kept: while `t_j > W + offset(deciding) + L*(j, deciding)`.
   */
  def evictionOffsets(
      inputs: Seq[Seq[Attribute]],
      conjuncts: Seq[Conjunct],
      tree: JoinTree): Seq[Option[Long]] = {
    val lowerBound = new LowerBounds(inputs, conjuncts, tree)
    val own = inputs.indices.map { input =>
      val others = inputs.indices.filter(_ != input).map(lowerBound(input, _))
      if (others.forall(_.isDefined)) Some(others.flatten.min) else None
    }
    tree.decidingInput match {
      case None => own
      case Some(decider) => own.zipWithIndex.map {
          case (offset, input) if input == decider => offset
          case (offset, input) =>
            for {
              kept <- offset
              deciderKept <- own(decider)
              toDecider <- lowerBound(input, decider)
            } yield math.min(kept, deciderKept + toDecider)
        }
    }
  }

  /** A direct bound `t_from >= t_to + millis`, from a conjunct of `owner`'s ON clause. */
  private case class Edge(from: Int, to: Int, millis: Long, owner: Option[Int])

  /** L*(i, k): the tightest lower bound on t_i - t_k over output rows with rows of i and k. */
  private class LowerBounds(inputs: Seq[Seq[Attribute]], conjuncts: Seq[Conjunct],
      tree: JoinTree) {

    private val columns = new InputColumns(inputs)
    private val edges = directBounds(inputs, conjuncts)
    // Per outer input, the inputs its presence implies are present.
    private val implied: Map[Int, Set[Int]] = tree.outerInputs.map { outer =>
      outer -> conjuncts.filter(_.outerInput.contains(outer)).map(_.expression)
        .filter(nullWhenAnyColumnIsNull).flatMap(columns.inputsOf).toSet
    }.toMap
    private val closures = mutable.HashMap.empty[Set[Int], Array[Array[Option[Long]]]]

    def apply(i: Int, k: Int): Option[Long] = {
      val present = presentWith(Set(i, k) ++ tree.innerInputs)
      closures.getOrElseUpdate(present,
        longestPaths(inputs.length, edges.filter(_.owner.forall(present))))(i)(k)
    }

    private def presentWith(seed: Set[Int]): Set[Int] = {
      val more = seed.flatMap(implied.getOrElse(_, Set.empty)) -- seed
      if (more.isEmpty) seed else presentWith(seed ++ more)
    }
  }

  // A watermark far above zero, so that Spark's millisecond rounding of the bound it solves for
  // is a floor, whatever the sign of the interval.
  private val ProbeWatermarkMs = 1000000000000L

  /** The bounds single conjuncts give, each comparing exactly the event times of two inputs. */
  private def directBounds(inputs: Seq[Seq[Attribute]], conjuncts: Seq[Conjunct]): Seq[Edge] = {
    val times = eventTimeColumns(inputs)
    for {
      conjunct <- conjuncts
      i <- inputs.indices
      j <- inputs.indices if i != j && times(i).isDefined && times(j).isDefined
      time = times(i).get
      otherTime = times(j).get
      if conjunct.expression.references == AttributeSet(Seq(time, otherTime))
      solved <- SparkInternals.stateValueWatermark(
        AttributeSet(time), AttributeSet(otherTime), conjunct.expression, ProbeWatermarkMs)
    } yield {
      // Rows of i at or below the solved value cannot join rows of j above the watermark,
      // which is t_i > t_j + (solved - watermark): the bound, up to Spark's rounding down.
      Edge(i, j, solved - ProbeWatermarkMs, conjunct.outerInput)
    }
  }

  /** Longest paths over `edges`: the tightest lower bound on t_i - t_j that they imply. */
  private def longestPaths(n: Int, edges: Seq[Edge]): Array[Array[Option[Long]]] = {
    val bounds = Array.fill(n, n)(Option.empty[Long])
    edges.foreach { edge =>
      if (bounds(edge.from)(edge.to).forall(_ < edge.millis)) {
        bounds(edge.from)(edge.to) = Some(edge.millis)
      }
    }
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

  /**
   * Whether `expression` is null wherever a column it reads is null, as comparisons of columns
   * and of arithmetic on them are: then, where it held, every input it reads was present.
   */
  def nullWhenAnyColumnIsNull(expression: Expression): Boolean = expression match {
    case _: Attribute => true
    case constant if constant.foldable => true
    case other => other.nullIntolerant && other.children.forall(nullWhenAnyColumnIsNull)
  }
}
