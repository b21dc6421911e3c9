package io.github.sparkmultijoin.execution

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.types.{DataType, Decimal, DecimalType}
import org.apache.spark.unsafe.Platform

/**
 * Writes the operator's output row, one row per input with their columns one after the other,
 * by copying the inputs' bytes: their null bits (shifted into place), their fixed-length
 * parts, and their variable-length parts, whose offsets are then moved by where each landed.
 * Per output row this is a few copies per input, where an UnsafeProjection of the bound rows
 * reads and writes every column through the row interface. With fan-out, writing output rows
 * is a large part of the join's own work (measured in docs/benchmarks.md). Spark's
 * UnsafeRowJoiner does the same for two rows.
 *
 * The result is byte for byte the row an UnsafeProjection of the inputs' rows writes: a
 * variable-length slot that holds zero (a null string, say) stays zero, and a null decimal too
 * wide for a long keeps the room and offset Spark's writer gives it. It is reused by the next
 * call, as operators' output rows are.
 *
 * @param inputs per input, the types of its columns
 */
class UnsafeRowConcatenator(inputs: Seq[Seq[DataType]]) {
  private val numInputs = inputs.length
  private val widths = inputs.map(_.length).toArray
  // The output ordinal of each input's first column.
  private val firstColumn = widths.scanLeft(0)(_ + _)
  private val numFields = firstColumn.last
  private val bitsetWords = UnsafeRow.calculateBitSetWidthInBytes(numFields) / 8
  // Per input, its null bits' mask in each of its bitset words. Bits past an input's width are
  // not its columns: Spark's writer leaves them clear, and masked they cannot null the next
  // input's columns if a row has them set.
  private val bitMasks: Array[Array[Long]] = widths.map { width =>
    Array.tabulate(UnsafeRow.calculateBitSetWidthInBytes(width) / 8) { word =>
      val columns = width - word * 64
      if (columns >= 64) -1L else (1L << columns) - 1
    }
  }
  private val inputBitsetWords = bitMasks.map(_.length)
  private val inputFixedBytes = inputBitsetWords.indices.map(i =>
    (inputBitsetWords(i) + widths(i)) * 8).toArray
  private val outputFixedBytes = (bitsetWords + numFields) * 8
  // Per input, the ordinals of its variable-length columns.
  private val variableLength: Array[Array[Int]] =
    inputs.map(_.zipWithIndex.collect { case (t, i) if !UnsafeRow.isFixedLength(t) => i }.toArray)
      .toArray
  private val nullBits = new Array[Long](bitsetWords)
  private var buffer = new Array[Byte](math.max(64, outputFixedBytes))
  private val output = new UnsafeRow(numFields)

  /** `rows`, one per input in input order, as one row. */
  def concatenate(rows: Array[UnsafeRow]): UnsafeRow = {
    var size = outputFixedBytes
    var input = 0
    while (input < numInputs) {
      size += rows(input).getSizeInBytes - inputFixedBytes(input)
      input += 1
    }
    if (buffer.length < size) buffer = new Array[Byte](math.max(size, buffer.length * 2))
    java.util.Arrays.fill(nullBits, 0L)
    var variableStart = outputFixedBytes
    input = 0
    while (input < numInputs) {
      variableStart = copyInput(input, rows(input), variableStart)
      input += 1
    }
    var word = 0
    while (word < bitsetWords) {
      Platform.putLong(buffer, Platform.BYTE_ARRAY_OFFSET + word * 8L, nullBits(word))
      word += 1
    }
    output.pointTo(buffer, size)
    output
  }

  /** Copies `row` of `input` into place; where the next input's variable-length part starts. */
  private def copyInput(input: Int, row: UnsafeRow, variableStart: Int): Int = {
    val base = row.getBaseObject
    val offset = row.getBaseOffset
    addNullBits(input, base, offset)
    val fixedStart = Platform.BYTE_ARRAY_OFFSET + (bitsetWords + firstColumn(input)) * 8L
    copyWords(base, offset + inputBitsetWords(input) * 8L, fixedStart, widths(input) * 8)
    val variableBytes = row.getSizeInBytes - inputFixedBytes(input)
    copyWords(base, offset + inputFixedBytes(input), Platform.BYTE_ARRAY_OFFSET + variableStart,
      variableBytes)
    val moved = (variableStart - inputFixedBytes(input)).toLong << 32
    val columns = variableLength(input)
    var i = 0
    while (i < columns.length) {
      val slot = fixedStart + columns(i) * 8L
      val offsetAndSize = Platform.getLong(buffer, slot)
      if (offsetAndSize != 0) Platform.putLong(buffer, slot, offsetAndSize + moved)
      i += 1
    }
    variableStart + variableBytes
  }

  /**
   * Copies `bytes` (whole words, as every part of an UnsafeRow is) into the buffer. A row's
   * parts are mostly a few words, for which a call of Platform.copyMemory costs several times
   * the copy.
   */
  private def copyWords(base: AnyRef, from: Long, to: Long, bytes: Int): Unit = {
    if (bytes > UnsafeRowConcatenator.CopyMemoryAboveBytes) {
      Platform.copyMemory(base, from, buffer, to, bytes)
    } else {
      var word = 0
      while (word < bytes) {
        Platform.putLong(buffer, to + word, Platform.getLong(base, from + word))
        word += 8
      }
    }
  }

  /** ORs `input`'s null bits into the output's, at its first column's bit. */
  private def addNullBits(input: Int, base: AnyRef, offset: Long): Unit = {
    var word = 0
    while (word < inputBitsetWords(input)) {
      val bits = Platform.getLong(base, offset + word * 8L) & bitMasks(input)(word)
      if (bits != 0) {
        val position = firstColumn(input) + word * 64
        val target = position >> 6
        val shift = position & 63
        nullBits(target) |= bits << shift
        if (shift != 0 && target + 1 < bitsetWords) nullBits(target + 1) |= bits >>> (64 - shift)
      }
      word += 1
    }
  }
}

object UnsafeRowConcatenator {

  private val CopyMemoryAboveBytes = 128

  /** A row of `types` that is all nulls, laid out as Spark's writer lays out null columns. */
  def nullRow(types: Seq[DataType]): UnsafeRow = {
    val writer = new UnsafeRowWriter(types.length)
    writer.resetRowWriter()
    types.zipWithIndex.foreach {
      // Spark's writer keeps room for a wide decimal even when it is null, to update it in place.
      case (decimal: DecimalType, ordinal) if decimal.precision > Decimal.MAX_LONG_DIGITS =>
        writer.write(ordinal, null: Decimal, decimal.precision, decimal.scale)
      case (_, ordinal) => writer.setNullAt(ordinal)
    }
    writer.getRow.copy()
  }
}
