"""`hwspec import` and `hwspec diff`: the command-line side of `hwspec.live`.

Exit status, as for `validate`: 0 clean (import: the draft validates with no error; diff: the
machine matches its spec), 1 findings (import: the draft has errors to fix; diff: differences),
2 unusable input (an input or the spec cannot be read; nothing is written).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from hwspec.text import visible

if TYPE_CHECKING:
    from hwspec.diagnostics import Diagnostic
    from hwspec.live.observed import Machine
    from hwspec.model.node import Platform
    from hwspec.rules.sandbox import Sandbox

EXIT_OK, EXIT_FINDINGS, EXIT_UNREADABLE = 0, 1, 2


def add_arguments(name: str, parser: argparse.ArgumentParser) -> None:
    from hwspec.live import FORMATS

    if name == "diff":
        parser.add_argument("spec", type=Path, metavar="SPEC", help="the node's platform file")
    parser.add_argument("inputs", nargs="*", type=Path, metavar="LIVE",
                        help=("NCCL topology dump, 'lstopo --of xml', 'nvidia-smi topo -m', 'nvidia-smi -q -x' or "
                              "'nvidia-smi nvlink -R'/'-s' output (several are merged)"
                              + ("; or saved nccl-tests, rccl-tests and nvbandwidth outputs, compared with what the "
                                 "platform (node or cluster) should deliver" if name == "diff" else "")))
    parser.add_argument("--input-format", choices=FORMATS, default=None,
                        help="read every input as this format (default: recognised from its content)")
    if name == "import":
        parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the draft to FILE (default: stdout)")
        parser.add_argument("--name", metavar="NAME", help="platform name (default: the output file's stem, else 'imported')")
    else:
        add_diff_report_arguments(parser)
        from hwspec.cli.acceptance import add_diff_arguments

        add_diff_arguments(parser)
    parser.add_argument("--parts", metavar="DIR", action="append", default=[], type=Path,
                        help="also load parts from DIR (repeatable; later wins)")
    if name == "diff":
        parser.add_argument("--rules", metavar="DIR", action="append", default=[], type=Path,
                            help="also load rules from DIR (repeatable)")
    add_live_arguments(parser)


def add_live_arguments(parser: argparse.ArgumentParser) -> None:
    """`--live` and `--sysfs-root`: read this machine (or a capture of one) instead of LIVE files."""
    parser.add_argument("--live", action="store_true",
                        help="read this machine directly: sysfs, /proc/cpuinfo and, with nvidia-ml-py, NVML")
    parser.add_argument("--sysfs-root", type=Path, metavar="DIR",
                        help="with --live: read the tree 'hwspec capture' wrote instead of / (implies --live)")


def add_capture_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("output", type=Path, metavar="OUT", help="a new directory to save what --live reads into")
    parser.add_argument("--sysfs-root", type=Path, metavar="DIR", default=Path("/"),
                        help="capture this tree instead of / (a capture of a capture is the same capture)")


def run_capture(args: argparse.Namespace) -> int:
    """`hwspec capture OUT`: save exactly what `--live` reads (and NVML's answers) into OUT."""
    from hwspec.diagnostics import report
    from hwspec.live.capture import capture

    read = capture(args.sysfs_root, args.output)
    sys.stderr.write(report.render(read.machine.problems, "text"))
    for note in read.notes:
        sys.stderr.write(f"hwspec: note: {visible(note)}\n")
    if any(d.severity.label == "error" for d in read.machine.problems):
        sys.stderr.write("hwspec: nothing captured\n")
        return EXIT_UNREADABLE
    tree = read.tree
    sys.stderr.write(f"hwspec: captured {len(tree.files)} files, {len(tree.links)} links into {visible(args.output)}"
                     f"{' with NVML answers' if read.nvml else ''}\n")
    return EXIT_OK


def _read_live(args: argparse.Namespace) -> Machine:
    """The machine `--live`/`--sysfs-root` reads, with the usage problems of the command line."""
    from hwspec.diagnostics import Code, Location, Severity
    from hwspec.live.capture import read_live
    from hwspec.live.observed import Machine

    if args.inputs:
        machine = Machine()
        machine.problem(Location("<command line>", 1), Severity.ERROR, Code.INPUT_UNREADABLE,
                        "--live reads this machine: give LIVE files or --live, not both")
        return machine
    root = args.sysfs_root or Path("/")
    read = read_live(root)
    for note in read.notes:
        sys.stderr.write(f"hwspec: note: {visible(note)}\n")
    args.inputs = [f"this machine ({visible(root)})" if args.sysfs_root is None else visible(root)]
    return read.machine


DIFF_FORMATS = ("text", "json", "github", "sarif", "prometheus")
"""diff's report formats: validate's, where json is the node report
(`hwspec.diagnostics.report.node_report`), and Prometheus' text exposition format."""


def add_diff_report_arguments(parser: argparse.ArgumentParser) -> None:
    """diff's `--format` and `--node` (the node the json and prometheus reports name)."""
    parser.add_argument("--format", choices=DIFF_FORMATS, default="text",
                        help="json: the node report (hwspec_report 1); prometheus: the text exposition format "
                             "for node_exporter's textfile collector")
    parser.add_argument("--node", metavar="NAME",
                        help="the node's name in the json and prometheus reports (default: the short host name)")


def _node_fabric(machine: Machine | None) -> tuple[str | None, int | None] | None:
    """The NVLink clique every GPU of `machine` is in; (None, None) when its inputs answered for
    the fabric (NVML, `-q -x`) and no GPU is in a domain; None when they did not answer, or its
    GPUs disagree (diff's D113 says so): then the node's clique is not known."""
    from hwspec.live.diff import node_fabric

    if machine is None or "fabric" not in machine.listed:
        return None
    clique = node_fabric(machine.gpus.values())
    if clique is not None:
        return clique.cluster_uuid, clique.clique_id
    return (None, None) if all(gpu.fabric is None for gpu in machine.gpus.values()) else None


def write_diff_report(args: argparse.Namespace, diagnostics: list[Diagnostic], exit_code: int, platform: Platform | None = None,
                      machine: Machine | None = None) -> int:
    """Write diff's report of `diagnostics` on stdout in `args.format` and return `exit_code`.
    json and prometheus always write one, naming the node and the spec, "could not check"
    included (exit status 2); the other formats write the diagnostics only where a comparison
    or the inputs produced them (`platform` given). The json report's `fabric` is `_node_fabric`'s."""
    from hwspec.diagnostics import report
    from hwspec.live.diff import DIFF_CODES

    if args.format in ("json", "prometheus"):
        from hwspec.live.health import node_name, with_devices

        findings = with_devices(diagnostics, platform)
        node, spec = node_name(args.node), str(args.spec)
        if args.format == "json":
            name = platform.name if platform is not None else None
            fabric = _node_fabric(machine) if exit_code != EXIT_UNREADABLE else None
            sys.stdout.write(json.dumps(report.node_report(findings, node, spec, name, exit_code, fabric), indent=2) + "\n")
        else:
            sys.stdout.write(report.prometheus(findings, node, spec, exit_code))
    elif platform is not None:
        sys.stdout.write(report.render(diagnostics, args.format, codes=DIFF_CODES))
    return exit_code


def _read(args: argparse.Namespace) -> tuple[Machine, bool]:
    from hwspec.diagnostics import Code, Location, Severity
    from hwspec.live.merge import read_inputs
    from hwspec.live.observed import FATAL_INPUT_CODES

    if args.live or args.sysfs_root is not None:
        machine = _read_live(args)
    elif not args.inputs:
        from hwspec.live.observed import Machine

        machine = Machine()
        machine.problem(Location("<command line>", 1), Severity.ERROR, Code.INPUT_UNREADABLE, "nothing to read: give LIVE files, or --live")
    else:
        machine = read_inputs(args.inputs, args.input_format)
    fatal = any(d.code in FATAL_INPUT_CODES for d in machine.problems)
    if not fatal and not machine.gpus and not machine.nics and not machine.numa:
        from hwspec.diagnostics import display_path

        machine.problem(Location(display_path(Path(args.inputs[0])), 1), Severity.ERROR, Code.INPUT_SYNTAX,
                        "the inputs describe no NUMA node, GPU or NIC")
        fatal = True
    return machine, fatal


def check_draft(text: str, file: str, parts_dirs: Iterable[Path] = (), sandbox: Sandbox | None = None) -> list[Diagnostic]:
    """Every diagnostic of the draft `text` as `hwspec validate` reports it (loader, then the
    built-in rules, in `sandbox` when given), with `file` as the file name. Checked through a
    temporary copy, so that nothing is written when the draft is printed."""
    import dataclasses
    import tempfile

    from hwspec import pipeline

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "draft.yaml"
        path.write_text(text, encoding="utf-8")
        checked = pipeline.check(path, None, parts_dirs, sandbox=sandbox)
        name = str(path)
        return [dataclasses.replace(d, file=file) if d.file in (name, path.name) or d.file.endswith("/draft.yaml") else d
                for d in checked.diagnostics]


def run_import(args: argparse.Namespace) -> int:
    from hwspec import content
    from hwspec.cli.common import cannot_write, command_sandbox
    from hwspec.diagnostics import HwspecError, report
    from hwspec.live.draft import draft_document
    from hwspec.model.parts import load_catalogue
    from hwspec.text import visible

    machine, fatal = _read(args)
    sys.stderr.write(report.render(machine.problems, "text"))
    if fatal:
        sys.stderr.write("hwspec: nothing written: the inputs cannot be used\n")
        return EXIT_UNREADABLE
    try:
        catalogue = load_catalogue([content.builtin_dir("parts"), *args.parts])
    except HwspecError as exc:
        sys.stderr.write(report.render(exc.diagnostics, "text"))
        return EXIT_UNREADABLE
    name = args.name or (args.output.stem if args.output else "imported")
    text, draft = draft_document(machine, catalogue, name)
    for note in draft.notes:
        sys.stderr.write(f"hwspec: note: {visible(note)}\n")
    file = str(args.output) if args.output else "<draft>"
    problems = check_draft(text, file, args.parts, command_sandbox(args))
    if args.output:
        from hwspec.generate.writer import write_atomic

        try:
            write_atomic(args.output, text)
        except OSError as exc:
            sys.stderr.write(cannot_write(args.output, exc))
            return EXIT_UNREADABLE
    else:
        sys.stdout.write(text)
    sys.stderr.write(report.render(problems, "text"))
    errors = sum(d.severity.label == "error" for d in problems)
    devices = draft.contents()
    where = f" to {visible(args.output)}" if args.output else ""
    sys.stderr.write(f"hwspec: draft written{where} from {devices}: "
                     + ("validates with no error; check its 'assumed:' notes\n" if not errors else
                        f"{errors} error(s) to fix before it validates\n"))
    return EXIT_FINDINGS if errors else EXIT_OK


def run_diff(args: argparse.Namespace) -> int:
    """`hwspec diff`. It loads the spec (a spec that does not load cannot be compared: exit 2) and
    runs no rules: whether the spec is a good platform is `validate`'s to say, once, in CI; on
    every node every few minutes it would be wasted. `--rules` directories are still loaded, so
    that a broken one is reported as by every command."""
    from hwspec import pipeline
    from hwspec.diagnostics import HwspecError, report
    from hwspec.live.diff import diff
    from hwspec.model.node import Platform

    if args.inputs and not (args.live or args.sysfs_root is not None):
        from hwspec.cli.acceptance import results_among, run_results_diff

        results = results_among(args.inputs)
        if results is None:
            sys.stderr.write("hwspec: give either benchmark results (nccl-tests, rccl-tests, nvbandwidth) or a node's "
                             "topology inputs, not both\n")
            return write_diff_report(args, [], EXIT_UNREADABLE)
        if results:
            return run_results_diff(args)
    try:
        if args.rules:
            from hwspec.rules.engine import load_rules

            load_rules(pipeline.rule_directories(args.rules))
        platform, _ = pipeline.load_any(args.spec, args.parts)
    except HwspecError as exc:
        sys.stderr.write(report.render(exc.diagnostics, "text"))
        return write_diff_report(args, exc.diagnostics, EXIT_UNREADABLE)
    if not isinstance(platform, Platform):
        sys.stderr.write(f"hwspec: {visible(args.spec)} is a {platform.kind} file: diff compares one node with its node platform file\n")
        return write_diff_report(args, [], EXIT_UNREADABLE)
    machine, fatal = _read(args)
    if fatal:
        write_diff_report(args, machine.problems, EXIT_UNREADABLE, platform)
        sys.stderr.write("hwspec: the inputs cannot be used: nothing compared\n")
        return EXIT_UNREADABLE
    findings = diff(platform, machine)
    status = EXIT_FINDINGS if findings else EXIT_OK
    write_diff_report(args, [*findings, *machine.problems], status, platform, machine)
    if args.format == "text":
        verdict = "the machine matches its spec" if not findings else f"{len(findings)} difference(s)"
        sys.stderr.write(f"hwspec: {visible(args.spec)} against {', '.join(map(visible, args.inputs))}: {verdict}\n")
    return status
