// One project per supported Spark line (pyproject.toml's [tool.spark-multijoin.spark-lines]
// lists them, each with the pyspark release it is built against). Each compiles the shared
// sources in scala/src/main/scala plus a thin layer of its own, the folders named for the line
// (scala/src/main/spark-4.2) or for a range holding it (spark-4.2-4.3), and runs the shared suites
// (plus scala/src/test's folders for the line) against that release's jars.
//
// Spark and rocksdbjni are provided: each line compiles against the jars its pyspark release
// ships (scripts/spark_jars.py installs it into target/) and packages none of them. Finding them
// is a task, run when something is compiled, not while the build loads.
lazy val sparkJars = taskKey[File]("The folder of jars that this line's pyspark release ships")

// The project's version is pyproject.toml's, so that the jars and the Python package agree.
lazy val pyproject: String = IO.read(file("pyproject.toml"))
lazy val projectVersion: String =
  "(?m)^version = \"([^\"]+)\"".r.findFirstMatchIn(pyproject).map(_.group(1))
    .getOrElse(sys.error("pyproject.toml must set version = \"...\""))

ThisBuild / organization := "io.github.spark-multijoin"
ThisBuild / version := projectVersion
ThisBuild / scalaVersion := "2.13.18"

// The lines pyproject.toml lists; each needs its project below.
lazy val sparkLines: Seq[String] =
  "(?m)^\"([0-9]+\\.[0-9]+)\" = \"[0-9.]+\"$".r.findAllMatchIn(pyproject).map(_.group(1)).toSeq

lazy val spark41 = sparkLine("4.1")
lazy val spark42 = sparkLine("4.2")
lazy val spark43 = sparkLine("4.3")

// `scripts/sbt package` and `scripts/sbt test` build and test every line; `spark42/test` one.
lazy val root = (project in file("."))
  .aggregate(spark41, spark42, spark43)
  .settings(name := "spark-multijoin", publish / skip := true)

/**
 * The project of Spark line `line` ("4.1"): its jar is target/jars/spark-multijoin_<line>_2.13.jar
 * (the name the Python package picks it by) and its Maven artifact spark-multijoin_<line>_2.13.
 */
def sparkLine(line: String): Project = {
  require(sparkLines.contains(line), s"pyproject.toml lists Spark lines $sparkLines, not $line")
  Project(s"spark${line.replace(".", "")}", file("target") / s"spark-$line")
    .settings(
      name := s"spark-multijoin_$line",
      moduleName := name.value,
      Compile / unmanagedSourceDirectories :=
        sources((ThisBuild / baseDirectory).value, "main", line),
      Test / unmanagedSourceDirectories := sources((ThisBuild / baseDirectory).value, "test", line),
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
        (ThisBuild / baseDirectory).value / "target" / "jars" / s"spark-multijoin_${line}_2.13.jar",
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

/**
 * The source folders of `scope` ("main" or "test") under `root` that line `line` compiles: the
 * shared one, `scala`, and those named for the line (`spark-4.2`) or for a range of lines that
 * holds it (`spark-4.2-4.3`, both ends included).
 */
def sources(root: File, scope: String, line: String): Seq[File] = {
  val dir = root / "scala" / "src" / scope
  def number(version: String) = version.split('.').map(_.toInt).toSeq match {
    case Seq(major, minor) => major * 1000 + minor
  }
  val Named = "spark-([0-9]+\\.[0-9]+)(?:-([0-9]+\\.[0-9]+))?".r
  val forLine = Option(dir.listFiles()).toSeq.flatten.filter(_.isDirectory).filter(_.getName match {
    case Named(from, to) =>
      number(from) <= number(line) && number(line) <= number(Option(to).getOrElse(from))
    case _ => false
  })
  (dir / "scala") +: forLine.sortBy(_.getName)
}
