"""Planning each statement on a local Spark session with the extension, and reading the rule's
verdicts on it (`spark_multijoin.fusion_report`).

The advisor takes a session of its own from the active one where that has the extension (so a
process that runs Spark already, a test suite say, starts no second JVM), or else starts a
local one with the fewest settings that let it plan. Either way it plans on a new session over
the same context, so that its stand-in views and confs stay its own.
"""

from __future__ import annotations

import logging
import tempfile
from typing import Mapping

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from spark_multijoin._advisor._sql import SqlError
from spark_multijoin._builder import EXTENSION_CLASS, configure_spark_with_multijoin
from spark_multijoin._session_conf import ENABLED_KEY

# Planning takes one core and no UI; the quick compiler alone warms up sooner for a few plans.
_LOCAL_SESSION = {
    "spark.master": "local[1]",
    "spark.app.name": "spark-multijoin-advise",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}


def advisor_session() -> SparkSession:
    """A new session over the active context if that has the extension, else over a local one
    started for the advisor."""
    active = SparkSession.getActiveSession()
    if active is None:
        builder = SparkSession.builder
        for key, value in _LOCAL_SESSION.items():
            builder = builder.config(key, value)
        active = configure_spark_with_multijoin(builder).getOrCreate()
        active.sparkContext.setLogLevel("ERROR")
    extensions = active.sparkContext.getConf().get("spark.sql.extensions", "") or ""
    if EXTENSION_CLASS not in extensions:
        raise SqlError("the advisor plans on a Spark session with spark-multijoin's extension, "
                       "and this process's session has none: run it in a process of its own, "
                       "or build the session with configure_spark_with_multijoin")
    return active.newSession()


class Planner:
    """Plans statements on one session: stand-ins registered once, confs set per statement."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        # The rule reads the active session's confs: this one, while the advisor plans.
        sessions = spark._jvm.org.apache.spark.sql.SparkSession
        self._previous = sessions.getActiveSession()
        sessions.setActiveSession(spark._jsparkSession)
        self._folder = tempfile.TemporaryDirectory(prefix="spark-multijoin-advise-")
        self._set: set[str] = set()
        self._views: list[str] = []

    def close(self) -> None:
        for view in self._views:
            self.spark.catalog.dropTempView(view)
        self._folder.cleanup()
        sessions = self.spark._jvm.org.apache.spark.sql.SparkSession
        if self._previous.isDefined():
            sessions.setActiveSession(self._previous.get())
        else:
            sessions.clearActiveSession()

    def stand_in(self, view: str, schema: str, streaming: bool) -> None:
        """A temporary view `view` of `schema`: a stream of no files, or a batch of them."""
        reader = self.spark.readStream if streaming else self.spark.read
        reader.schema(schema).json(self._folder.name).createOrReplaceTempView(view)
        self._views.append(view)

    def view(self, name: str, sql: str) -> None:
        """A temporary view `name` of the query `sql` (Spark SQL)."""
        self.run(f"CREATE OR REPLACE TEMPORARY VIEW `{name}` AS {sql}", f"view {name}")
        self._views.append(name)

    def run(self, sql: str, location: str) -> DataFrame:
        # pyspark logs each error of the JVM as it raises it; the advisor says it once, here.
        context_log = logging.getLogger("SQLQueryContextLogger")
        context_log.disabled, was_disabled = True, context_log.disabled
        try:
            return self.spark.sql(sql)
        except PySparkException as error:
            raise SqlError(f"{location}: Spark cannot plan it: {_first_line(error)}\n"
                           f"  the Spark SQL planned: {sql}") from error
        finally:
            context_log.disabled = was_disabled

    def configure(self, conf: Mapping[str, str]) -> None:
        """The statement's confs (those set earlier are unset first); the rule enabled unless
        they say otherwise."""
        wanted = {ENABLED_KEY: "true", **{_conf_key(key): value for key, value in conf.items()}}
        for key in self._set - set(wanted):
            self.spark.conf.unset(key)
        for key, value in wanted.items():
            try:
                self.spark.conf.set(key, value)
            except PySparkException as error:
                raise ValueError(f"{key} = {value}: {_first_line(error)}") from error
        self._set = set(wanted)

    def fusion_report(self, frame: DataFrame) -> dict:
        from spark_multijoin._fusion_report import fusion_report

        return fusion_report(frame)


def _conf_key(key: str) -> str:
    # The rule's confs also go by their spark.-prefixed alias (SparkConf takes only those).
    return key[len("spark."):] if key.startswith("spark.multi-join.") else key


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
