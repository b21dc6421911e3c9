package io.github.sparkmultijoin.execution

import scala.collection.mutable

import io.github.sparkmultijoin.model.ChangelogJoinShape

import org.apache.spark.sql.catalyst.expressions.{BasePredicate, BindReferences, Expression, Predicate, UnsafeProjection, UnsafeRow}

/**
 * The join of a changelog join's current rows under one key, as the batch query joins them:
 * the inner inputs' combinations that satisfy the inner conditions, then each outer input in
 * the tree's order, matched by its ON clause or null-padded, a FULL OUTER input's unmatched
 * rows joined with nulls for every input before it; then the filter above the join. Rows are
 * keyed by their output identity, the inputs' row ids.
 *
 * Why the whole key each time: a change of one input row can add, remove or pad any row of the
 * key's join (a padded row is retracted by its first match and comes back with its last), and
 * comparing the key's join before and after the batch's changes gives each output row's net
 * change, whatever the mix of changes.
 *
 * A combination is an array of one row per input, a null-padded input (or one not joined yet)
 * as a row of nulls: conditions read it through one reused view ([[ConcatenatedRows]]), and an
 * output row is its rows' bytes one after the other ([[UnsafeRowConcatenator]]), so that
 * joining copies no column one by one.
 */
class CurrentRowsJoin(shape: ChangelogJoinShape) {

  private type Combination = Array[UnsafeRow]

  private val joined = shape.joinedOutput
  private val n = shape.numInputs
  private val inputTypes = shape.inputs.indices.map(i => shape.currentColumns(i).map(_.dataType))
  private val nullRows = inputTypes.map(UnsafeRowConcatenator.nullRow).toArray
  private val slots = nullRows.clone()
  private val view = new ConcatenatedRows(slots, shape.widths)
  private val concatenator = new UnsafeRowConcatenator(inputTypes)
  private val (innerInputs, outerOrder) = (shape.tree.innerInputs, shape.tree.outerOrder)

  private def predicate(e: Expression): BasePredicate =
    Predicate.create(BindReferences.bindReference(e, joined))

  private val inner = shape.condition.map(predicate)
  private val on = shape.inputs.indices.map(i =>
    if (shape.tree.isOuter(i)) Some(predicate(shape.onClauses(i))) else None)
  private val filter = shape.filter.map(predicate)
  private val identity = UnsafeProjection.create(
    shape.rowIds.flatten.map(id => joined.find(_.exprId == id.exprId).get), joined)

  /** The join's rows of `current` (per input, its current rows under one key), by identity. */
  def rows(
      current: Seq[collection.IndexedSeq[UnsafeRow]]): mutable.HashMap[UnsafeRow, UnsafeRow] = {
    var partials = innerCombinations(current).filter(holds(inner, _))
    outerOrder.foreach { outer => partials = joinOuter(partials, outer, current(outer)) }
    val byIdentity = mutable.HashMap.empty[UnsafeRow, UnsafeRow]
    partials.foreach { combination =>
      if (holds(filter, combination)) {
        byIdentity(identity(view).copy()) = concatenator.concatenate(combination).copy()
      }
    }
    byIdentity
  }

  private def innerCombinations(current: Seq[collection.IndexedSeq[UnsafeRow]]) =
    innerInputs.foldLeft(mutable.ArrayBuffer(nullRows.clone())) { (partials, input) =>
      partials.flatMap(p => current(input).map(row => combined(p, input, row)))
    }

  /** `partials` joined with `rows` of `outer` by its ON clause, or padded. */
  private def joinOuter(
      partials: mutable.ArrayBuffer[Combination],
      outer: Int,
      rows: collection.IndexedSeq[UnsafeRow]): mutable.ArrayBuffer[Combination] = {
    val matched = new Array[Boolean](rows.length)
    val joinedPartials = mutable.ArrayBuffer.empty[Combination]
    partials.foreach { p =>
      var any = false
      rows.indices.foreach { j =>
        val candidate = combined(p, outer, rows(j))
        if (holds(on(outer), candidate)) {
          joinedPartials += candidate
          matched(j) = true
          any = true
        }
      }
      if (!any) joinedPartials += p
    }
    if (shape.tree.isFullOuter(outer)) {
      rows.indices.filterNot(matched).foreach(j =>
        joinedPartials += combined(nullRows, outer, rows(j)))
    }
    joinedPartials
  }

  private def combined(p: Combination, input: Int, row: UnsafeRow): Combination = {
    val next = p.clone()
    next(input) = row
    next
  }

  /** Whether `predicate` (if any) holds for `combination`, which the view then shows. */
  private def holds(predicate: Option[BasePredicate], combination: Combination): Boolean = {
    System.arraycopy(combination, 0, slots, 0, n)
    predicate.forall(_.eval(view))
  }
}
