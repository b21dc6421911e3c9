package io.github.sparkmultijoin.execution.state

import java.util.UUID

import io.github.sparkmultijoin.logical.{ChangelogJoin, MultiJoin}
import io.github.sparkmultijoin.restart.{OperatorProperties, RecordedOperators}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.TaskContext
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow, UnsafeProjection}
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, NoPrefixKeyStateEncoderSpec, StateStore, OperatorStateMetadataV2, StateSchemaCompatibilityChecker, StateStoreColFamilySchema, StateStoreConf, StateStoreId, StateStoreProvider, StateStoreProviderId}
import org.apache.spark.sql.multijoin.{CatalystShim, CheckpointShim, StateStoreShim}
import org.apache.spark.sql.types.{IntegerType, LongType, StructType}
import org.apache.spark.util.SerializableConfiguration

/**
 * Reads the rows one input of a multi-join has in a checkpoint's state, offline: from the
 * checkpoint of a stopped query, without its plan, as a DataFrame of the input's columns plus
 * `batch_id` (the micro-batch that stored the row) and `partition_id` (its state partition).
 *
 * Why not Spark's `statestore` source: in Spark 4.3 it reads one column family of an operator
 * only for its own operators. Its `stateVarName` option is refused unless the operator is a
 * transformWithState or a stream-stream join, and without it the source reads the `default`
 * family, which a multi-join leaves empty (and does not list in its schema file, hence
 * STDS_FAILED_TO_READ_STATE_SCHEMA "head of empty list"). Our operator cannot take one of
 * Spark's names without Spark then reading its properties as that operator's. So this reader
 * opens the stores itself, as Spark's StatePartitionReader does for column families: one task
 * per state partition loads the store at the batch's version, opened as the checkpoint's
 * multi-join state layout says with the schemas its schema files record, reads the input's rows
 * as the layout keeps them ([[MultiJoinStateLayout.readRows]]), and aborts (nothing is written).
 * The input's columns and the layout come from the operator metadata's properties
 * ([[OperatorProperties]]).
 */
object MultiJoinStateReader {

  val BatchIdColumn = "batch_id"
  val PartitionIdColumn = "partition_id"

  /**
   * The rows of `input` (its position in the multi-join) stored after micro-batch `batchId`
   * (default: the last committed one) by multi-join `operatorId` (default: the checkpoint's only
   * multi-join).
   */
  def read(
      session: SparkSession,
      checkpointLocation: String,
      input: Int,
      batchId: Option[Long],
      operatorId: Option[Long]): DataFrame = {
    val hadoopConf = CheckpointShim.newHadoopConf(session)
    val checkpoint = qualified(new Path(checkpointLocation), hadoopConf)
    val batch = committedBatch(session, checkpoint, batchId)
    val operator = multiJoin(checkpoint, batch, operatorId, hadoopConf)
    val schema = operator.outputSchema(input)
    val source = operator.source(operator.families(hadoopConf))
    val storeConf =
      new StateStoreConf(CheckpointShim.sessionConfOfBatch(session, checkpoint, batch))
    val serializedConf = new SerializableConfiguration(hadoopConf)
    val stateLocation = new Path(checkpoint, "state").toString
    val id = operator.id // the tasks need only the id
    // Under state store checkpoint format v2 a version's files are named by the checkpoint id
    // the commit log records for it.
    val checkpointIds = CheckpointShim.stateCheckpointIds(session, checkpoint, batch)
      .flatMap(_.get(id))
    val partitions = 0 until operator.numPartitions
    // Loading a RocksDB store can report to the session's state store coordinator (Spark 4.1's
    // does, and fails without one), which a session gets once it runs a streaming query.
    StateStoreShim.stateStoreCoordinator(session)
    val rows = session.sparkContext.parallelize(partitions, partitions.length).mapPartitions {
      _.flatMap { partition =>
        val storeId = StateStoreId(stateLocation, id, partition)
        readPartition(storeId, batch, checkpointIds.map(_(partition).head), input, source,
          schema, storeConf, serializedConf.value)
      }
    }
    CatalystShim.dataFrame(session, rows, schema)
  }

