"""Changelog inputs for the changelog joins' tests: random change streams, and the reference model
that reads them as the operator must (docs/changelog-joins.md, "Order of changes").

An input i has columns id<i> (row id), k<i> (the key of the joins below), p<i> (the key of a
join stacked over them), w<i> (a column filters read) and v<i>, then the change columns `ver`
and `_change_type`. Its row id is id<i>, or id<i> and its join key. A CDF input changes by
insert, update_preimage + update_postimage (at one version) and delete; an upsert input by
upsert and delete (which carries its row id alone). A CDF input declared a full changelog never
inserts a row live under another key (it deletes it there first) and delivers no change after a
newer one of its row, though it may deliver a change again.

The model is the rule of the issue, kept apart from the operator's code: a change applies if its
(version, rank) is greater than the last applied one of its identity (removes rank 0, puts 1),
otherwise it is ignored; a put sets the identity's row, a removal clears it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

CHANGE_TYPE = "_change_type"
VERSION = "ver"
REMOVES = ("update_preimage", "delete")
COLUMNS = ("id", "k", "p", "w", "v")
N_KEYS = 3  # small key domains: joins fan out, and outer rows get padded and unpadded


@dataclass(frozen=True)
class ChangelogSpec:
    """Input `index` of a changelog join, joined on its column `key` ("k" or "p")."""

    index: int
    key: str
    upsert: bool = False
    id_holds_key: bool = False  # the row id is id<i> and the join key; otherwise id<i>
    # Declared a full changelog: removals carry the old row, and changes arrive in order.
    full_changelog: bool = False

    def column(self, name: str) -> str:
        return f"{name}{self.index}"

    @property
    def key_column(self) -> str:
        return self.column(self.key)

    @property
    def row_id(self) -> list[str]:
        return [self.column("id")] + ([self.key_column] if self.id_holds_key else [])

    @property
    def columns(self) -> list[str]:
        return [self.column(name) for name in COLUMNS]

    @property
    def schema(self) -> str:
        """The declared input's schema: its current rows' columns."""
        return ", ".join(f"{name} int" for name in self.columns)

    @property
    def change_schema(self) -> str:
        return f"{self.schema}, {VERSION} int, {CHANGE_TYPE} string"


def rank(change: dict) -> int:
    return 0 if change[CHANGE_TYPE] in REMOVES else 1


def apply_changes(table: dict, changes: list[dict], spec: ChangelogSpec) -> int:
    """Applies one micro-batch's `changes` to `table` (identity -> ((version, rank), row or
    None)) by the version rule, in version order, as the batch's order in a file means
    nothing; returns how many it ignored."""
    ignored = 0
    for change in sorted(changes, key=lambda c: (c[VERSION], rank(c))):
        identity = tuple(change[name] for name in spec.row_id)
        order = (change[VERSION], rank(change))
        last = table.get(identity)
        if last is not None and order <= last[0]:
            ignored += 1  # a duplicate delivery or a late older version
            continue
        row = None if rank(change) == 0 else {name: change[name] for name in spec.columns}
        table[identity] = (order, row)
    return ignored


def ignored_changes(spec: ChangelogSpec, batches: list[list[dict]]) -> int:
    """How many of the input's changes the version rule ignores."""
    table: dict = {}
    return sum(apply_changes(table, changes, spec) for changes in batches)


def current_rows(spec: ChangelogSpec, batches: list[list[dict]]) -> list[list[dict]]:
    """Per micro-batch, the input's current rows once it and every batch before it applied."""
    table: dict = {}
    snapshots = []
    for changes in batches:
        apply_changes(table, changes, spec)
        snapshots.append([row for _, row in table.values() if row is not None])
    return snapshots


@dataclass
class Changes:
    """An input's change rows per micro-batch, and the rows its source holds at the end."""

    batches: list[list[dict]]
    final: list[dict]


