"""What the pipelines' kill tests share (tests/pipeline): an example's streaming driver as a
process of its own, which a test kills (its whole process group, so its JVM too) and restarts
on the same checkpoint; the count of kills that a producer keeps pace with; and waiting for a
driver's query to start or to finish a micro-batch, read from the files every driver keeps
(examples/kafka_delta/driver.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import random
import threading
import time
from typing import Callable

import pytest

from examples.kafka_delta.broker import die_with_parent
from examples.kafka_delta.driver import Files
from examples.kafka_delta.pipeline import read_progress

RUN_SECONDS = 600  # a bound against a hang, not a target


class DriverProcess:
    """`command`, a driver working in `files.work`, in a process group of its own."""

    def __init__(self, command: list[str], files: Files) -> None:
        self.files = files
        self.output = files.work / f"driver-{files.run_count()}-{time.monotonic_ns()}.log"
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
        """The log's first Python traceback or error line, if any (a failure's cause, which a
        JVM's shutdown stack traces bury), then its last `lines`."""
        text = self.output.read_text().splitlines()
        first = next((i for i, line in enumerate(text)
                      if line.startswith("Traceback") or "Error:" in line), None)
        cause = [] if first is None else text[first:first + 30] + ["..."]
        return "\n".join(cause + text[-lines:])


class Kills:
    """Counts the kills, for a producer to keep pace with: `gate` holds its chunk of the
    changes back until its share of the `total` kills is done, so that the kills land while
    changes are still coming."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self._changed = threading.Condition()

    def add(self) -> None:
        with self._changed:
            self.done += 1
            self._changed.notify_all()

    def gate(self, chunk: int, chunks: int) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self.done >= self.total * chunk // chunks, RUN_SECONDS)


def batches_reported(files: Files) -> int:
    return len(read_progress(files.progress))


def wait_until_running(files: Files, driver: DriverProcess, runs_before: int) -> None:
    """Until the driver's query has started (a run more than `runs_before` noted)."""
    deadline = time.monotonic() + RUN_SECONDS
    while files.run_count() <= runs_before:
        driver.ensure_alive()
        assert time.monotonic() < deadline, driver.log_tail()
        time.sleep(0.05)


def wait_for_a_batch(files: Files, driver: DriverProcess, reported_before: int) -> None:
    """Until a micro-batch past the `reported_before` first ones has reported its progress."""
    deadline = time.monotonic() + RUN_SECONDS
    while batches_reported(files) <= reported_before:
        driver.ensure_alive()
        assert time.monotonic() < deadline, driver.log_tail()
        time.sleep(0.05)


def kill_at_random_moments(start: Callable[[], DriverProcess], files: Files, kills: Kills,
                           rng: random.Random, within_seconds: float,
                           past_a_merge: Callable[[DriverProcess], None] | None = None) -> int:
    """Starts a driver with `start` and SIGKILLs it, `kills.total` times, each run on the
    checkpoint the last one left: at a random moment within `within_seconds` of its query's
    start (planning its first micro-batch, loading the state, writing the table, committing),
    or, every other time, of the end of its first micro-batch, so that the query moves on
    between kills. With `past_a_merge`, every third kill comes instead the moment that wait
    returns (a sink's write committed, the query's commit of the batch not yet). Returns how
    many runs had finished a micro-batch when killed."""
    runs_that_committed = 0
    while kills.done < kills.total:
        reported, runs = batches_reported(files), files.run_count()
        driver = start()
        wait_until_running(files, driver, runs)
        if past_a_merge is not None and kills.done % 3 == 2:
            past_a_merge(driver)
        else:
            if kills.done % 2:
                wait_for_a_batch(files, driver, reported)
            time.sleep(rng.uniform(0, within_seconds))
        driver.kill()
        kills.add()
        runs_that_committed += batches_reported(files) > reported
    return runs_that_committed
