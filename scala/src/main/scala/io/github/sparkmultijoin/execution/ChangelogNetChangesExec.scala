package io.github.sparkmultijoin.execution

import scala.collection.mutable

import io.github.sparkmultijoin.logical.ChangeTypes

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, Distribution, UnspecifiedDistribution}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.SQLMetrics

/**
 * A changelog join's output: one row per output identity per micro-batch, its net change.
 *
 * Why a step of its own: [[ChangelogJoinExec]] emits the changes of each join key, and an
 * output row whose inputs' rows moved to another key is deleted under one key and inserted
 * under another, by two tasks. Shuffled by identity, the two meet: a removal and a put are one
 * `update_postimage`, a put alone is an `insert` (or an `update_postimage` of a row kept under
 * its key), a removal alone a `delete`. Pre-images are dropped, as a sink merges by identity.
 * Where no output row can move to another key (`ChangelogJoinShape.identityKeepsKey`), an
 * identity's changes are all in its key's task already, and are netted there, unshuffled. A
 * partition holds its changes until its input ends, as an identity's removal and put may come
 * in either order; it keeps no state.
 *
 * @param identity   the output identity's columns, among the child's
 * @param changeType the output's change type column
 * @param byIdentity whether the changes are shuffled by identity first
 */
case class ChangelogNetChangesExec(
    identity: Seq[Attribute],
    changeType: Attribute,
    child: SparkPlan,
    byIdentity: Boolean) extends UnaryExecNode {

  override def nodeName: String = "ChangelogNetChanges"

  private def visible: Seq[Attribute] = child.output.dropRight(2)

  override def output: Seq[Attribute] = visible :+ changeType

  override def producedAttributes: AttributeSet = AttributeSet(changeType)

  override protected def stringArgs: Iterator[Any] =
    Iterator(identity, changeType, if (byIdentity) "by identity" else "in the key's task")

  override lazy val metrics = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"))

  override def requiredChildDistribution: Seq[Distribution] =
    (if (byIdentity) ClusteredDistribution(identity) else UnspecifiedDistribution) :: Nil

  override protected def doExecute(): RDD[InternalRow] = {
    val (childOutput, columns, ids, numOutputRows) =
      (child.output, visible, identity, longMetric("numOutputRows"))
    val types = columns.map(_.dataType)
    child.execute().mapPartitions { rows =>
      val (key, row) = (UnsafeProjection.create(ids, childOutput),
        UnsafeProjection.create(columns, childOutput))
      val removals = mutable.HashMap.empty[UnsafeRow, UnsafeRow]
      val puts = mutable.LinkedHashMap.empty[UnsafeRow, (String, UnsafeRow)]
      rows.foreach { change =>
        val kind = change.getUTF8String(columns.length).toString
        val id = key(change).copy()
        if (ChangeTypes.Removes.contains(kind)) removals(id) = row(change).copy()
        else puts(id) = kind -> row(change).copy()
      }
      val changeRows = ChangeRows.ofOutput(types)
      def emit(kind: String, values: UnsafeRow): InternalRow = {
        numOutputRows += 1
        changeRows(kind, values)
      }
      puts.iterator.map { case (id, (kind, values)) =>
        val updates = removals.contains(id) || kind == ChangeTypes.UpdatePostimage
        emit(if (updates) ChangeTypes.UpdatePostimage else ChangeTypes.Insert, values)
      } ++ removals.iterator.collect {
        case (id, values) if !puts.contains(id) => emit(ChangeTypes.Delete, values)
      }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): ChangelogNetChangesExec =
    copy(child = newChild)
}
