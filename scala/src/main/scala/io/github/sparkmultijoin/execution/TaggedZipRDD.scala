package io.github.sparkmultijoin.execution

import org.apache.spark.{OneToOneDependency, Partition, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow

/**
 * The partitions of several RDDs with the same partitioning, zipped: partition p yields the rows
 * of partition p of every input, input by input, each tagged with its input's index. This is the
 * order the multi-join processes a micro-batch in.
 */
class TaggedZipRDD(private var inputs: Seq[RDD[InternalRow]])
  extends RDD[(Int, InternalRow)](inputs.head.sparkContext, inputs.map(new OneToOneDependency(_))) {

  require(inputs.map(_.getNumPartitions).distinct.length == 1,
    s"inputs must have one number of partitions: ${inputs.map(_.getNumPartitions)}")

  override protected def getPartitions: Array[Partition] =
    Array.tabulate(inputs.head.getNumPartitions) { index =>
      TaggedZipPartition(index, inputs.map(_.partitions(index)))
    }

  override def compute(split: Partition, context: TaskContext): Iterator[(Int, InternalRow)] = {
    val parts = split.asInstanceOf[TaggedZipPartition].inputPartitions
    inputs.indices.iterator.flatMap { input =>
      inputs(input).iterator(parts(input), context).map(row => (input, row))
    }
  }

  override def clearDependencies(): Unit = {
    super.clearDependencies()
    inputs = null
  }
}

private case class TaggedZipPartition(index: Int, inputPartitions: Seq[Partition])
  extends Partition
