"""Input tables as JSON files, one file per input and micro-batch: the one place the tests and the
benchmark write data.

A test or a benchmark workload describes its inputs as rows per micro-batch; batch b of every
input becomes one file whose modification time orders it, and streams read one file per
trigger, so batch b of every input arrives together. The same files read as tables give the
batch query its rows.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

_FIRST_BATCH_MTIME = 1_700_000_000

# Event times in the tests and the benchmark count seconds from here.
START = datetime(2026, 1, 1)


def timestamp(seconds: float) -> str:
    """The event time `seconds` after START, as JSON input carries it."""
    return (START + timedelta(seconds=seconds)).isoformat()


def timestamp_value(seconds: float) -> datetime:
    """The event time `seconds` after START, as a collected row carries it."""
    return START + timedelta(seconds=seconds)


@dataclass
class Inputs:
    """Input tables written as JSON files, one file per micro-batch."""

    root: Path
    schemas: list[str]
    batches: list[list[list[dict]]] = field(default_factory=list)  # [input][batch] -> rows

    def write(self) -> None:
        for input_index, input_batches in enumerate(self.batches):
            for batch_index, rows in enumerate(input_batches):
                self.write_batch(input_index, batch_index, rows)

    def write_batch(self, input_index: int, batch_index: int, rows: list[dict]) -> None:
        folder = self.root / f"input{input_index}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"batch{batch_index:04d}.json"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        # The file source takes files in modification-time order: make it the batch order.
        stamp = _FIRST_BATCH_MTIME + batch_index
        os.utime(path, (stamp, stamp))

    def streams(self, spark: SparkSession, files_per_trigger: int = 1) -> list[DataFrame]:
        return [
            spark.readStream.schema(schema).option("maxFilesPerTrigger", files_per_trigger)
            .json(str(self.root / f"input{index}"))
            for index, schema in enumerate(self.schemas)
        ]

    def tables(self, spark: SparkSession) -> list[DataFrame]:
        return [
            spark.read.schema(schema).json(str(self.root / f"input{index}"))
            for index, schema in enumerate(self.schemas)
        ]

    def rows(self) -> list[dict]:
        """Every row of every input."""
        return [row for batches in self.batches for batch in batches for row in batch]
