package io.github.sparkmultijoin.execution

import io.github.sparkmultijoin.execution.state.MultiJoinStateManager

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.metric.SQLMetric

/**
 * The delta join of one partition's micro-batch. All new rows are stored first (a late row, one
 * with a null key and one that fails a conjunct of its own input alone are not); then, per key
 * they were stored under, each input's rows under it are read once, and every combination with
 * at least one new row is emitted exactly once: a new row of input i joins all rows of the
 * inputs before i and the earlier rows of the inputs after it. This is the N-way delta join
 * `dA join B join C + A' join dB join C + A' join B' join dC`, where primes are states updated
 * by this batch. A key's rows of all inputs are read at once ([[MultiJoinStateManager.rowsUnder]]);
 * a key under which an input has none is dropped.
 *
 * In Spark's real-time mode a partition's input does not end until its long batch does, so
 * nothing can wait for it: there each row is joined as it arrives ([[joinOnArrival]]), with
 * every row stored before it, this batch's included, and then stored. A combination then comes
 * out once, when the last of its rows arrives. Only inner joins run so: an outer input's padding
 * waits on rows still to come, and Spark refuses outer stream-stream joins in that mode.
 *
 * @param join        the compiled conditions and projections
 * @param state       the partition's state
 * @param padder      null-pads a deciding row with a null key, where one comes out at once
 * @param lateAtOrBelowMicros rows with an event time at or below it are late (the previous
 *                    batch's watermark), None before there is one
 * @param timeOrdinals per input, the ordinal of its event time in its rows
 * @param numLateRows counts the late rows dropped
 */
class DeltaJoiner(
    join: CompiledJoin,
    state: MultiJoinStateManager,
    padder: OuterJoinPadder,
    lateAtOrBelowMicros: Option[Long],
    timeOrdinals: Seq[Option[Int]],
    numLateRows: SQLMetric) {

  /**
   * What the batch's new rows join: all are stored before any is joined, so that each key's
   * stored rows are read once per batch, not once per new row.
   */
  def joinAsBatch(reader: TaggedInputs.Reader, tagged: Iterator[InternalRow])
      : Iterator[InternalRow] =
    tagged.flatMap { row =>
      val input = reader.input(row)
      store(input, reader.row(row, input))
    } ++ joinAddedKeys()

  /** What each new row joins as it arrives (real-time mode; inner joins only). */
  def joinOnArrival(
      reader: TaggedInputs.Reader,
      tagged: Iterator[InternalRow]): Iterator[InternalRow] = {
    require(join.tree.outerInputs.isEmpty, "only inner multi-joins join rows as they arrive")
    tagged.flatMap { row =>
      val input = reader.input(row)
      arrive(input, reader.row(row, input))
    }
  }

  private def arrive(input: Int, row: InternalRow): Iterator[InternalRow] =
    unlessLate(input, row) { (key, unsafeRow) =>
      join.bindOnly(input, unsafeRow)
      if (key.anyNull || !join.passes(join.deltaPlans(input).onNewRow)) {
        Iterator.empty
      } else {
        // Stored first: the key's rows are then read with this input's included, so that an
        // input with none under the key in memory does not stand for all of them.
        state.append(input, key, unsafeRow)
        val rowsOf = state.rowsUnder(key, everyInput = true)
        join.bindOnly(input, unsafeRow)
        join.combinations(join.deltaPlans(input), rowsOf(_).rows)(() => join.bound.outputRow())
      }
    }

  /** Stores a new row, unless it is late or can join nothing; what it emits at once. */
  private def store(input: Int, row: InternalRow): Iterator[InternalRow] =
    unlessLate(input, row) { (key, unsafeRow) =>
      if (key.anyNull) {
        padder.padWithoutKey(input, unsafeRow)
      } else {
        join.bindOnly(input, unsafeRow)
        // A FULL OUTER input's row that fails its own ON clause still comes out, padded.
        if (join.passes(join.deltaPlans(input).onNewRow) || join.tree.isFullOuter(input)) {
          state.append(input, key, unsafeRow)
        }
        Iterator.empty
      }
    }

  /** What `onTime` makes of the row's key and the row as kept, unless the row is late. */
  private def unlessLate(input: Int, row: InternalRow)(
      onTime: (UnsafeRow, UnsafeRow) => Iterator[InternalRow]): Iterator[InternalRow] =
    if (isLate(input, row)) {
      numLateRows += 1
      Iterator.empty
    } else {
      onTime(join.keyProjections(input)(row), join.toUnsafe(input, row))
    }

  private def isLate(input: Int, row: InternalRow): Boolean = timeOrdinals(input).exists {
    ordinal =>
      lateAtOrBelowMicros.exists(watermark =>
        !row.isNullAt(ordinal) && row.getLong(ordinal) <= watermark)
  }

  /** The combinations with a row of this batch, over every key this batch stored rows under. */
  private def joinAddedKeys(): Iterator[InternalRow] =
    state.keysAdded.flatMap { case (key, addedInputs) => joinKey(key, addedInputs) }

  private def joinKey(key: UnsafeRow, addedInputs: Long): Iterator[InternalRow] = {
    val rowsOf = state.rowsUnder(key, everyInput = true)
    if (rowsOf.exists(_.rows.isEmpty)) {
      Iterator.empty
    } else {
      join.inputs.indices.iterator.filter(inMask(addedInputs, _)).flatMap { input =>
        rowsOf(input).addedRows.iterator.flatMap { row =>
          join.bindOnly(input, row)
          join.combinations(join.deltaPlans(input),
            probed =>
              if (probed < input) rowsOf(probed).rows else rowsOf(probed).earlierRows
          )(() => join.bound.outputRow())
        }
      }
    }
  }

  private def inMask(mask: Long, input: Int): Boolean = (mask & (1L << input)) != 0
}