  /** [[read]] for Python: a negative `batchId` or `operatorId` means its default. */
  def readForPython(
      session: SparkSession,
      checkpointLocation: String,
      input: Int,
      batchId: Long,
      operatorId: Long): DataFrame =
    read(session, checkpointLocation, input, Some(batchId).filter(_ >= 0),
      Some(operatorId).filter(_ >= 0))

  private def qualified(path: Path, hadoopConf: Configuration): Path =
    path.getFileSystem(hadoopConf).makeQualified(path)

  /** `batchId`, or the last committed batch, checked against the commit log. */
  private def committedBatch(session: SparkSession, checkpoint: Path, batchId: Option[Long])
      : Long = {
    val last = CheckpointShim.lastCommittedBatch(session, checkpoint).getOrElse(
      throw new IllegalArgumentException(s"The checkpoint $checkpoint has no committed " +
        "micro-batch, so no state to read: run its query until a micro-batch completes."))
    batchId.foreach { batch =>
      require(batch >= 0 && batch <= last,
        s"Micro-batch $batch of the checkpoint $checkpoint is " +
          s"not committed: choose a batch from 0 to $last, the last committed one.")
    }
    batchId.getOrElse(last)
  }

  /**
   * The multi-join `operatorId`, or the only one, of the checkpoint as of `batch`; fails naming
   * the operators there are where that is not one multi-join.
   */
  private def multiJoin(
      checkpoint: Path,
      batch: Long,
      operatorId: Option[Long],
      hadoopConf: Configuration): MultiJoinOperator = {
    val operators =
      RecordedOperators.statefulOperators(new Path(checkpoint, "state"), batch, hadoopConf)
    val multiJoins = RecordedOperators.multiJoins(operators,
      Set(MultiJoin.OperatorName, ChangelogJoin.OperatorName))
    def found = if (operators.isEmpty) "it has no stateful operator"
    else "its stateful " +
      "operators are " + operators.map { case (id, metadata) =>
        s"$id (${metadata.map(_.operatorInfo.operatorName).getOrElse("unknown")})"
      }.mkString(", ")
    val chosen = operatorId match {
      case Some(id) => multiJoins.find(_._1 == id).getOrElse(throw new IllegalArgumentException(
          s"The checkpoint $checkpoint has no multi-join with operator id $id: $found."))
      case None if multiJoins.length == 1 => multiJoins.head
      case None if multiJoins.isEmpty =>
        throw new IllegalArgumentException(
          s"The checkpoint $checkpoint has no multi-join as of micro-batch $batch: $found.")
      case None => throw new IllegalArgumentException(s"The checkpoint $checkpoint has " +
          s"${multiJoins.length} multi-joins, operators ${multiJoins.map(_._1).mkString(", ")}: " +
          "choose one by its operator id.")
    }
    MultiJoinOperator(checkpoint, chosen._1, chosen._2)
  }

  /**
   * Opens the store of `storeId` at `batch`'s version (the checkpoint `checkpointId` names,
   * under format v2) as `opened` says, and reads `input`'s rows as `layout` keeps them, in the
   * `families` the checkpoint records.
   */
  private def readPartition(
      storeId: StateStoreId,
      batch: Long,
      checkpointId: Option[String],
      input: Int,
      source: StateSource,
      schema: StructType,
      storeConf: StateStoreConf,
      hadoopConf: Configuration): Iterator[InternalRow] = {
    val opened = source.opened
    val provider = StateStoreProvider.createAndInit(
      StateStoreProviderId(storeId, UUID.randomUUID()), opened.keySchema, opened.valueSchema,
      source.encoderSpec, useColumnFamilies = opened.useColumnFamilies,
      storeConf,
      hadoopConf, useMultipleValuesPerKey = false, stateSchemaProvider = None)
    // State store version v holds the state after micro-batch v - 1.
    val store = provider.getStore(batch + 1, checkpointId)
    TaskContext.get().addTaskCompletionListener[Unit] { _ =>
      store.abort()
      provider.close()
    }
    val extra = new GenericInternalRow(Array[Any](0L, storeId.partitionId))
    val joined = new JoinedRow
    val project = UnsafeProjection.create(schema)
    source.rows(store, input, numFields = schema.length - 2).map {
      case (row, rowBatchId) =>
        extra.setLong(0, rowBatchId)
        project(joined(row, extra))
    }
  }

