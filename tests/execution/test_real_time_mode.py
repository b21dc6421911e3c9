"""Spark 4.3's real-time mode: a driver killed within a long batch. The restart re-runs that batch
from its start offsets, so nothing is lost, the rows of committed batches come out once, and
those the killed batch had put out come out again (docs/real-time-mode.md). The rest of the
mode's tests are Scala's (RealTimeMultiJoinSuite): this one needs a process to kill."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest
from pyspark.sql import functions as F

from bench.latency import compiled_writer
from support.real_time_driver import committed

DRIVER = Path(__file__).resolve().parents[1] / "support" / "real_time_driver.py"
INPUTS = 3


def _driver(rounds: Path, added: int, checkpoint: Path, output: Path, classes: Path,
            log: Path) -> subprocess.Popen:
    command = [sys.executable, str(DRIVER), str(rounds), str(added), str(checkpoint),
               str(output), str(classes)]
    with log.open("a") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def _kill(driver: subprocess.Popen) -> None:
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()


def _received(output: Path) -> Counter:
    """The rows the sink got, (k, v0, v1, v2) each, counted."""
    return Counter(tuple(map(int, line.split(",")[:INPUTS + 1])) for f in output.glob("*.csv")
                   for line in f.read_text().splitlines())


def _await(condition: Callable[[], bool], driver: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 180
    while not condition():
        assert driver.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)


def _batch_answer(spark, rounds: list[list[list[int]]]) -> Counter:
    """The batch query's rows over `rounds`: the driver's join, on the same ints."""
    frames = [spark.createDataFrame([(value,) for round_ in rounds for value in round_[i]],
                                    "value int")
              .select((F.col("value") % 5).alias(f"k{i}"), F.col("value").alias(f"v{i}"))
              for i in range(INPUTS)]
    result = frames[0]
    for i, frame in enumerate(frames[1:], start=1):
        result = result.join(frame, result["k0"] == frame[f"k{i}"])
    return Counter(map(tuple, result.select("k0", *[f"v{i}" for i in range(INPUTS)]).collect()))


@pytest.mark.slow
def test_a_driver_killed_within_a_long_batch_loses_nothing_and_repeats_only_that_batch(
        spark, tmp_path):
    if not spark.version.startswith("4.3."):
        pytest.skip("the multi-join runs in real-time mode from Spark 4.3")
    rng = random.Random(39)
    rounds = [[[rng.randrange(1_000_000) for _ in range(5)] for _ in range(INPUTS)]
              for _ in range(3)]
    expected = [_batch_answer(spark, rounds[:last + 1]) for last in range(3)]
    (tmp_path / "rounds.json").write_text(json.dumps(rounds))
    classes = compiled_writer(tmp_path / "classes")
    checkpoint, output, log = tmp_path / "ckpt", tmp_path / "out", tmp_path / "driver.log"
    output.mkdir()

    # Round 0, then round 1 once batch 0 has committed; killed once round 1's rows are out.
    first = _driver(tmp_path / "rounds.json", 1, checkpoint, output, classes, log)
    try:
        _await(lambda: set(_received(output)) == set(expected[1]), first, log)
    finally:
        _kill(first)
    committed_at_kill = committed(checkpoint)
    assert committed_at_kill >= 1

    restarted = _driver(tmp_path / "rounds.json", 3, checkpoint, output, classes, log)
    try:
        _await(lambda: set(_received(output)) == set(expected[2])
               and committed(checkpoint) > committed_at_kill, restarted, log)
    finally:
        _kill(restarted)
    received = _received(output)
    # Normally the second batch is still running at the kill, and its rows come out again.
    again = 2 if committed_at_kill == 1 else 1
    assert all(received[row] == 1 for row in expected[0]), received
    assert all(received[row] == again for row in expected[1] - expected[0]), (again, received)
    assert all(received[row] == 1 for row in expected[2] - expected[1]), received
    assert expected[2], "the data should join"
