"""Flink as the benchmark's peer, from Spark's side: runs peer.py on a
workload's files in a subprocess (PyFlink starts its own JVM, which never shares one with
Spark's), checks that Flink's output rows are Spark's and that its modes ran as named, and sets
Flink's time against the multi-join's.

The ratios set Flink's best run against the multi-join's best run (of the three in
micro-batches and the five in one trigger): best against best, as the runs differ in number.
Flink's MultiJoin on the
heap is the like-for-like peer of the multi-join on Spark's in-memory store, as Flink's in
RocksDB is the multi-join's in RocksDB.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from multijoin_bench.core.runs import ratio
from multijoin_bench.core.workload import Workload
from multijoin_bench.flink.tuning import Tuning

# The folder the package is in: a peer's process started there imports the package whether or
# not the benchmark is installed.
PACKAGE_PARENT = Path(__file__).resolve().parents[2]
PEER_MODULE = "multijoin_bench.flink.peer"
CDC_PEER_MODULE = "multijoin_bench.flink.cdc_peer"
LATENCY_PEER_MODULE = "multijoin_bench.flink.latency"
MISSING = ("--flink: Flink is not installed, skipping the Flink peer. Install the benchmark's "
           "optional extra (pip install -e 'benchmarks[flink]'), or run "
           "`scripts/benchmark --flink`, which installs it.")

# Flink's modes as the results name them, and as the ratios' table heads them.
JOIN_MODES = {"multi_join": "Flink MultiJoin", "multi_join_rocksdb": "Flink MultiJoin, RocksDB",
              "binary_joins": "Flink binary joins"}
# Flink's modes that keep their state on the heap, whose peer is the multi-join on Spark's
# in-memory store.
HEAP_MODES = ("multi_join", "binary_joins")


def installed() -> bool:
    return importlib.util.find_spec("pyflink") is not None


def add_peer(result: dict, workload: Workload, folder: Path) -> None:
    """Flink's peer of `workload` and its ratios, into `result`, where Flink runs the same
    join."""
    if not workload.flink_peer:
        print(f"    flink      no Flink peer for {workload.name}", flush=True)
        return
    result["flink"] = peer_result(workload, folder, result["multi_join"])
    result["flink_ratios"] = ratios(result)
    print(f"    ratios flink/multi: {result['flink_ratios']}", flush=True)


def run_peer(workload: Workload, folder: Path, times: int, modes: list[str] | None = None,
             cap_seconds: float | None = None) -> dict:
    """Flink's MultiJoin (on the heap and in RocksDB), binary joins and a scan-only job (or only
    `modes`) over `folder`'s files, in a subprocess of its own, killed after `cap_seconds`
    (subprocess.TimeoutExpired)."""
    spec = {"schemas": workload.schemas, "joins": workload.flink_joins,
            "folders": [str((folder / f"input{i}").resolve())
                        for i in range(len(workload.schemas))],
            "parallelism": os.cpu_count() or 1, "times": times, "modes": modes}
    with tempfile.TemporaryDirectory() as scratch:
        spec_path, out_path = Path(scratch) / "spec.json", Path(scratch) / "out.json"
        spec_path.write_text(json.dumps(spec))
        subprocess.run([sys.executable, "-m", PEER_MODULE, str(spec_path), str(out_path)],
                       check=True, stdin=subprocess.DEVNULL, cwd=PACKAGE_PARENT,
                       timeout=cap_seconds)
        return json.loads(out_path.read_text())


def cdc_peer_command(spec: Path, out: Path, tuning: Tuning, runs: int = 2,
                     modes: list[str] | None = None, check: bool = False) -> list[str]:
    """The command that runs Flink on a CDC workload's spec (cdc_peer.py) with `tuning`."""
    command = [sys.executable, "-m", CDC_PEER_MODULE, str(spec), str(out), "--runs", str(runs),
               "--managed-memory-mb", str(tuning.managed_memory_mb), "--heap", tuning.heap,
               "--checkpoint-interval-ms", str(tuning.checkpoint_interval_ms),
               "--latency-bound-ms", str(tuning.latency_bound_ms)]
    return command + (["--modes", ",".join(modes)] if modes else []) + (["--check"] if check
                                                                         else [])


