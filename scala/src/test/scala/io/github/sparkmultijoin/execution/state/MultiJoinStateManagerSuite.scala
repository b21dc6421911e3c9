package io.github.sparkmultijoin.execution.state

import java.util.UUID

import scala.collection.mutable
import scala.util.Random

import io.github.sparkmultijoin.MultiJoinSuiteBase
import io.github.sparkmultijoin.execution.EvictionOnArrival
import io.github.sparkmultijoin.execution.state.ColumnFamiliesLayout.{RowsFamily, timeFamily}
import io.github.sparkmultijoin.execution.state.StoredRow.{BatchIdOrdinal, InputOrdinal, RowIndexOrdinal}
import io.github.sparkmultijoin.model.StateLayoutVersion
import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec, StateStore, StateStoreConf, StateStoreId, StateStoreProvider, StateStoreProviderId}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.multijoin.StateStoreShim
import org.apache.spark.sql.types.{IntegerType, LongType, StructType}

/**
 * The state manager against a real RocksDB store with column families, opened as the exec opens
 * a partition's store: batch `b` loads version `b` and commits version `b + 1`.
 *
 * Inputs 0 and 1 are (k, v, t) with an event time t (micros), input 2 is (k, v) without one; k is
 * the join key. Every test gives each row a distinct v, by which rows are told apart.
 */
class MultiJoinStateManagerSuite extends MultiJoinSuiteBase {

  private val keySchema = MultiJoinStateManager.keySchema(Seq(IntegerType))
  private val timedSchema = new StructType().add("k", IntegerType).add("v", IntegerType)
    .add("t", LongType)
  private val untimedSchema = new StructType().add("k", IntegerType).add("v", IntegerType)
  private val inputSchemas = Seq(timedSchema, timedSchema, untimedSchema)
  private val timeOrdinals = Seq(Some(2), Some(2), None)
  private val numInputs = inputSchemas.length
  private val shape = StateShape(keySchema, inputSchemas, timeOrdinals, Seq.fill(3)(false))

  private val keyProjection = UnsafeProjection.create(keySchema)
  private val rowProjections = inputSchemas.map(schema => UnsafeProjection.create(schema))

  private def key(k: Int): UnsafeRow = keyProjection(InternalRow(k)).copy()

  private def row(input: Int, k: Int, v: Int, t: Long): UnsafeRow = {
    val values = if (timeOrdinals(input).isDefined) InternalRow(k, v, t) else InternalRow(k, v)
    rowProjections(input)(values).copy()
  }

  private def append(state: MultiJoinStateManager, input: Int, k: Int, v: Int, t: Long = 0L) =
    state.append(input, key(k), row(input, k, v, t))

  // Sorted: the store returns a key's rows in the order of their encoded row keys, which is not
  // the order they were appended in (memory returns that one).
  private def values(rows: Iterable[UnsafeRow]): Seq[Int] = rows.map(_.getInt(1)).toSeq.sorted

  private def valuesUnder(state: MultiJoinStateManager, input: Int, k: Int): Seq[Int] = {
    val rows = rowsOf(state, input, k).rows
    assert(rows.forall(_.getInt(0) == k), s"input $input: rows of another key under key $k")
    values(rows)
  }

  private def rowsOf(state: MultiJoinStateManager, input: Int, k: Int): KeyRows =
    state.rowsUnder(key(k), everyInput = false)(input)

  /**
   * The values of the rows stored before this batch and of those it added; `rows` must be the
   * earlier rows, then the added ones.
   */
  private def earlierAndAdded(keyRows: KeyRows): (Seq[Int], Seq[Int]) = {
    assert(keyRows.rows.toSeq == (keyRows.earlierRows ++ keyRows.addedRows).toSeq)
    (values(keyRows.earlierRows), values(keyRows.addedRows))
  }

  /**
   * The rows of `input` under `k` as the store holds them, read past the manager from the
   * values of `rows` under the key, once `state` wrote the rows it holds: (batch, row index,
   * row), copied.
   */
  private def storedRows(state: MultiJoinStateManager, store: StateStore, input: Int, k: Int)
      : Seq[(Long, Long, UnsafeRow)] = {
    state.writeAppendedRows()
    store.valuesIterator(key(k), RowsFamily).filter(_.getInt(InputOrdinal) == input).map {
      value =>
        (value.getLong(BatchIdOrdinal), value.getLong(RowIndexOrdinal),
          StoredRow.inputRow(value, inputSchemas(input).length))
    }.toList
  }

