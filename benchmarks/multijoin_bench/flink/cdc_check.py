"""Whether a Flink job of the CDC peer (cdc_peer.py) ends with the right rows: its changelog,
collected into Python and applied, against the spec's SELECT run by SQLite over each table's
final snapshot (its files' changes applied in name order, by primary key). Plain Python for the
reference; Flink only in `flink_rows`.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path

# Debezium's operations: a snapshot read ("r") is an insert.
INSERTS, UPDATES, DELETES = ("c", "r"), ("u",), ("d",)


def final_snapshot(table: dict) -> list[tuple]:
    """The table's rows once every change in its folder's files has been applied."""
    columns = [name for name, _ in table["columns"]]
    rows: dict[tuple, tuple] = {}

    def key(row: dict) -> tuple:
        return tuple(row[name] for name in table["primary_key"])

    for path in sorted(Path(table["folder"]).glob("*.json")):
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            change = json.loads(line)
            if change["op"] in UPDATES + DELETES:
                rows.pop(key(change["before"]), None)
            if change["op"] in INSERTS + UPDATES:
                rows[key(change["after"])] = tuple(change["after"].get(name)
                                                   for name in columns)
    return list(rows.values())


def key_changes(table: dict) -> int:
    """The table's updates that change its primary key: Debezium writes such a change as a
    delete and a create, and Flink, told the key, keeps only each update's after-image where
    no operator needs the before-image (its upsert plans), so it would keep the old key's row."""
    changed = 0
    for path in sorted(Path(table["folder"]).glob("*.json")):
        for line in path.read_text().splitlines():
            change = json.loads(line) if '"u"' in line else None
            if change and change["op"] in UPDATES and any(
                    change["before"][name] != change["after"][name]
                    for name in table["primary_key"]):
                changed += 1
    return changed


def reference_rows(spec: dict) -> Counter:
    """The spec's SELECT over every table's final snapshot, as a batch query in SQLite."""
    with sqlite3.connect(":memory:") as db:
        for table in spec["tables"]:
            columns = ", ".join(f'"{name}" {kind}' for name, kind in table["columns"])
            db.execute(f'CREATE TABLE "{table["name"]}" ({columns})')
            marks = ", ".join("?" for _ in table["columns"])
            db.executemany(f'INSERT INTO "{table["name"]}" VALUES ({marks})',
                           final_snapshot(table))
        return Counter(tuple(row) for row in db.execute(spec["select"]))


def apply_changelog(changes) -> Counter:
    """The rows a changelog of (sign, row) leaves, +1 adding a row and -1 taking one away;
    a row taken away more often than added stays with a negative count."""
    rows: Counter = Counter()
    for sign, row in changes:
        rows[tuple(row)] += sign
    return Counter({row: count for row, count in rows.items() if count})


def compare(flink: Counter, reference: Counter) -> dict:
    missing, extra = reference - +flink, +flink - reference
    negative = [row for row, count in flink.items() if count < 0]
    return {"rows": sum(reference.values()), "matches": not missing and not extra
            and not negative, "missing": [list(row) for row in list(missing)[:5]],
            "extra": [list(row) for row in list(extra)[:5]],
            "retracted_unseen": [list(row) for row in negative[:5]]}


def flink_rows(spec: dict, mode: str, parallelism: int, sources: list[str]) -> Counter:
    """The spec's SELECT as a streaming job in `mode`, its changelog collected and applied."""
    from pyflink.common import RowKind

    from multijoin_bench.flink.peer import environment, job_config

    signs = {RowKind.INSERT: 1, RowKind.UPDATE_AFTER: 1,
             RowKind.UPDATE_BEFORE: -1, RowKind.DELETE: -1}
    with tempfile.TemporaryDirectory() as scratch:
        env = environment(True, job_config(mode, parallelism, str(Path(scratch) / "rocksdb")))
        for statement in sources:
            env.execute_sql(statement)
        with env.execute_sql(spec["select"]).collect() as rows:
            return apply_changelog((signs[row.get_row_kind()], tuple(row)) for row in rows)


def check(spec: dict, mode: str, parallelism: int, sources: list[str]) -> dict:
    return compare(flink_rows(spec, mode, parallelism, sources), reference_rows(spec))
