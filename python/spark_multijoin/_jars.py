"""Which of the package's jars, one per supported Spark line, the Spark about to run needs.

Spark's internals change between minor lines, so a jar runs only on the line it was compiled
against. The jar must be chosen before the JVM starts (it goes into `spark.jars`), so the line is
read from what will start it: the JVM already running in this process if there is one, else the
Spark installation pyspark launches (SPARK_HOME, or pyspark's own folder), by the version in the
name of its spark-core jar. pyspark's own version can differ from both (another SPARK_HOME, or a
Spark Connect client). The extension checks the line again when the session loads it.
"""

from __future__ import annotations

import re
from pathlib import Path

_JAR_NAME = re.compile(r"spark-multijoin_(\d+\.\d+)_2\.13\.jar")
_SPARK_CORE = re.compile(r"spark-core_2\.13-(\d+\.\d+\.\d+)[^/]*\.jar")


def bundled_jars() -> dict[str, Path]:
    """The jars this package carries, by the Spark line ("4.2") each is built for."""
    folder = Path(__file__).parent / "jars"
    found = {}
    for jar in folder.glob("spark-multijoin_*_2.13.jar"):
        match = _JAR_NAME.fullmatch(jar.name)
        if match:
            found[match.group(1)] = jar
    if not found:
        raise FileNotFoundError(
            "spark_multijoin carries no jar: it was installed without building the Scala "
            "extension. Reinstall it with `pip install .` from the repository (needs Java 17 "
            "and Maven).")
    return found


def line_of(version: str) -> str:
    """The minor line ("4.2") of a Spark version ("4.2.0", "4.2.1-SNAPSHOT")."""
    match = re.match(r"(\d+)\.(\d+)", version)
    if not match:
        raise ValueError(f"not a Spark version: {version!r}")
    return f"{match.group(1)}.{match.group(2)}"


def running_spark_version() -> tuple[str, str]:
    """The version of the Spark a session of this process runs on, and where it was read."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context  # type: ignore[attr-defined]
    if context is not None:
        return context.version, "the running SparkContext"
    from pyspark.find_spark_home import _find_spark_home

    home = Path(_find_spark_home())
    cores = sorted((home / "jars").glob("spark-core_2.13-*.jar"))
    versions = [match.group(1) for match in map(_SPARK_CORE.fullmatch, (c.name for c in cores))
                if match]
    if versions:
        return versions[0], f"{home / 'jars'}"
    import pyspark

    return pyspark.__version__, "pyspark.__version__"


def jar_for(version: str, source: str = "") -> Path:
    """The bundled jar for Spark `version`; an error naming the supported lines if none."""
    jars = bundled_jars()
    line = line_of(version)
    if line not in jars:
        supported = ", ".join(sorted(jars, key=lambda known: tuple(map(int, known.split(".")))))
        where = f" (read from {source})" if source else ""
        raise RuntimeError(
            f"spark-multijoin runs on Spark {supported}; this is Spark {version}{where}. "
            f"Install a pyspark of a supported line, or point SPARK_HOME at one.")
    return jars[line]
