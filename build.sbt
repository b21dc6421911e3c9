// One project per supported Spark line (project/SparkLines.scala: pyproject.toml's
// [tool.spark-multijoin.spark-lines] lists them, each with the pyspark release it is built
// against). Each compiles the shared sources in scala/src/main/scala plus the layer of its line
// (open-ended folders such as scala/src/main/spark-4.2+, see SparkLines), and runs the shared
// suites (plus scala/src/test's folders for the line) against that release's jars.
//
// Spark and rocksdbjni are provided: each line compiles against the jars its pyspark release
// ships (scripts/spark_jars.py installs it into target/) and packages none of them. Finding them
// is a task, run when something is compiled, not while the build loads.

// The project's version is pyproject.toml's, so that the jars and the Python package agree.
lazy val pyproject: String = IO.read(file("pyproject.toml"))
lazy val projectVersion: String =
  "(?m)^version = \"([^\"]+)\"".r.findFirstMatchIn(pyproject).map(_.group(1))
    .getOrElse(sys.error("pyproject.toml must set version = \"...\""))

ThisBuild / organization := "io.github.spark-multijoin"
ThisBuild / version := projectVersion
ThisBuild / scalaVersion := "2.13.18"

lazy val sparkLines: Seq[String] = SparkLines.all(file(".")).map(_._1)

// `scripts/sbt package` and `scripts/sbt test` build and test every line; `spark42/test` one.
lazy val root = (project in file("."))
  .aggregate(sparkLines.map(line => LocalProject(SparkLines.projectId(line)): ProjectReference): _*)
  .enablePlugins(SparkLinesPlugin)
  .settings(name := "spark-multijoin", publish / skip := true)
