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
    assert [i["name"] for i in verdicts[0]["args"]["inputs"]] == ["o", "p", "s"]
    # The micro-batches' executions (the others create the views).
    batches = [d for d in seen["descriptions"] if "StreamingSymmetricHashJoin" in d]
    assert batches, seen["descriptions"]
    assert all("== Extended Information (spark-multijoin) ==" in d for d in batches), batches
    # A micro-batch's plan writes the conditions without the aliases' qualifiers (id0, not o.id0).
    said = [v["message"].split(" Conditions: ")[0] for v in verdicts]
    assert all(words in d for words in said for d in batches), batches
