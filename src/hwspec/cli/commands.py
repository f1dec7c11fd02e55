"""The `hwspec` command line. Heavy modules are imported inside the commands so that
`hwspec --help` and `hwspec --version` stay fast.

Exit status: 0 clean, 1 findings at error level (or stale output for `generate --check`),
2 unreadable input or bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from hwspec import __version__
from hwspec.cli.common import cannot_write, command_policy, command_sandbox, load_command_generators
from hwspec.cli.common import load_command_rules as _rules
from hwspec.text import visible

if TYPE_CHECKING:
    from hwspec.diagnostics import Diagnostic

EXIT_OK, EXIT_FINDINGS, EXIT_UNREADABLE = 0, 1, 2


def _seconds(text: str) -> float:
    """argparse type: a finite, non-negative number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds >= 0, got {text!r}")
    return value


def _env_names(text: str) -> list[str]:
    """argparse type: one or more environment variable names, comma-separated."""
    from hwspec.spec.checks import ENV_NAME

    names = text.split(",")
    bad = [name for name in names if not ENV_NAME.fullmatch(name)]
    if bad:
        raise argparse.ArgumentTypeError(f"expected environment variable names (upper-case letters, digits, '_'), "
                                         f"got {visible(bad[0])!r}")
    return names


def _not_a_directory(path: Path) -> str | None:
    """Why `path` cannot be used as an option's directory, or None when it can."""
    from hwspec.diagnostics import os_reason

    try:
        is_directory = stat.S_ISDIR(os.stat(path).st_mode)
    except FileNotFoundError:
        return "no such directory"
    except OSError as exc:
        return os_reason(exc)  # "too many levels of symbolic links", "file name too long", ...
    except ValueError:
        return "the path holds a NUL character"
    return None if is_directory else "is not a directory"


def _add_rules_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rules", metavar="DIR", action="append", default=[], type=Path,
                        help="also load rules from DIR (repeatable)")
    parser.add_argument("--rule-time-limit", metavar="SECONDS", type=_seconds, default=None,
                        help="stop a rule or a site generator (or its module's import) after SECONDS and report "
                             "E900 (a generator's: E904) (default 10, or HWSPEC_RULE_TIME_LIMIT; 0: no limit)")
    parser.add_argument("--allow-env", metavar="NAME[,NAME...]", type=_env_names, action="extend", default=[],
                        dest="allow_env",
                        help="let platform files set these environment: names although HW702/HW812 refuse them "
                             "(they load code, name files or move the rendezvous: grant only what your site "
                             "reviewed; repeatable)")


def _add_generators_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--generators", metavar="DIR", action="append", default=[], type=Path,
                        help="also load generators from DIR: every *.py in it, as --rules DIR loads rules (repeatable)")


def _add_common(parser: argparse.ArgumentParser) -> None:
    _add_rules_options(parser)
    parser.add_argument("--parts", metavar="DIR", action="append", default=[], type=Path,
                        help="also load parts from DIR (repeatable; later wins)")
    parser.add_argument("--platform-root", metavar="DIR", action="append", default=[], type=Path, dest="platform_roots",
                        help="a cluster's node platforms may also be below DIR (by default only below the "
                             "cluster file's directory; repeatable)")


def cmd_validate(args: argparse.Namespace) -> int:
    from hwspec import pipeline
    from hwspec.diagnostics import report

    broken_modules: list[Diagnostic] = []
    rules = _rules(args, broken_modules)
    if rules is None:
        return EXIT_UNREADABLE
    files = pipeline.platform_files(args.paths)
    if not files:
        sys.stderr.write("hwspec: no platform files found in " + ", ".join(map(str, args.paths)) + "\n")
        return EXIT_UNREADABLE
    # a rule module that failed to import is an error finding (E900, exit 1), like a rule that fails
    diagnostics, status = broken_modules, EXIT_FINDINGS if broken_modules else EXIT_OK
    loaded = pipeline.LoadedNodes()
    for path in files:
        checked = pipeline.check(path, rules, args.parts, args.platform_roots, loaded, command_sandbox(args),
                                 command_policy(args))
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
    if args.exit_zero and status != EXIT_OK:
        sys.stderr.write("hwspec: --exit-zero: exit status 0 although the report has "
                         + ("unreadable files" if status == EXIT_UNREADABLE else "errors") + "\n")
        return EXIT_OK
    return status


