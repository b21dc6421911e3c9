"""Print the folder of Spark jars that the Scala extension is compiled against.

Spark is a provided dependency: the jar is built against exactly the jars that the pinned
pyspark ships (pyproject.toml, `pyspark==X`), so what we compile against is what runs.
Uses the pyspark installed for this interpreter when it is the pinned version; otherwise installs
the pinned pyspark (no dependencies) into target/ once and uses that.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pinned_spark_version() -> str:
    match = re.search(r'"pyspark==([0-9.]+)"', (ROOT / "pyproject.toml").read_text())
    if not match:
        raise SystemExit('pyproject.toml must pin pyspark as "pyspark==<version>"')
    return match.group(1)


def plain_environment() -> dict[str, str]:
    """This environment without what pip's isolated build environment adds to hide site-packages."""
    return {name: value for name, value in os.environ.items()
            if name not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME")}


def installed_jars(version: str) -> Path | None:
    probe = subprocess.run(
        [sys.executable, "-c", "import os, pyspark; "
         "print(pyspark.__version__); print(os.path.dirname(pyspark.__file__))"],
        env=plain_environment(), capture_output=True, text=True)
    if probe.returncode != 0:
        return None
    installed_version, package_dir = probe.stdout.split()
    jars = Path(package_dir) / "jars"
    return jars if installed_version == version and jars.is_dir() else None


def main() -> None:
    version = pinned_spark_version()
    jars = installed_jars(version)
    if jars is None:
        target = ROOT / "target" / f"pyspark-{version}"
        jars = target / "pyspark" / "jars"
        if not jars.is_dir():
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                 "--target", str(target), f"pyspark=={version}"],
                check=True, stdout=sys.stderr, env=plain_environment())
    print(jars)


if __name__ == "__main__":
    main()
