"""The Kafka example's set-up (scripts/kafka_jars.py) without Maven: the coordinates each line
takes, the pom and settings it hands Maven, the stamp that decides whether a folder is filled
anew, and the jars it leaves out because pyspark ships them."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from scripts import kafka_jars
from scripts.kafka_jars import (artifact_name, central_only_settings, connectors, drop_shipped,
                                pinned, pom)

POM = "{http://maven.apache.org/POM/4.0.0}"
SETTINGS = "{http://maven.apache.org/SETTINGS/1.0.0}"
TOKEN_PROVIDER = "spark-token-provider-kafka-0-10_2.13"


def coordinates_in(element: ElementTree.Element) -> list[str]:
    return [":".join(dependency.findtext(f"{POM}{part}")
                     for part in ("groupId", "artifactId", "version"))
            for dependency in element.iter(f"{POM}dependency")]


def test_the_line_takes_the_connector_with_the_fix_whatever_its_pyspark():
    for pyspark in ("4.1.0", "4.1.1"):
        assert connectors(pyspark) == ["org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.3",
                                       "io.delta:delta-spark_2.13:4.3.1"]
        assert pinned(pyspark) == [f"org.apache.spark:{TOKEN_PROVIDER}:4.1.1"]


def test_a_line_without_the_connector_and_delta_is_refused_naming_the_one_with_them():
    with pytest.raises(SystemExit, match="runs on Spark 4.1.*pyspark 4.3.0"):
        connectors("4.3.0")
    with pytest.raises(SystemExit, match="SPARK_LINE=4.1 scripts/setup-kafka"):
        pinned("4.2.0")


def test_the_pom_depends_on_the_connectors_and_pins_the_token_provider():
    project = ElementTree.fromstring(pom(connectors("4.1.1"), pinned("4.1.1")))
    assert coordinates_in(project.find(f"{POM}dependencies")) == connectors("4.1.1")
    managed = project.find(f"{POM}dependencyManagement/{POM}dependencies")
    assert coordinates_in(managed) == [f"org.apache.spark:{TOKEN_PROVIDER}:4.1.1"]


def test_a_pom_without_pins_manages_nothing():
    project = ElementTree.fromstring(pom(kafka_jars.BROKER))
    assert project.find(f"{POM}dependencyManagement") is None
    assert coordinates_in(project) == kafka_jars.BROKER


def test_the_settings_block_every_repository_but_central():
    mirrors = ElementTree.fromstring(central_only_settings()).findall(
        f"{SETTINGS}mirrors/{SETTINGS}mirror")
    assert [(m.findtext(f"{SETTINGS}mirrorOf"), m.findtext(f"{SETTINGS}blocked"))
            for m in mirrors] == [("*,!central", "true")]


class Maven:
    """Stands in for `mvn`: notes each call and leaves a jar in the output folder."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, command: list[str], **_) -> None:
        self.calls.append(command)
        folder = Path(next(a for a in command if a.startswith("-DoutputDirectory=")).split("=")[1])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "spark-sql-kafka-0-10_2.13-4.1.3.jar").write_text("")


@pytest.fixture
def maven(monkeypatch, tmp_path) -> Maven:
    stand_in = Maven()
    monkeypatch.setattr(kafka_jars.subprocess, "run", stand_in)
    monkeypatch.setattr(kafka_jars, "JARS", tmp_path)
    return stand_in


def test_a_folder_is_filled_once_and_anew_when_the_coordinates_or_pins_change(maven, tmp_path):
    folder = tmp_path / "kafka-delta-spark-4.1.1"
    old = ["org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1", "io.delta:delta-spark_2.13:4.3.1"]
    kafka_jars.fetch(old, folder)
    kafka_jars.fetch(old, folder)
    assert len(maven.calls) == 1
    (folder / "stale.jar").write_text("")

    kafka_jars.fetch(connectors("4.1.1"), folder, pins=pinned("4.1.1"))
    kafka_jars.fetch(connectors("4.1.1"), folder, pins=pinned("4.1.1"))
    assert len(maven.calls) == 2
    assert not (folder / "stale.jar").exists()
    assert (folder / kafka_jars.STAMP).read_text().splitlines() == [
        *connectors("4.1.1"), f"pinned org.apache.spark:{TOKEN_PROVIDER}:4.1.1"]

    kafka_jars.fetch(connectors("4.1.1"), folder, pins=[f"org.apache.spark:{TOKEN_PROVIDER}:4.1.0"])
    assert len(maven.calls) == 3


def test_maven_gets_the_pom_with_the_pins_and_the_central_only_settings(maven, tmp_path):
    folder = tmp_path / "kafka-delta-spark-4.1.1"
    kafka_jars.fetch(connectors("4.1.1"), folder, pins=pinned("4.1.1"))
    command = maven.calls[0]
    build = tmp_path / f".{folder.name}-pom"
    assert command[command.index("-f") + 1] == str(build / "pom.xml")
    assert command[command.index("-gs") + 1] == str(build / "settings.xml")
    assert (build / "pom.xml").read_text() == pom(connectors("4.1.1"), pinned("4.1.1"))
    assert (build / "settings.xml").read_text() == central_only_settings()


def test_the_artifact_name_is_the_jar_name_less_its_version():
    assert artifact_name(Path("spark-sql-kafka-0-10_2.13-4.1.3.jar")) == \
        "spark-sql-kafka-0-10_2.13"
    assert artifact_name(Path("zstd-jni-1.5.7-3.jar")) == "zstd-jni"
    assert artifact_name(Path("RoaringBitmap-0.9.25.jar")) == "RoaringBitmap"
    assert artifact_name(Path("no-version.jar")) == "no-version"


def test_the_jars_pyspark_ships_are_left_out_whatever_their_version(tmp_path):
    folder, shipped = tmp_path / "folder", tmp_path / "shipped"
    folder.mkdir()
    shipped.mkdir()
    for jar in ("spark-tags_2.13-4.1.3.jar", "spark-sql-kafka-0-10_2.13-4.1.3.jar",
                "spark-token-provider-kafka-0-10_2.13-4.1.1.jar"):
        (folder / jar).write_text("")
    (shipped / "spark-tags_2.13-4.1.1.jar").write_text("")
    assert drop_shipped(folder, shipped) == ["spark-tags_2.13-4.1.3.jar"]
    assert sorted(p.name for p in folder.iterdir()) == [
        "spark-sql-kafka-0-10_2.13-4.1.3.jar", "spark-token-provider-kafka-0-10_2.13-4.1.1.jar"]