def cmd_generate(args: argparse.Namespace) -> int:
    """Validate, then render every platform's plan and write it (or compare with --check)."""
    from hwspec import pipeline
    from hwspec.diagnostics import Code, report
    from hwspec.generate import engine as generate

    broken_modules: list[Diagnostic] = []
    rules = _rules(args, broken_modules)
    if rules is None:
        return EXIT_UNREADABLE
    generators = load_command_generators(args)
    if generators is None:
        return EXIT_UNREADABLE
    try:
        generate.install_root(args.install_root)
    except generate.GenerationError as exc:
        sys.stderr.write(f"hwspec: error: {visible(str(exc))}\n")
        return EXIT_UNREADABLE
    files = pipeline.platform_files(args.paths or [Path("platforms")])
    if not files:
        sys.stderr.write("hwspec: no platform files found\n")
        return EXIT_UNREADABLE
    plan: dict[str, str] = {}
    names: list[str] = []
    owners: dict[str, Path] = {}
    sys.stderr.write(report.render(broken_modules, "text"))
    failed = bool(broken_modules)
    loaded, rendered = pipeline.LoadedNodes(), generate.Rendered()
    for path in files:
        checked = pipeline.check(path, rules, args.parts, args.platform_roots, loaded, command_sandbox(args),
                                 command_policy(args))
        sys.stderr.write(report.render(checked.diagnostics if args.verbose else summarised(checked.diagnostics, path), "text"))
        if checked.failed():
            failed = True
            continue
        topology = checked.topology
        if topology is None:
            continue  # a workload or parts file: checked, nothing to generate
        name = topology.name
        if name in owners:
            sys.stderr.write(f"hwspec: error[{Code.OUTPUT_NOT_WRITTEN}]: {visible(str(owners[name]))} and {visible(str(path))} "
                             f"are both named '{name}': their files would overwrite each other in {visible(str(args.output))}/{name}/\n")
            failed = True
            continue
        owners[name] = path
        try:
            plan.update(generate.plan_for(topology, args.templates, root=args.install_root, rendered=rendered,
                                           policy=command_policy(args), generators=generators, sandbox=command_sandbox(args)))
        except generate.GenerationError as exc:
            code = Code.GENERATOR_FAILED if isinstance(exc, generate.GeneratorFailed) else Code.GENERATION_FAILED
            sys.stderr.write(f"hwspec: error[{code}]: {visible(str(exc))}\n")
            failed = True
            continue
        names.append(name)
    if failed:
        sys.stderr.write("hwspec: nothing written: fix the errors above first\n" if not args.check else "hwspec: check aborted by errors\n")
        return EXIT_UNREADABLE
    out_dir = args.output  # relative to the working directory the command started in: the rule box puts it back
    if args.check:
        stale = generate.check_plan(plan, out_dir, names)
        for entry in stale:
            sys.stdout.write(entry + "\n")
        if stale:
            sys.stderr.write(f"hwspec: {len(stale)} generated file(s) out of date; run 'hwspec generate' and commit the result\n")
            return EXIT_FINDINGS
        sys.stderr.write(f"hwspec: {len(plan)} generated file(s) up to date\n")
        return EXIT_OK
    try:
        changed = generate.write_plan(plan, out_dir, names, svg=not args.no_svg)
        svgs = generate.render_svgs(plan, out_dir) if not args.no_svg else []
    except OSError as exc:
        sys.stderr.write(cannot_write(os.fsdecode(exc.filename) if exc.filename is not None else out_dir, exc))
        return EXIT_UNREADABLE
    except (ValueError, generate.GenerationError) as exc:
        code = Code.GENERATION_FAILED if isinstance(exc, generate.GenerationError) else Code.OUTPUT_NOT_WRITTEN
        sys.stderr.write(f"hwspec: error[{code}]: {visible(str(exc))}\n")
        return EXIT_UNREADABLE
    sys.stderr.write(f"hwspec: {len(plan)} file(s) generated in {out_dir} ({len(changed)} changed"
                     + (f", {len(svgs)} SVG diagram(s) rendered" if svgs else "") + ")\n")
    return EXIT_OK


UNKNOWN_FACTS = "HW603"
WAITING = "waiting for the unknown facts of devices"
"""How HW603's finding that names the waiting outputs starts (rules/builtin/unknown.py)."""


