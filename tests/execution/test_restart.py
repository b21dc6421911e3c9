"""A multi-join stopped mid-stream resumes from its checkpoint with its state."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from pyspark.errors import StreamingQueryException

from spark_multijoin._session_conf import STATE_TTL_KEY
from spark_multijoin.testing import Inputs, join_on_k
from support.generators import keyed_inputs
from support.metrics import progress_key
from support.runs import (STATE_STORES, batch_rows, committed_checkpoint_ids, run_to_parquet,
                          session_conf)
from support.spark_lines import (ROW_CHECKSUM_KEY, has_row_checksums,
                                 skip_without_checkpoint_format_v2)

N_INPUTS = 4
N_BATCHES = 6
# Spark's row checksums (off by default), each read verified: the stored rows' entries, several
# values under one key, are written and read back across the restart in Spark's other encoding.
ROW_CHECKSUMS = {ROW_CHECKSUM_KEY: "true",
                 "spark.sql.streaming.stateStore.rowChecksum.readVerificationRatio": "1"}


# With a state TTL (longer than the test) each row keeps its store time: on the in-memory store,
# in the row's value. With state store checkpoint format v2 each store loads the checkpoint
# whose id the commit log records.
@pytest.mark.parametrize("store, ttl, layout_version", [
    ("rocksdb", None, 3), ("rocksdb-checkpoint-v2", None, 3), ("in-memory", None, 4),
    ("in-memory", "1h", 4)])
def test_restart_resumes_with_state(spark, tmp_path, store, ttl, layout_version):
    skip_without_checkpoint_format_v2(spark, STATE_STORES[store])
    rng = random.Random(11)
    inputs = Inputs(tmp_path / "inputs", [f"k int, v{i} int" for i in range(N_INPUTS)])
    batches = [[[{"k": rng.randrange(6), f"v{i}": rng.randrange(100)} for _ in range(5)]
                for _ in range(N_BATCHES)] for i in range(N_INPUTS)]

    def run(checkpoint, output, enabled):
        with session_conf(spark, {**ROW_CHECKSUMS, **STATE_STORES[store], STATE_TTL_KEY: ttl}):
            return run_to_parquet(spark, inputs, join_on_k, enabled=enabled,
                                  checkpoint=tmp_path / checkpoint, output=tmp_path / output)

    # Interrupted run: the first half of the batches, stop, then the rest from the checkpoint.
    for i in range(N_INPUTS):
        for b in range(N_BATCHES // 2):
            inputs.write_batch(i, b, batches[i][b])
    run("ckpt", "out", enabled=True)
    for i in range(N_INPUTS):
        for b in range(N_BATCHES // 2, N_BATCHES):
            inputs.write_batch(i, b, batches[i][b])
    progress = run("ckpt", "out", enabled=True)
    inputs.batches = batches

    # The query ran with the checksums: Spark records the setting in its offset log. (Spark 4.1
    # has no row checksums.)
    if has_row_checksums(spark):
        offset_log = (tmp_path / "ckpt" / "offsets" / "0").read_text().splitlines()
        assert json.loads(offset_log[1])["conf"][ROW_CHECKSUM_KEY] == "true"
    resumed = Counter(map(tuple, spark.read.parquet(str(tmp_path / "out")).select(
        "k", *[f"v{i}" for i in range(N_INPUTS)]).collect()))
    assert resumed == batch_rows(spark, inputs, join_on_k)
    assert resumed, "the data should join"
    multi_join_state = [entry for entry in progress["stateOperators"]
                        if entry["operatorName"] == "multiJoin"]
    state_rows = progress_key(spark, "NUM_TOTAL_STATE_ROWS")
    assert [entry[state_rows] for entry in multi_join_state] == [N_INPUTS * N_BATCHES * 5]
    # The checkpoint records the operator, the version of its state layout and what the layout
    # depends on: max-tables as planned, the inputs' columns, the outer joins, each input's TTL.
    metadata = spark.read.format("state-metadata").load(str(tmp_path / "ckpt")).collect()
    assert [row.operatorName for row in metadata] == ["multiJoin"]
    properties = json.loads(metadata[0].operatorProperties)
    assert [[(field["name"], field["type"]) for field in schema["fields"]]
            for schema in properties.pop("inputSchemas")] == [
        [("k", "integer"), (f"v{i}", "integer")] for i in range(N_INPUTS)]
    assert properties.pop("sparkVersion") == spark.version
    assert properties == {"stateFormatVersion": layout_version, "maxTables": None,
                          "joinTree": {"parents": [None] * N_INPUTS, "outerOrder": [],
                                       "fullOuter": []},
                          "stateTtlsMs": [3600000 if ttl else None] * N_INPUTS}
    # Format v2: the commit log records the multi-join's store checkpoint of each partition, as
    # Spark records its own operators'; format v1 records none.
    ids = committed_checkpoint_ids(tmp_path / "ckpt").get(str(metadata[0].operatorId))
    assert (ids is not None) == (store == "rocksdb-checkpoint-v2")
    if ids is not None:
        assert len(ids) == 2 and all(len(partition) == 1 for partition in ids)


@pytest.mark.parametrize("first, then, error", [
    (True, False, "Cannot change multi-join.enabled from true to false between restarts"),
    (False, True, "holds the state of Spark's own joins, written while multi-join.enabled was "
                  "false")])
def test_restart_with_multi_join_toggled_names_the_setting(spark, tmp_path, first, then, error):
    """Toggling the conf changes the query's stateful operators: the restart is refused, as
    Spark refuses it, but naming the setting."""
    rng = random.Random(2)
    inputs = Inputs(tmp_path / "inputs", [f"k int, v{i} int" for i in range(3)])
    for i in range(3):
        inputs.write_batch(i, 0, [{"k": rng.randrange(3), f"v{i}": 0} for _ in range(4)])
    run_to_parquet(spark, inputs, join_on_k, enabled=first, checkpoint=tmp_path / "ckpt",
                   output=tmp_path / "out")
    for i in range(3):
        inputs.write_batch(i, 1, [{"k": rng.randrange(3), f"v{i}": 1} for _ in range(4)])
    with pytest.raises(StreamingQueryException, match=error):
        run_to_parquet(spark, inputs, join_on_k, enabled=then, checkpoint=tmp_path / "ckpt",
                       output=tmp_path / "out")


def _state_partitions(spark, checkpoint) -> list[int]:
    """numPartitions of each stateful operator, as the checkpoint's operator metadata records."""
    metadata = spark.read.format("state-metadata").load(str(checkpoint)).collect()
    return [row.numPartitions for row in metadata]


