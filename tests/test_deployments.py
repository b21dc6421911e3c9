"""The multi-join runs, and gives the batch answer, where users deploy Spark beyond the tests'
local session: through a Spark Connect client (the query is planned by a server in another JVM)
and on a cluster (an executor in a process of its own, which gets the jar through spark.jars).
The run is a process of its own on the Spark line under test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parent / "support" / "deployment_run.py"


# On the newest line only: how a server and an executor get the jar is Spark's, the same on every
# line, and each line's jar is loaded by every other test of the line.
@pytest.mark.slow
@pytest.mark.one_line
def test_a_fused_join_through_spark_connect_on_a_cluster_gives_the_batch_answer(spark, tmp_path):
    # `spark` only puts the test among those that run Spark; the run has its own.
    done = subprocess.run([sys.executable, str(RUN), str(tmp_path)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["fused"], "no StreamingMultiJoin in the plan"
    # Four keys with six rows in each of three inputs.
    assert len(found["batch"]) == 4 * 6 ** 3
    assert found["streamed"] == found["batch"]
