"""Which seeds of a randomized differential test run on the Spark line under test.

The randomized tests check the multi-join's own logic, which is one source for every line; what
differs between lines is a thin layer that every seed goes through alike. So the newest supported
line runs every seed, and each older line a share of them, a different share per line (seed
modulo the number of lines), which keeps a run of every line within its time budget while each
line still meets many random shapes. SPARK_MULTIJOIN_ALL_SEEDS=1 runs every seed on any line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import pyspark

from support.modules import load_module

_SPARK_JARS = load_module(Path(__file__).resolve().parents[2] / "scripts" / "spark_jars.py")


def _share() -> tuple[int, int] | None:
    """(this line's index, the number of lines), or None where every seed runs."""
    lines = sorted(_SPARK_JARS.spark_lines(), key=lambda line: tuple(map(int, line.split("."))))
    line = ".".join(pyspark.__version__.split(".")[:2])
    if os.environ.get("SPARK_MULTIJOIN_ALL_SEEDS") == "1" or line not in lines[:-1]:
        return None
    return lines.index(line), len(lines)


def seeds(candidates: Iterable[int]) -> list[int]:
    """The seeds of `candidates` this line runs."""
    share = _share()
    if share is None:
        return list(candidates)
    index, count = share
    return [seed for seed in candidates if seed % count == index]
