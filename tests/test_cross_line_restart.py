"""A checkpoint written on one Spark line restarts on the newer lines with the batch answer, and
one written on a newer line is refused on an older one, saying so: each step of the checkpoint's
life runs in its line's venv (.venv-<line>, which scripts/test makes), so the test runs where at
least two lines' venvs are present and is skipped otherwise (SPARK_LINES=4.3 scripts/test)."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pytest

from scripts.spark_jars import spark_lines
from support.driver_jvm import SUBMIT_OPTS_KEY, submit_options
from spark_multijoin.testing import timestamp

ROOT = Path(__file__).resolve().parent.parent
# The supported lines whose venv is here (other venvs, such as the CDC benchmark's, are not lines).
LINES = [line for line in sorted(spark_lines(), key=lambda line: tuple(map(int, line.split("."))))
         if (ROOT / f".venv-{line}" / "bin" / "python").exists()]
pytestmark = pytest.mark.skipif(len(LINES) < 2, reason="needs the venvs of two Spark lines")


def run_step(folder: Path, line: str, number: int, runs: dict[str, dict]) -> dict:
    """Step `number` on `line`: each of `runs` (a query, its batches, whether to compare) on its
    own inputs, checkpoint and sink under `folder`; what the step saw."""
    for name, each in runs.items():
        each.update({"inputs": str(folder / name / "inputs"),
                     "checkpoint": str(folder / name / "checkpoint"),
                     "output": str(folder / name / "output")})
    step = {"runs": runs, "result": str(folder / f"result{number}")}
    (folder / f"step{number}.json").write_text(json.dumps(step))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests"),
           SUBMIT_OPTS_KEY: submit_options(ROOT / f".venv-{line}")}
    finished = subprocess.run(
        [str(ROOT / f".venv-{line}" / "bin" / "python"), "-m", "support.cross_line_run",
         str(folder / f"step{number}.json")], env=env, capture_output=True, text=True,
        timeout=600)
    assert finished.returncode == 0, finished.stderr[-3000:]
    return json.loads((folder / f"result{number}").read_text())


def inner_batches(rng: random.Random, batch: int) -> list[dict]:
    return [{str(batch): [{"k": rng.randrange(5), f"v{i}": rng.randrange(100)}
                          for _ in range(4)]} for i in range(4)]


def outer_batches(rng: random.Random, batch: int, last: bool) -> list[dict]:
    """Rows spread over 20 seconds of event time per batch; the last batch ends with a row per
    input far ahead, which moves the watermark past every other row, so that every null-padded
    row comes out."""
    def rows(i):
        timed = [{"k": rng.randrange(4), f"t{i}": timestamp(batch * 20 + rng.randrange(20)),
                  f"v{i}": rng.randrange(100)} for _ in range(4)]
        return timed + ([{"k": 99, f"t{i}": timestamp(10_000), f"v{i}": 0}] if last else [])
    return [{str(batch): rows(i)} for i in range(3)]


def changelog_batches(batch: int) -> list[dict]:
    """Orders inserted and moved between customers, customers inserted and renamed: each row's
    versions rise with the step."""
    orders = [{"oid": batch * 10 + j, "cid": j % 3, "amount": j, "v": 1,
               "_change_type": "insert"} for j in range(3)]
    if batch:
        orders.append({"oid": 0, "cid": batch % 3, "amount": batch, "v": batch + 1,
                       "_change_type": "upsert"})
    customers = [{"cid": j, "name": f"c{j}-{batch}", "v": batch + 1,
                  "_change_type": "upsert"} for j in range(2)]
    return [{str(batch): orders}, {str(batch): customers}]


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory) -> tuple[Path, list[dict]]:
    """One life of an inner and a time-bounded outer query's checkpoints: a step on each line,
    oldest first, the last comparing with the batch answer. The newest line's step also starts a
    third checkpoint, which the refusal test restarts on the oldest line."""
    folder = tmp_path_factory.mktemp("lines")
    rng = random.Random(5)
    results = []
    for number, line in enumerate(LINES):
        last = number == len(LINES) - 1
        runs = {"inner": {"query": "inner", "batches": inner_batches(rng, number)},
                "outer": {"query": "outer", "batches": outer_batches(rng, number, last)},
                "changelog": {"query": "changelog", "batches": changelog_batches(number)}}
        for name in ("inner", "outer"):  # the changelog join's rows are changes, not a table
            runs[name]["compare"] = last
        if last:
            runs["newer"] = {"query": "inner", "batches": inner_batches(rng, 0)}
            runs["newer_changelog"] = {"query": "changelog", "batches": changelog_batches(0)}
        results.append(run_step(folder, line, number, runs))
    return folder, results


@pytest.mark.slow
@pytest.mark.parametrize("query", ["inner", "outer"])
def test_checkpoint_restarts_on_each_newer_line_with_the_batch_answer(upgraded, query):
    _, results = upgraded
    assert [result["spark"].rsplit(".", 1)[0] for result in results] == LINES
    assert [result["runs"][query].get("error") for result in results] == [None] * len(LINES)
    assert results[-1]["runs"][query]["found"] == results[-1]["runs"][query]["expected"]
    assert results[-1]["runs"][query]["found"], "the data should join"


@pytest.mark.slow
def test_checkpoint_of_a_newer_line_is_refused_on_an_older_one(upgraded):
    folder, results = upgraded
    newest, oldest = LINES[-1], LINES[0]
    assert results[-1]["runs"]["newer"].get("error") is None
    rng = random.Random(6)
    refused = run_step(folder, oldest, len(LINES),
                       {"newer": {"query": "inner", "batches": inner_batches(rng, 1)}})
    error = refused["runs"]["newer"].get("error", "")
    assert f"it was written by Spark {newest}" in error, refused
    assert f"run the query on Spark {newest} or newer" in error


@pytest.mark.slow
def test_changelog_checkpoint_restarts_on_newer_lines_and_is_refused_on_older(upgraded):
    """A changelog join's checkpoint, its ordering by row id's too, lives through every line;
    one written on the newest is refused on the oldest, in the multi-join's words."""
    folder, results = upgraded
    assert [result["runs"]["changelog"].get("error") for result in results] == \
        [None] * len(LINES)
    newest, oldest = LINES[-1], LINES[0]
    refused = run_step(folder, oldest, len(LINES) + 1,
                       {"newer_changelog": {"query": "changelog",
                                            "batches": changelog_batches(1)}})
    error = refused["runs"]["newer_changelog"].get("error", "")
    assert "cannot resume from this checkpoint: it was written by Spark " + \
        f"{results[-1]['spark']}, and this is Spark {refused['spark']}, an older line" in error, \
        refused
    assert f"run the query on Spark {newest} or newer" in error
