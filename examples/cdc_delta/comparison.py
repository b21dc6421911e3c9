"""What both CDC examples check once their query has read every change: the target Delta table
against the batch join over the sources' current rows, every row, as multisets.

A row the target holds twice counts once as found and once as extra, so a change applied twice
shows whether it left a second row or the same row; an output identity (the inputs' row ids)
that the target holds more than once is counted apart, as the sink merges by it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pyspark.sql import DataFrame


@dataclass
class Comparison:
    expected: int        # rows of the batch join
    found: int           # rows of the target
    missing: int         # expected rows the target lacks
    extra: int           # target rows the batch join does not have (extra copies included)
    duplicate_ids: int   # output identities the target holds more than once
    padded: int          # expected rows with a null-padded input
    samples: dict[str, list[tuple]] = field(default_factory=dict)  # a few of each difference

    @property
    def same(self) -> bool:
        return self.missing == self.extra == self.duplicate_ids == 0

    def line(self) -> str:
        return (f"rows expected {self.expected}, found {self.found}, missing {self.missing}, "
                f"extra {self.extra}, identities twice {self.duplicate_ids} "
                f"(null-padded: {self.padded})")


def compare_rows(batch: DataFrame, target: DataFrame, identity: list[str],
                 padded_ids: list[str]) -> Comparison:
    """`target` against `batch`, row by row; `identity` names the output identity's columns,
    `padded_ids` the row ids of the inputs an outer join pads (null where it did)."""
    expected = Counter(map(tuple, batch.collect()))
    found = Counter(map(tuple, target.select(*batch.columns).collect()))
    ids = [batch.columns.index(name) for name in identity]
    identities = Counter(tuple(row[i] for i in ids) for row in found.elements())
    padded = [batch.columns.index(name) for name in padded_ids]
    missing, extra = expected - found, found - expected
    return Comparison(
        expected=sum(expected.values()), found=sum(found.values()),
        missing=sum(missing.values()), extra=sum(extra.values()),
        duplicate_ids=sum(count > 1 for count in identities.values()),
        padded=sum(count for row, count in expected.items()
                   if any(row[i] is None for i in padded)),
        samples={"missing": sorted(missing, key=repr)[:5],
                 "extra": sorted(extra, key=repr)[:5]})
