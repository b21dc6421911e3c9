"""The machine each result file records, with its speed probe."""

from __future__ import annotations

from pathlib import Path

from multijoin_bench.core.machine import PROBE_NUMBERS, machine

ROOT = Path(__file__).resolve().parents[2]


def test_the_speed_probe_times_the_loop_scripts_test_ends_with():
    assert f"sum(range({PROBE_NUMBERS:_}))" in (ROOT / "scripts" / "test").read_text()
    assert 0 < machine(spark="4.1.0")["probe_cpu_s"] < 60
