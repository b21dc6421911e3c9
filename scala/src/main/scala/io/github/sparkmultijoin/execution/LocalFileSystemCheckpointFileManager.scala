package io.github.sparkmultijoin.execution

import java.net.URI
import java.nio.file.{FileSystems, Files}
import java.nio.file.attribute.PosixFilePermission

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FileSystem, FSDataInputStream, LocalFileSystem, Path, PathFilter, RawLocalFileSystem}
import org.apache.hadoop.fs.permission.{FsAction, FsPermission}
import org.apache.hadoop.io.nativeio.NativeIO

import org.apache.spark.sql.execution.streaming.checkpointing.{CheckpointFileManager, FileSystemBasedCheckpointFileManager}
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream
import org.apache.spark.sql.internal.SQLConf

/**
 * The checkpoint file manager Spark would choose, except on the local file system, where it is
 * Spark's FileSystem-based one: the same files, written without starting a process per file.
 *
 * Why: without Hadoop's native library (pip's pyspark ships none), the local file system that
 * Spark's default manager writes through (Hadoop's `FileContext`) starts a `readlink` process for
 * every file status a rename checks and a `chmod` for every file it creates, several for each
 * file written atomically. Every micro-batch writes such files: offset, commit and file source
 * log entries, and a changelog per state store partition, so those process starts are a large
 * part of its time (docs/benchmarks.md, "Checkpoint writes and process starts"). Hadoop's
 * `FileSystem` API starts no `readlink`, and this manager's file system sets
 * permissions through java.nio (see [[NioPermissionRawLocalFileSystem]]), so no `chmod` either.
 *
 * The guarantees on the local file system are the same or stronger: a `FileContext` rename there
 * (Hadoop's `AbstractFileSystem.renameInternal`, which the local file system does not override)
 * looks up the destination, deletes it where it may overwrite it, and then renames; this manager
 * renames over it, one `rename(2)` that replaces the file atomically. Without overwriting, both
 * check that the destination does not exist and then rename. On every other file system nothing
 * changes: Spark's own choice, `FileContext` where the file system has one, which is what gives
 * HDFS atomic renames.
 *
 * Enabled by `spark.sql.streaming.checkpointFileManagerClass` (the Python helper sets it unless
 * it is set). It applies to every streaming query of the session, as that setting does.
 */
class LocalFileSystemCheckpointFileManager(path: Path, hadoopConf: Configuration)
  extends CheckpointFileManager {

  /** The manager that does the work (visible for tests). */
  private[execution] val delegate: CheckpointFileManager = path.getFileSystem(hadoopConf) match {
    case _: LocalFileSystem | _: RawLocalFileSystem =>
      new LocalFileSystemBasedCheckpointFileManager(path, hadoopConf)
    case _ =>
      val sparksChoice = new Configuration(hadoopConf)
      sparksChoice.unset(SQLConf.STREAMING_CHECKPOINT_FILE_MANAGER_CLASS.parent.key)
      CheckpointFileManager.create(path, sparksChoice)
  }

  override def createAtomic(
      path: Path,
      overwriteIfPossible: Boolean): CancellableFSDataOutputStream =
    delegate.createAtomic(path, overwriteIfPossible)

  override def open(path: Path): FSDataInputStream = delegate.open(path)

  override def list(path: Path, filter: PathFilter): Array[FileStatus] =
    delegate.list(path, filter)

  override def mkdirs(path: Path): Unit = delegate.mkdirs(path)

  override def exists(path: Path): Boolean = delegate.exists(path)

  override def delete(path: Path): Unit = delegate.delete(path)

  override def isLocal: Boolean = delegate.isLocal

  override def createCheckpointDirectory(): Path = delegate.createCheckpointDirectory()

  override def close(): Unit = delegate.close()
}

object LocalFileSystemCheckpointFileManager {

