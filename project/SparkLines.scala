import sbt._
import sbt.Keys._

/**
 * The supported Spark lines and the source folders each compiles, in one place.
 *
 * The lines, each with the pyspark release it is built and tested against, are pyproject.toml's
 * `[tool.spark-multijoin.spark-lines]` table, which the Python scripts read too. Each line gets a
 * project of its own (`spark43` for "4.3"), derived here, so that adding a line is one entry in
 * that table and, where Spark's API changed, a source folder for it.
 *
 * What differs between lines sits in open-ended folders beside the shared `scala` folder:
 * `spark-4.2+` holds what holds from Spark 4.2 on. For each file, the newest such folder at or
 * below the line wins, so `spark-4.3+/X.scala` replaces `spark-4.1+/X.scala` from 4.3 on and a
 * new line renames nothing. A folder named for one line alone (`spark-4.2`) is compiled on that
 * line only.
 */
object SparkLines {

  private val Table = "[tool.spark-multijoin.spark-lines]"

  /** Each line ("4.3") with its pyspark release ("4.3.0"), oldest first. */
  def all(root: File): Seq[(String, String)] = {
    val text = IO.read(root / "pyproject.toml")
    val start = text.indexOf(Table)
    require(start >= 0, s"pyproject.toml must list the Spark lines under $Table")
    val body = text.substring(start + Table.length).split("\n\\[").head
    "(?m)^\"([0-9]+\\.[0-9]+)\" = \"([0-9.]+)\"$".r.findAllMatchIn(body)
      .map(m => m.group(1) -> m.group(2)).toSeq.sortBy(line => number(line._1))
  }

  /** The sbt project id of `line`: "spark43" for "4.3". */
  def projectId(line: String): String = s"spark${line.replace(".", "")}"

  private def number(line: String): Int = line.split('.').map(_.toInt).toSeq match {
    case Seq(major, minor) => major * 1000 + minor
  }

  private val OpenEnded = "spark-([0-9]+\\.[0-9]+)\\+".r
  private val OneLine = "spark-([0-9]+\\.[0-9]+)".r

  /** The folders of `scope` ("main" or "test") that `line` compiles files of, oldest first. */
  def folders(root: File, scope: String, line: String): Seq[File] = {
    val dir = root / "scala" / "src" / scope
    val perLine = Option(dir.listFiles()).toSeq.flatten.filter(_.isDirectory).flatMap { folder =>
      folder.getName match {
        case OpenEnded(from) if number(from) <= number(line) => Some(number(from) -> folder)
        case OneLine(only) if only == line => Some(Int.MaxValue -> folder)
        case _ => None
      }
    }
    (dir / "scala") +: perLine.sortBy(_._1).map(_._2)
  }

  /**
   * The source files `line` compiles in `scope`: every file of the shared folder and of the
   * line's folders, where a file of a newer folder replaces the one at the same path in an older.
   */
  def sources(root: File, scope: String, line: String): Seq[File] = {
    val byPath = folders(root, scope, line).foldLeft(Map.empty[String, File]) { (found, folder) =>
      val files = (folder ** ("*.scala" || "*.java")).get.filter(_.isFile)
      found ++ files.map(file => IO.relativize(folder, file).get -> file)
    }
    byPath.values.toSeq.sortBy(_.getPath)
  }
}

/**
 * Derives the project of each Spark line (its jar is
 * target/jars/spark-multijoin_<line>_2.13.jar, the name the Python package picks it by, and its
 * Maven artifact spark-multijoin_<line>_2.13) from the root project, so that the build lists no
 * line itself.
 */
object SparkLinesPlugin extends AutoPlugin {
  override def requires: Plugins = plugins.JvmPlugin

  /** The folder of jars that a line's pyspark release ships. */
  val sparkJars = taskKey[File]("The folder of jars that this line's pyspark release ships")

  override def derivedProjects(root: ProjectDefinition[_]): Seq[Project] =
    SparkLines.all(file(".")).map(_._1).map(lineProject)

  private def lineProject(line: String): Project =
    Project(SparkLines.projectId(line), file("target") / s"spark-$line")
      .settings(
        name := s"spark-multijoin_$line",
        moduleName := name.value,
        Compile / unmanagedSourceDirectories :=
          SparkLines.folders((ThisBuild / baseDirectory).value, "main", line),
        Test / unmanagedSourceDirectories :=
          SparkLines.folders((ThisBuild / baseDirectory).value, "test", line),
        Compile / unmanagedSources :=
          SparkLines.sources((ThisBuild / baseDirectory).value, "main", line),
        Test / unmanagedSources :=
          SparkLines.sources((ThisBuild / baseDirectory).value, "test", line),
        Compile / unmanagedResourceDirectories :=
          Seq((ThisBuild / baseDirectory).value / "scala" / "src" / "main" / "resources"),
        Test / unmanagedResourceDirectories :=
          Seq((ThisBuild / baseDirectory).value / "scala" / "src" / "test" / "resources"),
        libraryDependencies ++= Seq(
          "org.scalatest" %% "scalatest" % "3.2.19" % Test
        ),
        sparkJars := {
          val root = (ThisBuild / baseDirectory).value
          val script = root / "scripts" / "spark_jars.py"
          file(scala.sys.process.Process(Seq("python3", script.getPath, line), root).!!.trim)
        },
        Compile / unmanagedJars ++= (sparkJars.value ** "*.jar").classpath,
        // The line, for the extension to check against the Spark that loads it.
        Compile / sourceGenerators += Def.task {
          val source = (Compile / sourceManaged).value / "BuiltFor.scala"
          IO.write(source,
            s"""package org.apache.spark.sql.multijoin
               |
               |/** The Spark line this jar is compiled against (written by build.sbt). */
               |private[multijoin] object BuiltFor { val SparkLine = "$line" }
               |""".stripMargin)
          Seq(source)
        }.taskValue,
        scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", "17"),
        Compile / packageBin / artifactPath :=
          (ThisBuild / baseDirectory).value / "target" / "jars" /
            s"spark-multijoin_${line}_2.13.jar",
        Test / fork := true,
        // Real-time mode suites in a JVM of their own, with a task slot for every task of a query.
        Test / testGrouping := {
          val (realTime, others) = (Test / definedTests).value.partition(_.name.endsWith(
            "RealTimeMultiJoinSuite"))
          val options = (Test / forkOptions).value
          Tests.Group("suites", others, Tests.SubProcess(options)) +:
            realTime.map(suite =>
              Tests.Group(suite.name, Seq(suite),
                Tests.SubProcess(
                  options.withRunJVMOptions(
                    options.runJVMOptions :+ "-Dmultijoin.test.master=local[6]"))))
        },
        Test / javaOptions ++= Seq(
          "-Xmx2g",
          // Tests run many short queries: the quick compiler alone warms up sooner than it loses.
          "-XX:TieredStopAtLevel=1",
          "--add-opens=java.base/java.lang=ALL-UNNAMED",
          "--add-opens=java.base/java.nio=ALL-UNNAMED",
          "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
          "--add-opens=java.base/java.util=ALL-UNNAMED",
          "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED"
        )
      )
}
