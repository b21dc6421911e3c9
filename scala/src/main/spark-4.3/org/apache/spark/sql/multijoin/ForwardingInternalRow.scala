package org.apache.spark.sql.multijoin

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.unsafe.types.{BinaryView, TimestampNanosVal}

/**
 * An InternalRow whose column `i` is column `sourceOrdinal(i)` of `sourceRow(i)`, with the
 * getters InternalRow has on some Spark lines only forwarded so; the subclass forwards the rest.
 * Spark 4.2 added binary views, 4.3 nanosecond timestamps.
 */
abstract class ForwardingInternalRow extends InternalRow {
  protected def sourceRow(i: Int): UnsafeRow
  protected def sourceOrdinal(i: Int): Int

  override def getBinaryView(i: Int): BinaryView = sourceRow(i).getBinaryView(sourceOrdinal(i))
  override def getTimestampNTZNanos(i: Int): TimestampNanosVal =
    sourceRow(i).getTimestampNTZNanos(sourceOrdinal(i))
  override def getTimestampLTZNanos(i: Int): TimestampNanosVal =
    sourceRow(i).getTimestampLTZNanos(sourceOrdinal(i))
}
