package io.github.sparkmultijoin.restart

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.internal.Logging
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.{OperatorInfoV1, OperatorStateMetadata, OperatorStateMetadataReader, OperatorStateMetadataV2, StateStoreId, StateStoreMetadataV2}

/**
 * A stateful operator's metadata in its checkpoint: what the operator writes there, and the
 * checks of a restart against what an earlier run wrote ([[OperatorProperties]]).
 *
 * Why the operator checks before Spark does: Spark checks the state schema before it compares
 * the operator metadata, and an operator whose inputs changed would fail the schema check with
 * an error that names neither the input nor the setting that changed.
 *
 * @param info        the operator's state info in the micro-batch
 * @param shortName   its name in the metadata (Spark's `shortName`)
 * @param description the operator as errors name it
 */
class OperatorMetadataFile(
    info: StatefulOperatorStateInfo,
    shortName: String,
    description: String) extends Logging {

  /** What the operator writes for a micro-batch, with the state schema files Spark wrote. */
  def metadata(properties: OperatorProperties, stateSchemaPaths: List[List[String]])
      : OperatorStateMetadataV2 = {
    val store = StateStoreMetadataV2(StateStoreId.DEFAULT_STORE_NAME, 0, info.numPartitions,
      stateSchemaPaths.headOption.getOrElse(Nil))
    OperatorStateMetadataV2(OperatorInfoV1(info.operatorId, shortName), Array(store),
      properties.json)
  }

  /** The properties JSON the checkpoint recorded for the batch before `batchId`, if any. */
  def previousJson(hadoopConf: Configuration, batchId: Long): Option[String] =
    previous(hadoopConf, batchId).collect {
      case previous: OperatorStateMetadataV2 => previous.operatorPropertiesJson
    }

  /**
   * Before micro-batch `batchId` of a restart writes its state schema, fails where the state the
   * checkpoint recorded for the batch before cannot serve an operator of `current` properties.
   */
  def checkRestart(hadoopConf: Configuration, batchId: Long, current: OperatorProperties): Unit =
    previous(hadoopConf, batchId).foreach {
      case previous: OperatorStateMetadataV2 =>
        recordedProperties(previous, hadoopConf, current).checkRestart(current, description)
      case _ =>
    }

  /** Spark's metadata check: fails where `previous` cannot serve the operator of `current`. */
  def checkNewMetadata(previous: OperatorStateMetadata, current: OperatorStateMetadata): Unit =
    (previous, current) match {
      case (previous: OperatorStateMetadataV2, current: OperatorStateMetadataV2) =>
        OperatorProperties.fromJson(previous.operatorPropertiesJson).checkRestart(
          OperatorProperties.fromJson(current.operatorPropertiesJson), description)
      case _ =>
    }

  /**
   * What the checkpoint's operator metadata records; where it predates recording the inputs'
   * columns, those columns as its state schema files give them for the families of rows per
   * input (multi-join state layouts 1 and 2). Later layouts keep rows as bytes, so Spark's schema
   * check no longer compares an input's columns with the stored rows': without this, a restart
   * of such a checkpoint with other columns would read its rows wrongly.
   */
  private def recordedProperties(
      previous: OperatorStateMetadataV2,
      hadoopConf: Configuration,
      current: OperatorProperties): OperatorProperties = {
    val recorded = OperatorProperties.fromJson(previous.operatorPropertiesJson)
    if (recorded.inputSchemas.isDefined || current.layoutVersion.isEmpty) {
      recorded
    } else {
      val families = RecordedOperators.columnFamilies(
        StateStoreId(info.checkpointLocation, info.operatorId, 0), previous, hadoopConf)
      recorded.copy(inputSchemas = RecordedOperators.layout2InputSchemas(families))
    }
  }

  /**
   * The operator metadata the checkpoint has for the batch before `batchId`, read as Spark reads
   * it on a restart (IncrementalExecution's StateSchemaAndOperatorMetadataRule): None for a new
   * query, or where it cannot be read (no committed batch, or written by an earlier version).
   */
  private def previous(hadoopConf: Configuration, batchId: Long): Option[OperatorStateMetadata] =
    if (batchId == 0) None
    else {
      try {
        OperatorStateMetadataReader.createReader(
          new Path(info.checkpointLocation, info.operatorId.toString), hadoopConf,
          OperatorMetadataFile.Version,
          batchId - 1).read()
      } catch {
        case NonFatal(e) =>
          logWarning(s"Could not read the operator metadata of $description before batch " +
            s"$batchId, so its changes are not checked: ${e.getMessage}")
          None
      }
    }
}

object OperatorMetadataFile {

  /** The version of Spark's operator metadata the operators write. */
  val Version: Int = 2
}
