package io.github.sparkmultijoin.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, CreateNamedStruct, Expression, Literal}
import org.apache.spark.sql.execution.{ProjectExec, SparkPlan, UnionExec}

/**
 * The multi-join's inputs as one plan, so that Spark shuffles them in one exchange: one map
 * stage per micro-batch, where an exchange per input costs a stage each (docs/benchmarks.md has
 * what that cost). Each branch of the union tags its input's rows:
 *
 *  - `input`: the input's index (int);
 *  - `key0` .. `keyN`: the input's key expressions, whose types are the same for all inputs;
 *  - `input0` .. `inputM`: a struct column per input, the row whole in its own input's column,
 *    null in the others.
 *
 * The exchange hash-partitions tagged rows by the key columns. Those hold the values the input's
 * key expressions give, with the same types, so a row lands in the partition that partitioning
 * the input alone by its key would give: the state's partitions, and the checkpoints written
 * with an exchange per input, stay valid.
 */
object TaggedInputs {

  private val InputOrdinal = 0

  /** The union of the tagged inputs. */
  def plan(keys: Seq[Seq[Expression]], inputs: Seq[SparkPlan]): SparkPlan = {
    val rowStructs = inputs.map(input =>
      CreateNamedStruct(input.output.zipWithIndex.flatMap {
        case (column, i) => Seq(Literal(s"c$i"), column)
      }))
    UnionExec(inputs.indices.map { input =>
      val tag = Alias(Literal(input), "input")()
      val keyColumns = keys(input).zipWithIndex.map { case (key, i) => Alias(key, s"key$i")() }
      val rows = rowStructs.indices.map { other =>
        val row =
          if (other == input) rowStructs(input) else Literal(null, rowStructs(other).dataType)
        Alias(row, s"input$other")()
      }
      ProjectExec(tag +: keyColumns ++: rows, inputs(input))
    })
  }

  /** The key columns of the tagged rows, whose output is `tagged`. */
  def keyColumns(tagged: Seq[Attribute], numKeys: Int): Seq[Attribute] =
    tagged.slice(InputOrdinal + 1, InputOrdinal + 1 + numKeys)

  /**
   * Reads a tagged row back as its input and the input's row.
   *
   * @param numKeys     how many key columns the tagged rows have
   * @param inputWidths per input, how many columns its rows have
   */
  class Reader(numKeys: Int, inputWidths: Seq[Int]) {

    private val firstRowOrdinal = InputOrdinal + 1 + numKeys

    /** The input the tagged row `tagged` came from. */
    def input(tagged: InternalRow): Int = tagged.getInt(InputOrdinal)

    /**
     * The input's row, read in place: valid until `tagged` is (from a shuffle, until the next
     * row is read).
     */
    def row(tagged: InternalRow, input: Int): InternalRow =
      tagged.getStruct(firstRowOrdinal + input, inputWidths(input))
  }
}
