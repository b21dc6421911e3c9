"""Changes offered at a set rate, open loop, through the embedded Kafka broker, for the CDC sweep
(sweep.py). Both engines read the same topics, one a table with one partition (a table's changes
stay in order, as a Debezium connector keeps them), and neither can read a change before it is
released.

The initial load (the workload's first load) goes first, as fast as the broker takes it, with a
marker after it: the time that marker takes is the initial load's, reported apart. Then the
changes after the first load are released in stages, change j of a stage at the stage's start
plus j / rate, with a marker every MARKER_SECONDS in the first table's topic, among the changes:
no engine can overtake its backlog to reach a marker. A marker is an insert of a row of its own
(CdcWorkload.marker) that makes exactly one output row, and it is never folded with another
change. Its latency is its arrival at the sink (a JVM sink on each engine) less the moment the
producer handed it to the Kafka client. Each stage records the rate it actually offered.

The changes are made before a stage starts, so that making them costs nothing while it runs; the
workload keeps the keys of its one-million-change version (`cdc_workload`), and its changes run
on as long as the stages need.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass
from typing import Iterator

from multijoin_bench.cdc.model import CdcWorkload, Live
from multijoin_bench.cdc.workloads import changes

MARKER_BASE = 10**12
MARKER_SECONDS = 0.1
# The producer's batching: a change waits at most this long in the client before it is sent.
LINGER_MS = 2
# The producer releases what has come due this often: a busy loop would take a core.
TICK_SECONDS = 0.002


def topic(table_name: str) -> str:
    return f"cdc-{table_name}"


@dataclass(frozen=True)
class Stage:
    rate: float  # changes a second
    seconds: float


def encoded(event: dict) -> bytes:
    return json.dumps(event, separators=(",", ":")).encode()


class PacedFeed:
    """The workload's changes and markers, produced to `bootstrap`'s topics."""

    def __init__(self, bootstrap: str, workload: CdcWorkload) -> None:
        from confluent_kafka import Producer

        self.workload = workload
        self.topics = [topic(table.name) for table in workload.tables]
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": LINGER_MS,
                                  "queue.buffering.max.messages": 2_000_000,
                                  "queue.buffering.max.kbytes": 1_048_576})
        self.counts: dict = {}
        self.live: list[Live] = []
        self.events: Iterator[tuple[int, dict]] = changes(workload, self.counts, self.live)
        self.markers: list[tuple[int, float]] = []  # (row id, release time)

    def live_rows(self) -> dict[str, int]:
        """Each table's rows that the changes produced so far leave, the markers among them."""
        rows = {t.name: len(live.ids) for t, live in zip(self.workload.tables, self.live)}
        rows[self.workload.tables[0].name] += len(self.markers)
        return rows

    def marker(self) -> None:
        row_id = MARKER_BASE + len(self.markers)
        event = {"before": None, "after": self.workload.marker(row_id), "op": "c",
                 "source": {"lsn": -1}, "ts_ms": 0}
        self.markers.append((row_id, time.time()))
        self._send(0, encoded(event))

    def _send(self, table: int, value: bytes) -> None:
        while True:
            try:
                self.producer.produce(self.topics[table], value)
                return
            except BufferError:  # the client's queue is full: let it send
                self.producer.poll(0.01)

    def load(self) -> dict:
        """The first load, then a marker; the number of its changes and its seconds."""
        started = time.time()
        table, event = next(self.events)  # the generator counts the first load as it starts
        first = self.counts["first_load"]
        self._send(table, encoded(event))
        for table, event in itertools.islice(self.events, first - 1):
            self._send(table, encoded(event))
        self.marker()
        self.producer.flush()
        return {"changes": first, "produce_seconds": round(time.time() - started, 1),
                "marker": self.markers[-1][0]}

    def stage(self, stage: Stage) -> dict:
        """Releases `stage`'s changes on schedule, with its markers; what it offered."""
        values = [(table, encoded(event))
                  for table, event in itertools.islice(self.events, int(stage.rate * stage.seconds))]
        first_marker = len(self.markers)
        start = time.time()
        end, next_marker, released = start + stage.seconds, start, 0
        while time.time() < end:
            now = time.time()
            due = min(len(values), int((now - start) * stage.rate) + 1)
            for table, value in values[released:due]:
                self._send(table, value)
            released = max(released, due)
            while next_marker <= now:
                self.marker()
                next_marker += MARKER_SECONDS
            self.producer.poll(0)
            time.sleep(TICK_SECONDS)
        return {"rate": stage.rate, "seconds": stage.seconds, "start": start,
                "offered": released, "offered_rate": round(released / stage.seconds, 1),
                "markers": self.markers[first_marker:]}
