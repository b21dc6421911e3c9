"""The changelog join checkpoint kept in tests/fixtures/changelog-state-format-2: its query, the
changes its inputs had before it was taken and get after the restart, how the test moves it, and
the script that wrote it (tests/changelog/test_changelog_checkpoint_restart.py restarts it).

The query: orders (row id order_id) LEFT JOIN customers (row id customer_id) ON their
customer_id. The orders are joined on a key outside their row id and are not declared a full
changelog, so the plan orders their changes by row id first (ChangelogNormalize): the checkpoint
holds the state of both stateful operators.

To write the fixture again (it replaces the folder; run it with the oldest supported line's venv,
as a checkpoint restarts on the line that wrote it or a newer one):

    PYTHONPATH=tests .venv-4.1/bin/python -m support.changelog_fixture

It runs the query over BEFORE's two micro-batches from a checkpoint at WRITTEN_AT (the path its
files record, which the test rewrites), then copies the checkpoint into the fixture with
`emitted.txt`: what each micro-batch emitted, after a header naming the commit and Spark that
wrote it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from support.changelogs import CHANGE_TYPE, VERSION

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "changelog-state-format-2"
# Where the checkpoint (WRITTEN_AT/checkpoint) and its inputs (WRITTEN_AT/inputs) were written.
WRITTEN_AT = "/tmp/spark-multijoin-changelog-fixture"
# The micro-batches the checkpoint committed.
BATCHES_BEFORE = 2


@dataclass(frozen=True)
class Table:
    """A changelog input as tests/support/changelog_runs.py reads a ChangelogSpec: its row id,
    its current rows' columns, and its change rows' (those plus `ver` and `_change_type`)."""

    schema: str
    row_id: tuple[str, ...]
    full_changelog: bool = False

    @property
    def columns(self) -> list[str]:
        return [field.split()[0] for field in self.schema.split(", ")]

    @property
    def change_schema(self) -> str:
        return f"{self.schema}, {VERSION} int, {CHANGE_TYPE} string"


ORDERS = Table("order_id int, customer_id int, amount int", ("order_id",))
CUSTOMERS = Table("customer_id int, name string", ("customer_id",))
TABLES = [ORDERS, CUSTOMERS]


def order(kind: str, version: int, order_id: int, customer_id: int, amount: int) -> dict:
    return {"order_id": order_id, "customer_id": customer_id, "amount": amount,
            VERSION: version, CHANGE_TYPE: kind}


def customer(kind: str, version: int, customer_id: int, name: str) -> dict:
    return {"customer_id": customer_id, "name": name, VERSION: version, CHANGE_TYPE: kind}


# [input][micro-batch] -> change rows. Batch 0: order 3 has no customer yet (a padded row).
# Batch 1: order 1's amount changes, order 2 moves from customer 20 to 10, order 4 is deleted
# (its tombstone stays in both operators' state), order 5 comes for customer 40, whom a delete
# removes (a tombstone), and customer 30 comes, who matches order 3's padded row; order 3's
# insert is delivered again (ignored by its version).
BEFORE = [
    [[order("insert", 1, 1, 10, 100), order("insert", 1, 2, 20, 200),
      order("insert", 1, 3, 30, 300), order("insert", 1, 4, 10, 400)],
     [order("update_preimage", 2, 1, 10, 100), order("update_postimage", 2, 1, 10, 110),
      order("update_preimage", 2, 2, 20, 200), order("update_postimage", 2, 2, 10, 200),
      order("delete", 2, 4, 10, 400), order("insert", 2, 5, 40, 500),
      order("insert", 1, 3, 30, 300)]],
    [[customer("insert", 1, 10, "ann"), customer("insert", 1, 20, "bob"),
      customer("insert", 1, 40, "dan")],
     [customer("insert", 2, 30, "cy"), customer("delete", 2, 40, "dan"),
      customer("update_preimage", 2, 20, "bob"), customer("update_postimage", 2, 20, "bobby")]],
]

# After the restart, changes to rows stored before it. Batch 2: order 3 moves from customer 30
# to 20, order 1 is deleted, order 4's insert of version 1 comes late (its tombstone of version
# 2 must ignore it), customer 10 is renamed (orders 1 and 2 joined them), customer 40 comes back
# (order 5's padded row is matched). Batch 3: order 4 is inserted again under customer 30 (an
# insert of a deleted id), order 2 moves to customer 30, customer 20 is deleted (order 3 padded
# again), and customer 40's old delete comes late.
AFTER = [
    [[order("update_preimage", 3, 3, 30, 300), order("update_postimage", 3, 3, 20, 300),
      order("delete", 3, 1, 10, 110), order("insert", 1, 4, 10, 400)],
     [order("insert", 4, 4, 30, 450), order("update_preimage", 4, 2, 10, 200),
      order("update_postimage", 4, 2, 30, 250)]],
    [[customer("update_preimage", 3, 10, "ann"), customer("update_postimage", 3, 10, "anna"),
      customer("insert", 3, 40, "dee")],
     [customer("delete", 4, 20, "bobby"), customer("delete", 2, 40, "dan")]],
]


def joined(frames: list[DataFrame]) -> DataFrame:
    """Orders LEFT JOIN customers on customer_id; of declared inputs, the changelog join."""
    orders, customers = frames[0].alias("o"), frames[1].alias("c")
    return orders.join(customers, F.col("o.customer_id") == F.col("c.customer_id"), "left").select(
        "o.order_id", "o.customer_id", "o.amount", F.col("c.customer_id").alias("c_customer_id"),
        "c.name")


def moved_checkpoint(target: Path) -> Path:
    """A copy of the fixture's checkpoint under `target` (as `target`/checkpoint), whose files
    name `target` where they named WRITTEN_AT: the file source's log names its input files, the
    operator metadata its state schema files. A rewritten file loses its checksum file, which
    would no longer match."""
    checkpoint = target / "checkpoint"
    shutil.copytree(FIXTURE / "checkpoint", checkpoint)
    for path in sorted(checkpoint.rglob("*")):
        if not path.is_file() or path.name.startswith("."):
            continue
        data = path.read_bytes()
        if WRITTEN_AT.encode() in data:
            path.write_bytes(data.replace(WRITTEN_AT.encode(), str(target).encode()))
            path.with_name(f".{path.name}.crc").unlink(missing_ok=True)
    return checkpoint


def read_emitted(path: Path) -> tuple[list[str], list[list[tuple]]]:
    """`emitted.txt`'s columns (change type last) and rows per micro-batch."""
    lines = path.read_text().splitlines()
    columns = json.loads(lines[1].removeprefix("# columns: "))
    batches: list[list[tuple]] = [[] for _ in range(BATCHES_BEFORE)]
    for line in lines[2:]:
        batch, *row = json.loads(line)
        batches[batch].append(tuple(row))
    return columns, batches


