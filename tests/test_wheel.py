"""The wheel `scripts/test` builds (and every line's venv installs) carries the whole package:
each module of python/, the generated settings view and a jar per Spark line. A package left out
of pyproject.toml would pass every test run from a venv that happened to hold it already."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from scripts.spark_jars import spark_lines

ROOT = Path(__file__).resolve().parent.parent
GENERATED = {"spark_multijoin/_session_conf.py"}


def test_the_wheel_carries_every_module_and_a_jar_per_line():
    wheels = sorted((ROOT / "target" / "wheel").glob("spark_multijoin-*.whl"))
    if not wheels:
        pytest.skip("no wheel in target/wheel: scripts/test builds one first")
    with zipfile.ZipFile(wheels[-1]) as wheel:
        carried = {name for name in wheel.namelist() if name.startswith("spark_multijoin/")}
    sources = {str(path.relative_to(ROOT / "python"))
               for path in (ROOT / "python" / "spark_multijoin").rglob("*.py")}
    jars = {f"spark_multijoin/jars/spark-multijoin_{line}_2.13.jar" for line in spark_lines()}
    carried_modules = {name for name in carried if name.endswith(".py")}
    assert carried_modules == sources | GENERATED
    assert jars <= carried
