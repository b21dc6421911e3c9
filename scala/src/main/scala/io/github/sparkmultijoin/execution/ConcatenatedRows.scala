package io.github.sparkmultijoin.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.util.{ArrayData, MapData}
import org.apache.spark.sql.multijoin.RowGettersLineShim
import org.apache.spark.sql.types.{DataType, Decimal}
import org.apache.spark.unsafe.types.{CalendarInterval, UTF8String, VariantVal}

/**
 * The rows in `rows` read as one row, their columns one after the other, as they are when
 * read. A column is found through two small arrays; a chain of JoinedRows would recount the
 * columns of the rows before it at every access, which for many inputs dominates projecting.
 *
 * It forwards every getter of InternalRow. The getters only some Spark lines have (nanosecond
 * timestamps, binary views, geospatial values) are forwarded by the per-line
 * [[RowGettersLineShim]] through `sourceRow` and `sourceOrdinal`.
 */
private[execution] class ConcatenatedRows(rows: Array[UnsafeRow], widths: Seq[Int])
  extends InternalRow with RowGettersLineShim {
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
