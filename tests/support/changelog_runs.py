"""Running a changelog join over change files, and checking what it emitted against the batch
query over the inputs' current rows, micro-batch by micro-batch.

The stream reads one file per input per trigger (support: `Inputs`), so micro-batch b applies
batch b of every input's changes. Its output is checked as a sink applies it: by output identity,
a delete removes, an insert or update_postimage puts; after each micro-batch, the table so made
must be the batch query's answer over the current rows as of that batch.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pyspark.sql import DataFrame, SparkSession

from spark_multijoin import changelog
from spark_multijoin.testing import Inputs
from support.changelog_shapes import ChangelogShape
from support.changelogs import CHANGE_TYPE, VERSION, Changes, ChangelogSpec, current_rows

IDENTITY_KEY = "spark_multijoin.row_id"
OUTPUT_TYPES = ("insert", "update_postimage", "delete")


@dataclass
class ChangelogRun:
    columns: list[str]          # the output's columns but the change type, which comes last
    identity: list[str]         # the output identity's columns, as the change type names them
    batches: list[list[tuple]]  # per micro-batch, the rows it emitted
    plan: str
    progress: list[dict]

    @property
    def operator_count(self) -> int:
        return len(re.findall(r"ChangelogJoin input0 ", self.plan))

    @property
    def ordering_count(self) -> int:
        """How many orderings by row id (stateful operators of their own) the query ran."""
        return sum(entry.get("operatorName") == "changelogNormalize"
                   for entry in self.progress[-1]["stateOperators"])

    def metric_total(self, key: str) -> int:
        """The custom metric `key` of every changelog join, summed over the micro-batches."""
        return sum(entry["customMetrics"][key] for progress in self.progress
                   for entry in progress["stateOperators"])


def write_changes(root: Path, specs: list[ChangelogSpec],
                  changes: list[list[list[dict]]]) -> Inputs:
    """The files of `changes` ([input][batch] -> change rows): one per input and batch."""
    inputs = Inputs(root, [spec.change_schema for spec in specs], changes)
    inputs.write()
    return inputs


def declared_streams(spark: SparkSession, specs: list[ChangelogSpec], inputs: Inputs,
                     **options) -> list[DataFrame]:
    return [changelog.declare(frame, row_id=spec.row_id, row_version=[VERSION],
                              **{"full_changelog": getattr(spec, "full_changelog", False), **options})
            for spec, frame in zip(specs, inputs.streams(spark))]


def run_changelog_join(frame: DataFrame, checkpoint: Path, first_batch: int = 0) -> ChangelogRun:
    """Runs `frame`, a changelog join's stream, over every file present; each micro-batch's rows
    are collected as it writes them. A restart's first micro-batch is `first_batch`."""
    emitted: dict[int, list[tuple]] = {}

    def collect(batch: DataFrame, batch_id: int) -> None:
        emitted[batch_id] = [tuple(row) for row in batch.collect()]

    query = (frame.writeStream.foreachBatch(collect).outputMode("append")
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        query.awaitTermination()
        plan = query._jsq.explainInternal(False)
        progress = [json.loads(p.json) for p in query.recentProgress]
    finally:
        query.stop()
    assert sorted(emitted) == list(range(first_batch, first_batch + len(emitted))), \
        f"micro-batches {sorted(emitted)}"
    assert frame.columns[-1] == CHANGE_TYPE, frame.columns
    identity = list(frame.schema[CHANGE_TYPE].metadata[IDENTITY_KEY])
    return ChangelogRun(frame.columns[:-1], identity, [emitted[b] for b in sorted(emitted)], plan,
                        progress)


def expected_tables(spark: SparkSession, build: Callable[[list[DataFrame]], DataFrame],
                    specs: list[ChangelogSpec], current: list[list[list[dict]]],
                    columns: list[str]) -> list[Counter]:
    """Per micro-batch, the rows (of `columns`) of the batch query over the current rows as of
    that batch (`current`: [input][batch] -> rows)."""
    tables = []
    for b in range(len(current[0])):
        frames = [rows_frame(spark, spec.schema, current[i][b]) for i, spec in enumerate(specs)]
        tables.append(Counter(map(tuple, build(frames).select(*columns).collect())))
    return tables


def rows_frame(spark: SparkSession, schema: str, rows: list[dict]) -> DataFrame:
    """`rows` as a batch DataFrame of `schema`: an inline table, which Spark joins without
    Python workers, several times sooner than `createDataFrame`'s rows."""
    fields = [field.split() for field in schema.split(", ")]
    columns = ", ".join(f"CAST(col{i} AS {kind}) AS {name}"
                        for i, (name, kind) in enumerate(fields, start=1))
    values = ", ".join("(" + ", ".join("NULL" if row[name] is None else repr(row[name])
                                       for name, _ in fields) + ")" for row in rows)
    if not rows:  # an inline table has a row: one of nulls, filtered out
        return spark.sql(f"SELECT {columns} FROM VALUES ({', '.join(['NULL'] * len(fields))}) "
                         "WHERE false")
    return spark.sql(f"SELECT {columns} FROM VALUES {values}")


def expected_of_shape(spark: SparkSession, shape: ChangelogShape, changes: list[Changes],
                      columns: list[str]) -> list[Counter]:
    """`expected_tables` of a random shape, over the model's current rows of its changes."""
    current = [current_rows(spec, c.batches) for spec, c in zip(shape.inputs, changes)]
    return expected_tables(spark, shape.build, shape.inputs, current, columns)


def check_changes(columns: list[str], identity: list[str], emitted: list[list[tuple]],
                  expected: list[Counter], context: str = "") -> None:
    """Applies `emitted` micro-batch by micro-batch and compares the table with `expected`;
    each micro-batch has at most one change per identity, an insert of an absent identity, an
    update of a present one, a delete of a present one carrying its values."""
    assert len(emitted) == len(expected), f"{len(emitted)} micro-batches, not {len(expected)}"
    positions = [columns.index(name) for name in identity]
    table: dict[tuple, tuple] = {}
    for b, (changes, rows) in enumerate(zip(emitted, expected)):
        where = f"micro-batch {b}: {context}"
        seen = set()
        for change in changes:
            values, kind = tuple(change[:-1]), change[-1]
            key = tuple(values[p] for p in positions)
            assert key not in seen, f"{where}\ntwo changes of identity {key}: {changes}"
            seen.add(key)
            _apply(table, key, values, kind, where)
        applied = Counter(table.values())
        assert applied == rows, (
            f"{where}\ncolumns {columns}\nmissing {sorted(rows - applied, key=str)}\n"
            f"extra {sorted(applied - rows, key=str)}\nemitted {changes}")


def _apply(table: dict, key: tuple, values: tuple, kind: str, where: str) -> None:
    assert kind in OUTPUT_TYPES, f"{where}\n{kind} is not an output change type: {values}"
    if kind == "delete":
        assert table.get(key) == values, \
            f"{where}\ndelete of {key} carries {values}, the row is {table.get(key)}"
        del table[key]
    else:
        assert (key in table) == (kind == "update_postimage"), \
            f"{where}\n{kind} of {key}, whose row is {table.get(key)}: {values}"
        table[key] = values


def net_changes(expected: list[Counter], columns: list[str],
                identity: list[str]) -> list[list[tuple]]:
    """The changes a correct operator emits for `expected`: per micro-batch, each identity's
    net change from the batch before (the mutation test's unmutated stream)."""
    positions = [columns.index(name) for name in identity]
    before: dict[tuple, tuple] = {}
    batches = []
    for rows in expected:
        after = {tuple(row[p] for p in positions): row for row in rows}
        assert len(after) == sum(rows.values()), f"identities repeat in {rows}"
        changes = [row + ("delete",) for key, row in before.items() if key not in after]
        changes += [row + ("insert" if key not in before else "update_postimage",)
                    for key, row in after.items() if before.get(key) != row]
        batches.append(changes)
        before = after
    return batches