def summarised(diagnostics: list[Diagnostic], path: Path) -> list[Diagnostic]:
    """`diagnostics` with HW603's one finding per device with unknown facts left out, for
    `generate`: the finding that says which outputs wait for which facts of which devices stays,
    one per platform, its hint saying where the devices' own findings are (validate, or
    generate --verbose); where no output waits, one finding names the devices. Expected facts of
    a shipped platform then cost one line per run."""
    devices = [d for d in diagnostics if d.code == UNKNOWN_FACTS and not d.message.startswith(WAITING)]
    waiting = any(d.code == UNKNOWN_FACTS and d.message.startswith(WAITING) for d in diagnostics)
    if len(devices) < (1 if waiting else 2):  # one device's finding, nothing waiting for it, says it best
        return diagnostics
    shown = visible(str(path))
    where = f"'hwspec validate {shown}' (or 'hwspec generate --verbose') lists the {len(devices)} device(s) and what to fill in"
    kept = [d for d in diagnostics if d not in devices]
    summary = next((i for i, d in enumerate(kept) if d.code == UNKNOWN_FACTS), None)
    if summary is not None:
        kept[summary] = dataclasses.replace(kept[summary], hint=f"{where}, then generate again")
    else:  # unknown facts no output waits for (a NIC's interface name, a CPU part): one line for them all
        ids = ", ".join(d.message.split(": ", 1)[0] for d in devices)
        position = sum(d not in devices for d in diagnostics[:diagnostics.index(devices[0])])
        kept.insert(position, dataclasses.replace(
            devices[0], message=f"unknown facts of {ids}; no generated file waits for them", hint=where))
    return kept


def cmd_schema(args: argparse.Namespace) -> int:
    from hwspec.spec.json_schema import schema_text

    text = schema_text()
    if args.output:
        from hwspec.generate.writer import write_atomic

        try:
            write_atomic(Path(args.output), text)
        except OSError as exc:
            sys.stderr.write(cannot_write(args.output, exc))
            return EXIT_UNREADABLE
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_rules(args: argparse.Namespace) -> int:

    rules = _rules(args)
    if rules is None:
        return EXIT_UNREADABLE
    width = max((len(r.name) for r in rules), default=0)
    for r in rules:
        sys.stdout.write(f"{r.id}  {r.name:<{width}}  {r.severity.label:<7}  {r.scope:<7}  {r.summary}\n")
    return EXIT_OK


def cmd_generators(args: argparse.Namespace) -> int:
    """Every generator a `generate` with the same `--generators DIR`s runs: name, scope, where
    it is defined, and the first line of its docstring."""
    generators = load_command_generators(args)
    if generators is None:
        return EXIT_UNREADABLE
    width = max((len(g.name) for g in generators), default=0)
    for g in generators:
        sys.stdout.write(f"{g.name:<{width}}  {g.scope:<7}  {g.origin}: {g.summary}\n")
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from hwspec.diagnostics.codes import Code, lookup
    from hwspec.spec.translate import nearest

    code = lookup(args.rule)
    if code is not None:
        sys.stdout.write(f"{code.value} {code.summary}\n\n{code.doc}\n")
        return EXIT_OK
    rules = _rules(args)
    if rules is None:
        return EXIT_UNREADABLE
    by_key = {r.id.lower(): r for r in rules} | {r.name.lower(): r for r in rules}
    found = by_key.get(args.rule.lower())
    if found is None:
        guess = nearest(args.rule, [r.id for r in rules] + [r.name for r in rules] + [member.value for member in Code])
        sys.stderr.write(f"hwspec: unknown rule '{visible(args.rule)}'" + (f" (did you mean '{guess}'?)" if guess else "")
                         + "; run 'hwspec rules' to list them\n")
        return EXIT_UNREADABLE
    sys.stdout.write(f"{found.id} {found.name} (default severity: {found.severity.label}, scope: {found.scope})\n"
                     f"defined in {found.file}\n\n{found.doc}\n" + (f"\nWhat to do: {found.hint}\n" if found.hint else ""))
    return EXIT_OK


