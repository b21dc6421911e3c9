package io.github.sparkmultijoin.execution

import scala.collection.mutable

import io.github.sparkmultijoin.execution.state.{KeyRows, MultiJoinStateManager}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.metric.SQLMetric

/**
 * Null-padding. Once a row of a deciding input is final (no row to come can join it), so is
 * every output row with it. Those in which it decides, with a padded input, are enumerated once
 * more from the stored rows, as Spark's chain of joins gives them:
 *  - a row of the first inner input: its combinations with the other inner inputs' rows, each
 *    extended by the outer inputs in the order their joins apply, with every row of an outer
 *    input that satisfies its ON clause (read with nulls for the inputs padded so far) or,
 *    where none does, nulls;
 *  - a row of a FULL OUTER input that satisfies its ON clause with no row of the joins before
 *    it (which are enumerated the same way, up to it): nulls for those, the row, and the
 *    FULL OUTER inputs after it extended as above.
 * The output rows without a padded input came out when their last row arrived. Every row they
 * need is still stored: the rows a deciding row can be joined with are kept until it is final
 * ([[io.github.sparkmultijoin.model.EventTimeBounds]]), and nothing is removed before every
 * deciding input's rows of the batch are padded.
 *
 * @param join              the compiled conditions and projections
 * @param state             the partition's state
 * @param numNullPaddedRows counts the null-padded rows emitted
 */
