"""The CDC pipelines, changes in, changelog joins (two, one stacked on the other), a Delta table
out through changelog.delta_merge:

- Delta's change data feed (examples/cdc_delta_pipeline.py): the target is the batch join of
  the tables' current rows after every round of commits;
- Debezium's topics on Kafka (examples/cdc_kafka_pipeline.py): however often the driver is
  killed while the changes keep coming, the target ends as the batch join of the topics' final
  snapshots: no row lost, none twice, no identity twice.

Delta's jars and Spark's Kafka connector resolve on one Spark line (scripts/kafka_jars.py), where
scripts/setup-kafka fetches them; scripts/test runs tests/pipeline there. The first test's
session runs in the test's process and needs Delta's jars, so no other session may have started
there first; the second runs its Spark in the driver's processes.
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import Iterator

import pytest
from pyspark.sql import SparkSession

from support.delta_session import delta_spark_session
from support.driver_process import RUN_SECONDS, DriverProcess, Kills, kill_at_random_moments
from support.kafka_pipeline import EXAMPLES, ON_KAFKA_LINE

from examples.cdc_delta.rounds import run_rounds
from examples.cdc_delta.topics import TOPICS, DebeziumProducer, Shop
from examples.kafka_delta.broker import KafkaBroker, producer_client, running_broker
from examples.kafka_delta.driver import Files, ProducerThread

pytestmark = [pytest.mark.slow, ON_KAFKA_LINE]

ROUNDS = 3  # every kind of change comes up, the hot customer deleted and inserted again too
KILLS = 6
PACED_ROUNDS = 2 * KILLS  # the producer's rounds are paced over the kills, two a kill
# Each topic in steps of this many messages, so that a driver starts with changes to read.
MAX_OFFSETS = 15
# A kill comes within this many seconds of the moment a run's query starts or ends a batch.
KILL_WITHIN_SECONDS = 3.0
CHANGELOG_JOIN = "ChangelogJoin input0"  # a changelog join in a physical plan


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
    """examples/cdc_kafka_pipeline.py --driver, in a process group of its own."""

    def __init__(self, bootstrap: str, files: Files, check: bool) -> None:
        command = [sys.executable, str(EXAMPLES / "cdc_kafka_pipeline.py"), "--driver",
                   "--bootstrap", bootstrap, "--work", str(files.work),
                   "--max-offsets", str(MAX_OFFSETS)]
        super().__init__(command + (["--check"] if check else []), files)


class KillPastAMerge:
    """For a driver's run, kills it the moment the target's log gains a MERGE of a micro-batch
    that the query's checkpoint has not committed: the window between delta_merge's commit and
    the query's, after which the restarted query runs the batch again and Delta skips its MERGE.
    Notes the batches killed in that window (the query may commit before the kill lands)."""

    def __init__(self, files: Files) -> None:
        self.files = files
        self.landed: list[int] = []
        self.tries = 0

    def __call__(self, driver: DriverProcess) -> None:
        self.tries += 1
        log = self.files.table / "_delta_log"
        version = 1 + max((int(f.stem) for f in log.glob("*.json")), default=-1)
        deadline = time.monotonic() + RUN_SECONDS
        while True:
            commit = log / f"{version:020d}.json"
            if commit.exists():
                batch = next((action["txn"]["version"] for action in map(
                    json.loads, commit.read_text().splitlines()) if "txn" in action), None)
                if batch is not None and not self._committed(batch):
                    break
                version += 1
                continue
            driver.ensure_alive()
            assert time.monotonic() < deadline, driver.log_tail()
            time.sleep(0.002)
        driver.kill()
        if not self._committed(batch):
            self.landed.append(batch)

    def _committed(self, batch: int) -> bool:
        return (self.files.checkpoint / "commits" / str(batch)).exists()


class KillsBetweenRounds(Kills):
    """Kills that note the producer's rounds so far at each."""

    def __init__(self, total: int, shop: Shop) -> None:
        super().__init__(total)
        self.shop = shop
        self.rounds_at: list[int] = []

    def add(self) -> None:
        self.rounds_at.append(self.shop.rounds)
        super().add()


@pytest.fixture
def cdc_broker(tmp_path) -> Iterator[KafkaBroker]:
    with running_broker(tmp_path / "broker", TOPICS) as running:
        yield running


def test_the_target_holds_every_change_once_however_often_the_driver_is_killed(cdc_broker,
                                                                              tmp_path):
    """Kills the driver KILLS times while the producer sends rounds of changes, at most two
    rounds ahead of the kills, restarting it on the same checkpoint each time: at a random
    moment of its first micro-batch or just after it, and every third time the moment a MERGE
    has committed a batch the query has not. The last run starts while the producer ends, and
    reads every message once the stop file is there."""
    files = Files(tmp_path / "work")
    files.work.mkdir()
    shop = Shop(seed=5)
    kills = KillsBetweenRounds(KILLS, shop)
    producer = ProducerThread(
        DebeziumProducer(producer_client(cdc_broker.bootstrap), shop, PACED_ROUNDS,
                         gate=kills.gate).run, files)
    started = time.monotonic()
    producer.start()
    past_a_merge = KillPastAMerge(files)
    runs_that_committed = kill_at_random_moments(
        lambda: CdcDriver(cdc_broker.bootstrap, files, check=False), files, kills,
        random.Random(7), KILL_WITHIN_SECONDS, past_a_merge)
    final = CdcDriver(cdc_broker.bootstrap, files, check=True)
    counts = producer.finish(RUN_SECONDS)
    assert final.wait(RUN_SECONDS) == 0, final.log_tail()
    numbers = json.loads((files.work / "check.json").read_text())
    print(f"kills: {kills.done} ({runs_that_committed} after their run ended a micro-batch), "
          f"the producer's rounds at each: {kills.rounds_at} of {shop.rounds}; killed past "
          f"the MERGE of batches {past_a_merge.landed} in {past_a_merge.tries} tries; "
          + "; ".join(final.log_tail(5).splitlines()) + f"; {time.monotonic() - started:.0f} s")
    assert numbers["same"], numbers
    assert numbers["expected"] > 0 and numbers["padded"] > 0
    assert numbers["runs"] >= KILLS + 1
    # A third of the kills come after a run's first micro-batch, a third past a MERGE (before
    # the query's commit, so before the batch reports its progress).
    assert runs_that_committed >= KILLS // 3
    # A run killed between its MERGE's commit and the query's: the next one went on.
    assert past_a_merge.landed, past_a_merge.tries
    # Every kill but the last came with changes still to come: rounds between each two.
    assert all(b > a for a, b in zip(kills.rounds_at, kills.rounds_at[1:]))
    assert all(counts[kind] > 0 for kind in ("u", "d", "orders to another customer",
                                              "items to another order", "ids inserted again"))
    assert numbers["transactions"] == numbers["distinct_transactions"]
    assert numbers["changelog_joins"] == 2
