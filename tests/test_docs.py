"""The docs hold together: every relative link leads to a file (and a heading, where it names
one), and the advisor's page shows the report the command prints for the SQL it shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spark_multijoin._cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The text without code, whose brackets and parentheses are not links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the file's headings."""
    headings = re.findall(r"^#+ (.+)$", _prose(path.read_text()), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in headings}


def _relative_links(path: Path) -> list[str]:
    return [target for target in LINK.findall(_prose(path.read_text()))
            if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("path", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading(path):
    broken = []
    for target in _relative_links(path):
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    assert not broken, f"{path.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_advisor_page_shows_what_the_command_prints(tmp_path, monkeypatch, capsys):
    """The SQL file and the report on docs/advisor.md are the command's input and output."""
    page = (ROOT / "docs" / "advisor.md").read_text()
    sql = re.search(r"```sql\n(.*?)```", page, re.S).group(1)
    command, report = re.search(r"```\n\$ spark-multijoin (.*?)\n(.*?)```", page, re.S).groups()
    (tmp_path / "orders.sql").write_text(sql)
    monkeypatch.chdir(tmp_path)
    assert main(command.split()) == 0
    assert capsys.readouterr().out == report
