"""Fetches, at set-up, the jars of the Kafka example (examples/kafka_delta_pipeline.py) with Maven
into target/jars/, so that nothing is downloaded when it runs:

- target/jars/kafka-broker/: Apache Kafka's broker, run in KRaft mode (a combined broker and
  controller) as a process of its own, plus an SLF4J binding so that it writes a log.
- target/jars/kafka-delta-spark-<pyspark version>/: Spark's Kafka connector and Delta Lake for the
  pyspark this interpreter imports, less every jar that pyspark already ships (whatever the
  version: pyspark's own is the one Spark runs with, and a second copy is only shadowed).

A session gets the second folder through `spark.jars`. Not `spark.jars.packages`: Ivy does not
resolve this tree dependably (DESIGN.md), Maven does. Each folder is filled once; a folder whose
stamp lists other coordinates is filled anew.

    .venv-4.1/bin/python scripts/kafka_jars.py      # prints the two folders
    python3 scripts/kafka_jars.py --line            # the Spark line the example runs on
    python3 scripts/kafka_jars.py --delta-pip       # delta-spark's Python package for that line
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JARS = ROOT / "target" / "jars"

# Kafka 4 brokers run on Java 17; 4.1.1 is the release checked end to end here (DESIGN.md).
KAFKA_VERSION = "4.1.1"
BROKER = [f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}", "org.slf4j:slf4j-simple:1.7.36"]
# The Delta Lake release for each Spark line whose connector and Delta jars both resolve.
DELTA_BY_LINE = {"4.1": "4.3.1"}
STAMP = "coordinates.txt"


def connectors(spark_version: str) -> list[str]:
    line = ".".join(spark_version.split(".")[:2])
    if line not in DELTA_BY_LINE:
        raise SystemExit(f"The Kafka example runs on Spark {', '.join(DELTA_BY_LINE)}, where "
                         f"Spark's Kafka connector and Delta Lake both resolve; this is "
                         f"pyspark {spark_version}. Use the line's venv: "
                         f"SPARK_LINE={next(iter(DELTA_BY_LINE))} scripts/setup-kafka")
    return [f"org.apache.spark:spark-sql-kafka-0-10_2.13:{spark_version}",
            f"io.delta:delta-spark_2.13:{DELTA_BY_LINE[line]}"]


def pom(coordinates: list[str]) -> str:
    dependencies = "".join(
        f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
        f"<version>{version}</version></dependency>\n    "
        for group, artifact, version in (c.split(":") for c in coordinates))
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.github.spark-multijoin</groupId>
  <artifactId>kafka-example-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    {dependencies}</dependencies>
</project>
"""


def fetch(coordinates: list[str], folder: Path, shipped: Path | None = None) -> None:
    """Copies `coordinates` and their runtime dependencies into `folder`, less the artifacts in
    the folder `shipped`, unless its stamp says they are there."""
    stamp = "\n".join(coordinates) + "\n"
    if (folder / STAMP).is_file() and (folder / STAMP).read_text() == stamp:
        return
    shutil.rmtree(folder, ignore_errors=True)
    build = JARS / f".{folder.name}-pom"
    build.mkdir(parents=True, exist_ok=True)
    (build / "pom.xml").write_text(pom(coordinates))
    subprocess.run(["mvn", "-q", "-B", "-f", str(build / "pom.xml"),
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
    fetch(connectors(pyspark.__version__), spark, Path(pyspark.__file__).parent / "jars")
    print(broker)
    print(spark)


if __name__ == "__main__":
    main()
