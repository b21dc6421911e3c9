"""For the Kafka pipeline's tests (tests/pipeline): a broker per test, and the example's
streaming driver as a process of its own, which a test can kill (its whole process group, so its
JVM too) and restart (tests/support/driver_process.py).

The tests run on the Spark line the example runs on (its connector and Delta jars resolve there
only), in that line's venv with the jars that scripts/setup-kafka fetched; scripts/test runs
them there. On another line they are skipped, saying so.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyspark
import pytest

from examples.kafka_delta.broker import running_broker
from examples.kafka_delta.driver import Files
from examples.kafka_delta.events import TOPICS
from scripts.kafka_jars import DELTA_BY_LINE
from support.driver_process import DriverProcess

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
    with running_broker(tmp_path / "broker", TOPICS) as running:
        yield running


class Driver(DriverProcess):
    """examples/kafka_delta_pipeline.py --driver, in a process group of its own."""

    def __init__(self, bootstrap: str, files: Files, max_offsets: int | None,
                 check: bool) -> None:
        command = [sys.executable, str(EXAMPLES / "kafka_delta_pipeline.py"), "--driver",
                   "--bootstrap", bootstrap, "--work", str(files.work)]
        command += ["--max-offsets", str(max_offsets)] if max_offsets else []
        command += ["--check"] if check else []
        super().__init__(command, files)
