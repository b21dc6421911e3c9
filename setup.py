"""Builds the Scala extension with sbt (bootstrapped by scripts/sbt), one jar per supported Spark
line, puts the jars in the package, and generates the package's typed view of the settings from
the conf object in the jar (scripts/conf_view.py).

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
import conf_view  # noqa: E402
from spark_jars import spark_lines  # noqa: E402


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
        for line in spark_lines():
            jar = ROOT / "target" / "jars" / f"spark-multijoin_{line}_2.13.jar"
            shutil.copy2(jar, jars / jar.name)
        conf_view.write(Path(self.build_lib) / "spark_multijoin" / conf_view.MODULE)


setup(cmdclass={"build_py": BuildPyWithJars})
