"""`hwspec fleet-report REPORT...`: the node reports of a fleet merged into one.

Exit status: 0 every node read is clean, 1 a node drifted or could not be checked, or a report
could not be read (E601/E602), 2 no report could be read at all.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

FORMATS = ("text", "json", "markdown")
"""`hwspec.live.fleet.FORMATS`, written here so that building the parser imports none of it."""
HELP = "merge node reports ('hwspec diff --format json') into one fleet report: nodes per platform, findings by device"


def add_parser(sub: argparse._SubParsersAction) -> dict[str, tuple[Any, str]]:
    """Add the `fleet-report` subcommand; returns its COMMANDS entry."""
    parser = sub.add_parser("fleet-report", help=HELP)
    parser.add_argument("reports", nargs="+", type=Path, metavar="REPORT",
                        help="node report files (one or more JSON reports each), directories of *.json reports, or "
                             "quoted glob patterns ('reports/*.json')")
    parser.add_argument("--format", choices=FORMATS, default="text")
    return {"fleet-report": (cmd_fleet_report, HELP)}


def cmd_fleet_report(args: argparse.Namespace) -> int:
    from hwspec.live.fleet import Fleet, render

    fleet = Fleet()
    fleet.add_paths(args.reports)
    sys.stderr.write("".join(d.format() + "\n" for d in fleet.problems))
    if fleet.problems_dropped:
        sys.stderr.write(f"hwspec: {fleet.problems_dropped} more problem(s) with reports not listed\n")
    if not fleet.reports_read:
        sys.stderr.write("hwspec: no node report could be read\n")
    sys.stdout.write(render(fleet, args.format))
    return fleet.exit_code
