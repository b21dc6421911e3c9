"""The examples the README shows run, and check their own answers against Spark's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.slow
@pytest.mark.parametrize("example, expected", [
    ("orders_pipeline.py", "same rows: True"),
    ("time_bounded_orders.py", "same rows: True"),
])
def test_example_runs_and_agrees_with_spark(tmp_path, example, expected):
    run = subprocess.run([sys.executable, str(EXAMPLES / example), "--work", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert expected in run.stdout
    assert "StreamingMultiJoin" in run.stdout
