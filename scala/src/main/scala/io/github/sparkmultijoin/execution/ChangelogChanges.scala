package io.github.sparkmultijoin.execution

import scala.collection.mutable

import io.github.sparkmultijoin.execution.state.{Applied, CurrentRowsState}
import io.github.sparkmultijoin.logical.{ChangeTypes, ChangelogJoin}
import io.github.sparkmultijoin.model.ChangelogJoinShape

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.DataType

/**
 * A change of one input's row: its row id, version and rank ([[Applied]]), its type, and the
 * current row it leaves (None for a removal, or a row that fails the input's filters).
 */
case class Change(input: Int, id: UnsafeRow, version: Array[Long], rank: Int, kind: String,
    row: Option[UnsafeRow])

/**
 * Reads a changelog join's tagged input rows ([[TaggedInputs]]) as changes by join key, and
 * applies a key's changes to what its state holds.
 *
 * A change applies if it comes after the identity's last applied change (a greater version, or
 * at one version a put after a removal); otherwise it is outdated (a duplicate delivery, or a
 * late older version) and ignored, as Delta's APPLY CHANGES ignores it. An insert of a live row
 * and a removal of an absent one apply as the row they leave; both are counted.
 */
class ChangelogChanges(shape: ChangelogJoinShape, keyTypes: Seq[DataType], description: String) {

  private val reader = new TaggedInputs.Reader(keyTypes.length, shape.inputs.map(_.length))
  private val key = UnsafeProjection.create(keyTypes.zipWithIndex.map { case (t, i) =>
    BoundReference(1 + i, t, nullable = true)
  })
  private val current = shape.inputs.indices.map(i =>
    UnsafeProjection.create(shape.currentColumns(i), shape.inputs(i)))
  private val rowId = shape.inputs.indices.map(i =>
    UnsafeProjection.create(shape.rowIds(i), shape.inputs(i)))

  var numOutdated = 0L
  var numIdempotent = 0L

  /** The batch's changes, by join key. */
  def byKey(tagged: Iterator[InternalRow])
      : mutable.LinkedHashMap[UnsafeRow, mutable.ArrayBuffer[Change]] = {
    val changes = mutable.LinkedHashMap.empty[UnsafeRow, mutable.ArrayBuffer[Change]]
    tagged.foreach { row =>
      val input = reader.input(row)
      val change = this.change(input, reader.row(row, input))
      changes.getOrElseUpdate(key(row).copy(), mutable.ArrayBuffer.empty) += change
    }
    changes
  }

  /** The change that `row`, a row of `input`'s changes, is; fails naming a bad one. */
  def change(input: Int, row: InternalRow): Change = {
    val width = shape.widths(input)
    val id = rowId(input)(row).copy()
    def fail(what: String) = throw new IllegalStateException(s"$description: a change of " +
      s"${shape.described(input)} with row id ${shown(id, input)} $what.")
    if (shape.formats(input) != ChangelogJoin.StackedFormat &&
      (0 until id.numFields).exists(id.isNullAt)) fail("has a null in its row id")
    val kind = Option(row.getUTF8String(width)).map(_.toString).getOrElse(fail("has no type"))
    if (!ChangeTypes.All.contains(kind)) fail(s"has the type '$kind', which is none of " +
      ChangeTypes.All.mkString(", "))
    val version = Option(row.getArray(width + 1)).filter(v =>
      !(0 until v.numElements())
        .exists(v.isNullAt)).map(_.toLongArray()).getOrElse(fail("has a null row version"))
    val removes = ChangeTypes.Removes.contains(kind)
    val passes = !row.isNullAt(width + 2) && row.getBoolean(width + 2)
    // A removal's image is not read: the ordering by row id keeps only the columns that find it.
    Change(input, id, version, if (removes) 0 else 1, kind,
      if (removes || !passes) None else Some(current(input)(row).copy()))
  }

  private def shown(id: UnsafeRow, input: Int): String = shape.rowIds(input).zipWithIndex
    .map { case (a, i) => s"${a.name}=${id.get(i, a.dataType)}" }.mkString("[", ", ", "]")

  /**
   * Applies `changes` (of one join key) to `applied` (what the state holds under the key, by
   * input and row id); returns the entries that changed.
   */
  def apply(
      changes: collection.Seq[Change],
      applied: mutable.HashMap[(Int, UnsafeRow), Applied])
      : collection.Seq[((Int, UnsafeRow), Applied)] = {
    val ordered = changes.sortWith { (a, b) =>
      val order = Applied.compare(a.version, b.version)
      order < 0 || order == 0 && a.rank < b.rank
    }
    ordered.flatMap { change =>
      val slot = (change.input, change.id)
      val previous = applied.get(slot)
      if (previous.forall(_.isBefore(change.version, change.rank))) {
        val live = previous.exists(_.row.isDefined)
        if (change.kind == ChangeTypes.Insert && live || change.rank == 0 && !live) {
          numIdempotent += 1
        }
        val next = Applied(change.version, change.rank, change.row)
        applied(slot) = next
        Some(slot -> next)
      } else {
        numOutdated += 1
        None
      }
    }
  }
}

object ChangelogChanges {

  /** Per input, its current rows in `applied`. */
  def currentRows(applied: collection.Map[(Int, UnsafeRow), Applied], numInputs: Int)
      : Seq[collection.IndexedSeq[UnsafeRow]] = {
    val rows = Array.fill(numInputs)(mutable.ArrayBuffer.empty[UnsafeRow])
    applied.foreach { case ((input, _), entry) => entry.row.foreach(rows(input) += _) }
    rows.toSeq
  }

  /** What `state` holds under `key`, by input and row id. */
  def stored(state: CurrentRowsState, key: UnsafeRow)
      : mutable.HashMap[(Int, UnsafeRow), Applied] = {
    val applied = mutable.HashMap.empty[(Int, UnsafeRow), Applied]
    state.under(key).foreach { case (input, id, entry) => applied((input, id)) = entry }
    applied
  }
}
