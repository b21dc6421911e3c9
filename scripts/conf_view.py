"""Generates the Python package's typed view of the extension's settings (the module
`spark_multijoin._session_conf`: `multi_join(spark)`, `MultiJoinConfig` and each key's constant)
from the conf object, MultiJoinConf, so that the settings are declared once, in Scala.

setup.py runs it when the package is built, after sbt has built the jars: the newest line's jar,
run with that line's Spark jars, prints `MultiJoinConf.description` (each documented entry's key,
type, default, doc and the values it takes), and `render` turns it into the module, written into
the built package only (the source tree has no copy). Each entry becomes a typed property whose
docstring is the entry's doc; its setter rejects a value of the wrong Python type, and Spark
checks the value itself when it is set.

    python3 scripts/conf_view.py OUT.py   # writes the module from the built jar (run sbt first)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

MODULE = "_session_conf.py"
CONF_CLASS = "org.apache.spark.sql.multijoin.MultiJoinConf"
PREFIX = "multi-join."
PYTHON_TYPES = {"boolean": "bool", "int": "int", "string": "str"}
PARSE = {"boolean": "_boolean({})", "int": "int({})", "string": "{}"}
ACCEPTS = {"boolean": "_is_boolean", "int": "_is_int", "string": "_is_string"}

HEADER = '''"""A typed view of the extension's configs on a SparkSession.

Generated from the conf object, MultiJoinConf, by scripts/conf_view.py when the package was
built: the entries, their types and their docs are the jar's.
"""

from __future__ import annotations

from typing import Callable

from pyspark.sql import SparkSession

'''

CLASS = '''

def _boolean(text: str) -> bool:
    return text.strip().lower() == "true"


def _is_boolean(value: object) -> bool:
    return isinstance(value, bool)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_string(value: object) -> bool:
    return isinstance(value, str)


class MultiJoinConfig:
    """The `multi-join.*` configs of one SparkSession, readable and settable.

    Values go through `spark.conf`, so Spark validates them: a bad value raises an error that
    names the key and what is allowed. A streaming query reads them when it starts.
    """

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark

    def _optional(self, key: str) -> str | None:
        """The value of a conf, or None where it is unset."""
        value = self._spark.conf.get(key, None)
        return None if value in (None, "", "<undefined>") else value

    def _get(self, key: str, default: str) -> str:
        """The value of a conf, or its default where it is unset."""
        value = self._optional(key)
        return default if value is None else value

    def _set(self, key: str, value: str | int | bool | None, accepts: Callable[[object], bool],
             *, optional: bool, takes: str) -> None:
        """Sets `key` (unsets it for None where it is optional); a TypeError for a value that
        is not of the entry's type, before Spark checks the value."""
        if value is None and optional:
            self._spark.conf.unset(key)
        elif value is None or not accepts(value):
            raise TypeError(f"{key} takes {takes}, not {value!r}")
        else:
            self._spark.conf.set(key, value)
'''

FOOTER = '''

def multi_join(spark: SparkSession) -> MultiJoinConfig:
    """The multi-join configs of `spark`: `multi_join(spark).enabled = True`."""
    return MultiJoinConfig(spark)
'''


def names(key: str) -> tuple[str, str]:
    """The constant and the property of entry `key`: MAX_TABLES_KEY and max_tables."""
    if not key.startswith(PREFIX):
        raise ValueError(f"a documented entry's key starts with {PREFIX!r}: {key}")
    attribute = key[len(PREFIX):].replace("-", "_").replace(".", "_")
    if not attribute.isidentifier():
        raise ValueError(f"{key} makes no Python name")
    return f"{attribute.upper()}_KEY", attribute


def takes(entry: dict[str, Any]) -> str:
    """What the setter's TypeError says the entry takes: "an integer of at least 3 or None"."""
    words = "True or False" if entry["type"] == "boolean" else entry["takes"]
    if entry["default"] is not None:
        return words
    return words + (", or None" if " or " in words else " or None")


def docstring(text: str) -> str:
    """`text` as a property's docstring, wrapped to the house's 100 columns."""
    safe = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').strip()
    lines = textwrap.wrap(safe, width=100 - 8 - 3, break_long_words=False,
                          break_on_hyphens=False)
    body = "\n        ".join(lines)
    return f'        """{body}"""\n'


def prop(entry: dict[str, Any]) -> str:
    """The typed property (getter and setter) of one entry."""
    constant, attribute = names(entry["key"])
    kind, optional = entry["type"], entry["default"] is None
    if kind not in PYTHON_TYPES:
        raise ValueError(f"{entry['key']}: no Python type for {kind!r}")
    python_type = PYTHON_TYPES[kind] + (" | None" if optional else "")
    doc = entry["doc"] + (" None where unset; setting None unsets it." if optional else "")
    if optional and kind == "string":
        read = f"        return self._optional({constant})\n"
    elif optional:
        read = (f"        value = self._optional({constant})\n"
                f"        return None if value is None else {PARSE[kind].format('value')}\n")
    else:
        value = f"self._get({constant}, {entry['default']!r})"
        read = f"        return {PARSE[kind].format(value)}\n"
    return (f"\n    @property\n    def {attribute}(self) -> {python_type}:\n{docstring(doc)}"
            f"{read}\n    @{attribute}.setter\n"
            f"    def {attribute}(self, value: {python_type}) -> None:\n"
            f"        self._set({constant}, value, {ACCEPTS[kind]}, optional={optional},\n"
            f"                  takes={literal(takes(entry), 24)})\n")


def literal(text: str, indent: int) -> str:
    """`text` as a string literal, split where it would pass the 100th column."""
    chunks = textwrap.wrap(text, width=100 - indent - 5, drop_whitespace=False,
                           break_long_words=False, break_on_hyphens=False)
    assert "".join(chunks) == text, text
    if len(chunks) == 1:
        return repr(text)
    return "(" + ("\n" + " " * (indent + 1)).join(repr(chunk) for chunk in chunks) + ")"


def render(description: dict[str, Any]) -> str:
    """The module's text from MultiJoinConf.description's JSON."""
    entries = description["entries"]
    constants = "".join(f"{names(entry['key'])[0]} = {entry['key']!r}\n" for entry in entries)
    return HEADER + constants + CLASS + "".join(prop(entry) for entry in entries) + FOOTER


def describe(spark_jars: ModuleType) -> dict[str, Any]:
    """MultiJoinConf.description, from the newest line's built jar and that line's Spark jars
    (`spark_jars` is scripts/spark_jars.py, which the caller loads: the build's import path has
    no `scripts`)."""
    line, version = max(spark_jars.spark_lines().items(),
                        key=lambda item: tuple(int(part) for part in item[0].split(".")))
    jar = spark_jars.ROOT / "target" / "jars" / f"spark-multijoin_{line}_2.13.jar"
    classpath = os.pathsep.join([str(jar), str(spark_jars.jars_of(version) / "*")])
    printed = subprocess.run(["java", "-cp", classpath, CONF_CLASS], check=True,
                             capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout
    return json.loads(printed[printed.index("{"):])


def write(path: Path, spark_jars: ModuleType) -> None:
    """Writes the module, generated from the built jar, to `path`."""
    path.write_text(render(describe(spark_jars)))


if __name__ == "__main__":
    import spark_jars  # beside this script, on the path of a script run by its file

    write(Path(sys.argv[1]), spark_jars)
