package io.github.sparkmultijoin.execution

import io.github.sparkmultijoin.logical.ChangeTypes

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types.{ArrayType, BooleanType, DataType, LongType, StringType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * Writes the change rows the changelog operators emit, one layout for every stream of them: a
 * row's columns, its change type, then what that stream's rows carry after it ([[ChangeRows]]).
 *
 * @param columnTypes the types of a row's columns
 * @param trailing    the values after the change type, with their types
 */
class ChangeRows(columnTypes: Seq[DataType], trailing: Seq[(Any, DataType)]) {

  private val toUnsafe =
    UnsafeProjection.create((columnTypes ++ (StringType +: trailing.map(_._2))).toArray)

  private val kinds = ChangeTypes.All.map(kind => kind -> UTF8String.fromString(kind)).toMap

  /** The change row of `kind` of a row of `columns`. */
  def apply(kind: String, columns: InternalRow): InternalRow = toUnsafe(new JoinedRow(columns,
    new GenericInternalRow((kinds(kind) +: trailing.map(_._1)).toArray))).copy()

  /**
   * The change rows from `before` to `after`, rows by output identity: `delete` (the old row),
   * `insert`, or `update_preimage` and `update_postimage`.
   */
  def diff(
      before: collection.Map[UnsafeRow, UnsafeRow],
      after: collection.Map[UnsafeRow, UnsafeRow]): Iterator[InternalRow] =
    before.iterator.flatMap { case (id, old) =>
      after.get(id) match {
        case None => Iterator(this(ChangeTypes.Delete, old))
        case Some(now) if now == old => Iterator.empty
        case Some(now) =>
          Iterator(this(ChangeTypes.UpdatePreimage, old), this(ChangeTypes.UpdatePostimage, now))
      }
    } ++ after.iterator.collect {
      case (id, now) if !before.contains(id) => this(ChangeTypes.Insert, now)
    }
}

object ChangeRows {

  /** The row version of the changes a changelog operator emits in micro-batch `batchId`. */
  private def version(batchId: Long): (Any, DataType) =
    new GenericArrayData(Array[Any](batchId)) -> ArrayType(LongType, containsNull = false)

  /** A changelog join's change rows, versioned by the micro-batch, as a stacked join reads them. */
  def ofJoin(columnTypes: Seq[DataType], batchId: Long): ChangeRows =
    new ChangeRows(columnTypes, Seq(version(batchId)))

  /** The ordering's change rows: as the input's, versioned by the micro-batch, and passing. */
  def ofOrdering(columnTypes: Seq[DataType], batchId: Long): ChangeRows =
    new ChangeRows(columnTypes, Seq(version(batchId), true -> BooleanType))

  /** A query's change rows: the change type last. */
  def ofOutput(columnTypes: Seq[DataType]): ChangeRows = new ChangeRows(columnTypes, Nil)
}
