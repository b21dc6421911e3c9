package io.github.sparkmultijoin.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, AttributeSet, BasePredicate, Expression, GenericInternalRow, Predicate, PredicateHelper, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.{ArrayData, MapData}
import org.apache.spark.sql.types.{DataType, Decimal}
import org.apache.spark.unsafe.types.{BinaryView, CalendarInterval, TimestampNanosVal, UTF8String, VariantVal}

/**
 * The pieces of [[StreamingMultiJoinExec]]'s algorithm that do not touch state.
 *
 * A new row of input i is joined with the stored rows of the other inputs, taken one input at a
 * time in a probe order. Each conjunct of the condition is checked as soon as every input it
 * references is bound, so a combination that fails it is abandoned before the inputs after it
 * are enumerated.
 */
object StreamingMultiJoinHelper extends PredicateHelper {

  /**
   * A conjunct of a multi-join's condition. `outerInput` is the LEFT OUTER input whose ON
   * clause it belongs to: it decides whether that input matches, and is not checked when that
   * input is null-padded. Core conjuncts (None) hold for every output row.
   */
  case class Conjunct(expression: Expression, outerInput: Option[Int])

  def conjuncts(
      condition: Option[Expression],
      outerConditions: Seq[Option[Expression]]): Seq[Conjunct] =
    condition.toSeq.flatMap(splitConjunctivePredicates).map(Conjunct(_, None)) ++
      outerConditions.zipWithIndex.flatMap { case (on, input) =>
        on.toSeq.flatMap(splitConjunctivePredicates).map(Conjunct(_, Some(input)))
      }

  /**
   * How rows already bound (a new row, or a combination of several inputs' rows) are joined:
   * the other inputs, except the null-padded ones, in `probeOrder`, and the conjuncts to check
   * on the bound rows (`checkOnNewRow`) and once `probeOrder(d)` is bound (`checksAfterProbe(d)`).
   * Conjuncts of padded inputs' ON clauses are left out.
   */
  case class ProbePlan(
      probeOrder: Array[Int],
      checkOnNewRow: Option[Expression],
      checksAfterProbe: Array[Option[Expression]])

  def probePlan(
      inputs: Seq[Seq[Attribute]],
      conjuncts: Seq[Conjunct],
      newInput: Int,
      padded: Set[Int] = Set.empty): ProbePlan =
    probePlanAfter(inputs, conjuncts, Seq(newInput), padded)

  /** The probe plan for the rows of the inputs `bound`, already bound. */
  def probePlanAfter(
      inputs: Seq[Seq[Attribute]],
      conjuncts: Seq[Conjunct],
      bound: Seq[Int],
      padded: Set[Int]): ProbePlan = {
    // By expression id: a child's output may differ from the condition's attributes in
    // nullability (a Filter below makes them non-nullable).
    val inputSets = inputs.map(AttributeSet(_))
    def inputsOf(conjunct: Conjunct): Set[Int] = inputs.indices.filter { input =>
      conjunct.expression.references.intersect(inputSets(input)).nonEmpty
    }.toSet ++ conjunct.outerInput
    val probeOrder = inputs.indices.filter(i => !bound.contains(i) && !padded(i)).toArray
    // The step after which all of a conjunct's inputs are bound: 0 is the bound rows.
    val boundAt = bound.map(_ -> 0).toMap ++
      probeOrder.zipWithIndex.map { case (input, depth) => input -> (depth + 1) }
    val byStep = conjuncts.filterNot(_.outerInput.exists(padded))
      .groupBy(conjunct => (inputsOf(conjunct) + bound.head).map(boundAt).max)
    def checkAt(step: Int) = byStep.get(step).map(_.map(_.expression).reduce(And))
    ProbePlan(probeOrder, checkAt(0), probeOrder.indices.map(d => checkAt(d + 1)).toArray)
  }

  /** The probe plan of each input, probing the others in input order, nothing padded. */
  def probePlans(inputs: Seq[Seq[Attribute]], conjuncts: Seq[Conjunct]): Seq[ProbePlan] =
    inputs.indices.map(probePlan(inputs, conjuncts, _))

  /**
   * One row per input, seen as the concatenation of all inputs' rows, for evaluating the
   * condition and projecting the output. Inputs not yet bound read as nulls.
   */
  class BoundRows(widths: Seq[Int]) {
    require(widths.length >= 2)
    private val nullRows: Array[InternalRow] = widths.map(new GenericInternalRow(_)).toArray
    private val rows = nullRows.clone()

    def bind(input: Int, row: InternalRow): Unit = rows(input) = row

    def clear(input: Int): Unit = rows(input) = nullRows(input)

    val row: InternalRow = new ConcatenatedRows(rows, widths)
  }

