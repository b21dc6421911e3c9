"""The CDC example on Kafka: a shop's five tables as Debezium captures them from PostgreSQL, a
topic each, and the producer of their changes.

Each message is what Debezium's PostgreSQL connector writes with the JSON converter, schemas
off, for tables with REPLICA IDENTITY FULL: its key the row id (`{"order_id": 7}`), its value
the envelope: `before` and `after` (the row's images, null where there is none), `source`
(where the change was read; `lsn`, the position in the database's log, grows across every
table), `op` (`r` read by the initial snapshot, `c` insert, `u` update, `d` delete) and
`ts_ms`. A delete is followed by a tombstone, the key with a null value, as Debezium sends by
default so that a compacted topic can forget the row.

The first round is the initial snapshot. Each later round makes, in this order, a random few of:
new customers, renames and tier changes, deletes (never of customer 1, who has about a fifth of
the orders, so that a change of theirs touches many joined rows); new orders, updates of the
amount or status, orders moved to another customer, deletes; new order items, quantity
changes, items moved to another order, deletes; new payments and shipments, updates, deletes.
A new row takes a deleted row's id a third of the time (a row that comes back), and one row a
round is deleted and inserted again at once. An order names now and then a customer that is
deleted or not there yet, an item or a payment an order that is (the joins pad or drop them
until it comes). The producer keeps each table's rows, to choose what to change; the checks
read the topics themselves.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from .changes import Table

CUSTOMERS = Table("customers", "customer_id", "customer_id bigint, name string, tier string")
ORDERS = Table("orders", "order_id",
               "order_id bigint, customer_id bigint, status string, amount bigint")
ORDER_ITEMS = Table("order_items", "item_id",
                    "item_id bigint, order_id bigint, sku string, quantity bigint")
PAYMENTS = Table("payments", "payment_id",
                 "payment_id bigint, order_id bigint, method string, paid bigint")
SHIPMENTS = Table("shipments", "shipment_id", "shipment_id bigint, order_id bigint, carrier string")
TABLES = (ORDERS, ORDER_ITEMS, PAYMENTS, SHIPMENTS, CUSTOMERS)  # as the query joins them
# The connector's topic prefix and the tables' schema: topics are <server>.<schema>.<table>.
SERVER, SCHEMA = "shop", "public"
PARTITIONS = {"customers": 2, "orders": 3, "order_items": 3, "payments": 2, "shipments": 2}

STATUSES = ("open", "paid", "shipped", "cancelled")
TIERS = ("basic", "silver", "gold")
METHODS = ("card", "transfer", "voucher")
CARRIERS = ("dhl", "ups", "post")
HOT_CUSTOMER = 1
FIRST_LSN = 24_000_000
FIRST_TS_MS = 1_772_323_200_000  # 2026-03-01, when the changes start


def topic(table: Table) -> str:
    return f"{SERVER}.{SCHEMA}.{table.name}"


TOPICS = {topic(table): PARTITIONS[table.name] for table in TABLES}


def envelope_schema(table: Table) -> str:
    """The message value's schema, as from_json takes it."""
    row = f"struct<{table.schema}>"
    return (f"before {row}, after {row}, source struct<connector string, name string, "
            "db string, schema string, table string, txId bigint, lsn bigint>, op string, "
            "ts_ms bigint")


@dataclass(frozen=True)
class Message:
    topic: str
    key: dict
    value: dict | None  # None for a tombstone


@dataclass(frozen=True)
class Counts:
    """Rows a round inserts, updates and deletes."""
    new: int
    updated: int
    deleted: int


FIRST = {"customers": Counts(6, 0, 0), "orders": Counts(10, 0, 0),
         "order_items": Counts(18, 0, 0), "payments": Counts(8, 0, 0),
         "shipments": Counts(5, 0, 0)}
