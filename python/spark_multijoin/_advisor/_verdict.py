"""The verdict on one statement: the rule's verdicts on its plan, as `fusion_report` gives them
(codes, arguments, messages and the text EXPLAIN shows), with what the SQL alone tells of its
inputs and what the advisor had to assume to plan it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

COLLAPSED = "COLLAPSED"
UNBOUNDED_INPUT = "UNBOUNDED_INPUT"


@dataclass(frozen=True)
class Verdict:
    """What spark-multijoin's rule does with the joins of one statement, read from the rule.

    Inputs are named as the query names them: the alias if there is one, else the table name.

    - `fused_groups`: the inputs of each multi-join the rule builds, one list per multi-join;
      empty where every join stays Spark's.
    - `keys`: per fused group, its key: per key column, the expressions its inputs are looked up
      by, as the rule shows them.
    - `bounded`: per input of a multi-join, whether the rule finds its rows bounded (evicted as
      the watermark passes, or by a state TTL), None where the SQL cannot tell (an input defined
      outside it, read without a WATERMARK clause, whose stand-in has none); `state_kept` says it
      in words.
    - `reasons`: the rule's other verdicts, in its words: what it collapsed, and why joins stay
      Spark's.
    - `warnings`: the verdicts the rule gives as warnings (an unbounded input...).
    - `unknowns`: what the advisor cannot know from SQL, and what it assumed to plan it.
    - `explain`: the rule's text as `df.explain()` shows it for the statement's query.
    - `spark_sql`: the query the advisor planned, as sqlglot writes it in Spark SQL (from
      another dialect too), over its stand-ins, each read under the name the query gave it.
    """

    location: str
    statement: str
    inputs: list[str]
    streaming: list[str]
    fused_groups: list[list[str]]
    keys: list[list[list[str]]]
    bounded: dict[str, bool | None]
    state_kept: dict[str, str]
    reasons: list[str]
    warnings: list[str]
    unknowns: list[str]
    streaming_chain_inputs: int
    explain: str = ""
    spark_sql: str = ""

    @property
    def fuses(self) -> bool:
        return bool(self.fused_groups)

    @property
    def misses_fusion(self) -> bool:
        """Three or more streaming inputs joined in one FROM clause, of which none fuse."""
        return self.streaming_chain_inputs >= 3 and not self.fused_groups


@dataclass
class StatementInputs:
    """What the SQL tells of a statement's inputs: their names, which stream, which have no
    WATERMARK clause in the SQL although it cannot see how they are defined (None where the
    rule's word on their bounds is the stand-in's, not the input's), and what was assumed."""

    location: str
    statement: str
    inputs: list[str]
    streaming: list[str]
    watermark_unknown: set[str]
    streaming_chain_inputs: int
    unknowns: list[str] = field(default_factory=list)
    spark_sql: str = ""


def verdict_of(report: dict[str, Any], inputs: StatementInputs) -> Verdict:
    verdicts = report.get("verdicts", [])
    collapsed = [v for v in verdicts if v["code"] == COLLAPSED]
    groups = [group for v in collapsed for group in v["args"]["groups"]]
    unbounded = {input_name(v["args"]["input"]) for v in verdicts
                 if v["code"] == UNBOUNDED_INPUT}
    bounded: dict[str, bool | None] = {}
    kept: dict[str, str] = {}
    for name in (input_name(entry) for group in groups for entry in group["inputs"]):
        if name in inputs.watermark_unknown:
            bounded[name], kept[name] = None, "not known here"
        elif name in unbounded:
            bounded[name], kept[name] = False, "for good (see the warning)"
        else:
            bounded[name], kept[name] = True, "until its bound passes"
    unknowns = list(inputs.unknowns)
    unwatermarked = [name for name in inputs.streaming if name in inputs.watermark_unknown]
    if unwatermarked:
        unknowns.append(
            f"{', '.join(unwatermarked)}: defined outside this SQL and read without a WATERMARK "
            "clause, so whether a watermark bounds their rows is not known here: their "
            "stand-ins have none, and what the rule says of their bounds is about those.")
    return Verdict(
        inputs.location, inputs.statement, inputs.inputs, inputs.streaming,
        fused_groups=[[input_name(entry) for entry in group["inputs"]] for group in groups],
        keys=[[list(column) for column in group["key"]] for group in groups],
        bounded=bounded, state_kept=kept,
        reasons=[v["message"] for v in verdicts if not v["warning"]],
        warnings=[v["message"] for v in verdicts if v["warning"]],
        unknowns=unknowns, streaming_chain_inputs=inputs.streaming_chain_inputs,
        explain=report.get("explain", ""), spark_sql=inputs.spark_sql)


def input_name(entry: dict[str, Any]) -> str:
    """An input as the report gives it: by the name the query gave it, else by its columns, as
    the rule's messages show it."""
    return entry.get("name") or "[" + ", ".join(entry.get("columns", [])) + "]"
