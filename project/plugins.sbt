// Formatting (config in .scalafmt.conf): scalafmtCheckAll and scalafmtSbtCheck check it,
// scalafmtAll and scalafmtSbt apply it.
addSbtPlugin("org.scalameta" % "sbt-scalafmt" % "2.5.6")
