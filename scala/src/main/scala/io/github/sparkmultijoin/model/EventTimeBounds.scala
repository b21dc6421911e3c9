package io.github.sparkmultijoin.model

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.EventTimeWatermark
import org.apache.spark.sql.multijoin.CatalystShim
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
 * A conjunct of the inner joins holds in every output row with the inner inputs. A conjunct of
 * an outer input's ON clause holds only where that input is present (matched, not padded; for a
 * FULL OUTER input, with a row joined before it), so a path may use it only for rows in which
 * it surely holds: for a pair i, k, those with rows of i and k, of every input always present,
 * and of every input whose presence these imply (a row of an inner input implies all of them;
 * where an outer input's ON clause held, every input read by a conjunct of it that is null
 * whenever a column it reads is null was present too).
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
   * a row of it can join no row to come, so that every output row with it is final; None where
   * the input is unbounded. A deciding input's rows decide their null-padded rows then.
   */
  def finalOffsets(
      inputs: Seq[Seq[Attribute]],
      conjuncts: Seq[Conjunct],
      tree: JoinTree): Seq[Option[Long]] =
    finalOffsets(inputs, new LowerBounds(inputs, conjuncts, tree))

  private def finalOffsets(inputs: Seq[Seq[Attribute]], lowerBound: LowerBounds) =
    inputs.indices.map { input =>
      val others = inputs.indices.filter(_ != input).map(lowerBound(input, _))
      if (others.forall(_.isDefined)) Some(others.flatten.min) else None
    }

  /**
   * Per input, the offset (milliseconds) from the operator's input watermark at or below which
   * its rows are evicted; None where the input is unbounded.
   *
   * A deciding input's row decides null-padding when it is final, and then needs every row it
   * can be joined with. So a row of input j is also kept while a deciding row of input e it can
   * join is not yet final: while `t_j > W + final(e) + L*(j, e)`. The deciding rows themselves
   * are kept for each other the same way.
   */
  def evictionOffsets(
      inputs: Seq[Seq[Attribute]],
      conjuncts: Seq[Conjunct],
      tree: JoinTree): Seq[Option[Long]] = {
    val lowerBound = new LowerBounds(inputs, conjuncts, tree)
    val finals = finalOffsets(inputs, lowerBound)
    finals.zipWithIndex.map { case (own, input) =>
      tree.decidingInputs.filter(_ != input).foldLeft(own) { (kept, decider) =>
        for {
          kept <- kept
          deciderFinal <- finals(decider)
          toDecider <- lowerBound(input, decider)
        } yield math.min(kept, deciderFinal + toDecider)
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
    private val firstInner = tree.innerInputs.head
    // Per outer input, the inputs its presence implies are present, where its ON clause held.
    private val implied: Map[Int, Set[Int]] = tree.outerInputs.map { outer =>
      outer -> conjuncts.filter(_.outerInput.contains(outer)).map(_.expression)
        .filter(nullWhenAnyColumnIsNull).flatMap(columns.inputsOf).toSet
    }.toMap
    private val joinedBefore: Map[Int, Set[Int]] = tree.outerOrder.zipWithIndex.map {
      case (outer, place) => outer -> (tree.innerInputs ++ tree.outerOrder.take(place)).toSet
    }.toMap
    private val closures = mutable.HashMap.empty[Set[Int], Array[Array[Option[Long]]]]

    def apply(i: Int, k: Int): Option[Long] = {
      val present = presentWith(Set(i, k) ++ tree.alwaysPresent)
      closures.getOrElseUpdate(present,
        longestPaths(inputs.length, edges.filter(edge => held(edge.owner, present))))(i)(k)
    }

    /**
     * Whether the conjuncts of `owner` (None: the inner joins) hold in every row with rows of
     * `present`: the inner joins' where the inner inputs are; a LEFT OUTER input's where it is;
     * a FULL OUTER input's where it is and so is an input joined before it (else it is a row of
     * its own, matched by nothing).
     */
    private def held(owner: Option[Int], present: Set[Int]): Boolean = owner match {
      case None => present(firstInner)
      case Some(outer) =>
        present(outer) && (!tree.isFullOuter(outer) || present.exists(joinedBefore(outer)))
    }

    private def presentWith(seed: Set[Int]): Set[Int] = {
      val inner = if (seed.exists(!tree.isOuter(_))) tree.innerInputs.toSet else Set.empty[Int]
      val more = inner ++ seed.filter(input => held(Some(input), seed) && tree.isOuter(input))
        .flatMap(implied) -- seed
      if (more.isEmpty) seed else presentWith(seed ++ more)
    }
  }

  // A watermark far above zero, so that Spark's millisecond rounding of the bound it solves for
  // is a floor, whatever the sign of the interval.
  private val ProbeWatermarkMs = 1000000000000L

  /** The bounds single conjuncts give, each comparing exactly the event times of two inputs. */
  private def directBounds(inputs: Seq[Seq[Attribute]], conjuncts: Seq[Conjunct]): Seq[Edge] = {
    val times = eventTimeColumns(inputs)
    val inputOfTime = times.zipWithIndex.collect { case (Some(time), i) => time.exprId -> i }.toMap
    // The inputs whose event times a conjunct compares, from its columns: with many inputs,
    // trying every pair of inputs on every conjunct is quadratic in the inputs, every micro-batch.
    def comparedInputs(conjunct: Conjunct): Seq[(Int, Int)] = {
      val columns = conjunct.expression.references.toSeq
      columns.flatMap(column => inputOfTime.get(column.exprId)) match {
        case Seq(i, j) if columns.length == 2 => Seq(i -> j, j -> i)
        case _ => Nil
      }
    }
    for {
      conjunct <- conjuncts
      (from, to) <- comparedInputs(conjunct)
      solved <- CatalystShim.stateValueWatermark(AttributeSet(times(from).get),
        AttributeSet(times(to).get), conjunct.expression, ProbeWatermarkMs)
    } yield {
      // Rows of `from` at or below the solved value cannot join rows of `to` above the
      // watermark, which is t_from > t_to + (solved - watermark): the bound, up to Spark's
      // rounding down.
      Edge(from, to, solved - ProbeWatermarkMs, conjunct.outerInput)
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
