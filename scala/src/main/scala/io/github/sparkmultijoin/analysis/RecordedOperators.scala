package io.github.sparkmultijoin.analysis

import scala.util.Try

import io.github.sparkmultijoin.logical.MultiJoin
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.execution.streaming.state.{OperatorStateMetadata, OperatorStateMetadataReader, OperatorStateMetadataV2}

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

  /** The multi-joins among a checkpoint's `operators` ([[statefulOperators]]), by id. */
  def multiJoins(operators: Seq[(Long, Option[OperatorStateMetadata])])
      : Seq[(Long, OperatorStateMetadataV2)] =
    operators.collect {
      case (id, Some(metadata: OperatorStateMetadataV2))
          if metadata.operatorInfo.operatorName == MultiJoin.OperatorName => id -> metadata
    }
}