def _multi_join_rows(spark, output) -> Counter:
    return Counter(map(tuple, spark.read.parquet(str(output)).select(
        "k", *[f"v{i}" for i in range(3)]).collect()))


def test_restart_keeps_the_checkpoints_partitions(spark, tmp_path):
    """A restart with another spark.sql.shuffle.partitions runs on the partitions the checkpoint
    was written with, as Spark's own stateful operators do (the offset log records them)."""
    inputs = keyed_inputs(tmp_path / "inputs", 3, seed=4)  # two micro-batches of 6 rows each
    run_to_parquet(spark, inputs, join_on_k, enabled=True, checkpoint=tmp_path / "ckpt",
                   output=tmp_path / "out", shuffle_partitions=2)
    for i in range(3):
        inputs.write_batch(i, 2, [{"k": k, f"v{i}": 10 + k} for k in range(5)])
    progress = run_to_parquet(spark, inputs, join_on_k, enabled=True,
                              checkpoint=tmp_path / "ckpt", output=tmp_path / "out",
                              shuffle_partitions=3)

    assert progress["batchId"] == 2
    assert _multi_join_rows(spark, tmp_path / "out") == batch_rows(spark, inputs, join_on_k)
    state_rows = progress_key(spark, "NUM_TOTAL_STATE_ROWS")
    assert [entry[state_rows] for entry in progress["stateOperators"]] == [3 * (12 + 5)]
    assert _state_partitions(spark, tmp_path / "ckpt") == [2]


