"""The `hwspec` command line. Heavy modules are imported inside the commands so that
`hwspec --help` and `hwspec --version` stay fast.

Exit status: 0 clean, 1 findings at error level (or stale output for `generate --check`),
2 unreadable input or bad usage.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from hwspec import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_UNREADABLE = 0, 1, 2


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rules", metavar="DIR", action="append", default=[], type=Path,
                        help="also load rules from DIR (repeatable)")
    parser.add_argument("--parts", metavar="DIR", action="append", default=[], type=Path,
                        help="also load parts from DIR (repeatable; later wins)")


def cmd_validate(args: argparse.Namespace) -> int:
    from hwspec import pipeline, report
    from hwspec.diagnostics import HwspecError

    try:
        rules = _rules(args)
    except HwspecError as exc:
        sys.stderr.write(report.render(exc.diagnostics, "text"))
        return EXIT_UNREADABLE
    files = pipeline.platform_files(args.paths)
    if not files:
        sys.stderr.write("hwspec: no platform files found in " + ", ".join(map(str, args.paths)) + "\n")
        return EXIT_UNREADABLE
    diagnostics, status = [], EXIT_OK
    for path in files:
        checked = pipeline.check(path, rules, args.parts)
        diagnostics.extend(report.escalate(checked.diagnostics, args.werror))
        if checked.unreadable:
            status = EXIT_UNREADABLE
        elif checked.failed(args.werror) and status == EXIT_OK:
            status = EXIT_FINDINGS
    sys.stdout.write(report.render(diagnostics, args.format, rules))
    if args.format == "text":
        errors = sum(d.severity.label == "error" for d in diagnostics)
        warnings = sum(d.severity.label == "warning" for d in diagnostics)
        verdict = "ok" if status == EXIT_OK else "failed"
        sys.stderr.write(f"hwspec: {len(files)} file(s) checked: {errors} error(s), {warnings} warning(s): {verdict}\n")
    return status


def _rules(args: argparse.Namespace) -> list:
    from hwspec.pipeline import rule_directories
    from hwspec.rules import load_rules

    return load_rules(rule_directories(args.rules))


def cmd_schema(args: argparse.Namespace) -> int:
    from hwspec.schema import schema_text

    text = schema_text()
    if args.output:
        from hwspec.writer import write_atomic

        write_atomic(Path(args.output), text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_rules(args: argparse.Namespace) -> int:
    from hwspec.diagnostics import HwspecError
    from hwspec.report import render

    try:
        rules = _rules(args)
    except HwspecError as exc:
        sys.stderr.write(render(exc.diagnostics, "text"))
        return EXIT_UNREADABLE
    width = max((len(r.name) for r in rules), default=0)
    for r in rules:
        sys.stdout.write(f"{r.id}  {r.name:<{width}}  {r.severity.label:<7}  {r.scope:<7}  {r.summary}\n")
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from hwspec.diagnostics import HwspecError
    from hwspec.errors import nearest
    from hwspec.report import render

    try:
        rules = _rules(args)
    except HwspecError as exc:
        sys.stderr.write(render(exc.diagnostics, "text"))
        return EXIT_UNREADABLE
    by_key = {r.id.lower(): r for r in rules} | {r.name.lower(): r for r in rules}
    found = by_key.get(args.rule.lower())
    if found is None:
        guess = nearest(args.rule, [r.id for r in rules] + [r.name for r in rules])
        sys.stderr.write(f"hwspec: unknown rule '{args.rule}'" + (f"; did you mean '{guess}'?" if guess else "") + "\n")
        return EXIT_UNREADABLE
    sys.stdout.write(f"{found.id} {found.name} (default severity: {found.severity.label}, scope: {found.scope})\n"
                     f"defined in {found.file}\n\n{found.doc}\n")
    return EXIT_OK


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
    "validate": (cmd_validate, "check platform files and report findings"),
    "schema": (cmd_schema, "print the JSON Schema of platform files (for editors)"),
    "rules": (cmd_rules, "list every rule"),
    "explain": (cmd_explain, "print a rule's invariant and rationale"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hwspec", description="Declarative GPU platform specs, checked and turned into configs.")
    parser.add_argument("--version", action="version", version=f"hwspec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    validate = sub.add_parser("validate", help=COMMANDS["validate"][1])
    validate.add_argument("paths", nargs="*", type=Path, default=[Path("platforms")], metavar="PATH",
                          help="platform files or directories (default: platforms/)")
    validate.add_argument("--format", choices=("text", "json", "github", "sarif"), default="text")
    validate.add_argument("--werror", action="store_true", help="treat warnings as errors")
    _add_common(validate)

    schema = sub.add_parser("schema", help=COMMANDS["schema"][1])
    schema.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")

    for name in ("rules", "explain"):
        p = sub.add_parser(name, help=COMMANDS[name][1])
        if name == "explain":
            p.add_argument("rule", metavar="ID", help="rule id (HW201) or name")
        p.add_argument("--rules", metavar="DIR", action="append", default=[], type=Path,
                       help="also load rules from DIR (repeatable)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_UNREADABLE
    func = getattr(args, "func", None) or COMMANDS[args.command][0]
    try:
        return func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
