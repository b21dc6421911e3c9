"""Builds the Scala extension with sbt (bootstrapped by scripts/sbt), one jar per supported Spark
line, puts the jars in the package, and generates the package's typed view of the settings from
the conf object in the jar (scripts/conf_view.py).

Everything else about the package is declared in pyproject.toml.
"""

import importlib.util
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _script(name: str):
    """The module of scripts/<name>.py, loaded from its file: the build's import path has no
    `scripts`."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


conf_view = _script("conf_view")
spark_jars = _script("spark_jars")


class BuildPyWithJars(build_py):
    """build_py that also compiles the extension for every Spark line, copies the jars into
    spark_multijoin/jars, where the package picks the one for the running Spark, and writes
    spark_multijoin/_session_conf.py, generated from the jar's MultiJoinConf."""

    def run(self) -> None:
        super().run()
        subprocess.run([str(ROOT / "scripts" / "sbt"), "package"], cwd=ROOT, check=True,
                       stdin=subprocess.DEVNULL)
        jars = Path(self.build_lib) / "spark_multijoin" / "jars"
        shutil.rmtree(jars, ignore_errors=True)  # an earlier build's jars, of lines since dropped
        jars.mkdir(parents=True)
        for line in spark_jars.spark_lines():
            jar = ROOT / "target" / "jars" / f"spark-multijoin_{line}_2.13.jar"
            shutil.copy2(jar, jars / jar.name)
        conf_view.write(Path(self.build_lib) / "spark_multijoin" / conf_view.MODULE, spark_jars)


setup(cmdclass={"build_py": BuildPyWithJars})
