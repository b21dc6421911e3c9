package io.github.sparkmultijoin.execution

import scala.collection.mutable

import io.github.sparkmultijoin.model.{Conjunct, InputColumns, JoinTree}

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Add, And, Attribute, AttributeSeq, BasePredicate, BindReferences, EvalMode, Expression, Literal, MicrosToTimestamp, Predicate, TimestampAddInterval, UnixMicros, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.DateTimeConstants.MICROS_PER_DAY
import org.apache.spark.sql.types.{DayTimeIntervalType, TimestampType}

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
  // generating them is a large share of a many-way time-bounded join's task time.
  private val predicates = mutable.HashMap.empty[Expression, BasePredicate]

  private def compiled(check: Option[Expression]): BasePredicate = check.map { condition =>
    predicates.getOrElseUpdate(condition.canonicalized,
      CompiledJoin.predicate(Some(condition), output))
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
  val deltaPlans: Seq[CompiledPlan] =
    ProbePlan.forEachInput(inputs, conjuncts).map(new CompiledPlan(_))

  /**
   * A row of the first inner input's combinations with the other inner inputs' rows, outer
   * inputs left out.
   */
  lazy val innerPlan: CompiledPlan = new CompiledPlan(
    ProbePlan.forNewRow(inputs, conjuncts, tree.innerInputs.head, tree.outerInputs.toSet))

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

object CompiledJoin {

  /** `check` compiled over `output`; null where there is nothing to check. */
  def predicate(check: Option[Expression], output: Seq[Attribute]): BasePredicate =
    check.map(condition => Predicate.create(addingIntervalsAsMicros(condition), output)).orNull

  /**
   * `condition` with each addition of a literal day-time interval shorter than a day to a
   * TIMESTAMP done on the timestamp's microseconds. Spark adds such an interval through a
   * zoned date-time, so that whole days follow the session time zone; with no whole day that is
   * the instant plus the interval, the same answer (and overflow still fails, as there). A
   * time-bounded join evaluates its bounds for every combination it considers, and the zoned
   * arithmetic is much of that work.
   */
  def addingIntervalsAsMicros(condition: Expression): Expression = condition.transformUp {
    case TimestampAddInterval(start, Literal(interval: Long, _: DayTimeIntervalType), _)
        if start.dataType == TimestampType && interval > -MICROS_PER_DAY &&
          interval < MICROS_PER_DAY =>
      MicrosToTimestamp(Add(UnixMicros(start), Literal(interval), EvalMode.ANSI))
  }
}

/**
 * The joins compiled on this executor, kept between the tasks of a query run. Each micro-batch
 * plans the operator again, and each of its tasks would generate the same code again (its
 * conditions and key projections): Spark caches compiled classes by their source, but the source
 * is generated each time, which on a many-way join is a noticeable share of a micro-batch's task
 * time. A join is lent to one task at a time, and taken back only from a task that succeeded,
 * once its rows are all out, so no two tasks share its reused rows and buffers; an operator has
 * as many as it ran tasks at once.
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

  /** A join of `spec` for the running task, taken back when the task succeeds. */
  def lendToTask(spec: Spec): CompiledJoin = {
    val join = lend(spec)
    TaskContext.get().addTaskCompletionListener[Unit] { task =>
      if (!task.isFailed() && !task.isInterrupted()) takeBack(spec, join)
    }
    join
  }

  /** Keeps `join`, lent for `spec`, for a later task; its task must be done with it. */
  def takeBack(spec: Spec, join: CompiledJoin): Unit = {
    join.clearBound()
    idle.synchronized(idle.put(spec, join :: idle.getOrDefault(spec, Nil)))
  }
}
