package io.github.sparkmultijoin

import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.multijoin.MultiJoinConf

/**
 * The base of every suite that needs Spark: one local SparkSession with the extension installed
 * and the RocksDB state store, shared by all suites of the test JVM (starting Spark is the
 * slowest part of a small suite).
 */
trait MultiJoinSuiteBase extends AnyFunSuite {

  // A stable identifier, so that suites can `import spark.implicits._`.
  protected final lazy val spark: SparkSession = MultiJoinSuiteBase.session

  /** Runs `body` with the given session confs set, then restores what was there. */
  protected def withConf[T](settings: (String, String)*)(body: => T): T = {
    val previous = settings.map { case (key, _) => key -> spark.conf.getOption(key) }
    settings.foreach { case (key, value) => spark.conf.set(key, value) }
    try body
    finally previous.foreach {
        case (key, Some(value)) => spark.conf.set(key, value)
        case (key, None) => spark.conf.unset(key)
      }
  }

  /** Runs `body` with the multi-join enabled (or not). */
  protected def withMultiJoin[T](enabled: Boolean)(body: => T): T =
    withConf(MultiJoinConf.ENABLED.key -> enabled.toString)(body)

  protected def withTempDir[T](body: java.io.File => T): T = {
    val dir = Files.createTempDirectory("multijoin-test").toFile
    try body(dir)
    finally FileUtils.deleteQuietly(dir)
  }
}

object MultiJoinSuiteBase {

  val RocksDbProvider =
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

  val InMemoryProvider =
    "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"

  // The build gives the real-time mode suites a JVM of their own with more task slots than
  // cores: such a query runs its source tasks and its stateful tasks at the same time, and Spark
  // refuses to start it without a slot for each. Other suites run faster on two.
  lazy val session: SparkSession = SparkSession.builder()
    .master(sys.props.getOrElse("multijoin.test.master", "local[2]"))
    .appName("spark-multijoin-scala-tests")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.sql.extensions", classOf[MultiJoinExtension].getName)
    .config("spark.sql.streaming.stateStore.providerClass", RocksDbProvider)
    .getOrCreate()
}
