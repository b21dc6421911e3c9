"""What of the suite runs on the Spark line under test.

The randomized tests check the multi-join's own logic, which is one source for every line; what
differs between lines is a thin layer that every seed goes through alike. So each supported line
runs a share of the seeds, a different share per line (seed modulo the number of lines): a run of
every line meets every seed once and stays within its time budget, while each line still meets
many random shapes.

The tests marked `line_shared` are the hand-written cases of that same logic (a shape, an edge
of the semantics) that meet no per-line code the seeds do not: each runs on one line, picked by
its id, so that a run of every line meets each once. The tests marked `one_line` check the
Python front end (the command line, the advisor, the examples, the benchmark's smoke run) or a
kill that goes through the same code on every line; they run on the newest supported line only.

SPARK_MULTIJOIN_FULL_RUN=1 runs every seed and every test on any line.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Iterable

import pyspark

from support.modules import load_module

_SPARK_JARS = load_module(Path(__file__).resolve().parents[2] / "scripts" / "spark_jars.py")


def _share() -> tuple[int, int] | None:
    """(this line's index among the supported lines, oldest first; their number), or None where
    this line runs every seed and every test: in a full run, or on a line the project does not
    list."""
    lines = sorted(_SPARK_JARS.spark_lines(), key=lambda line: tuple(map(int, line.split("."))))
    line = ".".join(pyspark.__version__.split(".")[:2])
    if os.environ.get("SPARK_MULTIJOIN_FULL_RUN") == "1" or line not in lines:
        return None
    return lines.index(line), len(lines)


def runs_one_line_tests() -> bool:
    """Whether this line runs the tests marked `one_line`: the newest line, or any that runs
    everything."""
    share = _share()
    return share is None or share[0] == share[1] - 1


def runs_shared_test(test_id: str) -> bool:
    """Whether this line runs the `line_shared` test `test_id` (a pytest node id): one line
    each, by a hash of the id that is the same in every process."""
    share = _share()
    if share is None:
        return True
    index, count = share
    return zlib.crc32(test_id.encode()) % count == index


def seeds(candidates: Iterable[int]) -> list[int]:
    """The seeds of `candidates` this line runs."""
    share = _share()
    if share is None:
        return list(candidates)
    index, count = share
    return [seed for seed in candidates if seed % count == index]
