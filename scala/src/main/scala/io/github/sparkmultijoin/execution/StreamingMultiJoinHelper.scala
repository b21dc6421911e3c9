package io.github.sparkmultijoin.execution

import scala.collection.mutable

import io.github.sparkmultijoin.analysis.{Conjunct, InputColumns, JoinTree}
import io.github.sparkmultijoin.execution.state.{KeyRows, MultiJoinStateManager}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Add, And, Attribute, AttributeSeq, BasePredicate, BindReferences, EvalMode, Expression, Literal, MicrosToTimestamp, Predicate, TimestampAddInterval, UnixMicros, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.{ArrayData, MapData}
import org.apache.spark.sql.catalyst.util.DateTimeConstants.MICROS_PER_DAY
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.types.{DataType, DayTimeIntervalType, Decimal, TimestampType}
import org.apache.spark.sql.multijoin.ForwardingInternalRow
import org.apache.spark.unsafe.types.{CalendarInterval, UTF8String, VariantVal}

/**
 * The pieces of [[StreamingMultiJoinExec]]'s algorithm that do not touch state, and the two
 * classes that do a partition's work with them: [[DeltaJoiner]] (new rows) and
 * [[OuterJoinPadder]] (null-padded rows).
 *
 * A bound row (a new row, or a combination of several inputs' rows) is joined with the stored
 * rows of the other inputs, taken one input at a time in a probe order. Each conjunct of the
 * condition is checked as soon as every input it references is bound, so a combination that
 * fails it is abandoned before the inputs after it are enumerated.
 */
object StreamingMultiJoinHelper {

