"""Moving a running query from Spark's chain of joins to the multi-join (docs/kafka-delta.md):
the old checkpoint's state is the chain's, which the multi-join cannot take over, so the
multi-join starts a new checkpoint from explicit Kafka offsets, far enough back for the join's
time bounds, and merges into the table what the old query may have written already.

`run_move` shows it: Spark's chain runs over three quarters of the events into the Delta table,
stops; the multi-join starts from the offsets at the old watermark less the chain's time bounds
and merges the rest (and the overlap) in; the table is then the batch answer, each
row once.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from spark_multijoin import multi_join

from .events import TOPICS, EventProducer, Scenario, epoch_millis
from .pipeline import BOUNDS_SECONDS, offsets_read, streaming_facts

# How far back before the chain's watermark the multi-join re-reads: Spark's chain holds back
# each join's output by that join's bound (the next join's input watermark is the previous one's
# less its bound), so its last join may still wait on orders this far behind the watermark.
CHAIN_RE_READ_SECONDS = sum(BOUNDS_SECONDS.values())
# The output's identity: a null-padded row's missing ids are null, so they compare with <=>.
IDENTITY = ("order_id", "payment_id", "shipment_id", "review_id")


def last_committed(checkpoint: Path) -> tuple[int, dict[str, dict]]:
    """The watermark (ms) of the checkpoint's last committed batch and, per topic, the offsets
    it had read up to (the offset log's entry: a version line, the batch's metadata, then one
    line of offsets per source, in the query's source order)."""
    batch = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    lines = (checkpoint / "offsets" / str(batch)).read_text().splitlines()
    metadata, sources = json.loads(lines[1]), [json.loads(line) for line in lines[2:]]
    return metadata["batchWatermarkMs"], {t: o for offsets in sources for t, o in offsets.items()}


def offsets_at(bootstrap: str, millis: int, read_up_to: dict[str, dict]) -> dict[str, str]:
    """Per topic, Spark's `startingOffsets` JSON: each partition's first offset whose timestamp
    (the event time, as the producer sets it) is at or after `millis`. Where none is, the offset
    the old query had read up to: not -1, which Spark takes as the end when the new query
    starts, skipping what arrives in between."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "move-to-multi-join"})
    try:
        starting = {}
        for topic in TOPICS:
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            found = consumer.offsets_for_times(
                [TopicPartition(topic, p, millis) for p in partitions], timeout=10)
            read = read_up_to.get(topic, {})
            starting[topic] = json.dumps({topic: {
                str(tp.partition): tp.offset if tp.offset >= 0 else read.get(str(tp.partition), 0)
                for tp in found}})
        return starting
    finally:
        consumer.close()


def merge_into(table: Path):
    """A foreachBatch writer that inserts only the rows the table does not hold yet."""
    condition = " AND ".join(f"t.{c} <=> b.{c}" for c in IDENTITY)

    def merge(batch: DataFrame, batch_id: int) -> None:
        # Computed once, before the merge: a MERGE reads its source more than once, and the
        # batch's rows come from the stateful join, which must run once per micro-batch.
        batch.localCheckpoint(eager=True).createOrReplaceTempView("facts_batch")
        batch.sparkSession.sql(f"MERGE INTO delta.`{table}` t USING facts_batch b "
                               f"ON {condition} WHEN NOT MATCHED THEN INSERT *")
    return merge


class _QueryView:
    """The producer's view of the query running now, read from its progress (the move's
    scenario has no late rows to place, so no watermark is needed)."""

    def __init__(self) -> None:
        self.query: StreamingQuery | None = None

    def watermark(self) -> None:
        return None

    def offsets_read(self) -> dict[tuple[str, int], int]:
        progress = [json.loads(p.json) for p in self.query.recentProgress] if self.query else []
        return offsets_read(progress)


class _MovePoint:
    """Holds the producer at three quarters of its events until the query has moved."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.moved = threading.Event()

    def gate(self, chunk: int, chunks: int) -> None:
        if chunk == chunks * 3 // 4:
            self.reached.set()
            self.moved.wait()


def _start(frame: DataFrame, checkpoint: Path, sink) -> StreamingQuery:
    return sink(frame.writeStream.option("checkpointLocation", str(checkpoint))).start()


def run_move(spark: SparkSession, bootstrap: str, work: Path,
             max_offsets: int | None) -> list[str]:
    """Spark's chain over three quarters of the events, then the multi-join from the offsets
    the time bounds call for, merging into the same table; what it did, as lines to print."""
    table, point, view = work / "table", _MovePoint(), _QueryView()
    # Orders spread over five hours, so that the move comes well after the re-read window.
    producer = EventProducer(bootstrap, Scenario(late_rows=0, seconds_between_orders=60),
                             view, point.gate, lead_seconds=None)
    thread = threading.Thread(target=producer.run, name="producer", daemon=True)
    multi_join(spark).enabled = False
    chain = _start(streaming_facts(spark, bootstrap, max_offsets), work / "chain-checkpoint",
                   lambda w: w.format("delta").outputMode("append").option("path", str(table)))
    thread.start()
    point.reached.wait()
    chain.processAllAvailable()
    chain.stop()
    watermark_ms, read_up_to = last_committed(work / "chain-checkpoint")
    written_by_chain = spark.read.format("delta").load(str(table)).count()
    from_ms = watermark_ms - CHAIN_RE_READ_SECONDS * 1000
    starting = offsets_at(bootstrap, from_ms, read_up_to)
    multi_join(spark).enabled = True
    multi = _start(streaming_facts(spark, bootstrap, max_offsets, starting,
                                   orders_from=f"timestamp_millis({from_ms})"),
                   work / "multi-join-checkpoint", lambda w: w.foreachBatch(merge_into(table)))
    view.query = multi
    point.moved.set()
    thread.join()
    multi.processAllAvailable()
    multi.stop()
    return [f"Spark's chain read {_records(read_up_to)} records and wrote {written_by_chain} "
            f"rows; its watermark: {(watermark_ms - epoch_millis(0)) / 60_000:.0f} minutes in",
            f"the multi-join started {CHAIN_RE_READ_SECONDS // 60} minutes of event time before "
            f"it, re-reading {_re_read(read_up_to, starting)} of those records, and merged into "
            f"the table (its plan: {_fused(multi)} StreamingMultiJoin)"]


def _records(read_up_to: dict[str, dict]) -> int:
    return sum(sum(partitions.values()) for partitions in read_up_to.values())


def _re_read(read_up_to: dict[str, dict], starting: dict[str, str]) -> int:
    """The records before `read_up_to` from `starting` on (-1: from the end, none)."""
    total = 0
    for topic, partitions in read_up_to.items():
        start = json.loads(starting[topic])[topic]
        total += sum(end - start[p] for p, end in partitions.items() if 0 <= start[p] < end)
    return total


def _fused(query: StreamingQuery) -> int:
    return query._jsq.explainInternal(False).count("StreamingMultiJoin input0")
