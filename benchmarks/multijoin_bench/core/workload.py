"""What a workload is: its inputs, as rows per input and micro-batch, and its query; and its
input files. The workloads themselves are in workloads.py and, at scale, scale/workloads.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pyspark.sql import DataFrame, SparkSession

from spark_multijoin.testing import Inputs


@dataclass
class Workload:
    name: str
    description: str
    schemas: list[str]
    batches: list[list[list[dict]]]  # [input][batch] -> rows
    query: Callable[[list[DataFrame]], DataFrame]
    check_flat_state: bool = False
    flink_peer: bool = False  # flink/peer.py runs the same join
    # For Flink, per input after the first, its join kind and ON clause (Flink SQL over t0, t1,
    # ...); None: inner joins on k.
    flink_joins: list[list[str]] | None = None

    @property
    def input_rows(self) -> int:
        return sum(len(batch) for batches in self.batches for batch in batches)

    @property
    def files(self) -> int:
        """Files per input: one per micro-batch, all of them in one trigger."""
        return len(self.batches[0])


def inputs(workload: Workload, folder: Path) -> Inputs:
    """The workload's input files under `folder` (one per input and micro-batch)."""
    return Inputs(folder, workload.schemas, workload.batches)


def streams(spark: SparkSession, workload: Workload, folder: Path,
            files_per_trigger: int = 1) -> list[DataFrame]:
    return inputs(workload, folder).streams(spark, files_per_trigger)
