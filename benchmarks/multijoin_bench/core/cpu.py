"""CPU time: a process's (a latency run's driver JVM, the CDC sweep's broker and producer) and the
machine's."""

from __future__ import annotations

import os
import time
from pathlib import Path


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU time of process `pid` so far, from Linux's /proc; None elsewhere."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # After the command's name in brackets, which may hold spaces: utime and stime are the
    # 12th and 13th fields.
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float | None:
    """CPU time every core spent busy so far (neither idle nor waiting on I/O), from /proc/stat;
    None elsewhere."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return None
    ticks = [int(field) for field in first[1:9]]  # user to steal; guests are in user already
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


class CpuWindow:
    """The CPU a process used from `start` to `end` (epoch seconds), read at the first `check`
    at or after each."""

    def __init__(self, pid: int, start: float, end: float) -> None:
        self.pid, self.marks = pid, [start, end]
        self.readings: list[tuple[float, float | None]] = []

    def check(self) -> None:
        now = time.time()
        if self.marks and now >= self.marks[0]:
            self.marks.pop(0)
            self.readings.append((now, cpu_seconds(self.pid)))

    def cores(self) -> float | None:
        """The CPU used over the window, in cores; None before both readings, or off Linux."""
        if len(self.readings) < 2 or None in (self.readings[0][1], self.readings[1][1]):
            return None
        (began, used_before), (ended, used_after) = self.readings
        return round((used_after - used_before) / (ended - began), 2)


class CpuSplit:
    """The cores named processes used over a span, and the machine's, from two readings."""

    def __init__(self, pids: dict[str, int | None]) -> None:
        self.pids = pids

    def read(self) -> dict[str, float | None]:
        return {"at": time.time(), "machine": machine_busy_seconds(),
                **{name: cpu_seconds(pid) if pid else None for name, pid in self.pids.items()}}

    def cores_since(self, before: dict[str, float | None]) -> dict[str, float | None]:
        """Each process's cores since `before`, and the machine's; None where unread."""
        after = self.read()
        span = after["at"] - before["at"]  # type: ignore[operator]
        return {f"{name}_cores": None if None in (before[name], after[name]) or span <= 0
                else round((after[name] - before[name]) / span, 2)  # type: ignore[operator]
                for name in ("machine", *self.pids)}
