"""The local mini-cluster's REST API, bound to loopback on a free port: what the CDC peer reads
of a running job (its record counts and checkpoints, cdc_state.py; its latest checkpoint's size,
cdc_sweep.py) and of its task manager (the memory it got, cdc_peer.py)."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request


def cluster_config(port: int) -> dict[str, str]:
    # The REST API's record counts are refreshed every 10 s by default.
    return {"rest.bind-address": "127.0.0.1", "rest.address": "127.0.0.1",
            "rest.bind-port": str(port), "rest.port": str(port),
            "metrics.fetcher.update-interval": "200"}


def get_json(port: int, path: str) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        return json.loads(response.read())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def taskmanager_memory(port: int) -> dict:
    """The memory the (one) task manager reports it got, or why it could not be read."""
    try:
        managers = get_json(port, "/taskmanagers")["taskmanagers"]
        details = get_json(port, f"/taskmanagers/{managers[0]['id']}")
    except (OSError, urllib.error.URLError, KeyError, IndexError) as failed:
        return {"not_read": str(failed)}
    return {"memory_configuration": details.get("memoryConfiguration"),
            "total_resource": details.get("totalResource")}


def latest_checkpoint(port: int) -> dict:
    """The running job's latest completed checkpoint: its full state size (`state_size`) and what
    it added to the last one (`checkpointed_size`, the same unless incremental), or why it could
    not be read."""
    try:
        job = next(j["id"] for j in get_json(port, "/jobs")["jobs"] if j["status"] == "RUNNING")
        completed = get_json(port, f"/jobs/{job}/checkpoints")["latest"]["completed"]
        return {key: completed[key] for key in ("id", "state_size", "checkpointed_size")}
    except (OSError, urllib.error.URLError, KeyError, TypeError, StopIteration) as failed:
        return {"not_read": repr(failed)}
