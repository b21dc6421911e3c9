package io.github.sparkmultijoin.restart

import java.util.UUID

import scala.util.Try

import io.github.sparkmultijoin.logical.MultiJoin
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.execution.streaming.state.{OperatorStateMetadata, OperatorStateMetadataReader, OperatorStateMetadataV2, StateSchemaCompatibilityChecker, StateStoreColFamilySchema, StateStoreId, StateStoreProviderId}
import org.apache.spark.sql.types.StructType

/**
 * The stateful operators a checkpoint recorded, read as Spark reads them on a restart. The
 * planner's restart check compares them with the plan before Spark's own check, and `read_state`
 * finds the multi-join to read among them.
 */
object RecordedOperators {

  /**
   * Every stateful operator of the checkpoint whose state is at `stateLocation`, by id, with its
   * metadata as of `batch` where it can be read.
   */
  def statefulOperators(
      stateLocation: Path,
      batch: Long,
      hadoopConf: Configuration): Seq[(Long, Option[OperatorStateMetadata])] = {
    val fs = stateLocation.getFileSystem(hadoopConf)
    val ids = if (!fs.exists(stateLocation)) Nil
    else {
      fs.listStatus(stateLocation).toSeq.filter(_.isDirectory).map(_.getPath.getName)
        .filter(name => name.nonEmpty && name.forall(_.isDigit)).map(_.toLong).sorted
    }
    ids.map { id =>
      val location = new Path(stateLocation, id.toString)
      def metadata(version: Int) = Try(OperatorStateMetadataReader.createReader(
        location, hadoopConf, version, batch).read()).toOption.flatten
      id -> metadata(2).orElse(metadata(1))
    }
  }

  /**
   * The multi-joins among a checkpoint's `operators` ([[statefulOperators]]), by id: those of
   * append-only inputs, or those named `names`.
   */
  def multiJoins(
      operators: Seq[(Long, Option[OperatorStateMetadata])],
      names: Set[String] = Set(MultiJoin.OperatorName)): Seq[(Long, OperatorStateMetadataV2)] =
    operators.collect {
      case (id, Some(metadata: OperatorStateMetadataV2))
          if names.contains(metadata.operatorInfo.operatorName) => id -> metadata
    }

  /**
   * The schemas of the column families of the operator whose store `storeId` is, by name, from
   * the state schema files its `metadata` names.
   */
  def columnFamilies(
      storeId: StateStoreId,
      metadata: OperatorStateMetadataV2,
      hadoopConf: Configuration): Map[String, StateStoreColFamilySchema] =
    new StateSchemaCompatibilityChecker(StateStoreProviderId(storeId, UUID.randomUUID()),
      hadoopConf, metadata.stateStoreInfo.head.stateSchemaFilePaths.map(new Path(_)))
      .readSchemaFile().map(family => family.colFamilyName -> family).toMap

  /** The family of an input's rows in multi-join state layouts 1 and 2. */
  def layout2RowFamily(input: Int): String = s"input$input"

  /**
   * The inputs' columns as a checkpoint of layout 1 or 2 records them in its schema files, for
   * its families of rows per input: its operator metadata did not record them. None for a
   * checkpoint of another layout.
   */
  def layout2InputSchemas(
      families: Map[String, StateStoreColFamilySchema]): Option[Seq[StructType]] =
    Some(Iterator.from(0).map(layout2RowFamily).map(families.get).takeWhile(_.isDefined)
      .map(_.get.valueSchema).toSeq).filter(_.nonEmpty)
}