def cmd_roofline(args: argparse.Namespace) -> int:
    """Validate one node or cluster platform, then print its roofline parameters (text tables or JSON)."""
    from hwspec import pipeline
    from hwspec.diagnostics import report
    from hwspec.perf import roofline, roofline_report
    from hwspec.topology.cluster import ClusterTopology

    rules = _rules(args)
    if rules is None:
        return EXIT_UNREADABLE
    checked = pipeline.check(args.platform, rules, args.parts, args.platform_roots, sandbox=command_sandbox(args),
                             policy=command_policy(args))
    sys.stderr.write(report.render(checked.diagnostics, "text"))
    if checked.unreadable:
        return EXIT_UNREADABLE
    topology = checked.topology
    if checked.platform is not None and topology is None:  # a workload or parts file
        sys.stderr.write(f"hwspec: {visible(args.platform)} is a {checked.platform.kind} file; give the platform (node or cluster) file here\n")
        return EXIT_UNREADABLE
    if checked.failed():
        shown = visible(args.platform)
        sys.stderr.write(f"hwspec: {shown} has errors: fix them first ('hwspec validate {shown}')\n")
        return EXIT_FINDINGS
    if isinstance(topology, ClusterTopology):
        from hwspec.perf import cluster_roofline

        document = cluster_roofline.cluster_roofline(topology)
        text = cluster_roofline.cluster_text_report
    else:
        document, text = roofline.roofline(checked.node_topology()), roofline_report.text_report
    if args.format == "json":
        import json

        sys.stdout.write(json.dumps(document, sort_keys=True, indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write(text(document))
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from hwspec.cli.live import run_import

    return run_import(args)


def cmd_diff(args: argparse.Namespace) -> int:
    from hwspec.cli.live import run_diff

    return run_diff(args)


def cmd_capture(args: argparse.Namespace) -> int:
    from hwspec.cli.live import run_capture

    return run_capture(args)


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
    "validate": (cmd_validate, "check platform files and report findings"),
    "generate": (cmd_generate, "validate, then write generated configs (or --check them)"),
    "roofline": (cmd_roofline, "print a platform's roofline parameters (peaks, tiers, ridge points, collective bounds)"),
    "schema": (cmd_schema, "print the JSON Schema of platform files (for editors)"),
    "rules": (cmd_rules, "list every rule"),
    "generators": (cmd_generators, "list every generator (hwspec's own, installed packages', --generators DIR's)"),
    "explain": (cmd_explain, "print a rule's invariant and rationale"),
    "import": (cmd_import, "draft a platform file from a live node (NCCL dump, lstopo XML, nvidia-smi topo -m)"),
    "diff": (cmd_diff, "compare a live node with its platform file"),
    "capture": (cmd_capture, "save what 'import --live' and 'diff --live' read of this machine (for replay, bug reports)"),
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
    validate.add_argument("--exit-zero", action="store_true",
                          help="exit 0 even with findings or unreadable files (they are in the report), so a CI "
                               "step can write the SARIF file and a later step upload it; usage errors still exit 2")
    _add_common(validate)

    gen = sub.add_parser("generate", help=COMMANDS["generate"][1])
    gen.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="platform files or directories (default: platforms/)")
    gen.add_argument("-o", "--output", type=Path, default=Path("generated"), metavar="DIR", help="output directory (default: generated/)")
    gen.add_argument("--check", action="store_true", help="compare with DIR instead of writing: exit 1 when stale")
    gen.add_argument("--templates", metavar="DIR", action="append", default=[], type=Path,
                     help="site templates, searched before the built-in ones (repeatable)")
    _add_generators_option(gen)
    gen.add_argument("--no-svg", action="store_true", help="do not render SVG diagrams even when graphviz is installed")
    gen.add_argument("-v", "--verbose", action="store_true",
                     help="print each device's unknown facts (HW603), not only the outputs that wait for them")
    gen.add_argument("--install-root", metavar="DIR", default="/etc/hwspec",
                     help="where the files are installed on the machines, as DIR/<platform>/ "
                          "(default /etc/hwspec); nccl.conf, the env files and the scripts all follow it")
    _add_common(gen)

    roof = sub.add_parser("roofline", help=COMMANDS["roofline"][1])
    roof.add_argument("platform", type=Path, metavar="PLATFORM", help="a node platform file")
    roof.add_argument("--format", choices=("text", "json"), default="text")
    _add_common(roof)

    from hwspec.cli.estimate import add_parsers as add_estimate_parsers

    COMMANDS.update(add_estimate_parsers(sub, _add_common))
    from hwspec.cli.fleet import add_parser as add_fleet_parser

    COMMANDS.update(add_fleet_parser(sub))
    from hwspec.cli.acceptance import add_parser as add_expect_parser

    COMMANDS.update(add_expect_parser(sub))

    schema = sub.add_parser("schema", help=COMMANDS["schema"][1])
    schema.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")

    _add_generators_option(sub.add_parser("generators", help=COMMANDS["generators"][1]))

    for name in ("rules", "explain"):
        p = sub.add_parser(name, help=COMMANDS[name][1])
        if name == "explain":
            p.add_argument("rule", metavar="ID", help="rule id (HW201) or name, or a code (E105)")
        _add_rules_options(p)
    from hwspec.cli.live import add_arguments, add_capture_arguments

    for name in ("import", "diff"):
        add_arguments(name, sub.add_parser(name, help=COMMANDS[name][1]))
    add_capture_arguments(sub.add_parser("capture", help=COMMANDS["capture"][1]))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the `hwspec` command line `argv` (the process's arguments when None) and return the
    exit status."""
    if argv is None:  # the command itself, not a caller in its own process
        # no pydantic plugins are used here; looking for them reads every installed
        # distribution's metadata (importlib.metadata), a good part of start-up
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
        # What the command makes lives until it ends and holds next to no reference cycles
        # (reference counting frees the rest), so the cycle collector's runs every 700
        # allocations only walk live data: 15 ms of `generate --check`, 80 ms at 65,536 nodes,
        # with the same peak memory once it runs every 100,000 (as mypy does, for the same reason).
        gc.set_threshold(100_000, 10, 10)
        try:
            return _run(argv)
        finally:
            # and the interpreter's last collection at exit would only walk it all again
            # (15 ms for the shipped platforms, 30 ms for 16,384 nodes); objects are still freed
            gc.freeze()
    return _run(argv)


def run_command() -> NoReturn:
    """The `hwspec` program (its console script, `python -m hwspec`): `main()` on the process's
    arguments, then the process ends with its status at once (`os._exit`), once stdout and
    stderr are flushed.

    hwspec needs nothing run at exit, and site rules may have left something that would run
    then: an `atexit` handler that prints after the report (a JSON or SARIF report must be the
    whole of stdout) or a non-daemon thread the interpreter would wait for. Ending here runs
    neither; a library caller of `main()` keeps its process and its exit handlers."""
    status = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe (`hwspec ... | head`): the reader is gone
            stream.flush()
    os._exit(status)


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_UNREADABLE
    for option, dest in (("--parts", "parts"), ("--templates", "templates"), ("--platform-root", "platform_roots"),
                         ("--rules", "rules"), ("--generators", "generators")):
        for directory in getattr(args, dest, ()):
            problem = _not_a_directory(directory)
            if problem:
                parser.error(f"{option} {visible(str(directory))}: {problem}")
    func = getattr(args, "func", None) or COMMANDS[args.command][0]
    try:
        return func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug in hwspec: "could not check", never a finding (exit 1 drains nodes)
        return _crashed(args, exc)


DEBUG_ENV = "HWSPEC_DEBUG"
"""Set (to anything but empty or 0), an unexpected exception also prints its traceback."""


def _crashed(args: argparse.Namespace, exc: Exception) -> int:
    """Exit status 2 for an unexpected exception in a command, with one line on stderr naming
    the command and the exception (E903), and `diff`'s unchecked report where it writes one."""
    import traceback

    from hwspec.diagnostics import Code, Diagnostic, Severity

    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        traceback.print_exception(exc)
    text = " ".join(str(exc).split())[:300]
    message = (f"hwspec {args.command} could not check: internal error: {type(exc).__name__}"
               f"{': ' + text if text else ''} (a bug in hwspec: {DEBUG_ENV}=1 shows the traceback; please report it)")
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    sys.stderr.write(f"hwspec: error[{Code.INTERNAL_ERROR}]: {visible(message)}\n")
    fmt = getattr(args, "format", None)
    diagnostic = Diagnostic("<hwspec>", 1, 1, Severity.ERROR, Code.INTERNAL_ERROR, message)
    with contextlib.suppress(Exception):  # the report is the last thing tried: the exit status says it all
        if args.command == "diff" and fmt in ("json", "prometheus"):
            from hwspec.cli.live import write_diff_report

            write_diff_report(args, [diagnostic], EXIT_UNREADABLE)  # the node report, status unchecked
        elif args.command in ("diff", "validate") and fmt in ("json", "github", "sarif"):
            from hwspec.diagnostics import report

            sys.stdout.write(report.render([diagnostic], fmt))
    return EXIT_UNREADABLE
