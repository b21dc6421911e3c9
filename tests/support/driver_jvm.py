"""The JVM options of every Spark driver the tests start, and the class-data archive among them.

They go in SPARK_SUBMIT_OPTS, which pyspark's launcher adds to the driver JVM's command line, so
that the drivers a test starts as processes of their own (the pipelines' kill tests, the
examples, the cross-line steps) get them too:

- a class-data archive of the venv's Spark (the JDK's application class-data sharing): a driver
  maps the classes it needs from one file instead of finding, reading and verifying each in
  pyspark's jars, which is a good part of a short Spark run, and the tests start many drivers;
- the serial collector: a test's driver holds a small heap, and on two cores a concurrent
  collector's threads compete with the tests for the CPU;
- the code cache tiered compilation gets by default: with the quick compiler alone (the tests'
  `-XX:TieredStopAtLevel=1`) the JVM reserves a fifth of it, which the classes Spark generates
  for many short queries fill, and the JVM then keeps flushing compiled code and compiling it
  again.

scripts/test writes each venv's archive (`python -m support.driver_jvm`, in that venv): a few
tests run with their driver dumping the classes it loaded when its JVM exits. A driver whose
archive is missing runs without one; one written for other jars is refused with a warning and the
driver runs without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pyspark import SparkContext

WRITE_KEY = "SPARK_MULTIJOIN_CLASS_ARCHIVE"
SUBMIT_OPTS_KEY = "SPARK_SUBMIT_OPTS"
JVM_OPTIONS = "-XX:+UseSerialGC -XX:ReservedCodeCacheSize=240m"
# Tests that together load most of what the suite's drivers load: a multi-join with Spark's chain
# and the batch query, an outer join, a changelog join. They run on every line in a full run.
TRAINING_TESTS = [
    "tests/execution/test_streaming_multi_join_exec.py::test_fan_out_state_is_the_input_rows",
    "tests/execution/test_outer_joins.py::"
    "test_on_clause_reading_a_padded_input_key_matches_the_batch_query",
    "tests/changelog/test_changelog_joins.py::test_right_join_of_a_join_with_an_outer_input",
]


def archive_of(venv: Path) -> Path:
    return venv / "spark-classes.jsa"


def submit_options(venv: Path) -> str:
    """The driver JVM options for a Spark of `venv`: with its archive if there is one, or, while
    the archive is being written, the option that writes it."""
    archive = archive_of(venv)
    if os.environ.get(WRITE_KEY) == "write":
        return f"{JVM_OPTIONS} -XX:ArchiveClassesAtExit={archive}.part"
    if archive.exists():
        return f"{JVM_OPTIONS} -XX:SharedArchiveFile={archive}"
    return JVM_OPTIONS


def use_for_this_venv() -> None:
    """Sets this process's SPARK_SUBMIT_OPTS for this venv's Spark, which the processes it starts
    inherit (those that run another venv's Spark set theirs with `submit_options`)."""
    os.environ[SUBMIT_OPTS_KEY] = submit_options(Path(sys.prefix))


def finish_writing() -> None:
    """After the session stopped, while writing: ends the driver's JVM (it exits when its input
    closes, and writes the archive as it does) and puts the archive in place whole."""
    if os.environ.get(WRITE_KEY) != "write" or SparkContext._gateway is None:
        return
    process = SparkContext._gateway.proc
    process.stdin.close()
    process.wait(timeout=300)
    archive = archive_of(Path(sys.prefix))
    Path(f"{archive}.part").replace(archive)


def main() -> int:
    """Writes this venv's archive by running TRAINING_TESTS (on every line: a full run)."""
    archive_of(Path(sys.prefix)).unlink(missing_ok=True)
    env = {**os.environ, WRITE_KEY: "write", "SPARK_MULTIJOIN_FULL_RUN": "1"}
    root = Path(__file__).resolve().parents[2]
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                           "--runs-spark=yes", *TRAINING_TESTS], cwd=root, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
