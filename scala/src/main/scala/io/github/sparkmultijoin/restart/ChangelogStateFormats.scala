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
object ChangelogStateFormats {

  // (run id, operator id): the number recorded, None where the checkpoint recorded none.
  private val byRun = new ConcurrentHashMap[(UUID, Long), Option[Int]]()

  /**
   * The number of the format operator `info` keeps its state in: `forNewQuery` on a new query;
   * on a restart, what the checkpoint's operator metadata recorded (None where it recorded
   * none: its state is in the first format). The same for every micro-batch of a run.
   */
  def of(info: StatefulOperatorStateInfo, description: String, hadoopConf: => Configuration,
      forNewQuery: Int): Option[Int] =
    byRun.computeIfAbsent((info.queryRunId, info.operatorId),
      _ =>
        if (info.storeVersion == 0) Some(forNewQuery)
        else new OperatorMetadataFile(info, "", description)
          .previousJson(hadoopConf, info.storeVersion)
          .flatMap(json => ChangelogDeclarations.fromJson(json).stateFormat))
}
