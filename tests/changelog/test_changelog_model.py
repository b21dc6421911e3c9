"""The changelog joins' test support checked on its own, without Spark: the reference model
applies the version rule (docs/changelog-joins.md), the random change streams hold every case
the randomized test means to meet, among them changes out of order across join keys, which
ordering by join key alone would read wrongly."""

from __future__ import annotations

import random
from collections import Counter

from support.changelog_shapes import random_changelog_shape
from support.changelogs import (CHANGE_TYPE, VERSION, ChangelogSpec, apply_changes,
                                current_rows, random_changes, rank)

CDF = ChangelogSpec(0, "k")
UPSERT = ChangelogSpec(0, "k", upsert=True, id_holds_key=True)


def change(row_id: int, key: int | None, version: int, change_type: str, w: int = 0) -> dict:
    return {"id0": row_id, "k0": key, "p0": 0, "w0": w, "v0": 0, VERSION: version,
            CHANGE_TYPE: change_type}


def ids_and_w(rows: list[dict]) -> list[tuple]:
    return sorted((row["id0"], row["k0"], row["w0"]) for row in rows)


def test_the_model_applies_a_change_after_the_last_applied_version_only():
    batches = [
        [change(1, 0, 1, "insert"), change(2, 0, 1, "insert")],
        # An update moving row 1 to key 1, post-image first in the file; a duplicate of row 1's
        # insert; a delete of row 2.
        [change(1, 1, 2, "update_postimage", w=5), change(1, 0, 2, "update_preimage"),
         change(1, 0, 1, "insert"), change(2, 0, 3, "delete")],
        # A delete of an absent row, then a late older insert of it, ignored.
        [change(3, 2, 2, "delete"), change(3, 2, 1, "insert")],
        # An insert of a live row applies as an upsert; a late older update of it is ignored.
        [change(1, 1, 5, "insert", w=7), change(1, 1, 4, "update_postimage", w=9)],
        # Row 2 inserted again after its delete.
        [change(2, 2, 6, "insert", w=1)],
    ]
    assert [ids_and_w(rows) for rows in current_rows(CDF, batches)] == [
        [(1, 0, 0), (2, 0, 0)], [(1, 1, 5)], [(1, 1, 5)], [(1, 1, 7)], [(1, 1, 7), (2, 2, 1)]]


def test_an_upsert_input_is_identified_by_its_row_id_and_key():
    batches = [[change(1, 0, 1, "upsert")],
               [change(1, 0, 2, "delete"), change(1, 1, 2, "upsert", w=3)],
               [change(1, 1, 3, "upsert", w=4), change(1, 0, 1, "upsert")]]
    assert [ids_and_w(rows) for rows in current_rows(UPSERT, batches)] == [
        [(1, 0, 0)], [(1, 1, 3)], [(1, 1, 4)]]


def random_streams(count: int):
    """(spec, changes) of the inputs of `count` random shapes."""
    for seed in range(count):
        rng = random.Random(seed)
        shape = random_changelog_shape(rng)
        for spec in shape.inputs:
            yield spec, random_changes(rng, spec, shape.n_batches)


def as_set(rows: list[dict]) -> set[tuple]:
    return {tuple(sorted(row.items())) for row in rows}


def test_random_changes_end_as_the_rows_of_their_source():
    for spec, changes in random_streams(150):
        assert as_set(current_rows(spec, changes.batches)[-1]) == as_set(changes.final)


def test_random_changes_meet_every_case():
    seen: Counter = Counter()
    for spec, changes in random_streams(40):
        seen.update(cases(spec, changes.batches))
    wanted = {"insert", "update", "key move", "filtered column changed", "delete",
              "inserted again", "two versions in a batch", "duplicate", "late older version",
              "insert of a live row", "null key", "upsert", "upsert move"}
    assert wanted <= {case for case, n in seen.items() if n >= 3}, seen


def cases(spec: ChangelogSpec, batches: list[list[dict]]) -> Counter:
    """The cases a stream's deliveries hold, each once per occurrence."""
    found: Counter = Counter()
    table: dict = {}
    delivered: list[dict] = []
    for batch in batches:
        versions = set()
        for c in sorted(batch, key=lambda c: (c[VERSION], rank(c))):
            identity = tuple(c[name] for name in spec.row_id)
            newer = [d for d in delivered if d[VERSION] > c[VERSION] and
                     tuple(d[name] for name in spec.row_id) == identity]
            found.update(_kinds(spec, c, table.get(identity), delivered, newer))
            versions.add((identity, c[VERSION]))
            delivered.append(c)
            apply_changes(table, [c], spec)
        per_identity = Counter(identity for identity, _ in versions)
        found["two versions in a batch"] += sum(n - 1 for n in per_identity.values())
    return found


def _kinds(spec: ChangelogSpec, c: dict, last, delivered: list[dict], newer: list[dict]):
    kind, key = c[CHANGE_TYPE], spec.key_column
    if c in delivered or newer:  # ignored: nothing else about it counts
        yield "duplicate" if c in delivered else "late older version"
        return
    if kind in ("insert", "upsert") and last is None:
        yield "insert"
    if kind == "insert" and last is not None:
        yield "inserted again" if last[1] is None else "insert of a live row"
    if kind == "update_postimage":
        yield "update"
        pre = next((d for d in delivered if d[VERSION] == c[VERSION]
                    and d[CHANGE_TYPE] == "update_preimage"), None)
        if pre is not None and pre[key] != c[key]:
            yield "key move"
        if pre is not None and pre[spec.column("w")] != c[spec.column("w")]:
            yield "filtered column changed"
    if kind == "delete":
        yield "delete"
    if c[key] is None:
        yield "null key"
    if kind == "upsert":
        yield "upsert"
        if any(d[VERSION] == c[VERSION] and d[CHANGE_TYPE] == "delete" for d in delivered) or \
                last is not None and last[1] is not None and last[1][key] != c[key]:
            yield "upsert move"