  /** Per row value of `input` under `k`, its id as (batch, row index). */
  private def rowPositions(state: MultiJoinStateManager, store: StateStore, input: Int, k: Int)
      : Map[Int, (Long, Long)] = {
    val rows = storedRows(state, store, input, k)
    rows.map { case (batch, index, row) =>
      assert(row.getInt(0) == k, s"a row of another join key under $k")
      row.getInt(1) -> ((batch, index))
    }.toMap.ensuring(_.size == rows.size, "two stored rows with the same value")
  }

  /**
   * Removes the rows of `input` under `k` from the store behind the manager's back, once it wrote
   * the rows it holds; how many.
   */
  private def removeBehindBack(state: MultiJoinStateManager, store: StateStore, input: Int, k: Int)
      : Int = {
    state.writeAppendedRows()
    val (removed, kept) = store.valuesIterator(key(k), RowsFamily).map(_.copy()).toArray
      .partition(_.getInt(InputOrdinal) == input)
    if (kept.isEmpty) store.remove(key(k), RowsFamily)
    else store.putList(key(k), kept, RowsFamily)
    removed.length
  }

  /** The event times in `input`'s time index, in its order. */
  private def timeIndex(store: StateStore, input: Int): Seq[Long] = {
    val scan = store.iterator(timeFamily(input))
    try scan.map(_.key.getLong(0)).toList
    finally scan.close()
  }

  /** Per join key this batch stored rows under, the inputs that added them (a bit mask). */
  private def addedInputs(state: MultiJoinStateManager): Map[Int, Long] =
    state.keysAdded.map { case (k, inputs) => k.getInt(0) -> inputs }.toMap

  // The store's default family, unused as in the exec.
  private val defaultFamily = new StructType().add("unused", "int")

  // Created as Spark creates a partition's provider (its RocksDB provider class is private to
  // Spark), for a run of its own.
  private def withProvider[T](body: StateStoreProvider => T): T = withProviderConf()(body)

