"""Changelog joins against the batch query, micro-batch by micro-batch (issue 47).

Random joins of 2 to 6 changelog inputs (support.changelog_shapes) over random change streams
(support.changelogs) run as a stream; after each micro-batch, the changes it emitted so far,
applied by identity, must be the batch query over each input's current rows as of that batch,
which the reference model gives (support.changelog_runs). The check itself is checked: it fails
on a stream with one change dropped, duplicated or turned from a delete into an insert.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import pytest
from pyspark.sql import functions as F

from support.changelog_runs import (check_changes, declared_streams, expected_of_shape,
                                    expected_tables, run_changelog_join, write_changes)
from support.changelog_shapes import ChangelogShape, random_case
from support.changelogs import (CHANGE_TYPE, VERSION, ChangelogSpec, current_rows,
                                ignored_changes, random_changes)
from support.line_share import seeds
from support.metrics import progress_key


def run_and_check(spark, tmp_path, shape: ChangelogShape, changes, context: str) -> None:
    """Runs `shape` over `changes` and checks every micro-batch against the batch query."""
    inputs = write_changes(tmp_path / "inputs", shape.inputs, [c.batches for c in changes])
    frame = shape.build(declared_streams(spark, shape.inputs, inputs))
    run = run_changelog_join(frame, tmp_path / "checkpoint")
    # A shape of L levels is L changelog joins, the ones over the first stacked.
    assert run.operator_count == shape.levels, context + "\n" + run.plan
    assert sorted(run.identity) == sorted(shape.identity()), context
    # An input keyed outside its row id is ordered by row id, unless it is a full changelog.
    assert run.ordering_count == sum(not (spec.id_holds_key or spec.full_changelog)
                                     for spec in shape.inputs), context
    expected = expected_of_shape(spark, shape, changes, run.columns)
    check_changes(run.columns, run.identity, run.batches, expected, context)
    # The changes the rule ignores, and only those, are outdated: the lower join of a stacked
    # shape emits none.
    outdated = progress_key(spark, "NUM_OUTDATED_CHANGES")
    assert run.metric_total(outdated) == sum(
        ignored_changes(spec, c.batches) for spec, c in zip(shape.inputs, changes)), context


@pytest.mark.parametrize("seed", seeds(range(12)))
def test_random_changelog_join_matches_the_batch_query(spark, tmp_path, seed):
    shape, changes = random_case(seed)
    run_and_check(spark, tmp_path, shape, changes, f"seed {seed}: {shape.describe()}")


@pytest.mark.line_shared
def test_right_join_of_a_join_with_an_outer_input(spark, tmp_path):
    """c RIGHT JOIN (a LEFT JOIN b): the preserved side is a changelog join that has an outer
    input already (seed 2 of the random test, reduced)."""
    inputs = [ChangelogSpec(i, "k") for i in range(3)]
    shape = ChangelogShape(inputs, ["", "left_outer", "right_outer"], [0, 0, 0], {}, None,
                           None, None, n_batches=3)
    rng = random.Random(2)
    run_and_check(spark, tmp_path, shape, [random_changes(rng, spec, 3) for spec in inputs],
                  shape.describe())


@dataclass(frozen=True)
class KeyedUpserts:
    """Input i of the ten-way join: a table with primary key id<i> and a column f<i>, whose
    changes are upserts and deletes by key."""

    index: int

    @property
    def row_id(self) -> list[str]:
        return [f"id{self.index}"]

    @property
    def columns(self) -> list[str]:
        return [f"id{self.index}", f"f{self.index}"]

    @property
    def schema(self) -> str:
        return f"id{self.index} int, f{self.index} int"

    @property
    def change_schema(self) -> str:
        return f"{self.schema}, {VERSION} int, {CHANGE_TYPE} string"


def keyed_upserts(rng: random.Random, spec: KeyedUpserts, n_batches: int) -> list[list[dict]]:
    """Per micro-batch, an upsert or a delete of some of five keys, each a new version."""
    version, batches = 0, []
    for _ in range(n_batches):
        batch = []
        for key in rng.sample(range(5), rng.randint(1, 4)):
            version += 1
            kind = "delete" if rng.random() < 0.25 else "upsert"
            batch.append({f"id{spec.index}": key, f"f{spec.index}": rng.randrange(100),
                          VERSION: version, CHANGE_TYPE: kind})
        batches.append(batch)
    return batches


def ten_way_left_join(frames):
    """Flink's MultiJoin example shape, ten tables LEFT JOINed on their primary key."""
    joined = frames[0]
    for i, frame in enumerate(frames[1:], start=1):
        joined = joined.join(frame, F.col("id0") == F.col(f"id{i}"), "left_outer")
    return joined


@pytest.mark.line_shared
def test_ten_way_left_join_of_upserts_is_one_operator(spark, tmp_path):
    rng = random.Random(10)
    specs = [KeyedUpserts(i) for i in range(10)]
    changes = [keyed_upserts(rng, spec, 3) for spec in specs]
    inputs = write_changes(tmp_path / "inputs", specs, changes)
    frame = ten_way_left_join(declared_streams(spark, specs, inputs, format="upsert"))
    run = run_changelog_join(frame, tmp_path / "checkpoint")
    assert run.operator_count == 1, run.plan
    # An output row keeps id0's key: its changes are netted unshuffled, in the key's task.
    assert not re.search(r"ChangelogNetChanges .*\n\s*\+- Exchange", run.plan), run.plan
    current = [current_rows(spec, batches) for spec, batches in zip(specs, changes)]
    expected = expected_tables(spark, ten_way_left_join, specs, current, run.columns)
    assert any(None in row for row in expected[-1]), "some rows should be padded"
    check_changes(run.columns, run.identity, run.batches, expected, "ten-way LEFT JOIN")
