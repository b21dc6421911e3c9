"""The example's own run, which the equality test runs too: rounds of commits to the source
tables, each followed by a run of the query that reads every commit there is and stops
(`availableNow`, a restart from the checkpoint each round), then the target against the batch
join of the tables' current rows."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from pyspark.sql import SparkSession

from .changes import Producer, create_tables
from .job import Comparison, compare, start


@dataclass
class Round:
    number: int
    commits: int         # the producer's commits in this round
    batches: int         # micro-batches the query's run took
    input_rows: int      # change rows it read
    comparison: Comparison
    plan: str            # the physical plan of the run's last micro-batch
    seconds: float


def run_rounds(spark: SparkSession, work: Path, rounds: int, seed: int = 3) -> Iterator[Round]:
    """Creates the source tables in `work`/sources, then commits `rounds` rounds of changes,
    running the query into `work`/table after each."""
    sources = work / "sources"
    create_tables(spark, sources)
    producer = Producer(spark, sources, seed)
    for number in range(rounds):
        started, commits_before = time.monotonic(), producer.commits
        producer.round()
        query = start(spark, sources, work / "table", work / "checkpoint")
        query.awaitTermination()
        if query.exception() is not None:
            raise query.exception()
        progress = [p for p in query.recentProgress if p.numInputRows > 0]
        yield Round(number, producer.commits - commits_before, len(progress),
                    sum(p.numInputRows for p in progress),
                    compare(spark, sources, work / "table"),
                    query._jsq.explainInternal(False), time.monotonic() - started)
