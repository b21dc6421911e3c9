"""The Spark lines the package supports, and the folder of Spark jars each line is compiled against.

Spark is a provided dependency: each line's jar is built against exactly the jars that the
line's pyspark release ships (pyproject.toml's [tool.spark-multijoin.spark-lines] table), so what
we compile and test against is what runs. The release is installed (no dependencies) into
target/pyspark-<version>/ once.

    python3 scripts/spark_jars.py                 # the lines, one a line: "<line> <version>"
    python3 scripts/spark_jars.py 4.2             # the folder of line 4.2's jars (installed once)
    python3 scripts/spark_jars.py --release 4.2   # the pyspark release of line 4.2
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = "[tool.spark-multijoin.spark-lines]"


def spark_lines() -> dict[str, str]:
    """Each supported Spark line ("4.1") and the pyspark release ("4.1.1") it is built against.

    Read with a pattern rather than tomllib, which Python 3.10 lacks and the build must not
    need."""
    text = (ROOT / "pyproject.toml").read_text()
    start = text.index(TABLE) + len(TABLE)
    end = text.find("\n[", start)
    body = text[start:] if end < 0 else text[start:end]
    lines = dict(re.findall(r'(?m)^"([0-9]+\.[0-9]+)" = "([0-9.]+)"', body))
    if not lines:
        raise SystemExit(f'pyproject.toml must list the Spark lines under {TABLE}')
    return lines


def plain_environment() -> dict[str, str]:
    """This environment without what pip's isolated build environment adds to hide site-packages."""
    return {name: value for name, value in os.environ.items()
            if name not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME")}


def jars_of(version: str) -> Path:
    """The jars of pyspark `version`, installed into target/ the first time."""
    target = ROOT / "target" / f"pyspark-{version}"
    jars = target / "pyspark" / "jars"
    if not jars.is_dir():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
             "--target", str(target), f"pyspark=={version}"],
            check=True, stdout=sys.stderr, env=plain_environment())
    return jars


def main() -> None:
    lines = spark_lines()
    args = sys.argv[1:]
    if not args:
        for line, version in lines.items():
            print(line, version)
        return
    line = args[-1]
    if line not in lines:
        raise SystemExit(f"Spark {line} is not a supported line ({', '.join(lines)})")
    print(lines[line] if args[0] == "--release" else jars_of(lines[line]))


if __name__ == "__main__":
    main()
