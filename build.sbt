// Spark and rocksdbjni are provided: we compile against the jars the pinned pyspark ships
// (scripts/spark_jars.py finds or installs it) and package none of them.
lazy val sparkJars: File = {
  val out = scala.sys.process.Process(Seq("python3", "scripts/spark_jars.py"), file(".")).!!.trim
  file(out)
}

ThisBuild / organization := "io.github.spark-multijoin"
ThisBuild / version := "0.1.0"
ThisBuild / scalaVersion := "2.13.18"

lazy val root = (project in file("."))
  .settings(
    name := "spark-multijoin",
    Compile / scalaSource := baseDirectory.value / "scala" / "src" / "main" / "scala",
    Test / scalaSource := baseDirectory.value / "scala" / "src" / "test" / "scala",
    Compile / resourceDirectory := baseDirectory.value / "scala" / "src" / "main" / "resources",
    libraryDependencies ++= Seq(
      "org.scalatest" %% "scalatest" % "3.2.19" % Test
    ),
    Compile / unmanagedJars ++= (sparkJars ** "*.jar").classpath,
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", "17"),
    Compile / packageBin / artifactPath := target.value / "spark-multijoin.jar",
    Test / fork := true,
    Test / javaOptions ++= Seq(
      "-Xmx2g",
      "--add-opens=java.base/java.lang=ALL-UNNAMED",
      "--add-opens=java.base/java.nio=ALL-UNNAMED",
      "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
      "--add-opens=java.base/java.util=ALL-UNNAMED",
      "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED"
    )
  )
