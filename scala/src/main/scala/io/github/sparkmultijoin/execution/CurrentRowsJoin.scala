package io.github.sparkmultijoin.execution

import scala.collection.mutable

import io.github.sparkmultijoin.model.ChangelogJoinShape

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BasePredicate, BindReferences, Expression, GenericInternalRow, Predicate, UnsafeProjection, UnsafeRow}

/**
 * The join of a changelog join's current rows under one key, as the batch query joins them:
 * the inner inputs' combinations that satisfy the inner conditions, then each outer input in
 * the tree's order, matched by its ON clause or null-padded, a FULL OUTER input's unmatched
 * rows joined with nulls for every input before it; then the filter above the join. Rows are keyed by their output identity, the inputs' row ids.
 *
 * Why the whole key each time: a change of one input row can add, remove or pad any row of the
 * key's join (a padded row is retracted by its first match and comes back with its last), and
 * comparing the key's join before and after the batch's changes gives each output row's net
 * change, whatever the mix of changes.
 */
class CurrentRowsJoin(shape: ChangelogJoinShape) {

  private val joined = shape.joinedOutput
  private val types = joined.map(_.dataType).toArray
  private val offsets = shape.widths.scanLeft(0)(_ + _).toArray
  private val n = shape.numInputs

  private def predicate(e: Expression): BasePredicate =
    Predicate.create(BindReferences.bindReference(e, joined))

  private val inner = shape.condition.map(predicate)
  private val on = shape.inputs.indices.map(i =>
    if (shape.tree.isOuter(i)) Some(predicate(shape.onClauses(i))) else None)
  private val filter = shape.filter.map(predicate)
  private val project = UnsafeProjection.create(joined, joined)
  private val identity = UnsafeProjection.create(
    shape.rowIds.flatten.map(id => joined.find(_.exprId == id.exprId).get), joined)

  /** The join's rows of `current` (per input, its current rows under one key), by identity. */
  def rows(current: Seq[Seq[InternalRow]]): mutable.HashMap[UnsafeRow, UnsafeRow] = {
    val empty = new Array[InternalRow](n)
    var partials = shape.tree.innerInputs.foldLeft(Seq(empty)) { (partials, input) =>
      partials.flatMap(p => current(input).map(row => p.updated(input, row)))
    }.filter(p => inner.forall(_.eval(joinedRow(p))))
    shape.tree.outerOrder.foreach { outer =>
      val rows = current(outer)
      val matched = new Array[Boolean](rows.length)
      partials = partials.flatMap { p =>
        val matches = rows.indices.filter(j =>
          on(outer).get.eval(joinedRow(p.updated(outer,
            rows(j)))))
        matches.foreach(matched(_) = true)
        if (matches.isEmpty) Seq(p) else matches.map(j => p.updated(outer, rows(j)))
      }
      if (shape.tree.isFullOuter(outer)) {
        partials ++= rows.indices.filterNot(matched).map(j => empty.updated(outer, rows(j)))
      }
    }
    val byIdentity = mutable.HashMap.empty[UnsafeRow, UnsafeRow]
    partials.iterator.map(joinedRow).filter(row => filter.forall(_.eval(row))).foreach { row =>
      byIdentity(identity(row).copy()) = project(row).copy()
    }
    byIdentity
  }

  private def joinedRow(combination: Array[InternalRow]): InternalRow = {
    val values = new Array[Any](types.length)
    var input = 0
    while (input < n) {
      val row = combination(input)
      if (row != null) {
        var i = 0
        while (i < shape.widths(input)) {
          values(offsets(input) + i) = row.get(i, types(offsets(input) + i))
          i += 1
        }
      }
      input += 1
    }
    new GenericInternalRow(values)
  }
}