def run_cdc_peer(spec: Path, tuning: Tuning, runs: int = 2, modes: list[str] | None = None,
                 check: bool = False, cap_seconds: float | None = None) -> dict:
    """Flink's modes on the CDC workload of `spec` with `tuning`, in a subprocess of its own
    whose JVM gets the tuning's heap; its OUT.json."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out.json"
        subprocess.run(cdc_peer_command(spec.resolve(), out, tuning, runs, modes, check),
                       check=True, stdin=subprocess.DEVNULL, cwd=PACKAGE_PARENT,
                       timeout=cap_seconds, env={**os.environ, "JVM_ARGS": tuning.jvm_args()})
        return json.loads(out.read_text())


def run_latency_peer(mode: str, buffer_timeout_ms: int | None, rate: int, seconds: float,
                     work: Path) -> dict:
    """One run of Flink's MultiJoin (latency.py) at `rate` keys a second per input, as the
    latency run's `mode`, in a process of its own; its summary is the latency run's."""
    out = (work / f"{mode}-{rate}.json").resolve()
    timeout = [] if buffer_timeout_ms is None else ["--buffer-timeout-ms", str(buffer_timeout_ms)]
    subprocess.run([sys.executable, "-m", LATENCY_PEER_MODULE, "--rate", str(rate), "--seconds",
                    str(seconds), "--out", str(out), "--work", str(work.resolve()), *timeout],
                   check=True, cwd=PACKAGE_PARENT)
    return {**json.loads(out.read_text()), "mode": mode}


def capped_peer(workload: Workload, folder: Path, cap_seconds: float) -> dict:
    """Flink's MultiJoin in RocksDB once over `folder`'s files (with its untimed count of the
    output rows first), or not finished at `cap_seconds`: Flink reports no progress on the
    way."""
    try:
        peer = run_peer(workload, folder, times=1, modes=["multi_join_rocksdb"],
                        cap_seconds=cap_seconds)
    except subprocess.TimeoutExpired:
        return {"finished": False, "wall_seconds": cap_seconds}
    return {"finished": True, "wall_seconds": peer["multi_join_rocksdb"]["seconds"],
            "output_rows": peer["output_rows"]}


def peer_result(workload: Workload, folder: Path, multi: dict) -> dict:
    """Flink's peer of `workload` on the same files; fails where its output rows are not the
    multi-join's `multi`, or its plans or state backends are not its modes'."""
    print("    flink      running ...", end="", flush=True)
    peer = run_peer(workload, folder, times=2)
    print(f"\r    flink      MultiJoin {peer['multi_join']['seconds']:.1f} s, in RocksDB "
          f"{peer['multi_join_rocksdb']['seconds']:.1f} s, binary joins "
          f"{peer['binary_joins']['seconds']:.1f} s, scan only "
          f"{peer['scan_only']['seconds']:.1f} s, {peer['output_rows']} output rows",
          flush=True)
    if peer["output_rows"] != multi["output_rows"]:
        raise SystemExit(f"{workload.name}: output rows differ: {multi['output_rows']} "
                         f"with Spark, {peer['output_rows']} with Flink")
    joins = ("binary_joins", "multi_join", "multi_join_rocksdb")
    if [peer[mode]["multi_join_in_plan"] for mode in joins] != [False, True, True]:
        raise SystemExit(f"{workload.name}: Flink's plans are not its modes'")
    if [peer[mode]["rocksdb_used"] for mode in joins] != [False, False, True]:
        raise SystemExit(f"{workload.name}: Flink's state backends are not its modes'")
    return peer


def ratios(result: dict) -> dict:
    """How many times Flink's time each mode of Flink takes, against the multi-join in
    micro-batches and in one trigger: above 1, the multi-join is ahead. Also, where the
    multi-join runs on Spark's in-memory store, Flink's modes on the heap against it there
    (like for like). Best runs on both sides, as Flink's time is its best run: a median of
    several against a best of two would favour Flink."""
    ours = {"micro_batches": result["multi_join_micro_batches_best_seconds"],
            "one_trigger": result["multi_join_one_trigger_best_seconds"]}
    flink_ratios = {f"{mode}_over_{name}": ratio(result["flink"][mode]["seconds"], seconds)
                    for mode in JOIN_MODES for name, seconds in ours.items()}
    in_memory = result.get("in_memory_store")
    if in_memory:
        for mode in HEAP_MODES:
            flink = result["flink"][mode]["seconds"]
            flink_ratios[f"{mode}_over_in_memory_micro_batches"] = ratio(
                flink, in_memory["micro_batches_best_seconds"])
            flink_ratios[f"{mode}_over_in_memory_one_trigger"] = ratio(
                flink, in_memory["one_trigger_best_seconds"])
    return flink_ratios
