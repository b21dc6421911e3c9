"""Fetches, at set-up, the jars of the Kafka example (examples/kafka_delta_pipeline.py) with Maven
into target/jars/, so that nothing is downloaded when it runs:

- target/jars/kafka-broker/: Apache Kafka's broker, run in KRaft mode (a combined broker and
  controller) as a process of its own, plus an SLF4J binding so that it writes a log.
- target/jars/kafka-delta-spark-<pyspark version>/: Spark's Kafka connector and Delta Lake for the
  line of the pyspark this interpreter imports, less every jar that pyspark already ships
  (whatever the version: pyspark's own is the one Spark runs with, and a second copy is only
  shadowed).

A session gets the second folder through `spark.jars`. Not `spark.jars.packages`: Ivy does not
resolve this tree dependably (DESIGN.md), Maven does. Each folder is filled once; a folder whose
stamp lists other coordinates is filled anew. Maven resolves from Central only: a repository that a
dependency's pom names (Spark's parent pom names a mirror of Central) is blocked, not tried.

    .venv-4.1/bin/python scripts/kafka_jars.py      # prints the two folders
    python3 scripts/kafka_jars.py --line            # the Spark line the example runs on
    python3 scripts/kafka_jars.py --delta-pip       # delta-spark's Python package for that line
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JARS = ROOT / "target" / "jars"

# Kafka 4 brokers run on Java 17; 4.1.1 is the release checked end to end here (DESIGN.md).
KAFKA_VERSION = "4.1.1"
BROKER = [f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}", "org.slf4j:slf4j-simple:1.7.36"]
# The Delta Lake release for each Spark line whose connector and Delta jars both resolve.
DELTA_BY_LINE = {"4.1": "4.3.1"}
# Spark's Kafka connector for each such line, newer than the line's pyspark: 4.1.1's fails a
# restarted query that runs a batch again, reporting its progress (SPARK-55271, fixed in 4.1.3).
CONNECTOR_BY_LINE = {"4.1": "4.1.3"}
# The connector's token provider, pinned: 4.1.3's is not served, and 4.1.1's runs with 4.1.3's
# connector (the kill test, tests/pipeline/test_kafka_delta.py).
TOKEN_PROVIDER_BY_LINE = {"4.1": "4.1.1"}
STAMP = "coordinates.txt"


def _line(spark_version: str) -> str:
    line = ".".join(spark_version.split(".")[:2])
    if line not in DELTA_BY_LINE:
        raise SystemExit(f"The Kafka example runs on Spark {', '.join(DELTA_BY_LINE)}, where "
                         f"Spark's Kafka connector and Delta Lake both resolve; this is "
                         f"pyspark {spark_version}. Use the line's venv: "
                         f"SPARK_LINE={next(iter(DELTA_BY_LINE))} scripts/setup-kafka")
    return line


def connectors(spark_version: str) -> list[str]:
    line = _line(spark_version)
    return [f"org.apache.spark:spark-sql-kafka-0-10_2.13:{CONNECTOR_BY_LINE[line]}",
            f"io.delta:delta-spark_2.13:{DELTA_BY_LINE[line]}"]


def pinned(spark_version: str) -> list[str]:
    """The versions the connectors' dependency tree takes in place of those their poms ask for."""
    line = _line(spark_version)
    return [f"org.apache.spark:spark-token-provider-kafka-0-10_2.13:"
            f"{TOKEN_PROVIDER_BY_LINE[line]}"]


def _dependencies(coordinates: Sequence[str]) -> str:
    return "".join(
        f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
        f"<version>{version}</version></dependency>\n    "
        for group, artifact, version in (c.split(":") for c in coordinates))


def pom(coordinates: list[str], pins: Sequence[str] = ()) -> str:
    """A pom that depends on `coordinates`, with `pins` in its dependencyManagement."""
    managed = (f"""
  <dependencyManagement>
    <dependencies>
    {_dependencies(pins)}</dependencies>
  </dependencyManagement>""" if pins else "")
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.github.spark-multijoin</groupId>
  <artifactId>kafka-example-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>{managed}
  <dependencies>
    {_dependencies(coordinates)}</dependencies>
</project>
"""


def central_only_settings() -> str:
    """Maven settings whose one mirror blocks every repository but Central. They replace the
    global settings only, so that a user's own (a mirror of Central, a proxy) still apply."""
    return """<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <mirrors>
    <mirror>
      <id>central-only</id>
      <mirrorOf>*,!central</mirrorOf>
      <url>http://0.0.0.0/</url>
      <blocked>true</blocked>
    </mirror>
  </mirrors>
</settings>
"""


def stamp_of(coordinates: list[str], pins: Sequence[str] = ()) -> str:
    return "".join(f"{c}\n" for c in coordinates) + "".join(f"pinned {c}\n" for c in pins)


def fetch(coordinates: list[str], folder: Path, shipped: Path | None = None,
          pins: Sequence[str] = ()) -> None:
    """Copies `coordinates` and their runtime dependencies (at the versions `pins` gives) into
    `folder`, less the artifacts in the folder `shipped`, unless its stamp says they are there."""
    stamp = stamp_of(coordinates, pins)
    if (folder / STAMP).is_file() and (folder / STAMP).read_text() == stamp:
        return
    shutil.rmtree(folder, ignore_errors=True)
    build = JARS / f".{folder.name}-pom"
    build.mkdir(parents=True, exist_ok=True)
    (build / "pom.xml").write_text(pom(coordinates, pins))
    (build / "settings.xml").write_text(central_only_settings())
    subprocess.run(["mvn", "-q", "-B", "-f", str(build / "pom.xml"),
                    "-gs", str(build / "settings.xml"),
                    "-Dstyle.color=never", "dependency:copy-dependencies",
                    "-DincludeScope=runtime", f"-DoutputDirectory={folder}"],
                   check=True, stdout=sys.stderr)
    if shipped is not None:
        drop_shipped(folder, shipped)
    (folder / STAMP).write_text(stamp)


def artifact_name(jar: Path) -> str:
    """`spark-sql-kafka-0-10_2.13` of `spark-sql-kafka-0-10_2.13-4.1.1.jar`: the name up to the
    last dash followed by a digit that starts a dotted version."""
    stem = jar.stem
    for index in range(len(stem) - 1, 0, -1):
        if stem[index - 1] == "-" and stem[index].isdigit() and "." in stem[index:]:
            return stem[:index - 1]
    return stem


def drop_shipped(folder: Path, shipped: Path) -> list[str]:
    """Removes from `folder` the jars whose artifact pyspark's `shipped` folder has too."""
    names = {artifact_name(jar) for jar in shipped.glob("*.jar")}
    dropped = [jar for jar in folder.glob("*.jar") if artifact_name(jar) in names]
    for jar in dropped:
        jar.unlink()
    return sorted(jar.name for jar in dropped)


def main() -> None:
    newest = max(DELTA_BY_LINE, key=lambda line: tuple(map(int, line.split("."))))
    if sys.argv[1:] == ["--line"]:
        print(newest)
        return
    if sys.argv[1:] == ["--delta-pip"]:
        print(f"delta-spark=={DELTA_BY_LINE[newest]}")
        return
    import pyspark

    broker = JARS / "kafka-broker"
    fetch(BROKER, broker)
    spark = JARS / f"kafka-delta-spark-{pyspark.__version__}"
    fetch(connectors(pyspark.__version__), spark, Path(pyspark.__file__).parent / "jars",
          pinned(pyspark.__version__))
    print(broker)
    print(spark)


if __name__ == "__main__":
    main()
