"""The rule's verdicts from Python: the templates that word them, read from the jar that the
rule words them with, and what the rule decides about a DataFrame, asked of the JVM.

`fusion_report(df)` returns `FusionReport.json`'s answer (its scaladoc, in
scala/src/main/scala/io/github/sparkmultijoin/planning/FusionReport.scala, has the schema):
the verdicts, each `{"code", "args", "message", "warning"}`, and the text EXPLAIN shows for them.
"""

from __future__ import annotations

import json
import re
import zipfile
from functools import lru_cache
from typing import Any, Mapping

from pyspark.sql import DataFrame

from spark_multijoin._jars import bundled_jars

TEMPLATES_RESOURCE = "spark-multijoin/fusion-verdicts.json"
REPORT_CLASS = "io.github.sparkmultijoin.planning.FusionReport"

_PLACEHOLDER = re.compile(r"<([A-Za-z]+)>")


@lru_cache(maxsize=1)
def _templates() -> Mapping[str, str]:
    jars = bundled_jars()
    # Every line's jar carries the same file; the newest line's is read.
    newest = max(jars, key=lambda line: tuple(int(part) for part in line.split(".")))
    with zipfile.ZipFile(jars[newest]) as jar:
        entries = json.loads(jar.read(TEMPLATES_RESOURCE))
    return {code: entry["message"] for code, entry in entries.items()}


def verdict_templates() -> dict[str, str]:
    """Every verdict's message template by its code ("NO_SHARED_KEY"), with `<name>`
    placeholders; a code with a dot ("COLLAPSED.GROUP") is a part of another's message."""
    return dict(_templates())


def fill_template(code: str, values: Mapping[str, str]) -> str:
    """`code`'s template with its placeholders filled from `values`, as the rule fills them;
    a KeyError names a placeholder `values` lacks."""
    template = _templates()[code]
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def fusion_report(df: DataFrame) -> dict[str, Any]:
    """What the rule decides about `df` (its verdicts) and what EXPLAIN says of them, as
    `df.explain()` would show before a streaming query starts; nothing runs. The session must
    have the extension (`configure_spark_with_multijoin`); the verdicts follow its settings."""
    jvm = df.sparkSession._jvm  # type: ignore[attr-defined]
    report = jvm.io.github.sparkmultijoin.planning.FusionReport
    return json.loads(report.json(df._jdf))
