"""The Kafka pipeline (examples/kafka_delta_pipeline.py) against a real broker: its Delta table is
the batch query's answer, late rows are dropped as many as were produced, and the table holds
every row exactly once however often the driver is killed.

Each test runs the example's driver as a process of its own and produces the events from here
while it runs. The edges ride along in the first test: the topics have 3 and 4 partitions and
the query 2 shuffle partitions, the reviews topic stays empty for a while, the producer pauses
(the watermark stalls with it), and maxOffsetsPerTrigger splits the events into many
micro-batches.
"""

from __future__ import annotations

import json
import random
from importlib.metadata import version

import pyspark
import pytest

from support.driver_process import RUN_SECONDS, Kills, kill_at_random_moments
from support.kafka_pipeline import ON_KAFKA_LINE, Driver, broker  # noqa: F401 (a fixture)

from examples.kafka_delta.broker import cluster_id
from examples.kafka_delta.driver import Files, ProducerThread
from examples.kafka_delta.events import TOPICS, EventProducer, Scenario
from scripts.kafka_jars import DELTA_BY_LINE
from scripts.spark_jars import spark_lines

pytestmark = [pytest.mark.slow, ON_KAFKA_LINE]

SHUFFLE_PARTITIONS = 2  # the example session's
# The answer test's events, fewer than the example's, in steps of 10 offsets per topic: many
# micro-batches. The producer keeps 8 minutes of event time ahead of the query, so that a
# backlog the steps split spans less than the watermark delay less the events' disorder.
ANSWER_SCENARIO = Scenario(orders=60, hot_key=37)
MAX_OFFSETS = 10
LEAD_SECONDS = 8 * 60
KILLS = 6
# A kill comes within this many seconds of the moment a run's query starts or commits a batch.
KILL_WITHIN_SECONDS = 3.0


def checked(files: Files, driver: Driver) -> dict:
    assert driver.wait(RUN_SECONDS) == 0, driver.log_tail()
    return json.loads((files.work / "check.json").read_text())


def test_the_table_is_the_batch_answer_and_the_late_rows_are_dropped(broker, tmp_path):
    files = Files(tmp_path / "work")
    files.work.mkdir()
    driver = Driver(broker.bootstrap, files, MAX_OFFSETS, check=True)
    producer = ProducerThread(EventProducer(broker.bootstrap, ANSWER_SCENARIO, files,
                                            lead_seconds=LEAD_SECONDS).run, files)
    producer.start()
    produced = producer.finish(RUN_SECONDS)
    numbers = checked(files, driver)
    print(driver.log_tail(8))

    assert numbers["same"], numbers
    assert numbers["expected"] > 0 and numbers["null_padded"] > 0
    assert numbers["dropped_by_watermark"] == numbers["late_rows"] == produced.late > 0
    # The edges: Kafka's partitions are not the shuffle's, the data took many micro-batches,
    # reviews came in only after some of them, and the producer paused part-way.
    assert SHUFFLE_PARTITIONS not in TOPICS.values()
    assert numbers["batches_with_rows"] >= 10
    assert numbers["first_batch_with_reviews"] >= 2
    assert produced.paused_seconds > 0
    log = numbers["delta_log"]
    assert log["transactions"] == log["distinct_transactions"] == numbers["batches"]
    assert numbers["changelog_files"] > 0


def test_every_row_lands_once_however_often_the_driver_is_killed(broker, tmp_path):
    """Kills the driver KILLS times while the events are produced, restarting it on the same
    checkpoint each time: at a random moment of its first micro-batch (planning it, loading the
    state, writing the table, committing), or, every other time, of the next one, so that the
    query moves on between kills."""
    files = Files(tmp_path / "work")
    files.work.mkdir()
    kills = Kills(KILLS)
    scenario = Scenario(orders=150, hot_key=57, late_rows=8)
    producer = ProducerThread(EventProducer(broker.bootstrap, scenario, files, gate=kills.gate,
                                            lead_seconds=None).run, files)
    producer.start()
    runs_that_committed = kill_at_random_moments(
        lambda: Driver(broker.bootstrap, files, None, check=False), files, kills,
        random.Random(5), KILL_WITHIN_SECONDS)
    final = Driver(broker.bootstrap, files, None, check=True)
    producer.finish(RUN_SECONDS)
    numbers = checked(files, final)
    print(f"kills: {kills.done} ({runs_that_committed} after their run committed a batch); "
          f"rows expected {numbers['expected']}, found {numbers['found']}, duplicated "
          f"{numbers['duplicated']}, missing {numbers['missing']}, unexpected "
          f"{numbers['unexpected']}")
    assert numbers["same"], numbers
    assert numbers["runs"] >= KILLS + 1
    assert runs_that_committed >= KILLS // 2
    log = numbers["delta_log"]
    assert log["transactions"] == log["distinct_transactions"]


def test_the_venv_holds_delta_spark_beside_the_lines_own_pyspark():
    """The stack the example runs on: delta-spark's Python package of the Delta release whose
    jars the session loads, beside the pyspark release the line is built against (pip kept it,
    as the project asks for a range)."""
    line = ".".join(pyspark.__version__.split(".")[:2])
    assert version("delta-spark") == DELTA_BY_LINE[line]
    assert pyspark.__version__ == spark_lines()[line]


def test_a_cluster_id_never_reads_as_an_option():
    # One id in 64 would start with a dash: the old ids failed this within a few hundred.
    ids = [cluster_id() for _ in range(2000)]
    assert not [made for made in ids if made.startswith("-")]
    assert {len(made) for made in ids} == {22}
