"""The CDC sweep's latency markers (paced.py releases them, a JVM sink on each engine notes their
arrival): what a stage of offered load measured, and whether it holds a latency bound. Pure
functions, tested without an engine.

A stage counts at a bound only if every marker released in it arrived, and the p99 of those
released in its last third is within the bound: a stage whose backlog grows shows it there, as
its latency climbs.
"""

from __future__ import annotations

from pathlib import Path

BOUNDS_MS = (1000, 2000, 5000)
MEASURED_SHARE = 1 / 3  # the stage's last third is measured; the rest warms up
# A sweep's rates near a bound differ by at most this factor.
RATE_STEP = 1.15


def arrivals(folder: Path) -> dict[int, float]:
    """Each marker's first arrival (epoch seconds), from the sink's files: lines whose first
    field is the marker's row id and last the arrival in epoch milliseconds."""
    first: dict[int, float] = {}
    for path in folder.glob("*.csv"):
        for line in path.read_text().splitlines():
            fields = line.split(",")
            if len(fields) < 2:
                continue  # a line being written
            row_id, at = int(fields[0]), int(fields[-1]) / 1000
            first[row_id] = min(at, first.get(row_id, at))
    return first


def percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank `q` percentile of `values`."""
    if not values:
        return None
    ranked = sorted(values)
    return ranked[min(len(ranked) - 1, max(0, int(-(-q * len(ranked) // 1)) - 1))]


def measure(stage: dict, arrived: dict[int, float]) -> dict:
    """A stage's latencies (ms) over its measured markers, and what arrived."""
    measured_from = stage["start"] + stage["seconds"] * (1 - MEASURED_SHARE)
    latencies, missing = [], 0
    for row_id, released in stage["markers"]:
        if row_id not in arrived:
            missing += 1
        elif released >= measured_from:
            latencies.append((arrived[row_id] - released) * 1000)
    return {"rate": stage["rate"], "offered_rate": stage["offered_rate"],
            "markers": len(stage["markers"]), "measured_markers": len(latencies),
            "missing_markers": missing,
            "p50_ms": _rounded(percentile(latencies, 0.50)),
            "p99_ms": _rounded(percentile(latencies, 0.99)),
            "max_ms": _rounded(max(latencies, default=None))}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def holds(point: dict, bound_ms: int) -> bool:
    return (point["missing_markers"] == 0 and point["p99_ms"] is not None
            and point["p99_ms"] <= bound_ms)


def best_rates(points: list[dict], bounds: tuple[int, ...] = BOUNDS_MS) -> dict[str, float | None]:
    """Per bound, the highest offered rate of a point that holds it."""
    return {str(bound): max((p["offered_rate"] for p in points if holds(p, bound)), default=None)
            for bound in bounds}


def next_rate(points: list[dict], bounds: tuple[int, ...] = BOUNDS_MS,
              step: float = 1.5, floor: float = 100) -> float | None:
    """The rate of the sweep's next stage, or None when it is done: up by `step` while the
    highest bound holds; then, per bound, the geometric middle of the highest rate that holds it
    and the lowest above that fails it, until those are at most RATE_STEP apart."""
    if not points:
        return None
    top = max(bounds)
    if all(holds(p, top) for p in points):
        return points[-1]["rate"] * step
    lowest = min(p["rate"] for p in points)
    for bound in sorted(bounds, reverse=True):
        held = [p["rate"] for p in points if holds(p, bound)]
        if not held:
            if lowest / 2 >= floor:
                return lowest / 2
            continue
        failed = [p["rate"] for p in points if not holds(p, bound) and p["rate"] > max(held)]
        if failed and min(failed) / max(held) > RATE_STEP:
            return (min(failed) * max(held)) ** 0.5
    return None
