"""The CDC workloads' changes: Debezium change events of tables that change, written as JSON files,
and the spec that Spark's runs (run.py) and Flink's peer read them by.

- cdc_left10: Flink's documented shape. Ten tables, one row per key each, t0 LEFT JOIN each of
  t1..t9 on the key.
- cdc_star: orders LEFT JOIN their items, payments and shipments on the order id: a fan-out on the
  order key, the children's join key not their row id.
- cdc_skew (skew.py): orders LEFT JOIN items on the order id, LEFT JOIN customers on the
  order's customer id, customers drawn from a Zipf distribution.

Every table is loaded first (an insert per row, the tables' inserts shuffled together), then each
later change picks a table, then an update, a delete or an insert by the pinned fractions: an update
or a delete of a live row, an insert of a row deleted before (else of a new row). Rows are made
from their id, join key and version, so the generator keeps no rows, only each table's live ids.

A folder per workload holds `spec.json` and a folder per table, whose files part-00000.json, ...
come in arrival order: file n of every table holds that table's changes among the n-th
`file_changes` changes of the whole sequence, so that one file per table and trigger reads the
same slice of time from every table. Each line is one Debezium envelope: `op` "c" with `after`,
"u" with `before` and `after`, "d" with `before`; `source.lsn` the change's place in the whole
sequence (so increasing per table), `ts_ms` a clock that moves a millisecond a change.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Iterator

from multijoin_bench.cdc.model import (MAX_KEYS, SEED, STATUSES, CdcWorkload, Live, Row, Table,
                                       keys_for)
from multijoin_bench.cdc.skew import skew

NAMES = ("cdc_left10", "cdc_star", "cdc_skew")
UPDATES, DELETES = 0.80, 0.05  # of the changes after the first load; the rest are inserts
ROW_WIDTH = 32  # characters of each cdc_left10 row's string column
BASE_MS = 1_767_225_600_000  # 2026-01-01, the clock of the first change
# Spark's file source reads files in the order of their modification times, whose ties it breaks
# in no set order: file n of every table is stamped this many seconds after it.
MTIME_BASE = 1_767_225_600

def payload(width: int, *parts: int) -> str:
    text = "-".join(map(str, parts)) + ":"
    return (text * (width // len(text) + 1))[:width]


def left10(changes: int, file_changes: int, width: int = ROW_WIDTH) -> CdcWorkload:
    keys = keys_for(changes)

    def table(i: int) -> Table:
        def row(row_id: int, _key: int, version: int) -> Row:
            return {"k": row_id, f"v{i}": payload(width, i, row_id, version), f"n{i}": version}
        return Table(f"t{i}", [("k", "BIGINT"), (f"v{i}", "STRING"), (f"n{i}", "INT")],
                     "k", "k", row)

    tables = [table(i) for i in range(10)]
    columns = ["t0.k AS k", "t0.v0", "t0.n0"] + [
        f"t{i}.k AS k{i}, t{i}.v{i}, t{i}.n{i}" for i in range(1, 10)]
    select = ("SELECT " + ", ".join(columns) + " FROM t0 "
              + " ".join(f"LEFT JOIN t{i} ON t0.k = t{i}.k" for i in range(1, 10)))
    return CdcWorkload(
        "cdc_left10", tables, select, changes, file_changes,
        first_load=lambda rng: [[(k, k) for k in range(keys)] for _ in tables],
        new_key=lambda i, rng, live: live[i].next_id,
        parameters={"keys": keys, "row_width": width, "inputs": 10},
        identity=["k"], output_key="k")


ORDER_COLUMNS = [("order_id", "BIGINT"), ("customer", "STRING"), ("amount", "DOUBLE"),
                 ("order_status", "STRING")]
CHILD_COLUMNS = {
    "items": [("item_id", "BIGINT"), ("order_id", "BIGINT"), ("sku", "STRING"), ("qty", "INT"),
              ("price", "DOUBLE")],
    "payments": [("payment_id", "BIGINT"), ("order_id", "BIGINT"), ("pay_method", "STRING"),
                 ("paid", "DOUBLE")],
    "shipments": [("shipment_id", "BIGINT"), ("order_id", "BIGINT"), ("carrier", "STRING"),
                  ("ship_status", "STRING")],
}
# Rows per order in the first load: items 1 to 5, payments 1 or 2, shipments 0 to 2.
FAN_OUT = {"items": (1, 5), "payments": (1, 2), "shipments": (0, 2)}


def star_row(name: str) -> Callable[[int, int, int], Row]:
    def row(row_id: int, key: int, version: int) -> Row:
        status = STATUSES[version % len(STATUSES)]
        if name == "orders":
            return {"order_id": row_id, "customer": f"c{row_id % 9973}",
                    "amount": round(10 + (row_id * 31 + version * 7) % 990 + 0.25, 2),
                    "order_status": status}
        first, _, third, fourth = (c for c, _ in CHILD_COLUMNS[name][:4])
        values = {"items": (f"sku-{row_id % 5003}", 1 + version % 9),
                  "payments": (("card", "wire", "wallet")[row_id % 3],
                               round(5 + (row_id + version) % 500 + 0.5, 2)),
                  "shipments": (("ups", "dhl", "post")[row_id % 3], status)}[name]
        row = {first: row_id, "order_id": key, third: values[0], fourth: values[1]}
        if name == "items":
            row["price"] = round(1 + (row_id * 13 + version) % 200 + 0.75, 2)
        return row
    return row


def star(changes: int, file_changes: int) -> CdcWorkload:
    orders = keys_for(changes)
    tables = [Table("orders", ORDER_COLUMNS, "order_id", "order_id", star_row("orders"))]
    tables += [Table(name, columns, columns[0][0], "order_id", star_row(name))
               for name, columns in CHILD_COLUMNS.items()]

    def first_load(rng: random.Random) -> list[list[tuple[int, int]]]:
        loads = [[(o, o) for o in range(orders)]]
        for name in CHILD_COLUMNS:
            low, high = FAN_OUT[name]
            per_order = [rng.randint(low, high) for _ in range(orders)]
            keys = [order for order, count in enumerate(per_order) for _ in range(count)]
            loads.append(list(enumerate(keys)))
        return loads

    def new_key(i: int, rng: random.Random, live: list[Live]) -> int:
        # An order is a new order id; a child joins any order made so far, live or not.
        return live[0].next_id if i == 0 else rng.randrange(max(1, live[0].next_id))

    select = ("SELECT o.order_id, o.customer, o.amount, o.order_status, i.item_id, i.sku, i.qty, "
              "i.price, p.payment_id, p.pay_method, p.paid, s.shipment_id, s.carrier, "
              "s.ship_status FROM orders o LEFT JOIN items i ON o.order_id = i.order_id "
              "LEFT JOIN payments p ON o.order_id = p.order_id "
              "LEFT JOIN shipments s ON o.order_id = s.order_id")
    fan_out = {name: f"{low} to {high} per order" for name, (low, high) in FAN_OUT.items()}
    return CdcWorkload("cdc_star", tables, select, changes, file_changes, first_load, new_key,
                       parameters={"orders": orders, "fan_out": fan_out},
                       identity=["order_id", "item_id", "payment_id", "shipment_id"],
                       output_key="order_id")


def cdc_workload(name: str, changes: int, file_changes: int) -> CdcWorkload:
    if name == "cdc_left10":
        workload = left10(changes, file_changes)
    elif name == "cdc_star":
        workload = star(changes, file_changes)
    elif name == "cdc_skew":
        workload = skew(changes, file_changes)
    else:
        raise SystemExit(f"unknown CDC workload {name!r}: choose from {', '.join(NAMES)}")
    workload.parameters.update(
        {"changes": changes, "update_fraction": UPDATES, "delete_fraction": DELETES,
         "insert_fraction": round(1 - UPDATES - DELETES, 2), "seed": SEED,
         "changes_per_file": file_changes})
    return workload


def changes(workload: CdcWorkload, counts: dict | None = None,
            live: list[Live] | None = None) -> Iterator[tuple[int, dict]]:
    """The workload's change events in arrival order, as (table index, envelope); `counts`, if
    given, gets the number of each op in the first load and after it, and `live`, an empty list
    if given, each table's live rows as the events so far leave them."""
    rng = random.Random(SEED)
    live = live if live is not None else []
    live.extend(Live() for _ in workload.tables)
    loads = workload.first_load(rng)
    first = [(i, row_id, key) for i, load in enumerate(loads) for row_id, key in load]
    rng.shuffle(first)
    first = first[:workload.changes]
    tally = counts if counts is not None else {}
    tally.update({"first_load": len(first), "c": 0, "u": 0, "d": 0})
    for lsn, (i, row_id, key) in enumerate(first):
        live[i].add(row_id, key)
        yield i, envelope(workload.tables[i], None, (row_id, key, live[i].version[row_id]), lsn)
    tables = range(len(workload.tables))
    for lsn in range(len(first), workload.changes):
        i = (rng.randrange(len(tables)) if workload.table_shares is None
             else rng.choices(tables, workload.table_shares)[0])
        op = pick_op(rng.random(), bool(live[i].ids))
        tally[op] += 1
        yield i, change(workload, live, i, op, rng, lsn)