def random_changes(rng: random.Random, spec: ChangelogSpec, n_batches: int) -> Changes:
    """Random changes of a few identities over `n_batches` micro-batches: inserts, updates (some
    moving the row to another key, some changing filtered columns), deletes, rows deleted and
    inserted again, inserts of live rows, an identity changed twice in a batch, duplicate
    deliveries of earlier changes and late changes, delivered after a newer version of their
    identity (under another key, too)."""
    source = _Source(rng, spec)
    batches: list[list[dict]] = [[] for _ in range(n_batches)]
    for b in range(n_batches):
        for entity in range(source.n_entities):
            for _ in range(rng.choice([0, 0, 1, 1, 1, 2])):
                rows = source.event(entity)
                late = b < n_batches - 1 and rng.random() < 0.15 and not spec.full_changelog
                batches[rng.randint(b + 1, n_batches - 1) if late else b] += rows
        delivered = [row for batch in batches[:b + 1] for row in batch]
        for _ in range(rng.choice([0, 0, 1, 2])):
            if delivered:
                batches[b].append(dict(rng.choice(delivered)))
    for batch in batches:
        rng.shuffle(batch)
    return Changes(batches, [row for row in source.rows.values() if row is not None])


class _Source:
    """The table a change stream comes from: its rows by entity (an entity is a row id; in an
    upsert input, the row id without the key), changed one event at a time, each event a new
    version."""

    def __init__(self, rng: random.Random, spec: ChangelogSpec) -> None:
        self.rng = rng
        self.spec = spec
        self.n_entities = rng.randint(2, 5)
        self.rows: dict[int, dict | None] = {entity: None for entity in range(self.n_entities)}
        self.version = 0

    def _key(self) -> int | None:
        # A null key joins nothing; a key in the row id is never null.
        if not self.spec.id_holds_key and self.rng.random() < 0.06:
            return None
        return self.rng.randrange(N_KEYS)

    def _new_row(self, entity: int, key: int | None) -> dict:
        spec, rng = self.spec, self.rng
        row = {spec.column("id"): entity, spec.column("k"): rng.randrange(N_KEYS),
               spec.column("p"): rng.randrange(N_KEYS), spec.column("w"): rng.randrange(4),
               spec.column("v"): rng.randrange(10)}
        row[spec.key_column] = key
        return row

    def _changed(self, row: dict) -> dict:
        """`row` updated: a filtered column or the value, maybe the key or the other key."""
        spec, rng = self.spec, self.rng
        new = dict(row)
        changed = rng.choice(["w", "w", "v"])
        new[spec.column(changed)] = rng.randrange(4 if changed == "w" else 10)
        for name in ("k", "p"):
            if rng.random() < 0.3:
                new[spec.column(name)] = self._key() if name == spec.key else \
                    rng.randrange(N_KEYS)
        return new

    def _change(self, row: dict, change_type: str) -> dict:
        return {**row, VERSION: self.version, CHANGE_TYPE: change_type}

    def event(self, entity: int) -> list[dict]:
        """The change rows of the entity's next event."""
        self.version += self.rng.choice([1, 1, 2])
        row = self.rows[entity]
        rows, new = (self._upsert_event if self.spec.upsert else self._cdf_event)(entity, row)
        self.rows[entity] = new
        return rows

    def _cdf_event(self, entity: int, row: dict | None) -> tuple[list[dict], dict | None]:
        rng = self.rng
        if row is None:
            new = self._new_row(entity, self._key())
            return [self._change(new, "insert")], new
        draw = rng.random()
        if draw < 0.15:
            return [self._change(row, "delete")], None
        if draw < 0.22:  # an insert of a live row: an upsert, maybe under another key
            new = self._new_row(entity, self._key())
            whole = self.spec.id_holds_key or self.spec.full_changelog
            if whole and new[self.spec.key_column] != row[self.spec.key_column]:
                return [self._change(row, "delete"), self._change(new, "insert")], new
            return [self._change(new, "insert")], new
        new = self._changed(row)
        return [self._change(row, "update_preimage"), self._change(new, "update_postimage")], new

    def _upsert_event(self, entity: int, row: dict | None) -> tuple[list[dict], dict | None]:
        rng = self.rng
        if row is None:
            new = self._new_row(entity, self._key())
            return [self._change(new, "upsert")], new
        draw = rng.random()
        gone = self._change({name: None for name in self.spec.columns}, "delete")
        gone.update({name: row[name] for name in self.spec.row_id})
        if draw < 0.2:
            return [gone], None
        new = self._changed(row)
        if self.spec.id_holds_key and new[self.spec.key_column] != row[self.spec.key_column]:
            # A move is another identity's: the row under its old key deleted too.
            return [gone, self._change(new, "upsert")], new
        return [self._change(new, "upsert")], new
