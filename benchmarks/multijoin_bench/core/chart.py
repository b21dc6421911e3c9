"""The chart: state rows and batch duration per micro-batch, Spark's chain (on its default join
state format and, where it ran, format 4) against the multi-join, one column per workload."""

from __future__ import annotations

from pathlib import Path


LABELS = {"chain": "Spark's chain", "chain_v4": "Spark's chain, join state format 4",
          "multi_join": "multi-join"}
STYLES = {"chain": "o-", "chain_v4": "^--", "multi_join": "s-"}


def chart(results: list[dict], path: Path) -> None:
    import matplotlib  # the `bench` extra: only the chart needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(2, len(results), figsize=(4.2 * len(results), 6.5), squeeze=False)
    for column, result in enumerate(results):
        for row, (field, label) in enumerate((("state_rows_per_batch", "state rows"),
                                              ("batch_ms_per_batch", "batch duration (ms)"))):
            axis = axes[row][column]
            series = {mode: result[mode][field] for mode in LABELS if result.get(mode)}
            for mode, values in series.items():
                axis.plot(values, STYLES[mode], label=LABELS[mode])
            if orders_of_magnitude_apart(*series.values()):
                axis.set_yscale("log")
            axis.xaxis.set_major_locator(MaxNLocator(integer=True))
            axis.set_ylabel(label)
        axes[0][column].set_title(result["workload"])
        axes[1][column].set_xlabel("micro-batch")
        axes[0][column].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def orders_of_magnitude_apart(*series: list[float]) -> bool:
    """Whether the series' peaks differ 10x or more: a linear axis would flatten the lower one."""
    peaks = [max(values) for values in series if values]
    return bool(peaks) and min(peaks) > 0 and max(peaks) >= 10 * min(peaks)


def growth_chart(results: list[dict], path: Path) -> None:
    """How a batch's time grows: per data batch (one point each), its time against the rows
    stored before it and against the rows it emits, per Spark peer, one row of plots per
    workload (log scales)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 2, figsize=(10, 4 * len(results)), squeeze=False)
    for row, result in enumerate(results):
        for mode in LABELS:
            batches = [b for b in (result.get(mode) or {}).get("per_batch", [])
                       if b["input_rows"] > 0]
            if not batches:  # a peer not run, or without progress (Flink)
                continue
            stored = [0] + [b["state_rows"] for b in batches[:-1]]
            for axis, xs in zip(axes[row], (stored, [b["output_rows"] for b in batches])):
                axis.plot([max(x, 1) for x in xs], [b["ms"] for b in batches],
                          STYLES[mode][0], label=LABELS[mode])
        for axis, label in zip(axes[row], ("state rows before the batch", "output rows")):
            axis.set_xscale("log")
            axis.set_yscale("log")
            axis.set_xlabel(label)
            axis.set_ylabel("batch ms")
            axis.set_title(result["workload"])
        axes[row][0].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
