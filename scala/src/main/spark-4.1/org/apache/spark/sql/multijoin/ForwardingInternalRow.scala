package org.apache.spark.sql.multijoin

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.unsafe.types.{GeographyVal, GeometryVal}

/**
 * An InternalRow whose column `i` is column `sourceOrdinal(i)` of `sourceRow(i)`, with the
 * getters InternalRow has on some Spark lines only forwarded so; the subclass forwards the rest.
 * Spark 4.1 has geospatial getters, which 4.2 removed.
 */
abstract class ForwardingInternalRow extends InternalRow {
  protected def sourceRow(i: Int): UnsafeRow
  protected def sourceOrdinal(i: Int): Int

  override def getGeography(i: Int): GeographyVal = sourceRow(i).getGeography(sourceOrdinal(i))
  override def getGeometry(i: Int): GeometryVal = sourceRow(i).getGeometry(sourceOrdinal(i))
}