  /**
   * The rows in `rows` read as one row, their columns one after the other, as they are when
   * read. A column is found through two small arrays; a chain of JoinedRows would recount the
   * columns of the rows before it at every access, which for many inputs dominates projecting.
   */
  private class ConcatenatedRows(rows: Array[InternalRow], widths: Seq[Int]) extends InternalRow {
    private val rowOf: Array[Int] =
      widths.zipWithIndex.flatMap { case (width, input) => Seq.fill(width)(input) }.toArray
    private val ordinalIn: Array[Int] = widths.flatMap(0 until _).toArray

    override def numFields: Int = rowOf.length
    override def setNullAt(i: Int): Unit = throw new UnsupportedOperationException
    override def update(i: Int, value: Any): Unit = throw new UnsupportedOperationException
    override def copy(): InternalRow = new ConcatenatedRows(rows.map(_.copy()), widths)

    override def isNullAt(i: Int): Boolean = rows(rowOf(i)).isNullAt(ordinalIn(i))
    override def getBoolean(i: Int): Boolean = rows(rowOf(i)).getBoolean(ordinalIn(i))
    override def getByte(i: Int): Byte = rows(rowOf(i)).getByte(ordinalIn(i))
    override def getShort(i: Int): Short = rows(rowOf(i)).getShort(ordinalIn(i))
    override def getInt(i: Int): Int = rows(rowOf(i)).getInt(ordinalIn(i))
    override def getLong(i: Int): Long = rows(rowOf(i)).getLong(ordinalIn(i))
    override def getFloat(i: Int): Float = rows(rowOf(i)).getFloat(ordinalIn(i))
    override def getDouble(i: Int): Double = rows(rowOf(i)).getDouble(ordinalIn(i))
    override def getDecimal(i: Int, precision: Int, scale: Int): Decimal =
      rows(rowOf(i)).getDecimal(ordinalIn(i), precision, scale)
    override def getUTF8String(i: Int): UTF8String = rows(rowOf(i)).getUTF8String(ordinalIn(i))
    override def getBinary(i: Int): Array[Byte] = rows(rowOf(i)).getBinary(ordinalIn(i))
    override def getBinaryView(i: Int): BinaryView = rows(rowOf(i)).getBinaryView(ordinalIn(i))
    override def getInterval(i: Int): CalendarInterval = rows(rowOf(i)).getInterval(ordinalIn(i))
    override def getTimestampNTZNanos(i: Int): TimestampNanosVal =
      rows(rowOf(i)).getTimestampNTZNanos(ordinalIn(i))
    override def getTimestampLTZNanos(i: Int): TimestampNanosVal =
      rows(rowOf(i)).getTimestampLTZNanos(ordinalIn(i))
    override def getVariant(i: Int): VariantVal = rows(rowOf(i)).getVariant(ordinalIn(i))
    override def getStruct(i: Int, numFields: Int): InternalRow =
      rows(rowOf(i)).getStruct(ordinalIn(i), numFields)
    override def getArray(i: Int): ArrayData = rows(rowOf(i)).getArray(ordinalIn(i))
    override def getMap(i: Int): MapData = rows(rowOf(i)).getMap(ordinalIn(i))
    override def get(i: Int, dataType: DataType): AnyRef =
      rows(rowOf(i)).get(ordinalIn(i), dataType)
  }

  /**
   * Every combination of the bound rows with one stored row of each probed input that passes the
   * checks, as `emit` makes it of the rows bound in `bound` and, per probe step, the index of the
   * chosen row in `matches` (which holds the stored rows of `probeOrder(d)` under the key).
   * Depth-first, so it holds one combination at a time; what `emit` returns may be reused, as
   * operators' output rows are. Nothing to probe is one combination: the bound rows.
   */
  class Combinations[A](
      matches: Array[Array[UnsafeRow]],
      probeOrder: Array[Int],
      checks: Array[BasePredicate],
      bound: BoundRows,
      emit: Array[Int] => A) extends Iterator[A] {

    private val depth = matches.length
    private val cursor = Array.fill(depth)(-1)
    private var level = 0
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
      emit(cursor)
    }

    private def findNext(): Boolean = {
      if (depth == 0) {
        val first = level == 0
        level = -1
        return first
      }
      while (level >= 0) {
        cursor(level) += 1
        if (cursor(level) >= matches(level).length) {
          cursor(level) = -1
          level -= 1
        } else {
          bound.bind(probeOrder(level), matches(level)(cursor(level)))
          val check = checks(level)
          if (check == null || check.eval(bound.row)) {
            if (level == depth - 1) return true
            level += 1
          }
        }
      }
      false
    }
  }

  def predicate(check: Option[Expression], output: Seq[Attribute]): BasePredicate =
    check.map(Predicate.create(_, output)).orNull

  /** `rows`, calling `onDone` once, when they are exhausted. */
  def onExhaustion[A](rows: Iterator[A])(onDone: => Unit): Iterator[A] = new Iterator[A] {
    private var done = false
    override def hasNext: Boolean = rows.hasNext || {
      if (!done) { done = true; onDone }
      false
    }
    override def next(): A = rows.next()
  }
}