def test_a_batch_run_again_writes_its_state_anew(spark, tmp_path):
    """Spark runs a batch again where its end did not reach the commit log (a crash after the
    state stores committed), here with the checkpoint file manager that the Python helper sets
    for the local file system. The stores keep the changelogs they wrote for that batch (seen:
    the same files, untouched), so nothing is written over an existing file here; the manager's
    overwriting is compared with Spark's default manager's in the Scala suite."""
    inputs = keyed_inputs(tmp_path / "inputs", 3, seed=6)
    run_to_parquet(spark, inputs, join_on_k, enabled=True, checkpoint=tmp_path / "ckpt",
                   output=tmp_path / "out")
    commits = tmp_path / "ckpt" / "commits"
    last = max(int(entry.name) for entry in commits.iterdir() if entry.name.isdigit())
    (commits / str(last)).unlink()
    for i in range(3):
        inputs.write_batch(i, 2, [{"k": k, f"v{i}": 20 + k} for k in range(4)])
    progress = run_to_parquet(spark, inputs, join_on_k, enabled=True,
                              checkpoint=tmp_path / "ckpt", output=tmp_path / "out")

    assert progress["batchId"] == last + 1
    assert _multi_join_rows(spark, tmp_path / "out") == batch_rows(spark, inputs, join_on_k)
    state_rows = progress_key(spark, "NUM_TOTAL_STATE_ROWS")
    assert [entry[state_rows] for entry in progress["stateOperators"]] == [3 * (12 + 4)]
    # Every write reached its file: a write whose rename failed leaves its temporary file.
    assert sorted(path.name for path in (tmp_path / "ckpt").rglob("*.tmp")) == []


def test_new_checkpoint_takes_the_sessions_partitions(spark, tmp_path):
    inputs = keyed_inputs(tmp_path / "inputs", 3, seed=5, n_batches=1)
    run_to_parquet(spark, inputs, join_on_k, enabled=True, checkpoint=tmp_path / "ckpt",
                   output=tmp_path / "out", shuffle_partitions=3)
    assert _state_partitions(spark, tmp_path / "ckpt") == [3]


@pytest.mark.parametrize("n_inputs, before, after", [(7, 4, 5), (5, 3, 4)])
def test_restart_with_max_tables_changed_names_the_setting(spark, tmp_path, n_inputs, before,
                                                           after):
    """A 7-way chain runs as two multi-joins at max-tables 4 (4 inputs, then 3) and at 5 (5, then
    2 and the first): the same operators, but the first now joins 5 inputs, whose state this
    checkpoint does not have. A 5-way chain is two multi-joins at 3 (3 inputs, then the first and
    2 more) and, at 4, one multi-join and Spark's join of the input left over: other operators.
    Either way the error says which setting changed."""
    inputs = keyed_inputs(tmp_path / "inputs", n_inputs, seed=6, n_batches=1)
    run_to_parquet(spark, inputs, join_on_k, enabled=True, checkpoint=tmp_path / "ckpt",
                   output=tmp_path / "out", max_tables=before)
    for i in range(n_inputs):
        inputs.write_batch(i, 1, [{"k": 0, f"v{i}": 1}])
    with pytest.raises(StreamingQueryException, match=f"Cannot change multi-join.max-tables "
                                                      f"from {before} to {after} between restarts"):
        run_to_parquet(spark, inputs, join_on_k, enabled=True, checkpoint=tmp_path / "ckpt",
                       output=tmp_path / "out", max_tables=after)


def test_checkpoint_without_the_layout_properties_restarts(spark, tmp_path):
    """A checkpoint of an earlier version recorded only the state format version: nothing else
    is compared, and the restart records the rest."""
    inputs = keyed_inputs(tmp_path / "inputs", 3, seed=7, n_batches=1)
    run_to_parquet(spark, inputs, join_on_k, enabled=True, checkpoint=tmp_path / "ckpt",
                   output=tmp_path / "out")
    metadata_dir = next((tmp_path / "ckpt" / "state").glob("*/_metadata/v2"))
    version, metadata = (metadata_dir / "0").read_text().split("\n", 1)
    (metadata_dir / "0").write_text(version + "\n" + json.dumps(
        {**json.loads(metadata), "operatorPropertiesJson": '{"stateFormatVersion":2}'}))
    (metadata_dir / ".0.crc").unlink()
    for i in range(3):
        inputs.write_batch(i, 1, [{"k": k, f"v{i}": 10 + k} for k in range(5)])
    run_to_parquet(spark, inputs, join_on_k, enabled=True, checkpoint=tmp_path / "ckpt",
                   output=tmp_path / "out")

    assert _multi_join_rows(spark, tmp_path / "out") == batch_rows(spark, inputs, join_on_k)
    properties = json.loads(spark.read.format("state-metadata").load(
        str(tmp_path / "ckpt")).collect()[0].operatorProperties)
    assert len(properties["inputSchemas"]) == 3
