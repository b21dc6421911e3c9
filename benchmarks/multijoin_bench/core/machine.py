"""The machine a result ran on, with how fast it was that day: machines of the same size here
have differed twofold in speed, so results from two runs compare only beside their probes."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

# scripts/test ends its timings with the same loop.
PROBE_NUMBERS = 30_000_000


def speed_probe() -> float:
    """CPU seconds of a fixed Python sum: lower is faster."""
    started = time.process_time()
    sum(range(PROBE_NUMBERS))
    return round(time.process_time() - started, 2)


def machine(**extra: str) -> dict:
    return {"cpus": os.cpu_count(), "platform": platform.platform(),
            "python": sys.version.split()[0], "probe_cpu_s": speed_probe(), **extra}


def write_with_machine(path: Path, results: list[dict], **extra: str) -> None:
    """A result file: the results beside the machine they ran on."""
    path.write_text(json.dumps({"machine": machine(**extra), "results": results}, indent=2))
