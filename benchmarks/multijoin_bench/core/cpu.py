"""A process's CPU time, for how much of the machine a latency run's driver JVM used."""

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