def write_emitted(path: Path, header: str, columns: list[str], batches: list[list[tuple]]) -> None:
    rows = [json.dumps([b, *row]) for b, batch in enumerate(batches)
            for row in sorted(batch, key=repr)]
    path.write_text("\n".join([f"# {header}", f"# columns: {json.dumps(columns)}", *rows]) + "\n")


def main() -> None:
    from spark_multijoin import configure_spark_with_multijoin
    from support.changelog_runs import declared_streams, run_changelog_join, write_changes

    root = Path(WRITTEN_AT)
    shutil.rmtree(root, ignore_errors=True)
    spark = configure_spark_with_multijoin(
        SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    inputs = write_changes(root / "inputs", TABLES, BEFORE)
    run = run_changelog_join(joined(declared_streams(spark, TABLES, inputs)),
                             root / "checkpoint")
    assert len(run.batches) == BATCHES_BEFORE, run.batches
    assert "ChangelogNormalize" in run.plan and "ChangelogJoin input0" in run.plan, run.plan
    commit = subprocess.run(["git", "log", "-1", "--format=%h", "--", "scala", "python"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    shutil.rmtree(FIXTURE, ignore_errors=True)
    FIXTURE.mkdir(parents=True)
    shutil.copytree(root / "checkpoint", FIXTURE / "checkpoint")
    write_emitted(FIXTURE / "emitted.txt",
                  f"written by spark-multijoin {commit} on Spark {spark.version}",
                  run.columns + [CHANGE_TYPE], run.batches)
    spark.stop()


if __name__ == "__main__":
    main()
