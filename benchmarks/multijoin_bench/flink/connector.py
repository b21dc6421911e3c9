"""Flink's Kafka connector for the CDC sweep (cdc/sweep.py), fetched once with Maven, as
scripts/kafka_jars.py fetches Spark's: the newest build served is for Flink 2.2, and it runs on
Flink 2.3 (DESIGN.md)."""

from __future__ import annotations

from pathlib import Path

from scripts import kafka_jars

CONNECTOR = "org.apache.flink:flink-sql-connector-kafka:5.0.0-2.2"


def connector_jar() -> Path:
    folder = kafka_jars.JARS / "flink-kafka"
    kafka_jars.fetch([CONNECTOR], folder)
    return next(folder.glob("flink-sql-connector-kafka-*.jar"))
