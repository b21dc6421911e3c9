"""The soak run's results (run.py) by tenth of the run, whether each stays flat, and the files:
soak.json, soak.md and soak.png."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

TITLES = {"multi_join": "multi-join", "chain": "Spark's chain"}
# The measures judged flat, as decile_summary names them.
MEASURES = ("state_rows", "checkpoint_mb", "heap_after_gc_mb", "batch_ms_p99")
# Flat: the last tenth within this fraction of the second (the first is the warm-up).
FLAT_WITHIN = 0.10


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0


def decile_summary(per_batch: list[dict], samples: list[dict], batches: int) -> list[dict]:
    """Per tenth of the `batches` micro-batches that ran: state rows and checkpoint MB at its
    end, heap after GC at its start (None where no sample fell in it), batch time p50 and p99."""
    tenths = []
    for d in range(10):
        low, high = d * batches // 10, (d + 1) * batches // 10
        ran = [b for b in per_batch if low <= b["batch"] < high]
        sampled = [s for s in samples if low <= s["batch"] < high]
        if not ran:
            continue
        heaps = [s["heap_after_gc_mb"] for s in sampled if "heap_after_gc_mb" in s]
        durations = [b["ms"] for b in ran]
        tenths.append({
            "decile": d + 1, "batches": f"{low}-{high - 1}",
            "state_rows": ran[-1]["state_rows"],
            "checkpoint_mb": round(sampled[-1]["checkpoint_bytes"] / 1e6, 2) if sampled else None,
            "heap_after_gc_mb": heaps[0] if heaps else None,
            "batch_ms_p50": statistics.median(durations), "batch_ms_p99": p99(durations)})
    return tenths


def flatness(deciles: list[dict]) -> dict:
    """Per measure: the second tenth's value, the last's, whether the last is within
    FLAT_WITHIN of the second, and the least-squares slope over the second half of the tenths
    as a fraction of their mean (None where too few tenths have the measure)."""
    verdicts = {}
    for measure in MEASURES:
        values = [(d["decile"], d[measure]) for d in deciles if d.get(measure) is not None]
        if len(values) < 3:
            verdicts[measure] = None
            continue
        second, last = values[1][1], values[-1][1]
        verdicts[measure] = {"second": second, "last": last,
                             "flat": abs(last - second) <= FLAT_WITHIN * max(abs(second), 1e-9),
                             "second_half_slope": relative_slope(values[len(values) // 2:])}
    return verdicts


def relative_slope(points: list[tuple[float, float]]) -> float | None:
    """The least-squares slope of `points` per step of x, over the mean of y."""
    if len(points) < 2:
        return None
    xs, ys = [x for x, _ in points], [y for _, y in points]
    mean_x, mean_y = statistics.mean(xs), statistics.mean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return round(slope / mean_y, 4) if mean_y else None


def write_soak(runs: dict, batches: int, out: Path) -> None:
    for run in runs.values():
        run["flatness"] = flatness(run["deciles"])
    (out / "soak.json").write_text(json.dumps({"batches": batches, "runs": runs}, indent=2))
    (out / "soak.md").write_text(soak_markdown(runs))
    soak_chart(runs, out / "soak.png")


def soak_markdown(runs: dict) -> str:
    lines = []
    for mode, run in runs.items():
        lines += ["", f"{TITLES[mode]}: {run['batches_done']} micro-batches in "
                  f"{run['wall_seconds']} s, {run['output_rows']:,} output rows", "",
                  "| tenth | batches | state rows | checkpoint MB | heap after GC MB | "
                  "batch ms p50 | batch ms p99 |", "| ---: | --- |" + " ---: |" * 5]
        for d in run["deciles"]:
            lines.append(f"| {d['decile']} | {d['batches']} | {d['state_rows']:,} | "
                         f"{d['checkpoint_mb']} | {d['heap_after_gc_mb']} | "
                         f"{d['batch_ms_p50']:.0f} | {d['batch_ms_p99']:.0f} |")
        lines += ["", "| measure | second tenth | last tenth | last within 10% of second | "
                  "slope over the second half, per tenth, of its mean |",
                  "| --- | ---: | ---: | --- | ---: |"]
        for measure, verdict in run["flatness"].items():
            lines.append(f"| {measure} | - | - | too few tenths | - |" if verdict is None else
                         f"| {measure} | {verdict['second']} | {verdict['last']} | "
                         f"{'yes' if verdict['flat'] else 'no'} | "
                         f"{verdict['second_half_slope']} |")
    return "\n".join(lines[1:]) + "\n"


def soak_chart(runs: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fields = (("state_rows", "state rows", "per_batch"), ("ms", "batch ms", "per_batch"),
              ("checkpoint_bytes", "checkpoint bytes", "samples"),
              ("heap_after_gc_mb", "heap after GC (MB)", "samples"))
    fig, axes = plt.subplots(1, len(fields), figsize=(4.2 * len(fields), 3.6))
    for axis, (field, label, series) in zip(axes, fields):
        for mode, run in runs.items():
            points = [(r["batch"], r[field]) for r in run[series] if field in r]
            axis.plot([x for x, _ in points], [y for _, y in points],
                      "o-" if field == "heap_after_gc_mb" else "-", label=TITLES[mode])
        axis.set_xlabel("micro-batch")
        axis.set_ylabel(label)
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
