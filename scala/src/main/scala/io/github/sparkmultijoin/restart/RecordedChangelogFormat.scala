package io.github.sparkmultijoin.restart

import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo

/**
 * The state format each changelog operator of a running query keeps its state in, read from its
 * checkpoint once per run of the query and kept for the run's later micro-batches, as Spark
 * reads its join's state format from the offset log once, when a query starts.
 */
object RecordedChangelogFormat {

  // (run id, operator id): the number recorded, None where the checkpoint recorded none.
  private val byRun = new ConcurrentHashMap[(UUID, Long), Option[Int]]()

  /**
   * The number of the format operator `info` keeps its state in: `forNewQuery` on a new query;
   * on a restart, what the checkpoint's operator metadata recorded (None where it recorded
   * none: its state is in the first format). The same for every micro-batch of a run. Fails
   * where the metadata cannot be read: read in another format than it was written in, the
   * state would be read wrongly.
   */
  def of(info: StatefulOperatorStateInfo, description: String, hadoopConf: => Configuration,
      forNewQuery: Int): Option[Int] =
    byRun.computeIfAbsent((info.queryRunId, info.operatorId),
      _ =>
        if (info.storeVersion == 0) Some(forNewQuery)
        else {
          val json = new OperatorMetadataFile(info, "", description)
            .previousJson(hadoopConf, info.storeVersion)
            .getOrElse(throw new IllegalStateException(s"$description cannot resume from " +
              "this checkpoint: its operator metadata, which records the format its state is " +
              s"kept in, cannot be read (the driver's log says why). Restore the checkpoint's " +
              s"state/${info.operatorId}/_metadata, or start the query from a new checkpoint."))
          OperatorProperties.fromJson(json).changelogStateFormat
        })
}
