"""The command line: `spark-multijoin advise FILE.sql...` (or `python -m spark_multijoin`).

Prints the fusion advisor's report on the files, read together as one pipeline (a view one
defines is inlined where another reads it). With `--require-fusion` it exits with 1 where a
chain of three or more streaming inputs would keep Spark's joins, so that CI can check it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from spark_multijoin._advisor import SqlError, advise_sources
from spark_multijoin._advisor._flink_advice import flink_report
from spark_multijoin._advisor._report import report

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    try:
        conf = dict(_setting(text) for text in arguments.conf)
        sources = [(str(path), Path(path).read_text()) for path in arguments.files]
        advice = advise_sources(sources, streaming=arguments.streaming, dialect=arguments.dialect,
                                conf=conf)
    except (OSError, SqlError, ValueError) as error:
        print(f"spark-multijoin advise: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(flink_report(advice) if arguments.dialect == "flink" else report(advice))
    missed = [verdict for statement in advice for verdict in statement.verdicts
              if verdict.misses_fusion]
    return 1 if arguments.require_fusion and missed else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spark-multijoin",
                                     description="Tools for spark-multijoin.")
    commands = parser.add_subparsers(dest="command", required=True)
    advise = commands.add_parser(
        "advise", help="which streaming joins of SQL files would run as one StreamingMultiJoin",
        description="Reports, per statement of the SQL files, which joins the spark-multijoin "
                    "rule would fuse into multi-joins, on which key, how long each input's rows "
                    "are kept, and why the other joins stay Spark's.")
    advise.add_argument("files", nargs="+", metavar="FILE.sql")
    advise.add_argument("--streaming", action="append", metavar="NAME",
                        help="a table or alias read as a stream (repeatable); without it and "
                             "without STREAM reads in the SQL, every input is")
    advise.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a conf of the rule, e.g. multi-join.max-tables=4 (repeatable)")
    advise.add_argument("--dialect", default="spark",
                        help="sqlglot dialect (default: spark); flink reads Flink SQL jobs and "
                             "shows the Spark SQL advised for each statement")
    advise.add_argument("--require-fusion", action="store_true",
                        help="exit with 1 where a chain of three or more streaming inputs "
                             "would keep Spark's joins")
    return parser


def _setting(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator:
        raise ValueError(f"--conf takes KEY=VALUE: {text}")
    return key.strip(), value.strip()
