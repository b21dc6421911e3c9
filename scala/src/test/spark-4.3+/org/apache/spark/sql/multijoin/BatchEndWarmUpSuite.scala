package org.apache.spark.sql.multijoin

import java.io.{BufferedReader, StringReader}

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.execution.streaming.checkpointing.CommitMetadataV2
import org.apache.spark.sql.execution.streaming.state.{OperatorStateMetadataUtils, OperatorStateMetadataV2}

/** The warm-up goes through Spark's own serializers: what it wrote, Spark reads back. */
class BatchEndWarmUpSuite extends AnyFunSuite {

  test("the warm-up serializes a commit, operator metadata and a snapshot's metadata as Spark") {
    val Seq(commit, operator, snapshot) = BatchEndWarmUp.serializeEach()
    assert(CommitMetadataV2(commit).stateUniqueIds.get(0L).head.head == "warm-up")
    val read = OperatorStateMetadataUtils.deserialize(2,
      new BufferedReader(new StringReader(operator)))
    assert(read.asInstanceOf[OperatorStateMetadataV2].operatorInfo.operatorName == "warm-up")
    assert(snapshot.contains("\"warm-up\""))
  }
}
