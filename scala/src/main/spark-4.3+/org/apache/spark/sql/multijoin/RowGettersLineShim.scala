package org.apache.spark.sql.multijoin

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.unsafe.types.{BinaryView, TimestampNanosVal}

/**
 * The getters of a row whose column `i` is column `sourceOrdinal(i)` of `sourceRow(i)` that
 * InternalRow has on some Spark lines only; the row forwards the rest itself. Spark 4.2 added
 * binary views, 4.3 nanosecond timestamps.
 */
trait RowGettersLineShim extends InternalRow {
  protected def sourceRow(i: Int): UnsafeRow
  protected def sourceOrdinal(i: Int): Int

  override def getBinaryView(i: Int): BinaryView = sourceRow(i).getBinaryView(sourceOrdinal(i))
  override def getTimestampNTZNanos(i: Int): TimestampNanosVal =
    sourceRow(i).getTimestampNTZNanos(sourceOrdinal(i))
  override def getTimestampLTZNanos(i: Int): TimestampNanosVal =
    sourceRow(i).getTimestampLTZNanos(sourceOrdinal(i))
}
