"""The CDC sweep's results (sweep.py) as files: cdc_sweep.json, cdc_sweep.md and
cdc_sweep.png (p99 marker latency against the offered rate, every peer)."""

from __future__ import annotations

from pathlib import Path

from multijoin_bench.cdc import markers
from multijoin_bench.cdc.report import FLINK_TITLES, workload_chart
from multijoin_bench.core.machine import write_with_machine

OURS = {"ours_rocksdb": "changelog join, RocksDB", "ours_in_memory": "changelog join, in memory"}


def title(peer: str) -> str:
    if peer in OURS:
        return OURS[peer]
    mode, _, bound = peer.removeprefix("flink_").partition("@")
    return FLINK_TITLES.get(mode, mode) + (f", mini-batch for {int(bound) // 1000} s" if bound
                                            else "")


def write_sweep(results: list[dict], out: Path, spark_version: str) -> None:
    write_with_machine(out / "cdc_sweep.json", results, spark=spark_version)
    (out / "cdc_sweep.md").write_text(sweep_markdown(results))
    sweep_chart(results, out / "cdc_sweep.png")


def sweep_markdown(results: list[dict]) -> str:
    lines = ["| workload | peer | initial load (s) | " + " | ".join(
                 f"changes/s at p99 ≤ {b // 1000} s" for b in markers.BOUNDS_MS) + " |",
             "| --- | --- | ---: |" + " ---: |" * len(markers.BOUNDS_MS)]
    for r in results:
        for peer, run in r["peers"].items():
            # A mini-batch peer searches only the bound its mini-batch is set from.
            rates = [_rate(run["best_rates"][str(b)]) if str(b) in run["best_rates"]
                     else "not searched" for b in markers.BOUNDS_MS]
            lines.append(f"| {r['workload']} | {title(peer)} | {run['initial_load'].get('seconds')}"
                         " | " + " | ".join(rates) + " |")
    lines += ["", *state_table(results), "", *cpu_table(results), "", *settings_table(results),
              ""]
    for r in results:
        lines += [f"{r['workload']}:", "", *wins(r), *machines(r), *took(r), ""]
    return "\n".join(lines) + "\n"


def state_table(results: list[dict]) -> list[str]:
    """Each peer's state when its timed run stopped (cdc/state_size.py), beside the logical bytes
    of the rows the changes left."""
    lines = ["| workload | peer | state (MB) | measured as | logical rows (MB) |",
             "| --- | --- | ---: | --- | ---: |"]
    for r in results:
        for peer, run in r["peers"].items():
            measured, how = state_measured(peer, run.get("state"))
            logical = run.get("logical_state", {}).get("bytes")
            lines.append(f"| {r['workload']} | {title(peer)} | {_mb(measured)} | {how} | "
                         f"{_mb(logical)} |")
    return lines


