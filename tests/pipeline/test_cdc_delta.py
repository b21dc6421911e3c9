"""The CDC pipeline (examples/cdc_delta_pipeline.py): the change data feeds of three Delta tables
in, two changelog joins (one stacked on the other), a Delta table out through
changelog.delta_merge. The target must be the batch join of the tables' current rows after
every round of commits, and at the end however often the driver is killed while commits keep
coming: no row lost, none twice, no identity twice.

Delta's jars resolve on one Spark line (scripts/kafka_jars.py), where scripts/setup-kafka
fetches them; scripts/test runs tests/pipeline there. The producer's session (and the first
test's query) runs in the test's process and needs Delta's jars, so no other session may have
started there first.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from typing import Iterator

import pytest
from pyspark.sql import SparkSession

from support.delta_session import delta_spark_session
from support.driver_process import RUN_SECONDS, DriverProcess, Kills, kill_at_random_moments
from support.kafka_pipeline import EXAMPLES, ON_KAFKA_LINE

from examples.cdc_delta.changes import Producer, create_tables
from examples.cdc_delta.job import compare
from examples.cdc_delta.rounds import run_rounds
from examples.kafka_delta.checks import delta_log
from examples.kafka_delta.driver import Files

pytestmark = [pytest.mark.slow, ON_KAFKA_LINE]

ROUNDS = 4  # every kind of change comes up, the hot customer deleted and inserted again too
KILLS = 6
PACED_ROUNDS = 2 * KILLS  # the producer's rounds are paced over the kills, two a kill
PAUSE_SECONDS = 0.5  # between two rounds, leaving the cores to the driver a while
# A kill comes within this many seconds of the moment a run's query starts or ends a batch.
KILL_WITHIN_SECONDS = 3.0
CHANGELOG_JOIN = "ChangelogMultiJoin input0"  # a changelog join in a physical plan


@pytest.fixture(scope="module")
def delta_spark() -> Iterator[SparkSession]:
    yield from delta_spark_session("cdc-delta-tests")


def test_the_target_is_the_batch_join_after_every_round(delta_spark, tmp_path):
    """Each round's commits are read in one micro-batch (by a run that restarts from the
    checkpoint), so the target is compared after every micro-batch."""
    rounds = []
    for done in run_rounds(delta_spark, tmp_path / "work", ROUNDS):
        print(f"round {done.number}: {done.commits} commits, {done.batches} micro-batch(es), "
              f"{done.input_rows} change rows, {done.comparison.line()}, {done.seconds:.1f} s")
        assert done.comparison.same, (done.number, done.comparison)
        rounds.append(done)
    assert [done.batches for done in rounds] == [1] * ROUNDS
    assert all(done.comparison.padded > 0 for done in rounds)
    assert rounds[-1].plan.count(CHANGELOG_JOIN) == 2, rounds[-1].plan


class CdcDriver(DriverProcess):
    def __init__(self, files: Files) -> None:
        super().__init__([sys.executable, str(EXAMPLES / "cdc_delta_pipeline.py"), "--driver",
                          "--work", str(files.work)], files)


class ProducerThread(threading.Thread):
    """Commits rounds until the last kill, at most two rounds ahead of the kills (round i once
    i // 2 kills are done), so that every kill lands while commits are still coming."""

    def __init__(self, producer: Producer, kills: Kills) -> None:
        super().__init__(name="producer", daemon=True)
        self.producer, self.kills = producer, kills
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            number = 0
            while self.kills.done < self.kills.total:
                self.kills.gate(number, PACED_ROUNDS)
                self.producer.round()
                number += 1
                time.sleep(PAUSE_SECONDS)
        except BaseException as error:  # reported by finish()
            self.error = error

    def finish(self) -> None:
        self.join(RUN_SECONDS)
        if self.error is not None:
            raise self.error
        assert not self.is_alive(), "the producer did not finish"


class KillsBetweenCommits(Kills):
    """Kills that note the producer's commits so far at each."""

    def __init__(self, total: int, producer: Producer) -> None:
        super().__init__(total)
        self.producer = producer
        self.commits_at: list[int] = []

    def add(self) -> None:
        self.commits_at.append(self.producer.commits)
        super().add()


def test_the_target_holds_every_change_once_however_often_the_driver_is_killed(delta_spark,
                                                                              tmp_path):
    files = Files(tmp_path / "work")
    files.work.mkdir()
    create_tables(delta_spark, files.work / "sources")
    producer = Producer(delta_spark, files.work / "sources", seed=5)
    kills = KillsBetweenCommits(KILLS, producer)
    committing = ProducerThread(producer, kills)
    started = time.monotonic()
    committing.start()
    runs_that_committed = kill_at_random_moments(
        lambda: CdcDriver(files), files, kills, random.Random(7), KILL_WITHIN_SECONDS)
    # The last run starts while the producer ends its round; it reads every commit once the
    # stop file is there, which is once the producer is done.
    final = CdcDriver(files)
    committing.finish()
    files.stop.touch()
    assert final.wait(RUN_SECONDS) == 0, final.log_tail()
    comparison = compare(delta_spark, files.work / "sources", files.table)
    log = delta_log(files.table)
    print(f"kills: {kills.done} ({runs_that_committed} after their run ended a micro-batch), "
          f"the producer's commits at each: {kills.commits_at} of {producer.commits} in "
          f"{producer.rounds} rounds; {comparison.line()}; target commits {log['commits']}, "
          f"{time.monotonic() - started:.0f} s")
    assert comparison.same, comparison
    assert files.run_count() >= KILLS + 1
    assert runs_that_committed >= KILLS // 2
    # Every kill came while the producer was still committing: some commits between two.
    assert all(b > a for a, b in zip(kills.commits_at, kills.commits_at[1:] + [producer.commits]))
    assert log["transactions"] == log["distinct_transactions"]
    assert files.plan.read_text().count(CHANGELOG_JOIN) == 2
