"""The example's events and their producer.

Four topics of one shop: orders, payments, shipments and reviews, each keyed by the order id, so
that Kafka's partitioner puts one order's events in one partition of each topic. The events are
made so that the streaming answer is the batch query's, whatever the micro-batches:

- *Out of order, within a bound.* Events go out in the order of their event time plus a random
  delay of up to `disorder_seconds`, and the producer keeps at most `lead_seconds` of event time
  ahead of what the query has read; together they stay under the query's watermark delay. So
  every event is ahead of the watermark when it arrives, and none of them is dropped. (The lead
  matters where `maxOffsetsPerTrigger` limits the batches: out of a backlog, Spark's Kafka source
  reads each partition in proportion to its backlog, not in step in event time, so that a
  partition's rows can fall behind another's by up to the backlog's span.)
- *Late rows.* Every so often the producer sends a row whose event time is behind the watermark
  the query has already reported (and so behind every event sent before it by more than the
  delay). The query reads it in a later micro-batch than the one that reported that watermark,
  so it is dropped whatever the batch boundaries. Each is marked with the Kafka header
  `late: 1`, which the batch query reads and the streaming query does not.
- *A hot key*: one order with many payments, shipments and reviews.
- *A topic empty for a while*: reviews come only for orders placed after `reviews_from`.
- *A pause*: the producer stops for `pause_seconds` part-way, and the watermark with it.
- *A final event per topic*, a day after everything and joining nothing, so that the watermark
  moves past every row and every null-padded row comes out.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Callable, Protocol

from .broker import producer_client

START = datetime(2026, 3, 1, tzinfo=timezone.utc)
# Each topic's partition count; the query's shuffle partitions are another number.
TOPICS = {"orders": 3, "payments": 3, "shipments": 4, "reviews": 3}
KEY_FIELDS = {"orders": "order_id", "payments": "pay_order", "shipments": "ship_order",
              "reviews": "review_order"}
TIME_FIELDS = {"orders": "order_time", "payments": "pay_time", "shipments": "ship_time",
               "reviews": "review_time"}
LATE_HEADER = "late"
MINUTE = 60


@dataclass(frozen=True)
class Event:
    topic: str
    key: int       # the order id
    time: int      # event time, whole seconds after START
    value: dict = field(hash=False)


@dataclass
class Scenario:
    orders: int = 300
    seconds_between_orders: int = 20
    disorder_seconds: int = 5 * MINUTE      # under the query's watermark delay
    reviews_from: float = 0.4               # no reviews before this share of the orders
    pause_at: float = 0.6                   # the producer pauses after this share of the events
    pause_seconds: float = 3.0
    late_rows: int = 24
    hot_key: int = 157
    seed: int = 11


def at(seconds: int) -> str:
    return (START + timedelta(seconds=seconds)).isoformat()


def epoch_millis(seconds: int) -> int:
    return int((START + timedelta(seconds=seconds)).timestamp() * 1000)


def seconds_of(timestamp: str) -> float:
    """Seconds after START of a timestamp as Spark's progress reports it."""
    return (datetime.fromisoformat(timestamp.replace("Z", "+00:00")) - START).total_seconds()


class EventMaker:
    """Makes the events, with ids unique per topic, so that every output row is distinct."""

    def __init__(self, first_id: int = 1) -> None:
        self._ids = {topic: first_id - 1 for topic in TOPICS}

    def make(self, topic: str, order: int, seconds: int, **fields) -> Event:
        self._ids[topic] += 1
        id_field = {"orders": None, "payments": "payment_id", "shipments": "shipment_id",
                    "reviews": "review_id"}[topic]
        value = {KEY_FIELDS[topic]: order, TIME_FIELDS[topic]: at(seconds), **fields}
        if id_field:
            value[id_field] = self._ids[topic]
        return Event(topic, order, seconds, value)


