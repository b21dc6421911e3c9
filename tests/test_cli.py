"""The command line: `spark-multijoin advise FILE.sql...` and `python -m spark_multijoin`. The
advisor plans on the tests' session (the `spark` fixture) where it runs in-process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spark_multijoin._cli import main

pytestmark = pytest.mark.one_line  # the command line is the same Python on every line

FUSES = "SELECT * FROM STREAM(a) a JOIN STREAM(b) b ON a.k = b.k JOIN STREAM(c) c ON c.k = b.k;\n"
KEEPS_SPARKS = "SELECT * FROM STREAM(a) a JOIN STREAM(b) b ON a.k = b.k " \
    "JOIN STREAM(c) c ON c.j = b.j;\n"


def test_advise_reports_each_statement_of_the_files_read_as_one(spark, tmp_path, capsys):
    view = tmp_path / "view.sql"
    view.write_text("CREATE TEMPORARY VIEW b AS SELECT k, v FROM STREAM(payments);\n")
    query = tmp_path / "query.sql"
    query.write_text(FUSES.replace("STREAM(b) b", "b"))
    assert main(["advise", str(view), str(query)]) == 0
    out = capsys.readouterr().out
    assert f"{view}:1  CREATE TEMPORARY VIEW b: a view, judged where a statement reads it" in out
    assert f"{query}:1  SELECT" in out
    assert "  multi-join  a, b, c on a.k = payments.k = c.k" in out
    assert out.endswith("2 statement(s), 1 join tree(s): 1 with a multi-join, 0 keeping Spark's "
                        "joins\n")


def test_require_fusion_fails_where_a_chain_of_three_keeps_sparks_joins(spark, tmp_path, capsys):
    fuses, keeps = tmp_path / "fuses.sql", tmp_path / "keeps.sql"
    fuses.write_text(FUSES)
    keeps.write_text(KEEPS_SPARKS)
    assert main(["advise", "--require-fusion", str(fuses)]) == 0
    assert main(["advise", "--require-fusion", str(fuses), str(keeps)]) == 1
    assert main(["advise", str(keeps)]) == 0
    assert "no common key" in capsys.readouterr().out


def test_confs_and_streaming_names_are_taken(spark, tmp_path, capsys):
    query = tmp_path / "query.sql"
    query.write_text(FUSES.replace("STREAM(c) c", "c"))
    assert main(["advise", "--require-fusion", str(query)]) == 0  # two streams: no chain of three
    assert main(["advise", "--require-fusion", "--streaming", "c", str(query)]) == 0
    assert main(["advise", "--conf", "multi-join.enabled=false", "--require-fusion",
                 "--streaming", "c", str(query)]) == 1
    assert "multi-join.enabled is false" in capsys.readouterr().out
    # A state store the multi-join cannot use keeps every chain: said once, as the rule's warning.
    fuses = tmp_path / "fuses.sql"
    fuses.write_text(FUSES)
    provider = "spark.sql.streaming.stateStore.providerClass=com.example.MyStateStoreProvider"
    assert main(["advise", "--conf", provider, "--require-fusion", str(fuses)]) == 1
    report = capsys.readouterr().out
    assert report.count("com.example.MyStateStoreProvider") == 1, report
    assert "WARNING     Streaming joins run as Spark planned them" in report, report


def test_errors_exit_with_2_and_say_where(spark, tmp_path, capsys):
    broken = tmp_path / "broken.sql"
    broken.write_text("SELECT 1;\nSELECT * FROM a JOIN (b\n")
    assert main(["advise", str(broken)]) == 2
    assert f"{broken}:2" in capsys.readouterr().err
    assert main(["advise", str(tmp_path / "missing.sql")]) == 2
    assert main(["advise", "--conf", "multi-join.max-tables", str(broken)]) == 2


@pytest.mark.slow
def test_python_m_and_the_console_script_run_the_command(spark, tmp_path):
    query = tmp_path / "query.sql"
    query.write_text(KEEPS_SPARKS)
    module = subprocess.run([sys.executable, "-m", "spark_multijoin", "advise",
                             "--require-fusion", str(query)], capture_output=True, text=True)
    assert module.returncode == 1 and "no common key" in module.stdout, module.stderr
    # The console script reaches the same command: its error for a missing file needs no Spark.
    script = Path(sys.executable).parent / "spark-multijoin"
    missing = tmp_path / "missing.sql"
    console = subprocess.run([str(script), "advise", str(missing)], capture_output=True, text=True)
    assert console.returncode == 2, console.stderr
    assert console.stderr.startswith("spark-multijoin advise: ") and str(missing) in console.stderr
