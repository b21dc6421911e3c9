"""Builds the Scala extension with sbt (bootstrapped by scripts/sbt) and puts its jar in the
package.

Everything else about the package is declared in pyproject.toml.
"""

import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
JAR = ROOT / "target" / "spark-multijoin.jar"


class BuildPyWithJar(build_py):
    """build_py that also compiles the extension and copies its jar into spark_multijoin/jars."""

    def run(self) -> None:
        super().run()
        subprocess.run([str(ROOT / "scripts" / "sbt"), "package"], cwd=ROOT, check=True,
                       stdin=subprocess.DEVNULL)
        jars = Path(self.build_lib) / "spark_multijoin" / "jars"
        jars.mkdir(parents=True, exist_ok=True)
        shutil.copy2(JAR, jars / JAR.name)


setup(cmdclass={"build_py": BuildPyWithJar})