def order_events(make: EventMaker, rng: random.Random, order: int, placed: int,
                 reviewed: bool, copies: tuple[int, int, int] | None = None) -> list[Event]:
    """An order and what follows it: payments mostly within the 30 minutes the query joins
    (some later, some never), shipments mostly within the hour (some later, some never: those
    orders come out null-padded) and reviews within two hours. `copies` fixes how many."""
    events = [make.make("orders", order, placed, customer=f"c{order % 37}",
                        amount=round(rng.uniform(5, 300), 2))]
    payments, shipments, reviews = copies or (
        rng.choices([0, 1, 2], [1, 8, 1])[0], rng.choices([0, 1], [2, 8])[0],
        int(reviewed and rng.random() < 0.5))
    for _ in range(payments):
        late_payment = rng.random() < 0.05
        delay = rng.randint(30 * MINUTE + 1, 40 * MINUTE) if late_payment else rng.randint(
            0, 30 * MINUTE)
        events.append(make.make("payments", order, placed + delay, paid=1.0))
    for _ in range(shipments):
        delay = rng.randint(0, 60 * MINUTE) if rng.random() < 0.85 else rng.randint(
            60 * MINUTE + 1, 90 * MINUTE)
        events.append(make.make("shipments", order, placed + delay,
                                carrier=rng.choice(["dhl", "ups", "post"])))
    for _ in range(reviews):
        events.append(make.make("reviews", order, placed + rng.randint(0, 120 * MINUTE),
                                stars=rng.randint(1, 5)))
    return events


def send_order(scenario: Scenario) -> tuple[list[Event], list[Event]]:
    """The events in the order they go out, and the final events that follow them."""
    rng = random.Random(scenario.seed)
    make = EventMaker()
    events = []
    for order in range(scenario.orders):
        placed = order * scenario.seconds_between_orders + rng.randint(
            0, scenario.seconds_between_orders - 1)
        reviewed = order >= scenario.orders * scenario.reviews_from
        copies = (20, 6, 4) if order == scenario.hot_key else None
        events += order_events(make, rng, order, placed, reviewed, copies)
    events.sort(key=lambda e: e.time + rng.uniform(0, scenario.disorder_seconds))
    far = max(e.time for e in events) + 24 * 60 * MINUTE
    finals = [make.make(topic, -1 - index, far) for index, topic in enumerate(TOPICS)]
    return events, [Event(e.topic, e.key, e.time, {**e.value, **_placeholders(e.topic)})
                    for e in finals]


def _placeholders(topic: str) -> dict:
    return {"orders": {"customer": "-", "amount": 0.0}, "payments": {"paid": 0.0},
            "shipments": {"carrier": "-"}, "reviews": {"stars": 0}}[topic]


def late_event(make: EventMaker, rng: random.Random, watermark: float,
               sent_orders: list[Event], topics: list[str]) -> Event:
    """An event behind `watermark` by one second to 20 minutes, for an order placed up to half
    an hour before it, as if it had been held up on its way."""
    seconds = int(watermark) - rng.randint(1, 20 * MINUTE)
    near = [o for o in sent_orders if seconds - 30 * MINUTE <= o.time <= seconds]
    order = rng.choice(near or sent_orders)
    topic = rng.choice(topics)
    # A late order repeats an order id: were it not dropped, it would join that order's events.
    fields = {"customer": "late", "amount": 1.0} if topic == "orders" else _placeholders(topic)
    return make.make(topic, order.key, seconds, **fields)


@dataclass
class Produced:
    events: int = 0
    late: int = 0
    paused_seconds: float = 0.0


class QueryView(Protocol):
    """What the producer sees of the running query, in seconds after START, None before any."""

    def watermark(self) -> float | None:
        """The latest watermark the query reported."""

    def offsets_read(self) -> dict[tuple[str, int], int]:
        """Per topic and partition, the offset the query has read up to."""


