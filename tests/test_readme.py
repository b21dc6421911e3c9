"""The README's config table is the one generated from the Scala conf object, and its advisor
report the one the command prints."""

from __future__ import annotations

import re
from pathlib import Path

from spark_multijoin._cli import main
from support.readme_table import BEGIN, END, generated_table

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_config_table_is_current(spark):
    text = README.read_text()
    current = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()
    assert current == generated_table(spark).strip(), (
        "README.md's config table is stale: run `python scripts/config_table.py`")


def test_readme_advisor_report_is_what_the_command_prints(tmp_path, monkeypatch, capsys):
    """The SQL file and the report under "Will my query fuse?" are the command's input and
    output."""
    section = README.read_text().split("## Will my query fuse?")[1]
    sql = re.search(r"```sql\n(.*?)```", section, re.S).group(1)
    command, report = re.search(r"```\n\$ spark-multijoin (.*?)\n(.*?)```", section, re.S).groups()
    (tmp_path / "orders.sql").write_text(sql)
    monkeypatch.chdir(tmp_path)
    assert main(command.split()) == 0
    assert capsys.readouterr().out == report
