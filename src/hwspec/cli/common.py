"""What the commands share beyond argument parsing: the rules they run. Imported by both
`commands` and `estimate`, so neither imports the other for it."""

from __future__ import annotations

import argparse
import sys


def load_command_rules(args: argparse.Namespace) -> list | None:
    """The built-in rules plus `--rules DIR`s; None (after printing why) when one fails to load."""
    from hwspec.diagnostics import HwspecError
    from hwspec.pipeline import rule_directories
    from hwspec.diagnostics.report import render
    from hwspec.rules.engine import load_rules, set_time_limit

    set_time_limit(getattr(args, "rule_time_limit", None))
    try:
        return load_rules(rule_directories(args.rules))
    except HwspecError as exc:
        sys.stderr.write(render(exc.diagnostics, "text"))
        return None
