package io.github.sparkmultijoin.execution.state

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeRow}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types.{ArrayType, BinaryType, IntegerType, LongType, StructField, StructType}
import org.apache.spark.unsafe.Platform

/**
 * How a changelog join's state (and its ordering by row id) keeps the change last applied to a
 * row identity as a store value: one implementation per format, picked by the number the
 * operator records in its checkpoint ([[ChangelogStateFormat.recorded]]), as Spark's
 * stream-stream join picks its state format. A new query writes the one the session names
 * (`multi-join.changelog-state-format`, the latest by default); a restart keeps its checkpoint's.
 *
 * Why a second format: RocksDB stores a value's bytes after compression, and a value of
 * several columns spends most of them on the row's envelope, not on the row: a null bitset,
 * a slot per column, the version as an array with its own header. Format 2 keeps the row's
 * bytes as they are and packs the rest after them in a few bytes; and the ordering by row id
 * keeps of a row only what finds it under its join key.
 */
sealed trait ChangelogStateFormat extends Serializable {

  def version: Int

  def valueSchema: StructType

  /**
   * Whether the ordering by row id keeps a row's every column; if not, only its row id and the
   * columns its join key reads, all that the removal of its old version needs.
   */
  def orderingKeepsWholeRows: Boolean

  /** `applied`, stored by micro-batch `batchId`, as a row of [[valueSchema]]. */
  def valueRow(applied: Applied, batchId: Long): InternalRow

  /** The change a value holds, of a row of `width` columns. */
  def applied(value: UnsafeRow, width: Int): Applied

  /** `read_state`: the current row a value holds, if any, with the batch that stored it. */
  def currentRow(value: UnsafeRow, width: Int): Option[(UnsafeRow, Long)]

  // As EXPLAIN shows it among the ordering's arguments.
  override def toString: String = s"state format $version"
}

object ChangelogStateFormat {

  val all: Seq[ChangelogStateFormat] = Seq(Fields, Packed)

  /**
   * The format a checkpoint recorded as `version` (none: written before formats were recorded,
   * so format 1), or why it has none: a later version of spark-multijoin wrote it.
   */
  def recorded(version: Option[Int]): Either[String, ChangelogStateFormat] =
    all.find(_.version == version.getOrElse(Fields.version)).toRight(
      s"changelog state format ${version.get} is not one this version of spark-multijoin " +
        s"knows (it knows ${all.map(_.version).mkString(" and ")}): a later version wrote it")

  /** The UnsafeRow of `width` columns whose bytes are `bytes`. */
  def bytesRow(bytes: Array[Byte], width: Int): UnsafeRow = {
    val row = new UnsafeRow(width)
    row.pointTo(bytes, bytes.length)
    row
  }

  /** Format 1: the version (an array), the rank, the row's bytes (null if none), the batch. */
  case object Fields extends ChangelogStateFormat {
    val version = 1

    val orderingKeepsWholeRows = true

    val valueSchema: StructType = StructType(Seq(
      StructField("version", ArrayType(LongType, containsNull = false), nullable = false),
      StructField("rank", IntegerType, nullable = false),
      StructField("row", BinaryType),
      StructField("batch", LongType, nullable = false)))

    def valueRow(applied: Applied, batchId: Long): InternalRow =
      new GenericInternalRow(Array[Any](new GenericArrayData(applied.version), applied.rank,
        applied.row.map(_.getBytes).orNull, batchId))

    def applied(value: UnsafeRow, width: Int): Applied = Applied(value.getArray(0).toLongArray(),
      value.getInt(1), Option(value.getBinary(2)).map(bytesRow(_, width)))

    def currentRow(value: UnsafeRow, width: Int): Option[(UnsafeRow, Long)] =
      Option(value.getBinary(2)).map(bytes => (bytesRow(bytes, width), value.getLong(3)))
  }

  /**
   * Format 2: one binary column, the row's bytes (none for a removal) followed by a trailer of
   * variable-length integers (the version's elements, zigzag-coded, then the batch), a byte of
   * flags (the rank, whether there is a row, how many elements the version has), and last the
   * trailer's length, by which a read finds where the row ends.
   */
  case object Packed extends ChangelogStateFormat {
    val version = 2

    val orderingKeepsWholeRows = false

    val valueSchema: StructType =
      StructType(Seq(StructField("entry", BinaryType, nullable = false)))

    // A version of more elements would not fit the trailer's one length byte.
    private val MaxVersionElements = 24

    def valueRow(applied: Applied, batchId: Long): InternalRow =
      new GenericInternalRow(Array[Any](entry(applied, batchId)))

    /** The binary a value of this format holds. */
    private def entry(applied: Applied, batchId: Long): Array[Byte] = {
      val elements = applied.version.length
      require(elements <= MaxVersionElements,
        s"A row version has $elements elements; the " +
          s"changelog state keeps versions of at most $MaxVersionElements.")
      val trailer = new java.io.ByteArrayOutputStream(16)
      applied.version.foreach(v => writeVarLong(trailer, (v << 1) ^ (v >> 63)))
      writeVarLong(trailer, batchId)
      trailer.write(applied.rank | (if (applied.row.isDefined) 2 else 0) | elements << 2)
      val rowBytes = applied.row.map(_.getBytes).getOrElse(Array.emptyByteArray)
      val out = new Array[Byte](rowBytes.length + trailer.size + 1)
      System.arraycopy(rowBytes, 0, out, 0, rowBytes.length)
      System.arraycopy(trailer.toByteArray, 0, out, rowBytes.length, trailer.size)
      out(out.length - 1) = trailer.size.toByte
      out
    }

    def applied(value: UnsafeRow, width: Int): Applied = read(value.getBinary(0), width)._1

    def currentRow(value: UnsafeRow, width: Int): Option[(UnsafeRow, Long)] = {
      val (applied, batchId) = read(value.getBinary(0), width)
      applied.row.map(_ -> batchId)
    }

    /** The change an entry holds, and the batch that stored it; its row points into `bytes`. */
    private def read(bytes: Array[Byte], width: Int): (Applied, Long) = {
      val trailerStart = bytes.length - 1 - (bytes(bytes.length - 1) & 0xff)
      val flags = bytes(bytes.length - 2) & 0xff
      val position = Array(trailerStart)
      val version = Array.fill(flags >>> 2) {
        val zigzag = readVarLong(bytes, position)
        (zigzag >>> 1) ^ -(zigzag & 1)
      }
      val batchId = readVarLong(bytes, position)
      val row = if ((flags & 2) == 0) None
      else {
        val row = new UnsafeRow(width)
        row.pointTo(bytes, Platform.BYTE_ARRAY_OFFSET, trailerStart)
        Some(row)
      }
      (Applied(version, flags & 1, row), batchId)
    }

    private def writeVarLong(out: java.io.ByteArrayOutputStream, value: Long): Unit = {
      var rest = value
      while ((rest & ~0x7fL) != 0) {
        out.write(((rest & 0x7f) | 0x80).toInt)
        rest >>>= 7
      }
      out.write(rest.toInt)
    }

    private def readVarLong(bytes: Array[Byte], position: Array[Int]): Long = {
      var result = 0L
      var shift = 0
      var byte = 0
      do {
        byte = bytes(position(0)) & 0xff
        position(0) += 1
        result |= (byte & 0x7fL) << shift
        shift += 7
      } while ((byte & 0x80) != 0)
      result
    }
  }
}
