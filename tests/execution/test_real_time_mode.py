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

from multijoin_bench.latency.run import compiled_writer
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


def _rows_read(checkpoint: Path, batch: int) -> list[int]:
    """Per input, how many of its rows batches 0 to `batch` read: the end offsets that the offset
    log records for `batch` (a version line, the batch's metadata, then one line per source, in
    the plan's order: inputs 0, 1, 2), each a memory stream's `{"0": rows}`."""
    lines = (checkpoint / "offsets" / str(batch)).read_text().splitlines()
    offsets = [json.loads(line) for line in lines[2:]]
    assert len(offsets) == INPUTS and all(list(o) == ["0"] for o in offsets), lines[2:]
    return [int(o["0"]) for o in offsets]


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
    # A long batch ends on time, not once it has read what was there (its source tasks stop at
    # the batch's end time): on a loaded machine batch 0 leaves some or all of round 0 to batch 1.
    # The batch running at the kill holds what the committed ones did not read, so which rows
    # come out again is read from the offset log, not assumed to be round 1's.
    read = _rows_read(checkpoint, committed_at_kill - 1)

    restarted = _driver(tmp_path / "rounds.json", 3, checkpoint, output, classes, log)
    try:
        _await(lambda: set(_received(output)) == set(expected[2])
               and committed(checkpoint) > committed_at_kill, restarted, log)
    finally:
        _kill(restarted)
    received = _received(output)
    # Each input's rows in the order the driver adds them, which the memory streams' offsets count.
    added = [[value for round_ in rounds for value in round_[i]] for i in range(INPUTS)]
    assert all(len(set(values)) == len(values) for values in added), "a row is its value"
    in_committed = [set(values[:n]) for values, n in zip(added, read)]
    # Once if all its rows were in batches committed at the kill; again if the first driver put it
    # out (all of rounds 0 and 1 was out at the kill) with a row of the batch the kill interrupted,
    # which the restart runs again; once if it has a row of round 2, which only the restart adds.
    wanted = Counter({row: 2 if row in expected[1] and not all(
        row[1 + i] in in_committed[i] for i in range(INPUTS)) else 1 for row in expected[2]})
    assert received == wanted, (
        read, {row: (received[row], wanted[row]) for row in received.keys() | wanted.keys()
               if received[row] != wanted[row]})
    assert expected[2], "the data should join"
