"""What the commands share beyond argument parsing: the rules and generators they run, the
sandbox they run them in, how a file they cannot write is reported, and the types of a
subcommand (`Command`, `SubParsers`). Imported by `commands`, `estimate`, `live` and
`acceptance`, so none imports another for it."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from hwspec.diagnostics import Diagnostic
    from hwspec.formats.environment import EnvironmentPolicy
    from hwspec.generate.registry import Generator
    from hwspec.rules.engine import Rule
    from hwspec.rules.sandbox import Sandbox

    SubParsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
    """What `add_subparsers` returns, which each command family adds its parsers to."""

Command: TypeAlias = tuple[Callable[[argparse.Namespace], int], str]
"""A subcommand's function (parsed arguments -> exit status) and its one-line help (`COMMANDS`)."""


def load_command_rules(args: argparse.Namespace, failures: list[Diagnostic] | None = None) -> list[Rule] | None:
    """The built-in rules plus `--rules DIR`s; None (after printing why) when they cannot be
    used: a `--rules DIR` that is not a directory (E301), two rules with one id or name (E302).

    A rule module that fails to import is an E900 (see `load_rules`): a command with a report
    passes `failures` and gets it there, with the other modules' rules; for a command without
    one (`rules`, `roofline`, ...) it is printed and the command stops (None)."""
    from hwspec.diagnostics import HwspecError
    from hwspec.diagnostics.report import render
    from hwspec.pipeline import rule_directories
    from hwspec.rules.engine import load_rules
    from hwspec.rules.sandbox import set_time_limit

    set_time_limit(getattr(args, "rule_time_limit", None))
    try:
        return load_rules(rule_directories(args.rules), failures)
    except HwspecError as exc:
        sys.stderr.write(render(exc.diagnostics, "text"))
        return None


def load_command_generators(args: argparse.Namespace) -> list[Generator] | None:
    """hwspec's own generators, the installed packages' and the `--generators DIR`s'; None
    (after printing why) when they cannot be used: a directory that is not one or an entry
    point that names no module of generators (E905), a module that fails to import (E904), two
    generators of one name (E906). Nothing is generated then: a run without one of them would
    remove its files."""
    from hwspec.diagnostics import HwspecError
    from hwspec.diagnostics.report import render
    from hwspec.generate.registry import load_generators

    try:
        return load_generators(getattr(args, "generators", ()))
    except HwspecError as exc:
        sys.stderr.write(render(exc.diagnostics, "text"))
        return None


def command_sandbox(args: argparse.Namespace) -> Sandbox:
    """The sandbox a command runs rules in: every rule contained, with the command's
    `--rule-time-limit` (the time limit in force when the command has no such option)."""
    from hwspec.rules.sandbox import Sandbox

    return Sandbox(getattr(args, "rule_time_limit", None))


def command_policy(args: argparse.Namespace) -> EnvironmentPolicy:
    """The `environment:` policy of a command: the strict default plus its `--allow-env` names."""
    from hwspec.formats.environment import EnvironmentPolicy

    return EnvironmentPolicy.allowing(getattr(args, "allow_env", ()))


def cannot_write(path: str | os.PathLike[str], exc: OSError) -> str:
    """The line (E114) saying that the operating system refused to write `path`, the output as
    the user named it (never a temporary file beside it), and why."""
    from hwspec.diagnostics import Code, os_reason
    from hwspec.text import visible

    return f"hwspec: error[{Code.CANNOT_WRITE_FILE}]: cannot write {visible(os.fspath(path))}: {os_reason(exc)}\n"