def pick_op(draw: float, any_live: bool) -> str:
    """The op of a change after the first load; an insert where the table has no live row."""
    if any_live and draw < UPDATES:
        return "u"
    if any_live and draw < UPDATES + DELETES:
        return "d"
    return "c"


def change(workload: CdcWorkload, live: list[Live], i: int, op: str, rng: random.Random,
           lsn: int) -> dict:
    table, rows = workload.tables[i], live[i]
    if op == "c":
        if rows.deleted:
            row_id = rows.deleted.pop(rng.randrange(len(rows.deleted)))
            key = rows.key[row_id]
        else:
            row_id, key = rows.next_id, workload.new_key(i, rng, live)
        rows.add(row_id, key)
        return envelope(table, None, (row_id, key, rows.version[row_id]), lsn)
    row_id = rows.ids[rng.randrange(len(rows.ids))]
    before = (row_id, rows.key[row_id], rows.version[row_id])
    if op == "d":
        rows.remove(row_id)
        return envelope(table, before, None, lsn)
    rows.version[row_id] += 1
    return envelope(table, before, (row_id, before[1], before[2] + 1), lsn)


def envelope(table: Table, before: tuple | None, after: tuple | None, lsn: int) -> dict:
    op = "c" if before is None else "d" if after is None else "u"
    return {"before": table.row(*before) if before else None,
            "after": table.row(*after) if after else None,
            "op": op, "source": {"lsn": lsn}, "ts_ms": BASE_MS + lsn}