LATER = {"customers": Counts(1, 1, 1), "orders": Counts(2, 2, 1),
         "order_items": Counts(3, 2, 1), "payments": Counts(2, 1, 1),
         "shipments": Counts(2, 1, 1)}
# Changed first, so that the rows named by the tables after them may exist already.
ROUND_ORDER = (CUSTOMERS, ORDERS, ORDER_ITEMS, PAYMENTS, SHIPMENTS)


class Shop:
    """The tables' rows, changed at random round by round, each change made a message. `counts`
    tallies the messages by op (and `tombstone`) and the changes that matter to a join:
    `orders to another customer`, `items to another order`, `ids inserted again`."""

    def __init__(self, seed: int = 3) -> None:
        self.rng = random.Random(seed)
        self.rows: dict[str, dict[int, tuple]] = {table.name: {} for table in TABLES}
        self.deleted: dict[str, list[int]] = {table.name: [] for table in TABLES}
        self.next_id = {table.name: 1 for table in TABLES}
        self.counts: Counter[str] = Counter()
        self.rounds = 0
        self._lsn = FIRST_LSN
        self._messages: list[Message] = []

    def round(self) -> list[Message]:
        """The next round's messages, in the order the database logged them."""
        self._messages = []
        counts = LATER if self.rounds else FIRST
        for table in ROUND_ORDER:
            self._change(table, counts[table.name])
        if self.rounds:
            self._delete_and_insert_again(self.rng.choice(ROUND_ORDER[1:]))
        self.rounds += 1
        return self._messages

    def _change(self, table: Table, counts: Counts) -> None:
        rows = self.rows[table.name]
        touched = self.rng.sample(sorted(rows), min(len(rows), counts.updated + counts.deleted))
        for key in touched[:counts.updated]:
            self._put(table, self._changed(table, rows[key]))
        for key in touched[counts.updated:]:
            if (table, key) != (CUSTOMERS, HOT_CUSTOMER):
                self._delete(table, key)
        for _ in range(counts.new):
            self._put(table, self._new(table, self._new_id(table)))

    def _delete_and_insert_again(self, table: Table) -> None:
        if not self.rows[table.name]:
            return
        key = self.rng.choice(sorted(self.rows[table.name]))
        self._delete(table, key)
        self._put(table, self._new(table, key))

    def _put(self, table: Table, row: tuple) -> None:
        before = self.rows[table.name].get(row[0])
        op = "u" if before is not None else "r" if self.rounds == 0 else "c"
        if op == "c" and row[0] in self.deleted[table.name]:
            self.counts["ids inserted again"] += 1
        self._log(table, op, before, row)
        self.rows[table.name][row[0]] = row
        self.deleted[table.name] = [key for key in self.deleted[table.name] if key != row[0]]

    def _delete(self, table: Table, key: int) -> None:
        self._log(table, "d", self.rows[table.name].pop(key), None)
        self.deleted[table.name].append(key)
        self._messages.append(Message(topic(table), {table.key: key}, None))
        self.counts["tombstone"] += 1

    def _log(self, table: Table, op: str, before: tuple | None, after: tuple | None) -> None:
        self._lsn += self.rng.randint(40, 400)
        ts_ms = FIRST_TS_MS + (self._lsn - FIRST_LSN)
        source = {"connector": "postgresql", "name": SERVER, "db": SERVER, "schema": SCHEMA,
                  "table": table.name, "txId": 700 + self.rounds, "lsn": self._lsn}
        value = {"before": _image(table, before), "after": _image(table, after),
                 "source": source, "op": op, "ts_ms": ts_ms}
        key = {table.key: (after or before)[0]}
        self._messages.append(Message(topic(table), key, value))
        self.counts[op] += 1

    def _new_id(self, table: Table) -> int:
        """A deleted row's id a third of the time, else the next one."""
        deleted = self.deleted[table.name]
        if deleted and self.rng.random() < 1 / 3:
            return deleted[self.rng.randrange(len(deleted))]
        self.next_id[table.name] += 1
        return self.next_id[table.name] - 1

    def _referenced(self, table: Table) -> int:
        """Mostly a live row's id; now and then any id up to one past the last (a deleted row's,
        or one that does not exist yet)."""
        live = sorted(self.rows[table.name])
        if live and self.rng.random() < 0.85:
            return self.rng.choice(live)
        return self.rng.randint(1, self.next_id[table.name])

    def _customer(self) -> int:
        return HOT_CUSTOMER if self.rng.random() < 0.2 else self._referenced(CUSTOMERS)

    def _new(self, table: Table, key: int) -> tuple:
        rng = self.rng
        if table is CUSTOMERS:
            return (key, f"customer {key}.{self.rounds}", rng.choice(TIERS))
        if table is ORDERS:
            return (key, self._customer(), rng.choice(STATUSES), rng.randint(5, 300))
        order = self._referenced(ORDERS)
        if table is ORDER_ITEMS:
            return (key, order, f"sku-{rng.randint(1, 40)}", rng.randint(1, 4))
        if table is PAYMENTS:
            return (key, order, rng.choice(METHODS), rng.randint(5, 300))
        return (key, order, rng.choice(CARRIERS))

    def _changed(self, table: Table, row: tuple) -> tuple:
        """`row` with a column changed; a join key half of the time where there is one."""
        rng, moves = self.rng, self.rng.random() < 0.5
        if table is CUSTOMERS:
            return (row[0], f"customer {row[0]}.{self.rounds}", row[2]) if moves else \
                (row[0], row[1], rng.choice(TIERS))
        if table is ORDERS and moves:
            return self._moved(row, self._customer(), "orders to another customer")
        if table is ORDERS:
            return (row[0], row[1], rng.choice(STATUSES), rng.randint(5, 300))
        if table is ORDER_ITEMS and moves:
            return self._moved(row, self._referenced(ORDERS), "items to another order")
        if table is ORDER_ITEMS:
            return (*row[:3], rng.randint(1, 4))
        if table is PAYMENTS:
            return (*row[:2], rng.choice(METHODS), row[3])
        return (*row[:2], rng.choice(CARRIERS))

    def _moved(self, row: tuple, key: int, counted: str) -> tuple:
        """`row` under another join key (its second column)."""
        self.counts[counted] += key != row[1]
        return (row[0], key, *row[2:])


