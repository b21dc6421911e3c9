"""For the Kafka pipeline's tests (tests/pipeline): a broker per test, and the example's
streaming driver as a process of its own, which a test can kill (its whole process group, so its
JVM too) and restart.

The tests run on the Spark line the example runs on (its connector and Delta jars resolve there
only), in that line's venv with the jars that scripts/setup-kafka fetched; scripts/test runs
them there. On another line they are skipped, saying so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest

from examples.kafka_delta.broker import KafkaBroker, die_with_parent
from examples.kafka_delta.driver import Files
from examples.kafka_delta.events import TOPICS
from scripts.kafka_jars import DELTA_BY_LINE

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

KAFKA_LINES = tuple(DELTA_BY_LINE)
LINE = ".".join(pyspark.__version__.split(".")[:2])


# Applied to every test here (`pytestmark = ON_KAFKA_LINE`).
ON_KAFKA_LINE = pytest.mark.skipif(
    LINE not in KAFKA_LINES,
    reason=f"the Kafka example runs on Spark {', '.join(KAFKA_LINES)} (this is "
           f"{pyspark.__version__}); scripts/test runs it there")


@pytest.fixture
def broker(tmp_path: Path):
    """A broker with the example's topics, stopped after the test."""
    with KafkaBroker(tmp_path / "broker") as running:
        running.create_topics(TOPICS)
        yield running


class Driver:
    """examples/kafka_delta_pipeline.py --driver, in a process group of its own."""

    def __init__(self, bootstrap: str, files: Files, max_offsets: int | None,
                 check: bool) -> None:
        self.files = files
        self.output = files.work / f"driver-{files.run_count()}-{time.monotonic_ns()}.log"
        command = [sys.executable, str(EXAMPLES / "kafka_delta_pipeline.py"), "--driver",
                   "--bootstrap", bootstrap, "--work", str(files.work)]
        command += ["--max-offsets", str(max_offsets)] if max_offsets else []
        command += ["--check"] if check else []
        with self.output.open("w") as out:
            # Dies with the test's process too (its JVM follows: pyspark's exits with it).
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True,
                                            preexec_fn=die_with_parent)

    def kill(self) -> None:
        """SIGKILL to the driver's whole group: Python, its JVM and whatever they started."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()

    def wait(self, timeout_seconds: float) -> int:
        try:
            return self.process.wait(timeout_seconds)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the driver ran over {timeout_seconds:.0f} s:\n{self.log_tail()}")

    def ensure_alive(self) -> None:
        if self.process.poll() is not None:
            pytest.fail(f"the driver exited with {self.process.returncode}:\n{self.log_tail()}")

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.output.read_text().splitlines()[-lines:])
