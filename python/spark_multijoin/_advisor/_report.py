"""The advisor's verdicts as a report to read, one block per statement."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spark_multijoin._advisor._spark_advice import StatementAdvice
    from spark_multijoin._advisor._verdict import Verdict

_WIDTH = 100
_LABEL = 12


def report(advice: list[StatementAdvice]) -> str:
    blocks = [_statement(statement) for statement in advice]
    verdicts = [verdict for statement in advice for verdict in statement.verdicts]
    fusing = sum(verdict.fuses for verdict in verdicts)
    summary = (f"{len(advice)} statement(s), {len(verdicts)} join tree(s): {fusing} with a "
               f"multi-join, {len(verdicts) - fusing} keeping Spark's joins")
    missed = sum(verdict.misses_fusion for verdict in verdicts)
    if missed:
        summary += f", {missed} of them on a chain of three or more streaming inputs"
    return "\n\n".join(blocks + [textwrap.fill(summary, width=_WIDTH)]) + "\n"


def _statement(advice: StatementAdvice) -> str:
    header = f"{advice.location}  {advice.statement}"
    if advice.defines_view:
        return f"{header}: a view, judged where a statement reads it"
    if not advice.verdicts:
        return f"{header}: no join"
    return "\n".join([header] + [_verdict(verdict) for verdict in advice.verdicts])


def _verdict(verdict: Verdict) -> str:
    streaming = ", ".join(verdict.streaming) or "none"
    lines = [_line("inputs", f"{', '.join(verdict.inputs)} (streaming: {streaming})")]
    for number, (group, key) in enumerate(zip(verdict.fused_groups, verdict.keys), start=1):
        lines.append(_line("multi-join" if len(verdict.fused_groups) == 1
                           else f"multi-join {number}",
                           f"{', '.join(group)} on {_key(key)}"))
    if verdict.state_kept:
        lines.append(_line("state kept", "; ".join(f"{name} {kept}" for name, kept
                                                   in verdict.state_kept.items())))
    # A reason the rule logs as a warning (a setting that keeps every chain) shows as the warning.
    lines += [_line("reason", reason) for reason in verdict.reasons
              if reason not in verdict.warnings]
    lines += [_line("WARNING", warning) for warning in verdict.warnings]
    lines += [_line("not known", unknown) for unknown in verdict.unknowns]
    return "\n".join(lines)


def _key(key: list[list[str]]) -> str:
    columns = [" = ".join(members) for members in key]
    return columns[0] if len(columns) == 1 else "(" + "), (".join(columns) + ")"


def _line(label: str, text: str) -> str:
    indent = " " * (2 + _LABEL)
    return textwrap.fill(text, width=_WIDTH, initial_indent=f"  {label:<{_LABEL - 1}} ",
                         subsequent_indent=indent, break_on_hyphens=False)