def _image(table: Table, row: tuple | None) -> dict | None:
    return None if row is None else dict(zip(table.columns, row))


class DebeziumProducer:
    """Sends `rounds` rounds of the shop's changes through `producer` (a confluent-kafka
    producer: the Kafka example's `producer_client`), a round at a time, `pause_seconds` apart.
    `gate(round, rounds)` is called before each round and once after the last (the kill test
    waits there for its kills, so that they land while changes are still coming)."""

    def __init__(self, producer, shop: Shop, rounds: int,
                 gate: Callable[[int, int], None] = lambda done, rounds: None,
                 pause_seconds: float = 0.5) -> None:
        self.shop = shop
        self._rounds = rounds
        self._gate = gate
        self._pause = pause_seconds
        self._producer = producer

    def run(self) -> Counter[str]:
        """Sends the rounds; returns the shop's counts of what was sent."""
        for number in range(self._rounds):
            self._gate(number, self._rounds)
            for message in self.shop.round():
                value = None if message.value is None else json.dumps(message.value).encode()
                self._producer.produce(message.topic, key=json.dumps(message.key).encode(),
                                       value=value)
                self._producer.poll(0)
            if self._producer.flush(30) > 0:
                raise RuntimeError("the broker did not take every message within 30 s")
            time.sleep(self._pause)
        # Let go of the client: its threads would try to reach the broker until it is collected,
        # logging each refused connection once the broker is stopped.
        self._producer = None
        self._gate(self._rounds, self._rounds)
        return self.shop.counts
