package io.github.sparkmultijoin.execution

import io.github.sparkmultijoin.MultiJoinSuiteBase

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.expressions.{Cast, Expression, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.types.LongType

/**
 * The tagged inputs land where each input alone, hash-partitioned by its key, would land (the
 * state's partitions, and the checkpoints written with an exchange per input, depend on it), and
 * read back as the input's rows.
 */
class TaggedInputsSuite extends MultiJoinSuiteBase {

  private val numPartitions = 7

  private def planned(frame: DataFrame): SparkPlan = frame.queryExecution.executedPlan

  private def column(plan: SparkPlan, name: String): Expression =
    plan.output.find(_.name == name).get

  /** The partition of each row of `plan`, hash-partitioned by `keys`. */
  private def partitions(plan: SparkPlan, keys: Seq[Expression]): Seq[Int] = {
    val partitionOf = UnsafeProjection.create(
      HashPartitioning(keys, numPartitions).partitionIdExpression :: Nil, plan.output)
    plan.executeCollect().toSeq.map(partitionOf(_).getInt(0))
  }

  /** Per input, its key expressions over `inputs`. */
  private def check(inputs: Seq[SparkPlan], keys: Seq[Seq[Expression]]): Unit = {
    val tagged = TaggedInputs.plan(keys, inputs)
    val alone = inputs.zip(keys).flatMap { case (input, key) => partitions(input, key) }
    val together = partitions(tagged, TaggedInputs.keyColumns(tagged.output, keys.head.length))
    assert(together == alone)
    assert(alone.distinct.length > 1, "the keys should spread over partitions")

    val reader = new TaggedInputs.Reader(keys.head.length, inputs.map(_.output.length))
    val readBack = tagged.executeCollect().toSeq.map { row =>
      val input = reader.input(row)
      input -> reader.row(row, input).toSeq(inputs(input).schema)
    }
    val expected = inputs.zipWithIndex.flatMap { case (input, i) =>
      input.executeCollect().toSeq.map(row => i -> row.toSeq(input.schema))
    }
    assert(readBack == expected)
  }

  test("a row is shuffled to its partition by key, whatever the key's type, and reads back") {
    val ids = spark.range(200).toDF("id")
    val typed = Seq(
      "id" -> "CAST(id AS INT)",
      "name" -> "CONCAT('k', id % 50)",
      "lcase" -> "CAST(CONCAT(IF(id % 2 = 0, 'K', 'k'), id % 30) AS STRING COLLATE UTF8_LCASE)",
      "amount" -> "CAST(id / 3 AS DECIMAL(20, 4))",
      "at" -> "TIMESTAMP_SECONDS(id * 3600)")
    val frames = Seq(
      ids.selectExpr(typed.map { case (name, sql) => s"$sql AS $name" } :+ "id % 3 AS x": _*),
      ids.selectExpr(typed.map { case (name, sql) => s"IF(id % 11 = 0, NULL, $sql) AS $name" } :+
        "CAST(id AS STRING) AS y" :+ "NULL AS z": _*),
      ids.limit(40).selectExpr(
        typed.map { case (name, sql) => s"$sql AS $name" } :+ "id AS wide": _*))
    val inputs = frames.map(planned)
    for ((name, _) <- typed) {
      check(inputs, inputs.map(input => Seq(column(input, name))))
    }
    check(inputs, inputs.map(input => typed.map { case (name, _) => column(input, name) }))
    // An int key that Spark widens to compare it with another input's bigint key.
    check(inputs,
      inputs.map { input =>
        Seq(input.output.find(_.name == "wide").getOrElse(Cast(column(input, "id"), LongType)))
      })
  }
}