  /** A multi-join as the checkpoint's metadata describes it. */
  private case class MultiJoinOperator(
      checkpoint: Path,
      id: Long,
      metadata: OperatorStateMetadataV2) {

    private def describe = s"The multi-join (operator $id) of the checkpoint $checkpoint"

    private val store = metadata.stateStoreInfo.head

    def numPartitions: Int = store.numPartitions

    private val properties = OperatorProperties.fromJson(metadata.operatorPropertiesJson)

    private val changelog = metadata.operatorInfo.operatorName == ChangelogJoin.OperatorName

    /** How its state is read: as its multi-join state layout, as it recorded it. */
    def source(families: Map[String, StateStoreColFamilySchema]): StateSource =
      if (changelog) ChangelogSource(families(StateStore.DEFAULT_COL_FAMILY_NAME),
        ChangelogStateFormat.recorded(properties.changelogStateFormat).fold(
          unknown => throw new IllegalArgumentException(s"$describe cannot be read: $unknown."),
          identity))
      else MultiJoinStateLayout.recorded(properties.layoutVersion).fold(
        unknown => throw new IllegalArgumentException(s"$describe cannot be read: $unknown."),
        LayoutSource(_, families))

    private val inputSchemas: Seq[StructType] = if (changelog) {
      properties.changelogInputs.getOrElse(Nil).map(input => StructType.fromDDL(input("columns")))
    } else {
      properties.inputSchemas.getOrElse(
        throw new IllegalArgumentException(s"$describe was written by an earlier version of " +
          "spark-multijoin, which did not record its inputs' columns in the operator metadata: " +
          "run one micro-batch of the query with this version, then read its state."))
    }

    private def checkInput(input: Int): Unit =
      require(inputSchemas.indices.contains(input),
        s"$describe has ${inputSchemas.length} " +
          s"inputs, 0 to ${inputSchemas.length - 1}; there is no input $input.")

    /** The input's columns, then the batch that stored the row and its state partition. */
    def outputSchema(input: Int): StructType = {
      checkInput(input)
      inputSchemas(input)
        .add(BatchIdColumn, LongType, nullable = false)
        .add(PartitionIdColumn, IntegerType, nullable = false)
    }

    /** The schemas of the operator's column families, by name, from the state schema files. */
    def families(hadoopConf: Configuration): Map[String, StateStoreColFamilySchema] =
      RecordedOperators.columnFamilies(StateStoreId(new Path(checkpoint, "state").toString, id, 0),
        metadata,
        hadoopConf)
  }

  /** How a recorded operator's store is opened, and an input's rows read from it. */
  private sealed trait StateSource extends Serializable {
    def opened: StoreSchemas
    def encoderSpec: KeyStateEncoderSpec
    def rows(store: StateStore, input: Int, numFields: Int): Iterator[(InternalRow, Long)]
  }

  private case class LayoutSource(
      layout: MultiJoinStateLayout,
      families: Map[String, StateStoreColFamilySchema]) extends StateSource {
    def opened: StoreSchemas = layout.storeSchemas(families)
    def encoderSpec: KeyStateEncoderSpec = NoPrefixKeyStateEncoderSpec(opened.keySchema)
    def rows(store: StateStore, input: Int, numFields: Int): Iterator[(InternalRow, Long)] =
      layout.readRows(store, families, input, numFields)
  }

  /** A changelog join's state ([[CurrentRowsState]]): its current rows, not its deleted ones. */
  private case class ChangelogSource(
      family: StateStoreColFamilySchema,
      format: ChangelogStateFormat) extends StateSource {
    def opened: StoreSchemas =
      StoreSchemas(family.keySchema, family.valueSchema, useColumnFamilies = false)
    def encoderSpec: KeyStateEncoderSpec = family.keyStateEncoderSpec.get
    def rows(store: StateStore, input: Int, numFields: Int): Iterator[(InternalRow, Long)] =
      CurrentRowsState.rows(store, format, family.keySchema.length - 2, input, numFields)
  }
}
