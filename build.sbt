// Spark and rocksdbjni are provided: we compile against the jars the pinned pyspark ships
// (pyproject.toml pins it; scripts/spark_jars.py finds or installs it) and package none of them.
// Finding them is a task, run when something is compiled, not while the build loads.
lazy val sparkJars = taskKey[File]("The folder of jars that the pinned pyspark ships")

// The project's version is pyproject.toml's, so that the jar and the Python package agree.
lazy val projectVersion: String = {
  val pyproject = IO.read(file("pyproject.toml"))
  "(?m)^version = \"([^\"]+)\"".r.findFirstMatchIn(pyproject).map(_.group(1))
    .getOrElse(sys.error("pyproject.toml must set version = \"...\""))
}

ThisBuild / organization := "io.github.spark-multijoin"
ThisBuild / version := projectVersion
ThisBuild / scalaVersion := "2.13.18"

lazy val root = (project in file("."))
  .settings(
    name := "spark-multijoin",
    Compile / scalaSource := baseDirectory.value / "scala" / "src" / "main" / "scala",
    Test / scalaSource := baseDirectory.value / "scala" / "src" / "test" / "scala",
    Compile / resourceDirectory := baseDirectory.value / "scala" / "src" / "main" / "resources",
    Test / resourceDirectory := baseDirectory.value / "scala" / "src" / "test" / "resources",
    libraryDependencies ++= Seq(
      "org.scalatest" %% "scalatest" % "3.2.19" % Test
    ),
    sparkJars := {
      val script = baseDirectory.value / "scripts" / "spark_jars.py"
      file(scala.sys.process.Process(Seq("python3", script.getPath), baseDirectory.value).!!.trim)
    },
    Compile / unmanagedJars ++= (sparkJars.value ** "*.jar").classpath,
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", "17"),
    Compile / packageBin / artifactPath := target.value / "spark-multijoin.jar",
    Test / fork := true,
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