def cpu_table(results: list[dict]) -> list[str]:
    """Each peer's cores at its highest stage that held the loosest bound it searched (or, where
    none held, its lowest stage): the machine's, the broker's and the producer's, and the rest,
    which is the engine's."""
    lines = ["| workload | peer | stage (changes/s) | machine cores | broker cores | "
             "producer cores | engine cores (the rest) |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        for peer, run in r["peers"].items():
            loosest = max((int(bound) for bound in run["best_rates"]), default=0)
            held = [p for p in run["points"] if markers.holds(p, loosest)]
            point = (max(held, key=lambda p: p["offered_rate"]) if held
                     else min(run["points"], key=lambda p: p["offered_rate"], default=None))
            cpu = (point or {}).get("cpu")
            if not cpu:
                lines.append(f"| {r['workload']} | {title(peer)} | | not measured in this run "
                             "| | | |")
                continue
            parts = [cpu["machine_cores"], cpu["broker_cores"], cpu["producer_cores"]]
            rest = None if None in parts else parts[0] - parts[1] - parts[2]
            lines.append(f"| {r['workload']} | {title(peer)} | {point['offered_rate']:,.0f} | "
                         + " | ".join(_cores(c) for c in (*parts, rest)) + " |")
    return lines


def _cores(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def settings_table(results: list[dict]) -> list[str]:
    """Each peer's settings: memory asked and what Flink's task manager got, checkpoints,
    mini-batches (cdc_sweep.json has every setting)."""
    lines = ["| workload | peer | memory asked | Flink's task manager got | checkpoints | "
             "batching |", "| --- | --- | --- | --- | --- | --- |"]
    for r in results:
        spark = r.get("spark_settings", {})
        for peer, run in r["peers"].items():
            started = run.get("started", {})
            if peer in OURS:
                bounded = spark.get("spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB")
                memory = (f"driver heap {spark.get('spark.driver.memory')}, " + (
                    f"RocksDB {bounded} MB bounded" if peer == "ours_rocksdb"
                    else "state on the heap"))
                row = [memory, "", spark.get("checkpoint", ""), spark.get("trigger", "")]
            else:
                row = flink_settings(started.get("settings", {}), started.get("taskmanager_got"),
                                     started.get("mode", ""))
            lines.append(f"| {r['workload']} | {title(peer)} | " + " | ".join(row) + " |")
    return lines


def flink_settings(asked: dict, got: dict | None, mode: str) -> list[str]:
    if not asked:
        return ["not recorded"] * 4
    managed = ((got or {}).get("memory_configuration") or {}).get("managedMemory")
    incremental = (asked.get("incremental_checkpoints") or {}).get(mode)
    mini = (asked.get("mini_batch") or {}).get(mode)
    return [f"managed {asked['managed_memory_mb']} MB, heap {asked['heap']}",
            f"managed {managed / 2**20:,.0f} MB" if managed else "not read",
            f"every {asked['checkpoint_interval_ms']:,} ms"
            + (", incremental" if incremental else ", full"),
            (f"mini-batch: {mini['allow_latency_ms']:,} ms or {mini['size']:,} rows" if mini
             else "none (per record)") + (", object reuse" if asked.get("object_reuse") else "")]


def state_measured(peer: str, state: dict | None) -> tuple[float | None, str]:
    if not state or "not_read" in state:
        return None, (state or {}).get("not_read", "not measured in this run")
    if peer not in OURS:
        return state["state_size"], "latest checkpoint, full size"
    if state["sst_bytes"] is not None:
        return state["sst_bytes"], "RocksDB's live SST files"
    return state["memory_bytes"], "the store's memory"


def _mb(value: float | None) -> str:
    return "" if value is None else f"{value / 1e6:,.1f}"


def _rate(value: float | None) -> str:
    return "none held" if value is None else f"{value:,.0f}"


def wins(result: dict) -> list[str]:
    """Where a Flink peer holds a bound at a higher rate than each of ours, said so."""
    said = []
    for bound in markers.BOUNDS_MS:
        ours = [run["best_rates"].get(str(bound)) or 0 for peer, run in result["peers"].items()
                if peer in OURS]
        for peer, run in result["peers"].items():
            theirs = run["best_rates"].get(str(bound))
            if peer not in OURS and ours and theirs and theirs > max(ours):
                than = (f"more than ours ({max(ours):,.0f})" if max(ours)
                        else "where ours holds it at no rate measured")
                said.append(f"- At p99 ≤ {bound // 1000} s, {title(peer)} holds "
                            f"{theirs:,.0f} changes/s, {than}.")
    return said or ["- No Flink peer held a bound at a higher rate than ours."]


def machines(result: dict) -> list[str]:
    """Where a workload's peers ran on machines of unlike speed (their probes more than a tenth
    apart, or one without a probe), said so: their rates compare only with care."""
    probes = {peer: run.get("machine", {}).get("probe_cpu_s")
              for peer, run in result["peers"].items()}
    known = [p for p in probes.values() if p]
    if len(set(probes.values())) < 2 or (None not in probes.values()
                                          and max(known) <= 1.1 * min(known)):
        return []
    said = ", ".join(f"{title(peer)} {f'{probe} CPU-s' if probe else 'no probe'}"
                     for peer, probe in probes.items())
    return [f"- Its peers ran on machines of unlike speed (the speed probe: {said}); compare "
            "their rates with care."]


def took(result: dict) -> list[str]:
    """How long the workload's sweeps took, peer by peer, where their files say."""
    times = [run["sweep_seconds"] for run in result["peers"].values() if "sweep_seconds" in run]
    if not times:
        return []
    unknown = len(result["peers"]) - len(times)
    return [f"- The sweeps of {len(times)} of its peers took {sum(times) / 60:,.0f} minutes in "
            f"all" + (f" ({unknown} ran before their time was recorded)." if unknown else ".")]


def sweep_chart(results: list[dict], path: Path) -> None:
    """p99 marker latency against the offered rate, a line per peer, the bounds dotted."""
    from matplotlib.ticker import NullFormatter  # the `bench` extra: only the chart needs it

    def draw(axis, r: dict) -> None:
        for peer, run in r["peers"].items():
            points = sorted((p["offered_rate"], p["p99_ms"] / 1000) for p in run["points"]
                            if p["p99_ms"] is not None and not p["missing_markers"])
            if points:
                axis.plot(*zip(*points), marker="o", label=title(peer))
        for bound in markers.BOUNDS_MS:
            axis.axhline(bound / 1000, color="grey", linewidth=0.5, linestyle=":")
        axis.set_xscale("log")
        axis.set_yscale("log")
        # Over less than a decade a log axis labels its minor ticks too, and they overlap.
        axis.xaxis.set_minor_formatter(NullFormatter())

    workload_chart(results, path, draw, "offered changes a second", "p99 marker latency (s)")