class OuterJoinPadder(
    join: CompiledJoin,
    state: MultiJoinStateManager,
    numNullPaddedRows: SQLMetric) {

  private val tree = join.tree
  private val outerOrder = tree.outerOrder.toArray
  private val firstInner = tree.innerInputs.head
  // Per outer join, the latest outer join before it whose input its ON clause reads; -1 where
  // it reads only the inner inputs.
  private val onClauseReadsUpTo = outerOrder.indices.map { step =>
    val reads = join.onClauseInputs(outerOrder(step))
    (0 until step).filter(earlier => reads(outerOrder(earlier))).maxOption.getOrElse(-1)
  }.toArray
  // The rows of each input under a key, read once per key in a batch's padding.
  private val rowsByKey = mutable.HashMap.empty[UnsafeRow, Array[KeyRows]]

  /** The null-padded output rows that `decider`'s newly final rows `rows` decide. */
  def padFinal(decider: Int, rows: Array[UnsafeRow]): Iterator[InternalRow] =
    rows.iterator.flatMap { row =>
      val key = join.keyProjections(decider)(row).copy()
      val rowsOf = rowsByKey.getOrElseUpdate(key, state.rowsUnder(key, everyInput = false))
      val stored = (input: Int) => rowsOf(input).rows
      if (decider == firstInner) paddedWithInner(row, stored) else paddedFrom(decider, row, stored)
    }

  /**
   * A row with a null key joins no row. It comes out at once where it decides its own output
   * row: a FULL OUTER input's row, or the only inner input's, every outer input padded.
   */
  def padWithoutKey(input: Int, row: UnsafeRow): Iterator[InternalRow] =
    if (tree.isFullOuter(input)) {
      join.bindOnly(input, row)
      Iterator.single(emit())
    } else if (tree.decidingInputs.headOption.contains(input) && tree.innerInputs == Seq(input)) {
      paddedWithInner(row, _ => Array.empty[UnsafeRow])
    } else {
      Iterator.empty
    }

  private def paddedWithInner(
      decidingRow: UnsafeRow,
      stored: Int => Array[UnsafeRow]): Iterator[InternalRow] =
    rowsWithInner(decidingRow, stored, outerOrder.length).filter(padded => padded).map(_ => emit())

  private def paddedFrom(
      fullOuter: Int,
      row: UnsafeRow,
      stored: Int => Array[UnsafeRow]): Iterator[InternalRow] = {
    val step = outerOrder.indexOf(fullOuter)
    if (!matchesNothingBefore(step, row, stored)) {
      Iterator.empty
    } else {
      join.bindOnly(fullOuter, row)
      extensions(step + 1, outerOrder.length, stored, padded = true).map(_ => emit())
    }
  }

  private def emit(): InternalRow = {
    numNullPaddedRows += 1
    join.bound.outputRow()
  }

  /** Whether no row of the joins before the FULL OUTER join at `step` matches `row`. */
  private def matchesNothingBefore(
      step: Int,
      row: UnsafeRow,
      stored: Int => Array[UnsafeRow]): Boolean = {
    val fullOuter = outerOrder(step)
    !rowsBefore(step, stored).exists { _ =>
      join.bound.bind(fullOuter, row)
      join.passes(join.onClauses(fullOuter))
    }
  }

  /**
   * The rows of the joins before the outer join at `step` (the inner joins' and the outer
   * joins' before it), each bound in turn; per row, whether an input in it is padded.
   */
  private def rowsBefore(step: Int, stored: Int => Array[UnsafeRow]): Iterator[Boolean] = {
    val fullOuterOnly = (0 until step).iterator.filter(s => tree.isFullOuter(outerOrder(s)))
      .flatMap { earlier =>
        val fullOuter = outerOrder(earlier)
        stored(fullOuter).iterator.filter(matchesNothingBefore(earlier, _, stored)).flatMap { row =>
          join.bindOnly(fullOuter, row)
          extensions(earlier + 1, step, stored, padded = true)
        }
      }
    stored(firstInner).iterator.flatMap(rowsWithInner(_, stored, step)) ++ fullOuterOnly
  }

  /**
   * The rows with `decidingRow` of the first inner input, extended by the outer joins before
   * `until`; per row, whether an input in it is padded.
   */
  private def rowsWithInner(
      decidingRow: UnsafeRow,
      stored: Int => Array[UnsafeRow],
      until: Int): Iterator[Boolean] = {
    val inner = join.innerPlan
    join.bindOnly(firstInner, decidingRow)
    if (!join.passes(inner.onNewRow)) {
      Iterator.empty
    } else {
      join.combinations(inner, stored)(() => ()).flatMap(_ => extensions(0, until, stored, false))
    }
  }

  /**
   * The rows bound so far, extended by the outer joins from `step` until `until`, each bound in
   * turn; per row, whether an input in it is padded. An ON clause that reads no outer input
   * from `step` on has the same matches in every extension: they are found once.
   */
  private def extensions(
      step: Int,
      until: Int,
      stored: Int => Array[UnsafeRow],
      padded: Boolean): Iterator[Boolean] = {
    val fixedMatches = new Array[Array[UnsafeRow]](until)
    for (later <- step until until if onClauseReadsUpTo(later) < step) {
      fixedMatches(later) = matchesAt(later, stored)
    }
    extend(step, until, stored, padded, fixedMatches)
  }

  private def extend(
      step: Int,
      until: Int,
      stored: Int => Array[UnsafeRow],
      padded: Boolean,
      fixedMatches: Array[Array[UnsafeRow]]): Iterator[Boolean] = {
    if (step == until) {
      Iterator.single(padded)
    } else {
      val outer = outerOrder(step)
      val matches =
        if (fixedMatches(step) != null) fixedMatches(step) else matchesAt(step, stored)
      if (matches.isEmpty) {
        join.bound.clear(outer)
        extend(step + 1, until, stored, padded = true, fixedMatches)
      } else {
        matches.iterator.flatMap { row =>
          join.bound.bind(outer, row)
          extend(step + 1, until, stored, padded, fixedMatches)
        }
      }
    }
  }

  /** The stored rows of the outer input at `step` whose ON clause holds with the rows bound. */
  private def matchesAt(step: Int, stored: Int => Array[UnsafeRow]): Array[UnsafeRow] = {
    val outer = outerOrder(step)
    stored(outer).filter { row =>
      join.bound.bind(outer, row)
      join.passes(join.onClauses(outer))
    }
  }
}