  /**
   * The Hadoop settings under which a state store of the session writes its files on the local
   * file system without starting a process per file, as this manager writes the checkpoint's:
   * none unless the session uses this manager.
   *
   * Why: Spark's RocksDB store copies a snapshot's files to the checkpoint through the file
   * system Hadoop caches for `file:`, which starts a `chmod` for each file and checksum it
   * creates. A store with column families (the multi-join's) uploads a snapshot at its first
   * commit, inside the task, so those processes lengthen a new query's first batch end.
   * `disable.cache` gives the store an instance of its own, not the one the session shares.
   */
  def storeFiles(conf: SQLConf): Map[String, String] =
    if (conf.getConfString(SQLConf.STREAMING_CHECKPOINT_FILE_MANAGER_CLASS.parent.key, "") ==
        classOf[LocalFileSystemCheckpointFileManager].getName) {
      Map("fs.file.impl" -> classOf[NioPermissionLocalFileSystem].getName,
        "fs.file.impl.disable.cache" -> "true")
    } else {
      Map.empty
    }
}

/**
 * Spark's FileSystem-based manager over a local file system of its own: Hadoop's checksummed one,
 * as registered for `file:`, over [[NioPermissionRawLocalFileSystem]]. Not the instance Hadoop
 * caches for `file:`, which the whole session shares: pyspark's jars register Hive's
 * `ProxyLocalFileSystem` there, whose `rename` returns false over an existing file, and the
 * FileSystem-based manager takes that `false` as done, so an overwritten file would keep its old
 * contents (Spark writes every state store changelog as a file it may overwrite, as when a task
 * of a version already committed runs again). Hadoop's own local file system renames over it, in
 * one `rename(2)` for the file and one for its checksum.
 */
private class LocalFileSystemBasedCheckpointFileManager(path: Path, hadoopConf: Configuration)
  extends FileSystemBasedCheckpointFileManager(path, hadoopConf) {

  override protected val fs: FileSystem = {
    val local = new NioPermissionLocalFileSystem
    local.initialize(URI.create("file:///"), hadoopConf)
    local
  }
}

/**
 * Hadoop's checksummed local file system over [[NioPermissionRawLocalFileSystem]]: what a
 * multi-join's RocksDB state stores copy their snapshot files through when the session uses
 * [[LocalFileSystemCheckpointFileManager]] ([[LocalFileSystemCheckpointFileManager.storeFiles]]).
 */
class NioPermissionLocalFileSystem extends LocalFileSystem(new NioPermissionRawLocalFileSystem)

/**
 * Hadoop's raw local file system, setting permissions through java.nio where Hadoop would start
 * a `chmod` process: without its native library, Hadoop sets the permission of every file it
 * creates, and of every folder it creates with one, that way. A checkpoint file is two files,
 * the file and its checksum, so two processes per checkpoint file.
 *
 * The permission set is the same: `chmod` and `Files.setPosixFilePermissions` both follow links
 * and set the nine permission bits. Hadoop's own path is kept where java.nio has no equivalent:
 * with the native library (no process then either), on a file system without POSIX attributes,
 * and for a sticky bit.
 */
private[execution] class NioPermissionRawLocalFileSystem extends RawLocalFileSystem {

  override def setPermission(p: Path, permission: FsPermission): Unit = {
    if (NativeIO.isAvailable || !NioPermissionRawLocalFileSystem.posix ||
      permission.getStickyBit) {
      super.setPermission(p, permission)
    } else {
      Files.setPosixFilePermissions(pathToFile(p).toPath,
        NioPermissionRawLocalFileSystem.posixPermissions(permission).asJava)
    }
  }
}

private[execution] object NioPermissionRawLocalFileSystem {

  private val posix = FileSystems.getDefault.supportedFileAttributeViews.contains("posix")

  import PosixFilePermission._

  /** Each class's (user, group, others) read, write and execute permissions, in that order. */
  private val byClass = Seq(
    (OWNER_READ, OWNER_WRITE, OWNER_EXECUTE),
    (GROUP_READ, GROUP_WRITE, GROUP_EXECUTE),
    (OTHERS_READ, OTHERS_WRITE, OTHERS_EXECUTE))

  def posixPermissions(permission: FsPermission): Set[PosixFilePermission] = {
    val actions = Seq(permission.getUserAction, permission.getGroupAction,
      permission.getOtherAction)
    actions.zip(byClass).flatMap { case (action, (read, write, execute)) =>
      Seq(FsAction.READ -> read, FsAction.WRITE -> write, FsAction.EXECUTE -> execute)
        .collect { case (granted, posixPermission) if action.implies(granted) => posixPermission }
    }.toSet
  }
}
