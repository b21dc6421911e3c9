package io.github.sparkmultijoin.execution

import scala.util.Random

import io.github.sparkmultijoin.execution.CompiledJoin.predicate
import io.github.sparkmultijoin.execution.ProbePlan.{forEachInput, forNewRow}
import io.github.sparkmultijoin.execution.ProbePlanSuite.{inputs, rows}
import io.github.sparkmultijoin.model.Conjunct
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Add, And, AttributeReference, BasePredicate, EqualTo, Expression, GenericInternalRow, GreaterThan, JoinedRow, Literal, Not, Remainder, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.types.{ArrayType, BinaryType, DataType, Decimal, DecimalType, IntegerType, LongType, StringType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String

class ProbePlanSuite extends AnyFunSuite {

  test("conjuncts are checked at the first step that binds all their inputs") {
    val attributes = inputs(4)
    val Seq(v0, v1, v2, v3) = attributes.map(_.head)
    val onlyNewRow = GreaterThan(v2, Literal(0))
    val withFirstProbe = EqualTo(v2, v0)
    val withLastProbe = GreaterThan(Add(v1, v3), Literal(3))
    val condition = Seq(onlyNewRow, withFirstProbe, withLastProbe).reduce(And)
    val plan = forEachInput(attributes, Conjunct.all(Some(condition), Seq.fill(4)(None)))(2)
    assert(plan.probeOrder.toSeq == Seq(0, 1, 3))
    assert(plan.checkOnNewRow.contains(onlyNewRow))
    assert(plan.checksAfterProbe.toSeq == Seq(Some(withFirstProbe), None, Some(withLastProbe)))
    // The last check reads the row probed at depth 1; the first, only the new row besides its own.
    assert(plan.checkReadsUpTo.toSeq == Seq(-1, -1, 1))
  }

  test("a padded input is not probed and its ON clause is not checked") {
    val attributes = inputs(3)
    val Seq(v0, v1, v2) = attributes.map(_.head)
    val core = GreaterThan(v1, v0)
    val onClauseOfInput2 = GreaterThan(v2, v0)
    val all = Conjunct.all(Some(core), Seq(None, None, Some(onClauseOfInput2)))
    val padded = forNewRow(attributes, all, newInput = 0, padded = Set(2))
    assert(padded.probeOrder.toSeq == Seq(1))
    assert(padded.checksAfterProbe.toSeq == Seq(Some(core)))
    val unpadded = forNewRow(attributes, all, newInput = 0)
    assert(unpadded.checksAfterProbe.toSeq == Seq(Some(core), Some(onClauseOfInput2)))
    // An ON clause that only reads the anchor still waits for its own input to be bound.
    val anchorOnly = Conjunct.all(None, Seq(None, None, Some(GreaterThan(v0, Literal(3)))))
    assert(forNewRow(attributes, anchorOnly, newInput = 0).checkOnNewRow.isEmpty)
  }

  test("combinations are exactly the filtered cartesian product, in any input position") {
    val random = new Random(42)
    for (trial <- 0 until 80) {
      val n = 2 + random.nextInt(5)
      val attributes = inputs(n)
      val values = attributes.flatten
      // Residual conditions over random pairs of inputs: (va + vb) % 3 != 0.
      val pairs = Seq.fill(1 + random.nextInt(3)) {
        val shuffled = random.shuffle(values.indices.toList)
        (shuffled(0), shuffled(1))
      }
      val condition = pairs.map { case (a, b) =>
        Not(EqualTo(Remainder(Add(values(a), values(b)), Literal(3)), Literal(0)))
      }.reduce[Expression](And)
      val newInput = random.nextInt(n)
      val plan =
        forEachInput(attributes, Conjunct.all(Some(condition), Seq.fill(n)(None)))(newInput)
      val stored = plan.probeOrder.map(_ => Seq.fill(random.nextInt(4))(random.nextInt(10)))
      val newValue = random.nextInt(10)

      val output = values
      val bound = new BoundRows(Seq.fill(n)(Seq(IntegerType)))
      bound.bind(newInput, rows(Seq(newValue)).head)
      val checks = plan.checksAfterProbe.map(predicate(_, output))
      val newRowCheck = predicate(plan.checkOnNewRow, output)
      val produced =
        if (newRowCheck != null && !newRowCheck.eval(bound.row)) Seq.empty
        else {
          val project = UnsafeProjection.create(output, output)
          new Combinations(stored.map(rows), plan.probeOrder, checks, plan.checkedOnceBound, bound,
            () => project(bound.row)).map(row => (0 until n).map(row.getInt)).toList
        }

      val expected = plan.probeOrder.indices.foldLeft(Seq(Map(newInput -> newValue))) {
        (partial, depth) =>
          for (p <- partial; v <- stored(depth)) yield p + (plan.probeOrder(depth) -> v)
      }.map(assignment => (0 until n).map(assignment)).filter { combination =>
        pairs.forall { case (a, b) => (combination(a) + combination(b)) % 3 != 0 }
      }
      assert(produced.sortBy(_.mkString(",")) == expected.sortBy(_.mkString(",")),
        s"trial $trial: n=$n new=$newInput pairs=$pairs stored=$stored")
    }
  }

  test("in a star, each stored row is checked once per new row, not once per combination") {
    // Inputs 1 to 5 each within 1 of input 0 (v0 - 1 <= vi <= v0 + 1), three stored rows each,
    // two of which pass; input 3's pass nothing for the second new row.
    val attributes = inputs(6)
    val Seq(v0, rest @ _*) = attributes.map(_.head)
    val star = rest.map { vi =>
      And(Not(GreaterThan(v0, Add(vi, Literal(1)))), Not(GreaterThan(vi, Add(v0, Literal(1)))))
    }.reduce[Expression](And)
    val plan = forEachInput(attributes, Conjunct.all(Some(star), Seq.fill(6)(None)))(0)
    assert(plan.checkReadsUpTo.toSeq == Seq.fill(5)(-1))
    val evaluations = new java.util.concurrent.atomic.AtomicInteger
    val checks = plan.checksAfterProbe.map(predicate(_, attributes.flatten)).map { check =>
      new BasePredicate {
        override def eval(row: InternalRow): Boolean = {
          evaluations.incrementAndGet()
          check.eval(row)
        }
        override def initialize(partitionIndex: Int): Unit = ()
      }
    }
    def combinations(newValue: Int, stored: Seq[Seq[Int]]): Int = {
      val bound = new BoundRows(Seq.fill(6)(Seq(IntegerType)))
      bound.bind(0, rows(Seq(newValue)).head)
      new Combinations(stored.map(rows).toArray, plan.probeOrder, checks, plan.checkedOnceBound,
        bound, () => ()).size
    }
    assert(combinations(10, Seq.fill(5)(Seq(9, 11, 20))) == 32)
    assert(evaluations.get == 15, "each of the 15 stored rows once, not 3 + 6 + ... + 48")
    evaluations.set(0)
    assert(combinations(10, Seq(Seq(9, 11, 20), Seq(9, 11, 20), Seq(0, 1, 2), Seq(9), Seq(9))) == 0)
    assert(evaluations.get == 9, "inputs 1 to 3 once each, and no combination of 1 and 2 tried")
  }

  test("bound rows read as the inputs' rows joined, and their output row is what a " +
    "projection of them writes, byte for byte") {
    val random = new Random(7)
    val types = Seq[DataType](IntegerType, LongType, StringType, BinaryType, DecimalType(38, 2),
      DecimalType(10, 2), ArrayType(IntegerType),
      new StructType().add("a", IntegerType)
        .add("b", StringType))
    // Widths around a bitset word's 64 columns, so that null bits are shifted across words.
    val schemas = Seq(3, 70, 1, 64, 2).zipWithIndex.map { case (width, i) =>
      StructType(
        (0 until width).map(c => StructField(s"c${i}_$c", types(random.nextInt(types.length)))))
    }
    val output = schemas.flatMap(DataTypeUtils.toAttributes)
    val project = UnsafeProjection.create(output, output)
    val toRows = schemas.map(schema => UnsafeProjection.create(schema))
    def value(dataType: DataType): Any = if (random.nextInt(4) == 0) null
    else dataType match {
      case IntegerType => random.nextInt()
      case LongType => random.nextLong()
      case StringType =>
        UTF8String.fromString(random.alphanumeric.take(random.nextInt(20)).mkString)
      case BinaryType => Array.fill(random.nextInt(12))(random.nextInt(256).toByte)
      case decimal: DecimalType =>
        val digits = math.pow(10, decimal.precision - decimal.scale - 1).toLong
        Decimal(BigDecimal(random.nextLong() % digits, decimal.scale))
      case ArrayType(_, _) => ArrayData.toArrayData(Array.fill(random.nextInt(5))(random.nextInt()))
      case struct: StructType => InternalRow(value(IntegerType), value(StringType))
    }
    def randomRow(input: Int): UnsafeRow =
      toRows(input)(InternalRow.fromSeq(schemas(input).map(field => value(field.dataType)))).copy()
    val bound = new BoundRows(schemas.map(_.map(_.dataType)))
    (1 to 200).foreach { trial =>
      val rows = schemas.indices.map { input =>
        if (random.nextInt(5) == 0) {
          bound.clear(input)
          new GenericInternalRow(schemas(input).length)
        } else {
          val row = randomRow(input)
          bound.bind(input, row)
          row
        }
      }
      val joined = rows.reduceLeft[InternalRow](new JoinedRow(_, _))
      val expected = project(joined).copy()
      assert(project(bound.row) == expected, s"trial $trial")
      assert(bound.outputRow() == expected, s"trial $trial")
      // A copy keeps the values bound now.
      def values(row: InternalRow) = row.toSeq(output.map(_.dataType)).map {
        case bytes: Array[Byte] => bytes.toSeq
        case value => value
      }
      val copied = bound.row.copy()
      schemas.indices.foreach(bound.clear)
      assert(values(copied) == values(joined), s"trial $trial")
    }
  }
}

object ProbePlanSuite {

  // Input i has one int column v<i>.
  def inputs(n: Int): Seq[Seq[AttributeReference]] = (0 until n).map(i =>
    Seq(AttributeReference(s"v$i", IntegerType)()))

  def rows(values: Seq[Int]): Array[UnsafeRow] = {
    val toRow = UnsafeProjection.create(Array[DataType](IntegerType))
    values.map(v => toRow(InternalRow(v)).copy()).toArray
  }
}
