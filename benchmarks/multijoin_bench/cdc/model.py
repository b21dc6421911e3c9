"""The CDC workloads' model (workloads.py, skew.py): a table that changes, a workload of such
tables, and the rows a run of changes leaves live."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

SEED = 17
MAX_KEYS = 100_000
STATUSES = ("new", "paid", "packed", "shipped", "delivered", "returned")

Row = dict


@dataclass(frozen=True)
class Table:
    """A table: its columns (name, type as Flink and Spark both spell it), its row id, the column
    it joins on, and its row as a function of (id, join key, version)."""

    name: str
    columns: list[tuple[str, str]]
    row_id: str
    key: str
    row: Callable[[int, int, int], Row]


@dataclass
class CdcWorkload:
    name: str
    tables: list[Table]
    select: str
    changes: int
    file_changes: int
    # The first load: per table, its rows as (id, join key).
    first_load: Callable[[random.Random], list[list[tuple[int, int]]]]
    # For a new row of table i (not its first load), its join key.
    new_key: Callable[[int, random.Random, list["Live"]], int]
    parameters: dict = field(default_factory=dict)
    # The output's identity, as the recipe merges on it, and the output column of the join key.
    identity: list[str] = field(default_factory=list)
    output_key: str = ""
    # Each table's share of the changes after the first load; None: the same for every table.
    table_shares: tuple[float, ...] | None = None
    # A latency marker's columns other than the first table's row (sweep.py): whatever makes
    # the marker join nothing, so that it makes exactly one output row.
    marker_columns: dict = field(default_factory=dict)

    def marker(self, row_id: int) -> Row:
        """A marker: a new row of the first table, the join's preserved side, with `row_id`
        as its id and join key."""
        return {**self.tables[0].row(row_id, row_id, 0), **self.marker_columns}


@dataclass
class Live:
    """One table's rows as the changes leave them: each live id's join key and version, and the
    ids deleted (an insert takes one of them back before it makes a new one)."""

    ids: list[int] = field(default_factory=list)
    place: dict[int, int] = field(default_factory=dict)
    key: dict[int, int] = field(default_factory=dict)
    version: dict[int, int] = field(default_factory=dict)
    deleted: list[int] = field(default_factory=list)
    next_id: int = 0

    def add(self, row_id: int, key: int) -> None:
        self.place[row_id] = len(self.ids)
        self.ids.append(row_id)
        self.key[row_id] = key
        self.version[row_id] = self.version.get(row_id, -1) + 1
        self.next_id = max(self.next_id, row_id + 1)

    def remove(self, row_id: int) -> None:
        # Swap with the last, so that a random live id stays a list index away.
        place, last = self.place.pop(row_id), self.ids.pop()
        if last != row_id:
            self.ids[place], self.place[last] = last, place
        self.deleted.append(row_id)


def keys_for(changes: int) -> int:
    """Keys (cdc_left10) or orders (cdc_star): the first load is about half of cdc_left10's changes,
    and the keys stay at MAX_KEYS from 2M changes on."""
    return max(1, min(MAX_KEYS, changes // 20))