  /**
   * How rows already bound (a new row, or a combination of several inputs' rows) are joined:
   * the other inputs, except the null-padded ones, in `probeOrder`, and the conjuncts to check
   * on the bound rows (`checkOnNewRow`) and once `probeOrder(d)` is bound (`checksAfterProbe(d)`).
   * `checkReadsUpTo(d)` is the deepest earlier depth whose input that check reads, -1 where it
   * reads only the rows bound before probing. Conjuncts of padded inputs' ON clauses are left out.
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

  def probePlan(
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
  def probePlans(inputs: Seq[Seq[Attribute]], conjuncts: Seq[Conjunct]): Seq[ProbePlan] =
    inputs.indices.map(probePlan(inputs, conjuncts, _))

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
   * The rows in `rows` read as one row, their columns one after the other, as they are when
   * read. A column is found through two small arrays; a chain of JoinedRows would recount the
   * columns of the rows before it at every access, which for many inputs dominates projecting.
   */
  private class ConcatenatedRows(rows: Array[UnsafeRow], widths: Seq[Int])
    extends ForwardingInternalRow {
    private val rowOf: Array[Int] =
      widths.zipWithIndex.flatMap { case (width, input) => Seq.fill(width)(input) }.toArray
    private val ordinalIn: Array[Int] = widths.flatMap(0 until _).toArray

    override protected def sourceRow(i: Int): UnsafeRow = rows(rowOf(i))
    override protected def sourceOrdinal(i: Int): Int = ordinalIn(i)

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
    override def getInterval(i: Int): CalendarInterval = rows(rowOf(i)).getInterval(ordinalIn(i))
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

  private val NotStarted = -2

  def predicate(check: Option[Expression], output: Seq[Attribute]): BasePredicate =
    check.map(condition => Predicate.create(addingIntervalsAsMicros(condition), output)).orNull

  /**
   * `condition` with each addition of a literal day-time interval shorter than a day to a
   * TIMESTAMP done on the timestamp's microseconds. Spark adds such an interval through a
   * zoned date-time, so that whole days follow the session time zone; with no whole day that is
   * the instant plus the interval, the same answer (and overflow still fails, as there). A
   * time-bounded join evaluates its bounds for every combination it considers: the zoned
   * arithmetic was 40% of a 10-way time-bounded star's own work.
   */
  def addingIntervalsAsMicros(condition: Expression): Expression = condition.transformUp {
    case TimestampAddInterval(start, Literal(interval: Long, _: DayTimeIntervalType), _)
        if start.dataType == TimestampType && interval > -MICROS_PER_DAY &&
          interval < MICROS_PER_DAY =>
      MicrosToTimestamp(Add(UnixMicros(start), Literal(interval), EvalMode.ANSI))
  }

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

import StreamingMultiJoinHelper._

/**
 * What a partition's work is compiled from, once per task: the inputs' key and row
 * projections, the probe plans with their predicates, and the bound rows they are checked on.
 *
 * @param keys      per input, its key expressions
 * @param inputs    per input, its output columns
 * @param output    the operator's output: the inputs' columns one after the other
 * @param conjuncts the inner joins' conjuncts and those of each outer input's ON clause
 * @param tree      how the inputs are joined
 */
class CompiledJoin(
    keys: Seq[Seq[Expression]],
    val inputs: Seq[Seq[Attribute]],
    output: Seq[Attribute],
    conjuncts: Seq[Conjunct],
    val tree: JoinTree) {

  // A condition recurs across the probe plans: an ON clause is checked in every plan, at the
  // step that binds its inputs. Each is generated once per task, not once per plan and step:
  // generating them was a third of a 10-way time-bounded star's task time.
  private val predicates = mutable.HashMap.empty[Expression, BasePredicate]

  private def compiled(check: Option[Expression]): BasePredicate = check.map { condition =>
    predicates.getOrElseUpdate(condition.canonicalized, predicate(Some(condition), output))
  }.orNull

  /** A probe plan with its predicates compiled (null where there is nothing to check). */
  class CompiledPlan(val plan: ProbePlan) {
    val onNewRow: BasePredicate = compiled(plan.checkOnNewRow)
    val afterProbe: Array[BasePredicate] = plan.checksAfterProbe.map(compiled)
  }

  val keyProjections: Seq[UnsafeProjection] =
    keys.zip(inputs).map { case (key, columns) => UnsafeProjection.create(key, columns) }
  // Rows from a shuffle are UnsafeRows already: an input's is made for its first other row.
  private val rowProjections = new Array[UnsafeProjection](inputs.length)
  val bound = new BoundRows(inputs.map(_.map(_.dataType)))

  /** Per input, how its new rows are joined with all other inputs' rows. */
  val deltaPlans: Seq[CompiledPlan] = probePlans(inputs, conjuncts).map(new CompiledPlan(_))

  /**
   * A row of the first inner input's combinations with the other inner inputs' rows, outer
   * inputs left out.
   */
  lazy val innerPlan: CompiledPlan = new CompiledPlan(
    probePlan(inputs, conjuncts, tree.innerInputs.head, tree.outerInputs.toSet))

  /** Per outer input, its whole ON clause, over the bound rows. */
  val onClauses: Map[Int, BasePredicate] = tree.outerInputs.map { outer =>
    outer -> compiled(conjuncts.filter(_.outerInput.contains(outer)).map(_.expression)
      .reduceOption(And))
  }.toMap

  /** Per outer input, the inputs its ON clause reads. */
  val onClauseInputs: Map[Int, Set[Int]] = {
    val columns = new InputColumns(inputs)
    tree.outerInputs.map { outer =>
      outer -> conjuncts.filter(_.outerInput.contains(outer))
        .flatMap(conjunct => columns.inputsOf(conjunct.expression)).toSet
    }.toMap
  }

  /** Binds `row` of `input` and nothing else. */
  def bindOnly(input: Int, row: UnsafeRow): Unit = {
    clearBound()
    bound.bind(input, row)
  }

  /** Binds no row, so that none of a finished task's rows is held. */
  def clearBound(): Unit = inputs.indices.foreach(bound.clear)

  /** Whether the bound rows pass `check` (null: nothing to check). */
  def passes(check: BasePredicate): Boolean = check == null || check.eval(bound.row)

  /** `row` of `input` as an UnsafeRow, as the state stores it. */
  def toUnsafe(input: Int, row: InternalRow): UnsafeRow = row match {
    case unsafeRow: UnsafeRow => unsafeRow // as rows come from the shuffle: the store copies it
    case _ =>
      if (rowProjections(input) == null) {
        rowProjections(input) = UnsafeProjection.create(inputs(input), inputs(input))
      }
      rowProjections(input)(row)
  }

  /**
   * Every combination of the bound row(s) with the stored rows of the inputs `compiled`
   * probes, or nothing when one of them has none.
   */
  def combinations[A](compiled: CompiledPlan, stored: Int => Array[UnsafeRow])(
      emit: () => A): Iterator[A] = {
    val plan = compiled.plan
    val matches = plan.probeOrder.map(stored)
    if (matches.exists(_.isEmpty)) Iterator.empty
    else new Combinations(matches, plan.probeOrder, compiled.afterProbe, plan.checkedOnceBound,
      bound, emit)
  }
}

/**
 * The joins compiled on this executor, kept between the tasks of a query run. Each micro-batch
 * plans the operator again, and each of its tasks would generate the same code again: Spark
 * caches compiled classes by their source, but the source is generated each time. On a 10-way
 * time-bounded star that was 23 ms of the 380 ms of task time per micro-batch (its conditions
 * and key projections). A join is lent to one task at a time, and taken back only from a task that
 * succeeded, once its rows are all out, so no two tasks share its reused rows and buffers; an
 * operator has as many as it ran tasks at once.
 *
 * A join is kept for its query run and operator (a run fixes the session's confs that code
 * generation reads), and only for the same join: keys, columns, conjuncts and tree compared,
 * columns by their position, as the code reads them (each micro-batch gives the columns new
 * expression ids). At most [[MaxOperators]] operators are kept, the least recently lent first
 * dropped.
 */
object CompiledJoins {

  /**
   * What a compiled join is made from, equal to another where their code would be the same.
   *
   * @param operator the query run and the operator id
   */
  class Spec(
      operator: (java.util.UUID, Long),
      keys: Seq[Seq[Expression]],
      inputs: Seq[Seq[Attribute]],
      output: Seq[Attribute],
      conjuncts: Seq[Conjunct],
      tree: JoinTree) {

    def compile(): CompiledJoin = new CompiledJoin(keys, inputs, output, conjuncts, tree)

    private def byPosition(expression: Expression, columns: Seq[Attribute]): Expression =
      BindReferences.bindReference(expression, AttributeSeq(columns), allowFailures = true)

    private val identity = (
      operator,
      keys.zip(inputs).map { case (key, columns) => key.map(byPosition(_, columns)) },
      Seq(inputs.flatten, output).map(_.map(column => (column.dataType, column.nullable))),
      inputs.map(_.length),
      conjuncts.map(conjunct => (byPosition(conjunct.expression, output), conjunct.outerInput)),
      tree)

    override def equals(other: Any): Boolean = other match {
      case spec: Spec => identity == spec.identity
      case _ => false
    }

    override def hashCode: Int = identity.hashCode
  }

  private val MaxOperators = 64

  private val idle = new java.util.LinkedHashMap[Spec, List[CompiledJoin]](16, 0.75f, true) {
    override def removeEldestEntry(
        eldest: java.util.Map.Entry[Spec, List[CompiledJoin]]): Boolean = size > MaxOperators
  }

  /** A join of `spec` for one task alone: an idle one, or one compiled now. */
  def lend(spec: Spec): CompiledJoin = {
    val kept = idle.synchronized {
      idle.getOrDefault(spec, Nil) match {
        case join :: others => idle.put(spec, others); Some(join)
        case Nil => None
      }
    }
    kept.getOrElse(spec.compile())
  }

  /** Keeps `join`, lent for `spec`, for a later task; its task must be done with it. */
  def takeBack(spec: Spec, join: CompiledJoin): Unit = {
    join.clearBound()
    idle.synchronized(idle.put(spec, join :: idle.getOrDefault(spec, Nil)))
  }
}

/**
 * The delta join of one partition's micro-batch. All new rows are stored first (a late row, one
 * with a null key and one that fails a conjunct of its own input alone are not); then, per key
 * they were stored under, each input's rows under it are read once, and every combination with
 * at least one new row is emitted exactly once: a new row of input i joins all rows of the
 * inputs before i and the earlier rows of the inputs after it. This is the N-way delta join
 * `dA join B join C + A' join dB join C + A' join B' join dC`, where primes are states updated
 * by this batch. A key's rows of all inputs are read at once ([[MultiJoinStateManager.rowsUnder]]);
 * a key under which an input has none is dropped.
 *
 * @param join        the compiled conditions and projections
 * @param state       the partition's state
 * @param padder      null-pads a deciding row with a null key, where one comes out at once
 * @param lateAtOrBelowMicros rows with an event time at or below it are late (the previous
 *                    batch's watermark), None before there is one
 * @param timeOrdinals per input, the ordinal of its event time in its rows
 * @param numLateRows counts the late rows dropped
 */
class DeltaJoiner(
    join: CompiledJoin,
    state: MultiJoinStateManager,
    padder: OuterJoinPadder,
    lateAtOrBelowMicros: Option[Long],
    timeOrdinals: Seq[Option[Int]],
    numLateRows: SQLMetric) {

  /** Stores a new row, unless it is late or can join nothing; what it emits at once. */
  def store(input: Int, row: InternalRow): Iterator[InternalRow] = {
    if (isLate(input, row)) {
      numLateRows += 1
      Iterator.empty
    } else {
      val key = join.keyProjections(input)(row)
      val unsafeRow = join.toUnsafe(input, row)
      if (key.anyNull) {
        padder.padWithoutKey(input, unsafeRow)
      } else {
        join.bindOnly(input, unsafeRow)
        // A FULL OUTER input's row that fails its own ON clause still comes out, padded.
        if (join.passes(join.deltaPlans(input).onNewRow) || join.tree.isFullOuter(input)) {
          state.append(input, key, unsafeRow)
        }
        Iterator.empty
      }
    }
  }

  private def isLate(input: Int, row: InternalRow): Boolean = timeOrdinals(input).exists {
    ordinal =>
      lateAtOrBelowMicros.exists(watermark =>
        !row.isNullAt(ordinal) && row.getLong(ordinal) <= watermark)
  }

  /** The combinations with a row of this batch, over every key this batch stored rows under. */
  def joinAddedKeys(): Iterator[InternalRow] =
    state.keysAdded.flatMap { case (key, addedInputs) => joinKey(key, addedInputs) }

  private def joinKey(key: UnsafeRow, addedInputs: Long): Iterator[InternalRow] = {
    val rowsOf = state.rowsUnder(key, everyInput = true)
    if (rowsOf.exists(_.rows.isEmpty)) {
      Iterator.empty
    } else {
      join.inputs.indices.iterator.filter(inMask(addedInputs, _)).flatMap { input =>
        rowsOf(input).addedRows.iterator.flatMap { row =>
          join.bindOnly(input, row)
          join.combinations(join.deltaPlans(input),
            probed =>
              if (probed < input) rowsOf(probed).rows else rowsOf(probed).earlierRows
          )(() => join.bound.outputRow())
        }
      }
    }
  }

  private def inMask(mask: Long, input: Int): Boolean = (mask & (1L << input)) != 0
}

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
 * ([[io.github.sparkmultijoin.analysis.EventTimeBounds]]), and nothing is removed before every
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
