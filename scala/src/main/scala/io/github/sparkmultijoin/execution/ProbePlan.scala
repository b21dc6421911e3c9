package io.github.sparkmultijoin.execution

import io.github.sparkmultijoin.model.{Conjunct, InputColumns}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, BasePredicate, Expression, UnsafeRow}
import org.apache.spark.sql.types.DataType

/**
 * How a bound row (a new row, or a combination of several inputs' rows) is joined with the
 * stored rows of the other inputs: they are probed one input at a time, and each conjunct of the
 * condition is checked as soon as every input it references is bound, so that a combination that
 * fails it is abandoned before the inputs after it are enumerated.
 *
 * `probeOrder` holds the other inputs, except the null-padded ones. `checkOnNewRow` is checked
 * on the bound rows, and `checksAfterProbe(d)` once `probeOrder(d)` is bound. `checkReadsUpTo(d)`
 * is the deepest earlier depth whose input that check reads, -1 where it reads only the rows
 * bound before probing. Conjuncts of padded inputs' ON clauses are left out.
 */
case class ProbePlan(
    probeOrder: Array[Int],
    checkOnNewRow: Option[Expression],
    checksAfterProbe: Array[Option[Expression]],
    checkReadsUpTo: Array[Int]) {

  /**
   * At `d + 1`, the depths with a check that reads depth `d` as its deepest: their rows are
   * checked once `d` is bound (at 0, those that read only the rows bound before probing).
   */
  val checkedOnceBound: Array[Array[Int]] = Array.tabulate(probeOrder.length + 1) { d =>
    probeOrder.indices
      .filter(e => checksAfterProbe(e).isDefined && checkReadsUpTo(e) == d - 1)
      .toArray
  }
}

object ProbePlan {

  /** The plan for a row of `newInput`, with the inputs in `padded` neither probed nor checked. */
  def forNewRow(
      inputs: Seq[Seq[Attribute]],
      conjuncts: Seq[Conjunct],
      newInput: Int,
      padded: Set[Int] = Set.empty): ProbePlan = {
    val columns = new InputColumns(inputs)
    def inputsOf(conjunct: Conjunct): Set[Int] =
      columns.inputsOf(conjunct.expression) ++ conjunct.outerInput
    val probeOrder = inputs.indices.filter(i => i != newInput && !padded(i)).toArray
    // The step after which all of a conjunct's inputs are bound: 0 is the new row.
    val boundAt = Map(newInput -> 0) ++
      probeOrder.zipWithIndex.map { case (input, depth) => input -> (depth + 1) }
    val byStep = conjuncts.filterNot(_.outerInput.exists(padded))
      .groupBy(conjunct => (inputsOf(conjunct) + newInput).map(boundAt).max)
    def checkAt(step: Int) = byStep.get(step).map(_.map(_.expression).reduce(And))
    val checks = probeOrder.indices.map(d => checkAt(d + 1)).toArray
    // What a check reads, not which ON clause it belongs to: its value depends on nothing else.
    val readsUpTo = checks.zipWithIndex.map { case (check, depth) =>
      check.toSeq.flatMap(columns.inputsOf).flatMap(boundAt.get).map(_ - 1).filter(_ < depth)
        .maxOption.getOrElse(-1)
    }
    ProbePlan(probeOrder, checkAt(0), checks, readsUpTo)
  }

  /** The probe plan of each input, probing the others in input order, nothing padded. */
  def forEachInput(inputs: Seq[Seq[Attribute]], conjuncts: Seq[Conjunct]): Seq[ProbePlan] =
    inputs.indices.map(forNewRow(inputs, conjuncts, _))
}

/**
 * One row per input, seen as the concatenation of all inputs' rows: read through `row` to
 * evaluate the condition, copied by `outputRow` to emit. Inputs not bound read as nulls.
 *
 * @param inputs per input, the types of its columns
 */
class BoundRows(inputs: Seq[Seq[DataType]]) {
  require(inputs.length >= 2)
  private val nullRows: Array[UnsafeRow] = inputs.map(UnsafeRowConcatenator.nullRow).toArray
  private val rows = nullRows.clone()
  private val concatenator = new UnsafeRowConcatenator(inputs)

  def bind(input: Int, row: UnsafeRow): Unit = rows(input) = row

  def clear(input: Int): Unit = rows(input) = nullRows(input)

  val row: InternalRow = new ConcatenatedRows(rows, inputs.map(_.length))

  /** The bound rows as one output row, reused by the next call. */
  def outputRow(): UnsafeRow = concatenator.concatenate(rows)
}

/**
 * Every combination of the bound rows with one stored row of each probed input that passes the
 * checks, as `emit` makes it of the rows bound in `bound` (`matches(d)` holds the stored rows
 * of `probeOrder(d)` under the key). Depth-first, so it holds one combination at a time; what
 * `emit` returns may be reused, as operators' output rows are. Nothing to probe is one
 * combination: the bound rows.
 *
 * A depth's check is evaluated on its stored rows once per row bound at the deepest depth it
 * reads (`checkedOnceBound`), not once per combination of the depths between: in a star, where
 * every input's bound reads only the center's row, each stored row is checked once per row of
 * the center. A depth with no row left abandons the row that left it none, before the depths
 * between are enumerated.
 */
class Combinations[A](
    matches: Array[Array[UnsafeRow]],
    probeOrder: Array[Int],
    checks: Array[BasePredicate],
    checkedOnceBound: Array[Array[Int]],
    bound: BoundRows,
    emit: () => A) extends Iterator[A] {
  import Combinations.NotStarted

  private val depth = matches.length
  // Per depth, the stored rows that pass its check under the rows bound so far (the first
  // `numCandidates` of them), all of them where there is nothing to check.
  private val candidates = Array.tabulate(depth) { d =>
    if (checks(d) == null) matches(d) else new Array[UnsafeRow](matches(d).length)
  }
  private val numCandidates = matches.map(_.length)
  private val cursor = Array.fill(depth)(-1)
  private var level = NotStarted
  private var found = false
  private var searched = false

  override def hasNext: Boolean = {
    if (!searched) {
      found = findNext()
      searched = true
    }
    found
  }

  override def next(): A = {
    if (!hasNext) throw new NoSuchElementException("no more combinations")
    searched = false
    emit()
  }

  private def findNext(): Boolean = {
    if (level == NotStarted) {
      level = if (filterAfter(-1)) 0 else -1
      if (depth == 0) {
        val first = level == 0
        level = -1
        return first
      }
    }
    while (level >= 0) {
      cursor(level) += 1
      if (cursor(level) >= numCandidates(level)) {
        cursor(level) = -1
        level -= 1
      } else {
        bound.bind(probeOrder(level), candidates(level)(cursor(level)))
        if (filterAfter(level)) {
          if (level == depth - 1) return true
          level += 1
        }
      }
    }
    false
  }

  /**
   * Keeps, at each depth whose check reads `d` as its deepest (-1: only the rows bound before
   * probing), the stored rows that pass it; false where a depth keeps none.
   */
  private def filterAfter(d: Int): Boolean = {
    val dependents = checkedOnceBound(d + 1)
    var i = 0
    while (i < dependents.length) {
      val e = dependents(i)
      val rows = matches(e)
      var kept = 0
      var r = 0
      while (r < rows.length) {
        bound.bind(probeOrder(e), rows(r))
        if (checks(e).eval(bound.row)) {
          candidates(e)(kept) = rows(r)
          kept += 1
        }
        r += 1
      }
      numCandidates(e) = kept
      if (kept == 0) return false
      i += 1
    }
    true
  }
}

private object Combinations {
  private val NotStarted = -2
}
