"""The changelog joins' check is itself checked, by mutation: on the change stream a correct
operator emits for a random case (the net change of each identity between the batch query's
answers), it passes; with one change dropped, one duplicated or a delete turned into an insert,
it fails."""

from __future__ import annotations

import pytest

from support.changelog_runs import check_changes, expected_of_shape, net_changes
from support.changelog_shapes import random_case

# A seed whose correct stream deletes a row it inserted earlier.
SEED = 1


def mutations(correct: list[list[tuple]]) -> dict[str, list[list[tuple]]]:
    """`correct` with one change dropped, one duplicated, one delete made an insert."""
    first = next(b for b, batch in enumerate(correct) if batch)
    batch, at = next((b, i) for b, changes in enumerate(correct)
                     for i, change in enumerate(changes) if change[-1] == "delete")
    copies = {name: [list(changes) for changes in correct]
              for name in ("dropped", "duplicated", "flipped")}
    copies["dropped"][first].pop()
    copies["duplicated"][first].append(correct[first][0])
    copies["flipped"][batch][at] = correct[batch][at][:-1] + ("insert",)
    return copies


@pytest.mark.one_line
def test_the_check_fails_on_a_mutated_change_stream(spark):
    shape, changes = random_case(SEED)
    columns = shape.build([spark.createDataFrame([], spec.schema)
                           for spec in shape.inputs]).columns
    expected = expected_of_shape(spark, shape, changes, columns)
    correct = net_changes(expected, columns, shape.identity())
    check_changes(columns, shape.identity(), correct, expected)
    for name, mutated in mutations(correct).items():
        with pytest.raises(AssertionError):
            check_changes(columns, shape.identity(), mutated, expected)
            pytest.fail(f"the check passes the stream with one change {name}")
