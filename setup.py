"""Builds the Scala extension with sbt (bootstrapped by scripts/sbt), one jar per supported Spark
line, and puts the jars in the package.

Everything else about the package is declared in pyproject.toml.
"""

import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "scripts"))
from spark_jars import spark_lines  # noqa: E402


class BuildPyWithJars(build_py):
    """build_py that also compiles the extension for every Spark line and copies the jars into
    spark_multijoin/jars, where the package picks the one for the running Spark."""

    def run(self) -> None:
        super().run()
        subprocess.run([str(ROOT / "scripts" / "sbt"), "package"], cwd=ROOT, check=True,
                       stdin=subprocess.DEVNULL)
        jars = Path(self.build_lib) / "spark_multijoin" / "jars"
        shutil.rmtree(jars, ignore_errors=True)  # an earlier build's jars, of lines since dropped
        jars.mkdir(parents=True)
        for line in spark_lines():
            jar = ROOT / "target" / "jars" / f"spark-multijoin_{line}_2.13.jar"
            shutil.copy2(jar, jars / jar.name)


setup(cmdclass={"build_py": BuildPyWithJars})
