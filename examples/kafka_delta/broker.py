"""A Kafka broker for the example and its tests: Apache Kafka's own jars (fetched at set-up by
scripts/kafka_jars.py), one process in KRaft mode as broker and controller at once, on free
loopback ports.

The broker runs in a process group of its own, so that killing a Spark driver's group never
reaches it, and it is stopped when its owner stops: by `stop()`, at interpreter exit, when the
object is collected, and, on Linux, by the kernel when the process that started it dies, even
by SIGKILL (the parent-death signal).
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]
BROKER_JARS = ROOT / "target" / "jars" / "kafka-broker"
# A test broker's JVM: small, and quick to start rather than fast when warm.
JAVA_OPTIONS = ["-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.awt.headless=true"]
SERVER = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
LOG_TAIL_LINES = 40


class BrokerStartError(RuntimeError):
    """The broker did not start; the message ends with its log's last lines."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_properties(log_dirs: Path, port: int, controller_port: int) -> str:
    """One node that is broker and controller, listening on loopback only; every internal topic
    has one replica, as one broker is all there is."""
    return "\n".join([
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"log.dirs={log_dirs}",
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=1",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        "group.initial.rebalance.delay.ms=0",
        "auto.create.topics.enable=false",
        # Kept whatever their timestamps: records carry their event times, which may be older
        # than any retention period.
        "log.retention.ms=-1",
        "",
    ])


def cluster_id() -> str:
    """A cluster id as Kafka's StorageTool makes one (a random UUID, URL-safe base64), made here
    to spare a JVM start. Like Kafka's, never one that starts with a dash, which the tool's
    argument parser would read as an option."""
    while True:
        made = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not made.startswith("-"):
            return made


def die_with_parent() -> None:
    """Run in the child before exec: the kernel sends it SIGKILL when its parent dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _stop_group(process: subprocess.Popen, grace_seconds: float = 10) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(grace_seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


class KafkaBroker:
    """A broker in `work` (its config, data and log). `start()` returns once it serves requests;
    `bootstrap` is its address."""

    def __init__(self, work: Path, jars: Path = BROKER_JARS) -> None:
        self.work = work
        self.jars = jars
        self.log = work / "broker.log"
        self.port = 0
        self._process: subprocess.Popen | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """The broker's JVM process, while it runs: the CDC sweep reads its CPU."""
        return self._process.pid if self._process else None

    def _java(self, main_class: str, *args: str) -> list[str]:
        if not any(self.jars.glob("kafka_2.13-*.jar")):
            raise BrokerStartError(
                f"no Kafka broker jars in {self.jars}: run scripts/setup-kafka first (it fetches "
                "them with Maven)")
        return ["java", *JAVA_OPTIONS, "-cp", f"{self.jars}/*", main_class, *args]

    def _configure(self) -> Path:
        shutil.rmtree(self.work / "data", ignore_errors=True)  # a broker's data lives as it does
        self.work.mkdir(parents=True, exist_ok=True)
        self.port, controller_port = free_port(), free_port()
        while controller_port == self.port:
            controller_port = free_port()
        config = self.work / "server.properties"
        config.write_text(server_properties(self.work / "data", self.port, controller_port))
        formatted = subprocess.run(
            self._java(STORAGE_TOOL, "format", "-t", cluster_id(), "-c", str(config)),
            capture_output=True, text=True)
        if formatted.returncode != 0:
            raise BrokerStartError("formatting the broker's storage failed:\n"
                                   + tail(formatted.stdout + formatted.stderr))
        return config

    def start(self, timeout_seconds: float = 90) -> KafkaBroker:
        config = self._configure()
        with self.log.open("w") as log:
            self._process = subprocess.Popen(
                self._java(SERVER, str(config)), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=die_with_parent if sys.platform.startswith("linux") else None)
        self._finalizer = weakref.finalize(self, _stop_group, self._process)
        atexit.register(self._finalizer)
        try:
            self._wait_until_ready(timeout_seconds)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ready(self, timeout_seconds: float) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout_seconds
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise BrokerStartError(f"the Kafka broker exited with code "
                                       f"{self._process.returncode}; {self.log}:\n"
                                       + tail(self.log.read_text()))
            # Asked only once it listens: a client would log every refused connection.
            if _listens(self.port):
                admin = AdminClient({"bootstrap.servers": self.bootstrap})
                if admin.list_topics(timeout=max(deadline - time.monotonic(), 1)).brokers:
                    return
            time.sleep(0.2)
        raise BrokerStartError(f"the Kafka broker did not serve within {timeout_seconds:.0f} s; "
                               f"{self.log}:\n" + tail(self.log.read_text()))

    def stop(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # stops the group once; atexit's call then does nothing

    def create_topics(self, partitions: dict[str, int]) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        futures = admin.create_topics(
            [NewTopic(name, count, 1) for name, count in partitions.items()])
        for future in futures.values():
            future.result(timeout=30)

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


@contextmanager
def running_broker(work: Path, topics: dict[str, int]) -> Iterator[KafkaBroker]:
    """A broker in `work` with `topics` (name to partition count), which prints where it listens
    once it does; stopped on leaving."""
    started = time.monotonic()
    with KafkaBroker(work) as broker:
        print(f"broker: Kafka in KRaft mode at {broker.bootstrap}, started in "
              f"{time.monotonic() - started:.0f} s")
        broker.create_topics(topics)
        yield broker


def producer_client(bootstrap: str):
    """A confluent-kafka producer for the examples' changes and events: idempotent, so that a
    retried send is written once, and partitioning keys as Kafka's Java clients do (murmur2),
    so that Spark's writer or a connector would put them where this one does."""
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                     "partitioner": "murmur2_random"})


def _listens(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def tail(text: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])
