"""The Spark UI shows why a chain does not fuse: the plan description of a running query's SQL
execution, read through the UI's REST API, holds EXPLAIN's spark-multijoin section with the
rule's verdicts. In a process of its own (tests/support/spark_ui_run.py), with the UI on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "support" / "spark_ui_run.py"


def test_a_running_querys_plan_description_in_the_spark_ui_says_why_its_chain_does_not_fuse(
        tmp_path):
    finished = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True,
                              text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    seen = json.loads(finished.stdout.strip().splitlines()[-1])
    verdicts = seen["report"]["verdicts"]
    assert [v["code"] for v in verdicts] == ["NO_SHARED_KEY", "TOO_FEW_STREAMING_INPUTS"]
    with_section = [d for d in seen["descriptions"]
                    if "== Extended Information (spark-multijoin) ==" in d]
    assert with_section, seen["descriptions"]
    assert all(v["message"] in d for v in verdicts for d in with_section), with_section