  private def withProviderConf[T](settings: (String, String)*)(
      body: StateStoreProvider => T): T = withTempDir { dir =>
    val sqlConf = new SQLConf
    settings.foreach { case (key, value) => sqlConf.setConfString(key, value) }
    sqlConf.setConfString(SQLConf.STATE_STORE_PROVIDER_CLASS.key,
      MultiJoinSuiteBase.RocksDbProvider)
    // A commit then writes a changelog rather than a snapshot of the whole store: much faster.
    sqlConf.setConfString(
      "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
    val provider = StateStoreProvider.createAndInit(
      StateStoreProviderId(StateStoreId(dir.getAbsolutePath, 0, 0), UUID.randomUUID),
      defaultFamily, defaultFamily, NoPrefixKeyStateEncoderSpec(defaultFamily),
      useColumnFamilies = true, new StateStoreConf(sqlConf), new Configuration,
      useMultipleValuesPerKey = false, stateSchemaProvider = None)
    try body(provider)
    finally provider.close()
  }

  /**
   * A partition's provider of Spark's in-memory store, opened as the exec opens it for
   * multi-join state layout 4: one keyspace of that layout's schemas, its rows with their store
   * times or not.
   */
  private def withInMemoryProvider[T](body: StateStoreProvider => T): T =
    withInMemoryProvider(withStoreTimes = false)(body)

  private def withInMemoryProvider[T](withStoreTimes: Boolean)(
      body: StateStoreProvider => T): T = withTempDir { dir =>
    val storeKeySchema = OneValuePerKeyLayout.storeKeySchema(keySchema)
    val hadoopConf = new Configuration
    hadoopConf.set("sql.streaming.runId", UUID.randomUUID.toString) // as a query sets it
    val provider = StateStoreProvider.createAndInit(
      StateStoreProviderId(StateStoreId(dir.getAbsolutePath, 0, 0), UUID.randomUUID),
      storeKeySchema, OneValuePerKeyLayout.storeValueSchema(withStoreTimes),
      NoPrefixKeyStateEncoderSpec(storeKeySchema), useColumnFamilies = false,
      new StateStoreConf(new SQLConf), hadoopConf, useMultipleValuesPerKey = false,
      stateSchemaProvider = None)
    try body(provider)
    finally provider.close()
  }

  /** `body` on a RocksDB store (state layout 3), then on an in-memory one (layout 4). */
  private def withEachLayout(body: StateStoreProvider => Unit): Unit = {
    withProvider(body)
    withInMemoryProvider(body)
  }

  private def isInMemory(store: StateStore): Boolean =
    store.getClass.getName.contains("HDFSBackedStateStore")

  private def manager(store: StateStore, batch: Long, memoryBytes: Long): MultiJoinStateManager =
    new MultiJoinStateManager(store, keySchema, inputSchemas, timeOrdinals, batch, memoryBytes,
      layout = if (isInMemory(store)) StateLayoutVersion.OneValuePerKey
      else StateLayoutVersion.ColumnFamilies)

  /**
   * Runs batch `batch` on the store at that version, giving `body` the manager and the store;
   * what `body` does not commit is aborted.
   */
  private def inBatchWithStore[T](
      provider: StateStoreProvider,
      batch: Long,
      memoryBytes: Long = Long.MaxValue)(body: (MultiJoinStateManager, StateStore) => T): T = {
    val store = provider.getStore(batch)
    val state = manager(store, batch, memoryBytes)
    try body(state, store)
    finally state.abortIfNotCommitted()
  }

  /** Runs batch `batch` like [[inBatchWithStore]], giving `body` only the manager. */
  private def inBatch[T](
      provider: StateStoreProvider,
      batch: Long,
      memoryBytes: Long = Long.MaxValue)(body: MultiJoinStateManager => T): T =
    inBatchWithStore(provider, batch, memoryBytes)((state, _) => body(state))

  test("rows come back per input and per key, only under their key") {
    // Once read back from the store (no memory), once from memory (nothing stored before).
    for (memoryBytes <- Seq(0L, Long.MaxValue)) withProvider { provider =>
      inBatchWithStore(provider, 0, memoryBytes) { (state, store) =>
        // Keys next to each other, a negative one, and 257, whose lowest byte is 1's: a prefix
        // scan must read its key's rows and no others.
        append(state, 0, 1, 10, 100)
        append(state, 0, 2, 20, 200)
        append(state, 1, 2, 21, 210)
        append(state, 0, 1, 11, 110)
        append(state, 2, -1, 30)
        append(state, 0, 257, 12, 120)
        append(state, 0, 0, 13, 130)

        assert(valuesUnder(state, 0, 1) == Seq(10, 11))
        assert(valuesUnder(state, 0, 2) == Seq(20))
        assert(valuesUnder(state, 0, 257) == Seq(12))
        assert(valuesUnder(state, 0, 0) == Seq(13))
        assert(valuesUnder(state, 1, 2) == Seq(21))
        assert(valuesUnder(state, 2, -1) == Seq(30))
        assert(valuesUnder(state, 0, -1).isEmpty)
        assert(valuesUnder(state, 1, 1).isEmpty)
        assert(valuesUnder(state, 2, 3).isEmpty)

        // All rows are this batch's.
        val key1 = rowsOf(state, 0, 1)
        assert(earlierAndAdded(key1) == ((Nil, Seq(10, 11))))
        // The row index counts the partition's rows of all inputs, in the order appended.
        assert(rowPositions(state, store, 0, 1) == Map(10 -> ((0L, 0L)), 11 -> ((0L, 3L))))
        assert(rowPositions(state, store, 1, 2) == Map(21 -> ((0L, 2L))))
        assert(rowPositions(state, store, 2, -1) == Map(30 -> ((0L, 4L))))
        assert(rowPositions(state, store, 0, 257) == Map(12 -> ((0L, 5L))))

        assert(addedInputs(state) == Map(1 -> 0x1L, 2 -> 0x3L, -1 -> 0x4L, 257 -> 0x1L, 0 -> 0x1L))
        assert(state.numStoredRows == 7)
        assert(state.rowCounts == Seq(5L, 1L, 1L))
      }
      // State layout 3: every input's rows in one family, time indexes and counts.
      assert(ColumnFamiliesLayout.familySchemas(shape).keySet == Set("rows", "input0ByTime",
        "input1ByTime", "rowCounts"))
    }
  }

  test("rows of earlier batches are told from this batch's, and row counts are kept") {
    // With Spark's row checksums too, which read a key's values another way.
    for (checksums <- Seq(false, true)) withProviderConf(
      "spark.sql.streaming.stateStore.rowChecksum.enabled" -> checksums.toString) { provider =>
      inBatch(provider, 0) { state =>
        append(state, 0, 1, 10, 100)
        append(state, 0, 1, 11, 110)
        append(state, 0, 2, 20, 200)
        append(state, 2, 1, 30)
        state.commit()
      }
      inBatch(provider, 1) { state =>
        assert(state.rowCounts == Seq(3L, 0L, 1L))
        assert(addedInputs(state).isEmpty)
        append(state, 0, 1, 12, 120)
        append(state, 1, 1, 40, 400) // input 1 had no rows: read from memory
        append(state, 2, 2, 31)

        assert(earlierAndAdded(rowsOf(state, 0, 1)) == ((Seq(10, 11), Seq(12))))
        assert(earlierAndAdded(rowsOf(state, 0, 2)) == ((Seq(20), Nil)))
        assert(earlierAndAdded(rowsOf(state, 1, 1)) == ((Nil, Seq(40))))
        assert(earlierAndAdded(rowsOf(state, 2, 1)) == ((Seq(30), Nil)))
        assert(earlierAndAdded(rowsOf(state, 2, 2)) == ((Nil, Seq(31))))
        assert(addedInputs(state) == Map(1 -> 0x3L, 2 -> 0x4L))
        assert(state.rowCounts == Seq(4L, 1L, 2L))
        assert(state.numStoredRows == 3)
        state.commit()
      }
      inBatch(provider, 2) { state =>
        assert(state.rowCounts == Seq(4L, 1L, 2L))
        assert(earlierAndAdded(rowsOf(state, 0, 1)) == ((Seq(10, 11, 12), Nil)))
        assert(earlierAndAdded(rowsOf(state, 1, 1)) == ((Seq(40), Nil)))
        assert(state.numStoredRows == 0)
      }
    }
  }

  /** A row as the test expects it stored: its value and its key's batch and row index. */
  private case class Expected(value: Int, batch: Long, index: Long)

  /**
   * Appends `count` random rows in batch `batch` to `inputs` under keys 0 to 5, noting them in
   * `expected` (by input and key); after each, checks the rows under a random input and key.
   */
  private def randomAppends(
      state: MultiJoinStateManager,
      batch: Long,
      inputs: Seq[Int],
      count: Int,
      random: Random,
      expected: mutable.Map[(Int, Int), Seq[Expected]],
      store: StateStore): Unit =
    for (index <- 0 until count) {
      val (input, k) = (inputs(random.nextInt(inputs.length)), random.nextInt(6))
      val value = 1000 * batch.toInt + index
      append(state, input, k, value, random.nextInt(100).toLong)
      expected((input, k)) = expected.getOrElse((input, k), Nil) :+ Expected(value, batch, index)
      checkRows(state, batch, random, expected, store)
    }

  /**
   * The rows under a random input and key are exactly those expected, rightly split, and stored
   * under the expected row keys.
   */
  private def checkRows(
      state: MultiJoinStateManager,
      batch: Long,
      random: Random,
      expected: mutable.Map[(Int, Int), Seq[Expected]],
      store: StateStore): Unit = {
    val (input, k) = (random.nextInt(numInputs), random.nextInt(6))
    val rows = expected.getOrElse((input, k), Nil)
    val keyRows = rowsOf(state, input, k)
    val (earlier, added) = rows.partition(_.batch < batch)
    assert(earlierAndAdded(keyRows) == ((earlier.map(_.value).sorted, added.map(_.value).sorted)),
      s"input $input, key $k")
    assert(rowPositions(state, store, input, k) ==
        rows.map(row => row.value -> ((row.batch, row.index))).toMap, s"input $input, key $k")
  }

  test("rows read from memory and from the store are the same") {
    // Input 1, without earlier rows, is read from memory: all along when unbounded, for its first
    // rows with 2000 bytes, never with 0. Inputs 0 and 2 have earlier rows: read from the store.
    for (memoryBytes <- Seq(Long.MaxValue, 2000L, 0L)) withProvider { provider =>
      val random = new Random(7)
      val expected = mutable.Map.empty[(Int, Int), Seq[Expected]]
      inBatchWithStore(provider, 0) { (state, store) =>
        randomAppends(state, 0, Seq(0, 2), 40, random, expected, store)
        assert(state.rowCounts.map(_ > 0) == Seq(true, false, true), "inputs 0 and 2 have rows")
        state.commit()
      }
      inBatchWithStore(provider, 1, memoryBytes) { (state, store) =>
        randomAppends(state, 1, Seq(0, 1, 2), 150, random, expected, store)
        for (input <- 0 until numInputs; k <- 0 until 6) {
          val rows = expected.getOrElse((input, k), Nil)
          assert(valuesUnder(state, input, k) == rows.map(_.value).sorted,
            s"memory $memoryBytes, input $input, key $k")
        }
        val added = expected.toSeq.collect {
          case ((input, k), rows) if rows.exists(_.batch == 1) => k -> (1L << input)
        }.groupMapReduce(_._1)(_._2)(_ | _)
        assert(addedInputs(state) == added)
        val counts = expected.toSeq.groupMapReduce(_._1._1)(_._2.size.toLong)(_ + _)
        assert(state.rowCounts == (0 until numInputs).map(counts.getOrElse(_, 0L)))
      }
    }
  }

  test("an input's rows are read from memory until the memory bound, then from the store") {
    withProvider { provider =>
      val store = provider.getStore(0)
      val state = manager(store, 0, memoryBytes = 2000)
      try {
        append(state, 2, 1, 1)
        // Taken out of the store behind the manager's back: only a read from memory sees it.
        assert(removeBehindBack(state, store, 2, 1) == 1)
        assert(valuesUnder(state, 2, 1) == Seq(1))
        assert(state.numKeyReads == 0, "a read from memory reads nothing from the store")
        // Well past 2000 bytes: the rows are dropped from memory and read from the store.
        (2 to 100).foreach(v => append(state, 2, 1, v))
        assert(valuesUnder(state, 2, 1) == (2 to 100))
        assert(state.numKeyReads == 1, "a read from the store is one point lookup")
        state.commit()
      } finally {
        state.abortIfNotCommitted()
      }
      // An input with earlier rows is read from the store however small this batch is.
      val nextStore = provider.getStore(1)
      val next = manager(nextStore, 1, Long.MaxValue)
      try {
        append(next, 2, 1, 101)
        assert(removeBehindBack(next, nextStore, 2, 1) == 100, "rows 2 to 100, and 101")
        assert(valuesUnder(next, 2, 1).isEmpty)
      } finally {
        next.abortIfNotCommitted()
      }
    }
  }

  test("appended rows are written before the store is read or committed, or past the bound") {
    def rawValues(store: StateStore, k: Int) =
      store.valuesIterator(key(k), RowsFamily).map(_.getInt(InputOrdinal)).toList
    withProvider { provider =>
      inBatchWithStore(provider, 0) { (state, store) =>
        Seq(1, 2, 3).foreach(v => append(state, v % 2, 1, v))
        assert(rawValues(store, 1).isEmpty, "held, to be written with one merge")
        state.commit()
      }
      inBatchWithStore(provider, 1) { (state, store) =>
        assert(earlierAndAdded(rowsOf(state, 1, 1)) == ((Seq(1, 3), Nil)), "written on commit")
        append(state, 1, 1, 4)
        assert(valuesUnder(state, 1, 1) == Seq(1, 3, 4), "written before a read of the store")
        assert(rawValues(store, 1) == List(1, 0, 1, 1))
      }
      inBatchWithStore(provider, 1, memoryBytes = 2000) { (state, store) =>
        (1 to 100).foreach(v => append(state, 0, 2, v))
        assert(rawValues(store, 2).nonEmpty, "written past the memory bound, unread")
      }
    }
  }

  test("eviction in part removes the earliest due rows of each input, in time order") {
    withProvider { provider =>
      val random = new Random(5151)
      val times = Seq.fill(2)(Seq.fill(30)(random.nextInt(100).toLong))
      inBatch(provider, 0) { state =>
        for (input <- 0 to 1; (t, v) <- times(input).zipWithIndex) append(state, input, v % 3, v, t)
        state.commit()
      }
      inBatch(provider, 1) { state =>
        val due = times.map(_.filter(_ <= 60L).sorted)
        var removed = Seq(0L, 0L)
        // Chunks of 4 per input, until a chunk finds none: each takes the earliest still stored.
        while (state.evictAtMost(4, Seq(0 -> 60L, 1 -> 60L)) > 0) {
          val left = (0 to 1).map(i => (0 until 3).flatMap(valuesUnder(state, i, _)).toSet)
          val now = (0 to 1).map(i => (times(i).length - left(i).size).toLong)
          assert((0 to 1).forall(i => now(i) - removed(i) == (due(i).length - removed(i)).min(4)))
          for (i <- 0 to 1) {
            val (stored, gone) = times(i).indices.partition(left(i))
            val latestGone = gone.map(times(i)).maxOption.getOrElse(Long.MinValue)
            assert(stored.map(times(i)).forall(t => t > 60L || t >= latestGone), "earliest first")
          }
          removed = now
        }
        assert(removed == due.map(_.length.toLong), "every due row, and no other")
        val kept = (0 to 1).map(i =>
          (0 until 3).flatMap(valuesUnder(state, i, _)).map(v => times(i)(v)).sorted)
        assert(kept == times.map(_.filter(_ > 60L).sorted))
      }
    }
  }

  test("eviction on arrival removes due rows in chunks as rows arrive, the rest at their end") {
    withProvider { provider =>
      inBatch(provider, 0) { state =>
        (0 until 600).foreach(v => append(state, 0, v % 7, v, v.toLong))
        state.commit()
      }
      inBatch(provider, 1) { state =>
        import EvictionOnArrival.{ChunkEvery, ChunkRows}
        val eviction = new EvictionOnArrival(state, Seq(0 -> 499L))
        val arriving = eviction.whileArriving(Iterator.range(0, 3 * ChunkEvery))
        def stored = (0 until 7).map(valuesUnder(state, 0, _).length).sum
        for (chunk <- 1 to 3) {
          (1 to ChunkEvery).foreach(_ => arriving.next())
          assert(stored == 600 - chunk * ChunkRows, s"after chunk $chunk")
        }
        assert(!arriving.hasNext)
        eviction.remainder() // the last 116 of the 500 due
        assert(state.numEvictedRows == 500 && stored == 100)
        assert((0 until 7).flatMap(valuesUnder(state, 0, _)).min == 500)
      }
    }
  }

  test("eviction removes exactly the rows at or below the bound") {
    withEachLayout { provider =>
      inBatch(provider, 0) { state =>
        // Out of time order, with a tie and a time before 1970: the time index orders them.
        for ((k, v, t) <- Seq((1, 1, 40L), (2, 2, 10L), (1, 3, 30L), (2, 4, -5L), (1, 5, 20L),
            (3, 6, 20L))) {
          append(state, 0, k, v, t)
        }
        append(state, 2, 1, 7)
        state.commit()
      }
      inBatch(provider, 1) { state =>
        assert(state.evict(0 -> 20L) == 4)
        assert(state.numEvictedRows == 4)
        assert(state.rowCounts == Seq(2L, 0L, 1L))
        assert(valuesUnder(state, 0, 1) == Seq(1, 3))
        assert(valuesUnder(state, 0, 2).isEmpty)
        assert(valuesUnder(state, 0, 3).isEmpty)
        assert(state.evict(0 -> 29L) == 0)
        intercept[IllegalArgumentException](state.evict(2 -> Long.MaxValue))
        assert(valuesUnder(state, 2, 1) == Seq(7))

        // Rows of this batch, read from memory until some are evicted.
        append(state, 1, 1, 8, 5)
        append(state, 1, 1, 9, 50)
        assert(state.evict(1 -> 10L) == 1)
        assert(valuesUnder(state, 1, 1) == Seq(9))
        assert(state.numEvictedRows == 5)
        assert(state.rowCounts == Seq(2L, 1L, 1L))
        state.commit()
      }
      inBatch(provider, 2) { state =>
        assert(state.rowCounts == Seq(2L, 1L, 1L))
        assert(valuesUnder(state, 0, 1) == Seq(1, 3))
        assert(state.evict(0 -> Long.MaxValue) == 2)
        assert(state.rowCounts == Seq(0L, 1L, 1L))
        assert(valuesUnder(state, 0, 1).isEmpty)
      }
    }
  }

  test("the in-memory layout keeps a key's rows of every input as one value, and the counts") {
    withInMemoryProvider { provider =>
      inBatch(provider, 0) { state =>
        append(state, 0, 1, 1, 10)
        append(state, 1, 1, 2, 20)
        append(state, 2, 1, 3)
        append(state, 0, 2, 4, 30)
        state.commit()
      }
      inBatchWithStore(provider, 1) { (state, store) =>
        val entries = store.iterator().map(pair => (pair.key.copy(), pair.value.copy())).toList
        // Keys 1 and 2, then a count per input: the slot is -1 for rows, the input for a count.
        assert(entries.map(_._1.getInt(1)).sorted == Seq(-1, -1, 0, 1, 2))
        val rowsUnderKey1 = entries.collectFirst {
          case (key, value) if key.getInt(1) == -1 && key.getInt(0) == 1 => value.getArray(0)
        }.get
        assert(rowsUnderKey1.numElements == 3)
        assert(state.rowCounts == Seq(2L, 1L, 1L))
        assert(valuesUnder(state, 0, 1) == Seq(1) && valuesUnder(state, 1, 1) == Seq(2))
        assert(valuesUnder(state, 2, 1) == Seq(3) && valuesUnder(state, 0, 2) == Seq(4))
      }
    }
  }

  /** A row of a timed input as (k, v, t). */
  private def timedValues(row: UnsafeRow): (Int, Int, Long) =
    (row.getInt(0), row.getInt(1), row.getLong(2))

  test("rows that become final are returned once, across batches, and stay stored") {
    withEachLayout { provider =>
      inBatch(provider, 0) { state =>
        Seq((1, 1, 10L), (1, 2, 20L), (1, 3, 30L), (2, 4, 15L)).foreach { case (k, v, t) =>
          append(state, 0, k, v, t)
        }
        append(state, 1, 1, 6, 5)
        // In the batch that stores them, rows at or below the previous bound are new too.
        assert(state.newlyFinalRows(0, 12, 12).map(timedValues).toSeq == Seq((1, 1, 10L)))
        state.commit()
      }
      inBatchWithStore(provider, 1) { (state, store) =>
        append(state, 0, 1, 5, 18)
        val newlyFinal = state.newlyFinalRows(0, 20, 12)
        append(state, 0, 2, 7, 50)
        assert(valuesUnder(state, 0, 1) == Seq(1, 2, 3, 5), "nothing is removed")
        assert(valuesUnder(state, 1, 1) == Seq(6))
        if (!isInMemory(store)) assert(timeIndex(store, 0) == Seq(10L, 15L, 18L, 20L, 30L, 50L))
        // Checked after those reads and writes: the rows returned must be copies of their own.
        // (1, 1, 10) was final in batch 0; this batch's (1, 5, 18) is new.
        assert(newlyFinal.map(timedValues).sorted.toSeq ==
          Seq((1, 2, 20L), (1, 5, 18L), (2, 4, 15L)))
        assert(state.numEvictedRows == 0 && state.rowCounts == Seq(6L, 1L, 0L))
        state.commit()
      }
      inBatch(provider, 2) { state =>
        assert(state.newlyFinalRows(0, 20, 20).isEmpty, "none is final twice")
        assert(state.newlyFinalRows(0, 40, 20).map(timedValues).toSeq == Seq((1, 3, 30L)))
      }
    }
  }

  test("a retried batch stores its rows once") {
    withProvider { provider =>
      inBatch(provider, 0) { state =>
        append(state, 0, 1, 1, 10)
        append(state, 2, 1, 2)
        state.commit()
      }
      // The first attempt fails before committing.
      inBatch(provider, 1) { state =>
        append(state, 0, 1, 3, 20)
        append(state, 1, 2, 4, 5)
        assert(state.evict(0 -> 10L) == 1)
      }
      // The retry sees the inputs' rows in another order, so its rows get other row keys: rows
      // of the failed attempt left in the store would show twice.
      inBatch(provider, 1) { state =>
        assert(state.rowCounts == Seq(1L, 0L, 1L))
        assert(earlierAndAdded(rowsOf(state, 0, 1)) == ((Seq(1), Nil)))
        assert(valuesUnder(state, 1, 2).isEmpty)
        append(state, 1, 2, 4, 5)
        append(state, 0, 1, 3, 20)
        assert(state.evict(0 -> 10L) == 1)
        state.commit()
      }
      inBatch(provider, 2) { state =>
        assert(state.rowCounts == Seq(1L, 1L, 1L))
        assert(valuesUnder(state, 0, 1) == Seq(3))
        assert(valuesUnder(state, 1, 2) == Seq(4))
        assert(valuesUnder(state, 2, 1) == Seq(2))
        assert(state.evict(0 -> 10L) == 0)
      }
    }
  }

  /**
   * Stores `rows` of `input` as state layout 2 did: a family of the input's own, keyed by the
   * join key, batch and row index, and an entry in the input's time index.
   */
  private def storeAsLayout2(store: StateStore, input: Int, rows: Seq[(Int, Int, Long, Long)])
      : Unit = {
    val idSchema = StoredRow.idSchema(keySchema)
    store.createColFamilyIfAbsent(Layout2Migration.rowFamily(input), idSchema,
      inputSchemas(input), PrefixKeyScanStateEncoderSpec(idSchema, 1))
    val timeIndex = ColumnFamiliesLayout.familySchemas(shape)(timeFamily(input))
    store.createColFamilyIfAbsent(timeIndex.colFamilyName, timeIndex.keySchema,
      timeIndex.valueSchema, timeIndex.keyStateEncoderSpec.get)
    val idProjection = UnsafeProjection.create(idSchema)
    val timeKeyProjection = UnsafeProjection.create(timeIndex.keySchema)
    val present = UnsafeProjection.create(timeIndex.valueSchema)(InternalRow(true)).copy()
    for ((k, v, t, index) <- rows) {
      store.put(idProjection(InternalRow(k, 0L, index)), row(input, k, v, t),
        Layout2Migration.rowFamily(input))
      store.put(timeKeyProjection(InternalRow(t, k, 0L, index)), present, timeIndex.colFamilyName)
    }
  }

  test("a store of state layout 2 has its rows moved into one family, indexes kept") {
    withProvider { provider =>
      val store = provider.getStore(0)
      storeAsLayout2(store, 0, Seq((1, 1, 10L, 0L), (2, 2, 20L, 1L), (1, 3, 30L, 3L)))
      storeAsLayout2(store, 1, Seq((1, 4, 15L, 2L)))
      val counts = ColumnFamiliesLayout.familySchemas(shape)(ColumnFamiliesLayout.RowCountsFamily)
      store.createColFamilyIfAbsent(counts.colFamilyName, counts.keySchema, counts.valueSchema,
        counts.keyStateEncoderSpec.get)
      Seq(3L, 1L, 0L).zipWithIndex.foreach { case (count, input) =>
        store.put(UnsafeProjection.create(counts.keySchema)(InternalRow(input)).copy(),
          UnsafeProjection.create(counts.valueSchema)(InternalRow(count)), counts.colFamilyName)
      }
      store.commit()

      inBatchWithStore(provider, 1) { (state, store) =>
        assert(!inputSchemas.indices.map(Layout2Migration.rowFamily)
            .exists(StateStoreShim.hasColumnFamily(store, _)), "the layout 2 families are dropped")
        assert(state.rowCounts == Seq(3L, 1L, 0L))
        assert(rowPositions(state, store, 0, 1) == Map(1 -> ((0L, 0L)), 3 -> ((0L, 3L))))
        assert(earlierAndAdded(rowsOf(state, 1, 1)) == ((Seq(4), Nil)))
        append(state, 2, 1, 5)
        // Both inputs' rows under key 1 go in one eviction, by the time indexes layout 2 wrote.
        assert(state.evict(0 -> 10L, 1 -> 15L) == 2)
        assert(valuesUnder(state, 0, 1) == Seq(3))
        assert(valuesUnder(state, 1, 1).isEmpty)
        assert(valuesUnder(state, 2, 1) == Seq(5))
        assert(valuesUnder(state, 0, 2) == Seq(2))
        state.commit()
      }
      inBatch(provider, 2) { state =>
        assert(state.rowCounts == Seq(2L, 0L, 1L))
        assert(valuesUnder(state, 0, 1) == Seq(3))
        assert(state.evict(0 -> 30L) == 2)
        assert(valuesUnder(state, 0, 1).isEmpty && valuesUnder(state, 0, 2).isEmpty)
      }
    }
  }

  test("a state TTL removes its inputs' rows stored before their bounds, and their index entries") {
    // Inputs 0 and 2 have a TTL, input 1 none.
    def test(provider: StateStoreProvider): Unit = {
      def ttlManager(store: StateStore, batch: Long, storedAtMs: Long) = new MultiJoinStateManager(
        store, keySchema, inputSchemas, timeOrdinals, batch, Long.MaxValue, Some(storedAtMs),
        if (isInMemory(store)) StateLayoutVersion.OneValuePerKey
        else StateLayoutVersion.ColumnFamilies,
        storeTimesOf = Set(0, 2))
      val first = provider.getStore(0)
      val batch0 = ttlManager(first, 0, storedAtMs = 1000)
      append(batch0, 0, 1, 1, 10)
      append(batch0, 0, 2, 5, 15)
      append(batch0, 2, 1, 2)
      append(batch0, 1, 2, 3, 20)
      assert(batch0.earliestStoreTimes == Map(0 -> 1000L, 2 -> 1000L))
      batch0.commit()
      val second = provider.getStore(1)
      val batch1 = ttlManager(second, 1, storedAtMs = 5000)
      try {
        append(batch1, 0, 1, 4, 30)
        // Row 1 is evicted by its event time first: it leaves its store-time entry.
        assert(batch1.evict(0 -> 12L) == 1)
        assert(batch1.expire(0 -> 999L, 2 -> 999L) == 0)
        assert(batch1.earliestStoreTimes == Map(0 -> 1000L, 2 -> 1000L), "rows 5 and 2")
        assert(batch1.expire(0 -> 1000L, 2 -> 1000L) == 2, "rows 5 and 2, not 1 again")
        assert(batch1.rowCounts == Seq(1L, 1L, 0L), "input 1, without a TTL, keeps row 3")
        assert(valuesUnder(batch1, 0, 1) == Seq(4) && valuesUnder(batch1, 2, 1).isEmpty)
        if (!isInMemory(second)) {
          assert(timeIndex(second, 0) == Seq(30L), "rows 1 and 5 left input 0's time index")
        }
        assert(batch1.expire(0 -> 4999L, 2 -> 4999L) == 0)
        assert(batch1.earliestStoreTimes == Map(0 -> 5000L))
        assert(intercept[IllegalArgumentException](batch1.expire(1 -> 5000L)).getMessage
          .contains("input 1 keeps no store times"))
        batch1.commit()
      } finally {
        batch1.abortIfNotCommitted()
      }
      // The next batch reads the rows kept, with their store times, back from the store.
      val third = provider.getStore(2)
      val batch2 = ttlManager(third, 2, storedAtMs = 9000)
      try {
        assert(batch2.expire(0 -> 4999L, 2 -> 4999L) == 0)
        assert(batch2.earliestStoreTimes == Map(0 -> 5000L))
        assert(batch2.expire(0 -> 5000L, 2 -> 5000L) == 1, "row 4, stored at 5000")
        assert(batch2.rowCounts == Seq(0L, 1L, 0L) && valuesUnder(batch2, 0, 1).isEmpty)
        assert(batch2.earliestStoreTimes.isEmpty)
      } finally {
        batch2.abortIfNotCommitted()
      }
    }
    withProvider(test)
    withInMemoryProvider(withStoreTimes = true)(test)
  }
}