def per_key_rows(spec: ChangelogSpec, batches: list[list[dict]]) -> list[set[tuple]]:
    """Per micro-batch, an input's current rows as the operator orders changes: an identity's
    last applied change per join key, under the key each change names (a removal's is the old
    row's)."""
    table: dict = {}
    snapshots = []
    for batch in batches:
        for c in sorted(batch, key=lambda c: (c[VERSION], rank(c))):
            slot = (c[spec.key_column],) + tuple(c[name] for name in spec.row_id)
            order = (c[VERSION], rank(c))
            if slot not in table or table[slot][0] < order:
                table[slot] = (order, None if rank(c) == 0 else
                               {name: c[name] for name in spec.columns})
        snapshots.append(as_set([row for _, row in table.values() if row is not None]))
    return snapshots


def test_some_streams_read_differently_by_identity_and_by_key():
    """Streams whose changes arrive out of order across join keys, or move upserts: ordering an
    identity's changes per join key alone would keep a row under two keys, so the random test
    meets what the operator's ordering by row id is for."""
    differ = sum(per_key_rows(spec, changes.batches) !=
                 [as_set(rows) for rows in current_rows(spec, changes.batches)]
                 for spec, changes in random_streams(150))
    assert differ >= 20


def test_full_changelogs_read_the_same_by_identity_and_by_key():
    """What lets an input declared a full changelog skip the ordering by row id: where every
    removal names the old row's key and no change comes after a newer one of its row, the
    version rule kept per join key gives each micro-batch the rows it gives per identity, with
    key moves, rows deleted and inserted again and changes delivered twice."""
    seen: Counter = Counter()
    for seed in range(150):
        spec = ChangelogSpec(0, "k", full_changelog=True)
        changes = random_changes(random.Random(seed), spec, 5)
        seen.update(cases(spec, changes.batches))
        assert per_key_rows(spec, changes.batches) == \
            [as_set(rows) for rows in current_rows(spec, changes.batches)], seed
    assert min(seen["key move"], seen["inserted again"], seen["duplicate"]) >= 20, seen
    assert seen["late older version"] == 0, seen


def test_a_late_key_move_reads_differently_by_identity_and_by_key():
    """Row 1 moves from key 0 to 1 at version 2 and to key 2 at version 3, which arrives first.
    By identity, version 3's post-image is the row; by key, version 1's row stays under key 0
    until version 2 arrives."""
    batches = [[change(1, 0, 1, "insert")],
               [change(1, 1, 3, "update_preimage"), change(1, 2, 3, "update_postimage")],
               [change(1, 0, 2, "update_preimage"), change(1, 1, 2, "update_postimage")]]
    by_identity = [ids_and_w(rows) for rows in current_rows(CDF, batches)]
    assert by_identity == [[(1, 0, 0)], [(1, 2, 0)], [(1, 2, 0)]]
    by_key = [sorted((dict(row)["id0"], dict(row)["k0"], dict(row)["w0"]) for row in rows)
              for rows in per_key_rows(CDF, batches)]
    assert by_key == [[(1, 0, 0)], [(1, 0, 0), (1, 2, 0)], [(1, 2, 0)]]


def test_random_shapes_mix_every_join_and_stack_keys():
    shapes = [random_changelog_shape(random.Random(seed)) for seed in range(40)]
    kinds = Counter(kind for shape in shapes for kind in shape.kinds[1:])
    assert set(kinds) == {"inner", "left_outer", "right_outer", "full_outer"}, kinds
    assert Counter(shape.levels for shape in shapes).keys() == {1, 2}
    assert {len(shape.inputs) for shape in shapes} == {2, 3, 4, 5, 6}
    assert sum(bool(shape.input_filters) for shape in shapes) >= 10
    assert sum(shape.above_filter is not None for shape in shapes) >= 10
    assert sum(shape.between_filter is not None for shape in shapes) >= 5
    assert sum(any(spec.upsert for spec in shape.inputs) for shape in shapes) >= 10
    for shape in shapes:
        outer = {j for j, kind in enumerate(shape.kinds) if kind not in ("", "inner")}
        for j, kind in enumerate(shape.kinds):
            # What one changelog join runs: an inner join reads no outer input of its level
            # (a stacked level's first parent is of the level below), and a FULL OUTER join
            # comes after the level's other joins.
            level = [k for k, spec in enumerate(shape.inputs) if spec.key == shape.inputs[j].key]
            assert kind != "inner" or shape.parents[j] not in outer.intersection(level), \
                shape.describe()
            later = [k for k in level if k > j]
            assert kind != "full_outer" or all(shape.kinds[k] == "full_outer" for k in later)
        assert len(set(shape.identity())) == sum(len(spec.row_id) for spec in shape.inputs)
        names = [e.split(" AS ")[-1] for e in shape.select] if shape.select else None
        assert names is None or set(shape.identity()) <= set(names), shape.describe()
