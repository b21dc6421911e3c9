"""Queries over the inputs that `Inputs` writes, shared by the tests and the benchmark."""

from __future__ import annotations

from pyspark.sql import DataFrame


def join_on_k(frames: list[DataFrame]) -> DataFrame:
    """frames[0] JOIN frames[1] USING (k) JOIN ... : inputs with columns k, v<i>."""
    joined = frames[0]
    for frame in frames[1:]:
        joined = joined.join(frame, "k")
    return joined
