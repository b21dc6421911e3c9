"""Where a real-time batch boundary's pause goes, from Spark's event log (run.py turns the
log on for its session).

A long batch's end E is when its first source task ends: from then no row is read until the next
batch's source tasks run. Between E and the first row out of the next batch, per boundary:

- `batch end`: E to the last task of the batch's stateful stage ending (its commit, in the task);
- `driver`: that batch's job ending to the next one being submitted (the commit log, the offset
  log, planning the next batch and building its RDDs), of which `planning` is the next batch's
  query planning as its progress reports it;
- `task start`: the next job's submission to its last source task running (scheduling, launching
  and deserializing the tasks);
- `first row out`: the next source tasks running to the first row out of those due while no
  source read (the sources reading them, the shuffle's flush, the state store's load, the join).
  Boundaries no row waited at are left out.

The four do not quite add up to the pause of run.py: the job ends a moment after its last
task, and the slowest row near a boundary may be due a little before E.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

PARTS = ("batch end", "driver", "planning", "task start", "first row out")


def read_jobs(log: Path) -> dict[str, list[dict]]:
    """Per streaming query id, its jobs in order: submission and end times (epoch ms), per stage
    (source first, stateful, if any, last) its tasks' (launch, finish, deserialize ms), and its
    batch's query planning (ms)."""
    jobs: dict[int, dict] = {}
    tasks: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    planning: dict[str, list[int]] = defaultdict(list)
    for line in log.open():
        event = json.loads(line)
        kind = event["Event"]
        if kind.endswith("QueryProgressEvent"):
            progress = event["progress"]
            planning[progress["id"]].append(progress["durationMs"].get("queryPlanning", 0))
        elif kind == "SparkListenerJobStart":
            jobs[event["Job ID"]] = {
                "query": event.get("Properties", {}).get("sql.streaming.queryId", ""),
                "start": event["Submission Time"], "stages": sorted(event["Stage IDs"])}
        elif kind == "SparkListenerJobEnd" and event["Job ID"] in jobs:
            jobs[event["Job ID"]]["end"] = event["Completion Time"]
        elif kind == "SparkListenerTaskEnd":
            info, metrics = event["Task Info"], event.get("Task Metrics") or {}
            tasks[event["Stage ID"]].append((info["Launch Time"], info["Finish Time"],
                                             metrics.get("Executor Deserialize Time", 0)))
    by_query: dict[str, list[dict]] = defaultdict(list)
    for job_id in sorted(jobs):
        job = jobs[job_id]
        job["tasks"] = [tasks[stage] for stage in job["stages"] if tasks[stage]]
        if job["query"] and "end" in job and job["tasks"]:
            by_query[job["query"]].append(job)
    for query, jobs_of_query in by_query.items():
        for job, planned in zip(jobs_of_query, planning[query]):
            job["planning"] = planned
    return by_query


def reading_from(job: dict) -> float:
    """When all of `job`'s source tasks ran (epoch ms): from then its rows are read."""
    return max(launch + deserialize for launch, _, deserialize in job["tasks"][0])


def boundary_parts(jobs: list[dict], rows_ms: list[tuple[float, float]]) -> list[dict[str, float]]:
    """Each boundary's parts (ms), for one query's jobs and its rows' (due, arrival) times (epoch
    ms); of the boundaries that rows waited at."""
    parts = []
    for ended, next_job in zip(jobs, jobs[1:]):
        batch_end = min(finish for _, finish, _ in ended["tasks"][0])
        running = reading_from(next_job)
        first_out = min((at for due, at in rows_ms if batch_end < due < running < at),
                        default=None)
        if first_out is None:
            continue
        parts.append({
            "batch end": max(finish for _, finish, _ in ended["tasks"][-1]) - batch_end,
            "driver": next_job["start"] - ended["end"],
            "planning": next_job.get("planning", 0),
            "task start": running - next_job["start"],
            "first row out": first_out - running})
    return parts


def summary(jobs: list[dict], rows_ms: list[tuple[float, float]]) -> dict:
    """The median of each part over one query's boundaries (`jobs`, as read_jobs gives them), and
    the first boundary's parts."""
    parts = boundary_parts(jobs, rows_ms)
    if not parts:
        return {}
    return {"boundaries": len(parts),
            "median": {part: round(statistics.median(p[part] for p in parts)) for part in PARTS},
            "first": {part: round(parts[0][part]) for part in PARTS}}


def event_log(folder: Path) -> Path:
    """The session's event log (one application, uncompressed, not rolled)."""
    logs = [path for path in folder.iterdir() if path.is_file() and not path.name.startswith(".")]
    if len(logs) != 1:
        raise SystemExit(f"expected one event log in {folder}, found {len(logs)}")
    return logs[0]
