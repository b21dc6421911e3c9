package io.github.sparkmultijoin.execution

import java.io.File
import java.net.URI
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import java.nio.file.attribute.PosixFilePermissions

import scala.collection.mutable.ArrayBuffer
import scala.util.{Random, Try}

import io.github.sparkmultijoin.MultiJoinSuiteBase
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, Path, RawLocalFileSystem}
import org.apache.hadoop.fs.permission.FsPermission
import org.apache.hadoop.io.IOUtils

import org.apache.spark.sql.execution.streaming.checkpointing.{CheckpointFileManager, FileContextBasedCheckpointFileManager, FileSystemBasedCheckpointFileManager}

class LocalFileSystemCheckpointFileManagerSuite extends MultiJoinSuiteBase {

  private def managerFor(path: String): LocalFileSystemCheckpointFileManager = {
    val conf = new Configuration()
    conf.set("spark.sql.streaming.checkpointFileManagerClass",
      classOf[LocalFileSystemCheckpointFileManager].getName)
    CheckpointFileManager.create(new Path(path), conf) match {
      case manager: LocalFileSystemCheckpointFileManager => manager
      case other => fail(s"Spark created ${other.getClass.getName} for $path")
    }
  }

  test("the local file system gets a FileSystem-based manager, any other Spark's choice") {
    withTempDir { dir =>
      val local = managerFor(dir.toURI.toString)
      assert(local.delegate.isInstanceOf[FileSystemBasedCheckpointFileManager] && local.isLocal)
      // A path without a scheme is on the default file system, here the local one.
      assert(managerFor(dir.getPath).delegate.isInstanceOf[FileSystemBasedCheckpointFileManager])
    }
    // Creating an HDFS client connects to nothing until it is used.
    val hdfs = managerFor("hdfs://localhost:1/checkpoint")
    assert(hdfs.delegate.isInstanceOf[FileContextBasedCheckpointFileManager] && !hdfs.isLocal)
  }

  /**
   * What a checkpoint's writer sees of `manager` writing one file in `dir` over and over: after
   * each step, the file's text (or the error) and the names in `dir` (without checksum files).
   */
  private def writes(manager: CheckpointFileManager, dir: File): Seq[String] = {
    val logDir = new Path(dir.toURI.toString, "offsets")
    val file = new Path(logDir, "0")
    val seen = ArrayBuffer.empty[String]
    def read(): String = {
      val in = manager.open(file)
      try new String(IOUtils.readFullyToByteArray(in), UTF_8)
      finally in.close()
    }
    def note(step: String, outcome: Try[Unit]): Unit = {
      val names = manager.list(logDir).map(_.getPath.getName).filterNot(_.endsWith(".crc")).sorted
      // Spark's own errors of this kind extend Hadoop's, which is what Spark's logs catch.
      val failure = outcome.failed.map {
        case _: FileAlreadyExistsException => "file exists"
        case e => e.getClass.getName
      }
      seen += s"$step: ${failure.getOrElse("ok")}, " +
        s"reads ${Try(read()).getOrElse("nothing")}, files ${names.mkString(" ")}"
    }
    def write(text: String, overwrite: Boolean, cancel: Boolean = false): Try[Unit] = Try {
      val out = manager.createAtomic(file, overwriteIfPossible = overwrite)
      out.write(text.getBytes(UTF_8))
      note(s"$text unclosed", Try(()))
      if (cancel) out.cancel() else out.close()
    }
    manager.mkdirs(logDir)
    note("v1", write("v1", overwrite = false))
    note("v2, not over it", write("v2", overwrite = false))
    note("v3, over it", write("v3", overwrite = true))
    note("v4, cancelled", write("v4", overwrite = true, cancel = true))
    note("deleted", Try(manager.delete(file)))
    note("v5, over nothing", write("v5", overwrite = true))
    seen.toSeq.map(_.replaceAll("""\.0\.[-0-9a-f]+\.tmp""", "temp"))
  }

  test("files are written, overwritten and cancelled as Spark's default manager does") {
    val expected = withTempDir(dir =>
      writes(CheckpointFileManager.create(
          new Path(dir.toURI), new Configuration()), dir))
    val actual = withTempDir(dir => writes(managerFor(dir.toURI.toString), dir))
    assert(actual == expected)
    // What that is, said independently: nothing shows before a close, the file is replaced only
    // where that is asked for, a cancelled write leaves nothing, and a write refused for an
    // existing file leaves its temporary file behind.
    assert(expected.startsWith(Seq("v1 unclosed: ok, reads nothing, files temp",
        "v1: ok, reads v1, files 0")), expected)
    assert(
      expected.contains("v2, not over it: file exists, reads v1, files temp 0") &&
        expected.contains("v3, over it: ok, reads v3, files temp 0") &&
        expected.contains("v4, cancelled: ok, reads v3, files temp 0") &&
        expected.last == "v5, over nothing: ok, reads v5, files temp 0", expected)
  }

  private def permissions(file: File): String =
    PosixFilePermissions.toString(Files.getPosixFilePermissions(file.toPath))

  test("permissions are set as Hadoop's own local file system sets them, with its chmod") {
    def initialized(fs: RawLocalFileSystem): RawLocalFileSystem = {
      fs.initialize(URI.create("file:///"), new Configuration())
      fs
    }
    val ours = initialized(new NioPermissionRawLocalFileSystem)
    val hadoops = initialized(new RawLocalFileSystem)
    val random = new Random(15)
    val usual = Seq("000", "600", "644", "700", "755", "777").map(Integer.parseInt(_, 8))
    val modes = (usual ++ Seq.fill(20)(random.nextInt(Integer.parseInt("1000", 8)))).distinct
    withTempDir { dir =>
      for (mode <- modes) {
        val set = Seq(ours -> "ours", hadoops -> "hadoop's").map { case (fs, name) =>
          val file = new File(dir, s"$name-$mode")
          assert(file.createNewFile())
          fs.setPermission(new Path(file.toURI), new FsPermission(mode.toShort))
          permissions(file)
        }
        assert(set.distinct.size == 1, s"mode ${mode.toOctalString}: ours, Hadoop's: $set")
      }
    }
  }

  test("a file is written with the checksum file and permissions Hadoop's FileSystem gives") {

    /** Each file's name and permissions after `manager` wrote one log entry in `dir`. */
    def written(manager: CheckpointFileManager, dir: File): Seq[String] = {
      val out = manager.createAtomic(new Path(dir.toURI.toString, "0"), overwriteIfPossible = false)
      out.write("v1".getBytes(UTF_8))
      out.close()
      dir.listFiles().toSeq.map(file => s"${file.getName} ${permissions(file)}").sorted
    }
    val expected = withTempDir(dir =>
      written(new FileSystemBasedCheckpointFileManager(new Path(dir.toURI), new Configuration()),
        dir))
    val actual = withTempDir(dir => written(managerFor(dir.toURI.toString), dir))
    assert(actual == expected)
    assert(expected.map(_.split(" ").head) == Seq(".0.crc", "0"), expected)
  }
}