def write(workload: CdcWorkload, folder: Path) -> dict:
    """Writes the workload's files and spec.json under `folder` (once: a folder whose spec is the
    same is kept); its spec."""
    spec_path = folder / "spec.json"
    if spec_path.is_file():
        spec = json.loads(spec_path.read_text())
        recorded = {k: v for k, v in spec["parameters"].items() if k != "counts"}
        if recorded == json.loads(json.dumps(spec_parameters(workload))):
            return spec
    counts: dict = {}
    folders = [folder / table.name for table in workload.tables]
    for path in folders:
        path.mkdir(parents=True, exist_ok=True)
        for old in path.glob("part-*.json"):
            old.unlink()
    lines: list[list[str]] = [[] for _ in folders]
    for n, (i, event) in enumerate(changes(workload, counts), start=1):
        lines[i].append(json.dumps(event, separators=(",", ":")))
        if n % workload.file_changes == 0 or n == workload.changes:
            part = (n - 1) // workload.file_changes
            for path, table_lines in zip(folders, lines):
                text = "\n".join(table_lines) + ("\n" if table_lines else "")
                written = path / f"part-{part:05d}.json"
                written.write_text(text)
                os.utime(written, (MTIME_BASE + part, MTIME_BASE + part))
            lines = [[] for _ in folders]
    spec = {"workload": workload.name,
            "tables": [{"name": t.name, "folder": str(path.resolve()),
                        "columns": [list(c) for c in t.columns], "primary_key": [t.row_id]}
                       for t, path in zip(workload.tables, folders)],
            "select": workload.select, "changes": workload.changes,
            "parameters": {**spec_parameters(workload), "counts": counts}}
    spec_path.write_text(json.dumps(spec, indent=2))
    return spec


def spec_parameters(workload: CdcWorkload) -> dict:
    """The parameters spec.json records (and the run prints), the join keys and identity with
    them."""
    return {**workload.parameters, "join_keys": {t.name: t.key for t in workload.tables},
            "identity": workload.identity, "output_key": workload.output_key,
            # The recipe (recipe.py) cuts each batch to the one join key it touched.
            "one_join_key": len({t.key for t in workload.tables}) == 1}
