"""Builds the Scala extension with sbt (bootstrapped by scripts/sbt), one jar per supported Spark
line, and puts the jars in the package.

Everything else about the package is declared in pyproject.toml.
"""

import importlib.util
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def spark_lines() -> dict[str, str]:
    """The supported Spark lines, as scripts/spark_jars.py reads them from pyproject.toml (loaded
    from its file: the build's import path has no `scripts`)."""
    spec = importlib.util.spec_from_file_location("spark_jars", ROOT / "scripts" / "spark_jars.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.spark_lines()


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
