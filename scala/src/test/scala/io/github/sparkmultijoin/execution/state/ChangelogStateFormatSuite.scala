package io.github.sparkmultijoin.execution.state

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{DataType, DoubleType, IntegerType, LongType, StringType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * Each changelog state format reads back what it wrote: the version (of any sign and length
 * up to the most a format keeps), the rank, the row or its absence, and the batch that stored
 * it; and format 2's value is the smaller.
 */
class ChangelogStateFormatSuite extends AnyFunSuite {

  private val types: Seq[DataType] = Seq(LongType, StringType, IntegerType, DoubleType)
  private val project = UnsafeProjection.create(types.toArray)

  private def row(random: Random): UnsafeRow = project(InternalRow(random.nextLong(),
    if (random.nextInt(4) == 0) null
    else UTF8String.fromString(random.nextString(
      random.nextInt(40))),
    random.nextInt(), random.nextDouble())).copy()

  private def version(random: Random): Array[Long] = Array.fill(1 + random.nextInt(3)) {
    random.nextInt(3) match {
      case 0 => random.nextLong()
      case 1 => random.nextInt(1000).toLong
      case _ => -random.nextInt(1000).toLong
    }
  }

  private def sizeOf(format: ChangelogStateFormat, applied: Applied, batchId: Long): Int =
    UnsafeProjection.create(format.valueSchema)(format.valueRow(applied, batchId)).getSizeInBytes

  test("each format reads back the change, the row and the batch it wrote") {
    val random = new Random(7)
    for (format <- ChangelogStateFormat.all; _ <- 0 until 500) {
      val applied = Applied(version(random), random.nextInt(2),
        if (random.nextBoolean()) Some(row(random)) else None)
      val batchId = if (random.nextBoolean()) random.nextInt(100).toLong else random.nextLong().abs
      val value = UnsafeProjection.create(format.valueSchema)(format.valueRow(applied, batchId))
      val read = format.applied(value, types.length)
      assert(read.version.toSeq == applied.version.toSeq, format)
      assert(read.rank == applied.rank, format)
      assert(read.row == applied.row, format)
      assert(format.currentRow(value, types.length) == applied.row.map(_ -> batchId), format)
    }
  }

  test("format 2 keeps versions of up to 24 elements, and refuses longer ones") {
    val longest = Applied(Array.tabulate(24)(i => Long.MinValue + i), 1, None)
    val value = UnsafeProjection.create(ChangelogStateFormat.Packed.valueSchema)(
      ChangelogStateFormat.Packed.valueRow(longest, Long.MaxValue))
    assert(ChangelogStateFormat.Packed.applied(value, 4).version.toSeq == longest.version.toSeq)
    val error = intercept[IllegalArgumentException] {
      ChangelogStateFormat.Packed.valueRow(longest.copy(version = new Array[Long](25)), 0)
    }
    assert(error.getMessage.contains("A row version has 25 elements"))
  }

  test("format 2's value is smaller than format 1's") {
    val random = new Random(11)
    val applied = Applied(Array(123456789L), 1, Some(row(random)))
    val (fields, packed) = (sizeOf(ChangelogStateFormat.Fields, applied, 42),
      sizeOf(ChangelogStateFormat.Packed, applied, 42))
    assert(packed <= fields - 32, s"format 2: $packed bytes, format 1: $fields")
  }

  test("a recorded format is found by its number, none is format 1, a later one is named") {
    assert(ChangelogStateFormat.recorded(None) == Right(ChangelogStateFormat.Fields))
    assert(ChangelogStateFormat.recorded(Some(2)) == Right(ChangelogStateFormat.Packed))
    assert(ChangelogStateFormat.recorded(Some(3)).left.exists(_.startsWith(
      "changelog state format 3 is not one this version of spark-multijoin knows")))
  }
}
