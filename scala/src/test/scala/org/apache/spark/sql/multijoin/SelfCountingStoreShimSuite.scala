package org.apache.spark.sql.multijoin

import java.util.UUID

import io.github.sparkmultijoin.MultiJoinSuiteBase

import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec
import org.apache.spark.sql.types.StructType

class SelfCountingStoreShimSuite extends MultiJoinSuiteBase {

  test("its tasks open their stores with its Hadoop settings added, the session's unchanged") {
    withTempDir { dir =>
      val info = StatefulOperatorStateInfo(checkpointLocation = dir.getCanonicalPath,
        queryRunId = UUID.randomUUID(), operatorId = 0L, storeVersion = 0L, numPartitions = 2,
        stateStoreCkptIds = None)
      val schema = new StructType().add("k", "int")
      val setting = "spark.multijoin.test.storeSetting"
      val rdd = SelfCountingStoreShim.mapPartitionsWithStateStore(
        spark.sparkContext.parallelize(Seq(1, 2), 2), info, schema, schema,
        NoPrefixKeyStateEncoderSpec(schema), spark, useColumnFamilies = false,
        Map(setting -> "added")) { (store, rows) =>
        store.commit()
        rows
      }
      assert(rdd.collect().sorted.toSeq == Seq(1, 2))
      // Local mode: the tasks' copy of the broadcast configuration is the driver's.
      assert(SelfCountingStoreShim.hadoopConfOf(rdd).get(setting) == "added")
      assert(spark.sessionState.newHadoopConf().get(setting) == null)
    }
  }
}