class EventProducer:
    """Sends a scenario's events to a broker, in chunks, at most about `lead_seconds` of event
    time ahead of what the query has read (as a source feeding a running query would), so that
    the query reads them as they come and late rows can be made behind its watermark. What the
    query has read is told by the offsets it reports: its watermark stays at its start while a
    topic has had no rows, and its progress's event time statistics need not cover every input.

    `gate(chunk, chunks)` is called before each chunk and before the final events (the
    exactly-once test waits there for its kills, without a lead: its query is killed too often
    to keep up, and reads without `maxOffsetsPerTrigger`)."""

    def __init__(self, bootstrap: str, scenario: Scenario, query: QueryView,
                 gate: Callable[[int, int], None] = lambda chunk, chunks: None,
                 chunks: int = 60, lead_seconds: int | None = 5 * MINUTE) -> None:
        self.scenario = scenario
        self._query = query
        self._gate = gate
        self._chunks = chunks
        self._lead = lead_seconds
        self._producer = producer_client(bootstrap)
        self._rng = random.Random(scenario.seed + 1)
        self._late_maker = EventMaker(first_id=1_000_000)  # ids apart from the others'
        self.produced = Produced()
        self._offsets_sent: dict[tuple[str, int], int] = {}

    def _send(self, event: Event, late: bool = False) -> None:
        headers = [(LATE_HEADER, b"1")] if late else None
        # The record's timestamp is the event time, so that offsets can be looked up by event
        # time (docs/kafka-delta.md, moving a query over).
        self._producer.produce(event.topic, key=str(event.key).encode(),
                               value=json.dumps(event.value).encode(), headers=headers,
                               timestamp=epoch_millis(event.time), on_delivery=self._delivered)
        self._producer.poll(0)
        self.produced.events += 1
        self.produced.late += late

    def _delivered(self, error, message) -> None:
        if error is None:
            where = (message.topic(), message.partition())
            self._offsets_sent[where] = max(self._offsets_sent.get(where, 0), message.offset() + 1)

    def _wait_until_read(self, offsets: dict[tuple[str, int], int]) -> None:
        """Until the query has read up to `offsets`."""
        while any(self._query.offsets_read().get(where, 0) < end
                  for where, end in offsets.items()):
            time.sleep(0.1)

    def run(self) -> Produced:
        events, finals = send_order(self.scenario)
        size = -(-len(events) // self._chunks)
        span = (events[-1].time - events[0].time) / self._chunks
        lead = None if self._lead is None else max(1, round(self._lead / span))
        sent_by_chunk = []
        for chunk in range(self._chunks):
            self._gate(chunk, self._chunks)
            if lead is not None and chunk >= lead:
                self._wait_until_read(sent_by_chunk[chunk - lead])
            for event in events[chunk * size:(chunk + 1) * size]:
                self._send(event)
            self._producer.flush()
            sent_by_chunk.append(dict(self._offsets_sent))
            self._send_late_rows(chunk, events[:(chunk + 1) * size])
            if chunk == int(self._chunks * self.scenario.pause_at):
                time.sleep(self.scenario.pause_seconds)
                self.produced.paused_seconds += self.scenario.pause_seconds
        self._gate(self._chunks, self._chunks)
        # The sources of a micro-batch look up their latest offsets one after the other: a final
        # event sent while the query is behind could be read a micro-batch before an earlier
        # event of another topic, and make it late.
        self._wait_until_read(self._offsets_sent)
        for event in finals:
            self._send(event)
        self._producer.flush()
        return self.produced

    def _send_late_rows(self, chunk: int, sent: list[Event]) -> None:
        """Keeps the late rows sent in step with the chunks, once the query has a watermark."""
        due = self.scenario.late_rows * (chunk + 1) // self._chunks
        watermark = self._query.watermark()
        if watermark is None or watermark <= 0:
            return
        orders = [e for e in sent if e.topic == "orders" and e.time < watermark]
        topics = sorted({e.topic for e in sent if e.time < watermark})
        while orders and self.produced.late < due:
            self._send(late_event(self._late_maker, self._rng, watermark, orders, topics),
                       late=True)
