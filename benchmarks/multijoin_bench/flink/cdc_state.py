"""The state bytes of a Flink job of the CDC peer (cdc_peer.py says why this way): the job runs
with sources that never end and periodic checkpoints; once every change has gone through, the
first checkpoint triggered after that is read back through the local mini-cluster's REST API,
bound to loopback on a free port.

"Gone through" is read from the REST API's record counts per job vertex: the sources have
emitted at least one record per change, every other vertex has read exactly what its inputs
wrote, and no count moved between two polls.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from multijoin_bench.flink.peer import environment, job_config
from multijoin_bench.flink.rest import cluster_config, free_port, get_json

if TYPE_CHECKING:
    from multijoin_bench.flink.tuning import Tuning

# The sources look for new files this often; there are none, so it costs next to nothing.
MONITOR_INTERVAL = "1 s"
POLL_SECONDS = 1.0
TIMEOUT_SECONDS = 1800


def checkpoint_config(folder: Path) -> dict[str, str]:
    """Checkpoints every second to `folder`, full snapshots on both backends."""
    return {"execution.checkpointing.interval": "1 s",
            "execution.checkpointing.incremental": "false",
            "execution.checkpointing.dir": folder.as_uri()}


def settled(inputs: dict[str, list[str]], counts: dict[str, tuple[int, int]],
            changes: int) -> bool:
    """Whether the job has taken in every change and holds none in flight: `inputs` gives each
    vertex's input vertices, `counts` each vertex's (records read, records written)."""
    sources = [vertex for vertex, upstream in inputs.items() if not upstream]
    if sum(counts[vertex][1] for vertex in sources) < changes:
        return False
    return all(counts[vertex][0] == sum(counts[up][1] for up in upstream)
               for vertex, upstream in inputs.items() if upstream)


def operator_bytes(inputs: dict[str, list[str]], names: dict[str, str],
                   tasks: dict[str, dict]) -> dict[str, int]:
    """A checkpoint's bytes per vertex that reads from another (the joins and what is chained
    to them), leaving out the sources' own state (the files they have read)."""
    return {names[vertex]: int(tasks.get(vertex, {}).get("state_size", 0))
            for vertex, upstream in inputs.items() if upstream}


def _folder_bytes(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            total += path.stat().st_size if path.is_file() else 0
        except FileNotFoundError:  # RocksDB compacts while the folder is read
            pass
    return total


def _wait_settled(port: int, job: str, inputs: dict[str, list[str]], changes: int,
                  deadline: float) -> dict[str, tuple[int, int]]:
    last = None
    while time.time() < deadline:
        vertices = get_json(port, f"/jobs/{job}")["vertices"]
        counts = {vertex["id"]: (int(vertex["metrics"]["read-records"]),
                                 int(vertex["metrics"]["write-records"])) for vertex in vertices}
        if counts == last and settled(inputs, counts, changes):
            return counts
        last = counts
        time.sleep(POLL_SECONDS)
    raise TimeoutError(f"Flink job {job}: the changes had not gone through by the deadline")


def _wait_checkpoint(port: int, job: str, after_ms: int, deadline: float) -> dict:
    while time.time() < deadline:
        latest = (get_json(port, f"/jobs/{job}/checkpoints").get("latest") or {}).get("completed")
        if latest and latest["trigger_timestamp"] > after_ms:
            return latest
        time.sleep(POLL_SECONDS / 4)
    raise TimeoutError(f"Flink job {job}: no checkpoint completed by the deadline")


def _read_state(port: int, job: str, changes: int, rocksdb_dir: Path) -> dict:
    deadline = time.time() + TIMEOUT_SECONDS
    nodes = get_json(port, f"/jobs/{job}/plan")["plan"]["nodes"]
    inputs = {node["id"]: [up["id"] for up in node.get("inputs", [])] for node in nodes}
    names = {node["id"]: node["description"][:160] for node in nodes}
    counts = _wait_settled(port, job, inputs, changes, deadline)
    through_ms = int(time.time() * 1000)
    rocksdb_bytes = _folder_bytes(rocksdb_dir) if rocksdb_dir.exists() else None
    latest = _wait_checkpoint(port, job, through_ms, deadline)
    tasks = get_json(port, f"/jobs/{job}/checkpoints/details/{latest['id']}").get("tasks", {})
    by_operator = operator_bytes(inputs, names, tasks)
    return {"state_bytes": sum(by_operator.values()), "by_operator": by_operator,
            "checkpoint_bytes": int(latest["state_size"]), "checkpoint_id": latest["id"],
            "rocksdb_local_bytes": rocksdb_bytes,
            "source_records": sum(counts[v][1] for v, up in inputs.items() if not up)}


def measure(mode: str, parallelism: int, ddl: list[str], insert: str, changes: int,
            tuning: Tuning | None = None) -> dict:
    """`insert` (over sources that never end) run in `mode`, with `tuning`'s settings but full
    checkpoints every second, until every one of the `changes` has gone through and a
    checkpoint after that has completed; that checkpoint's bytes."""
    with tempfile.TemporaryDirectory() as scratch:
        port, rocksdb_dir = free_port(), Path(scratch) / "rocksdb"
        checkpoints = Path(scratch) / "checkpoints"
        config = {**job_config(mode, parallelism, str(rocksdb_dir)),
                  **(tuning.job_config(mode, checkpoints) if tuning else {}),
                  **checkpoint_config(checkpoints)}
        cluster = {**cluster_config(port), **(tuning.cluster_config() if tuning else {})}
        env = environment(True, config, cluster)
        for statement in ddl:
            env.execute_sql(statement)
        client = env.execute_sql(insert).get_job_client()
        try:
            state = _read_state(port, str(client.get_job_id()), changes, rocksdb_dir)
        finally:
            client.cancel().result()
        return {**state, "rocksdb_used": rocksdb_dir.exists()}
