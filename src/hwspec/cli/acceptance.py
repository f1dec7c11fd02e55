"""`hwspec expect`: what nccl-tests, rccl-tests and nvbandwidth should show on a platform; and
the side of `hwspec diff` that reads their saved outputs back (`run_results_diff`).

Exit status of `expect`: 0, or 2 when the platform cannot be loaded or the span asked for does
not fit it. Of `diff` with results: 0 every judged size within its band, 1 drift (A101, A103),
2 unreadable results or nothing judged (could not check).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hwspec.text import visible

if TYPE_CHECKING:
    from hwspec.acceptance.compare import Compared, Outcome
    from hwspec.acceptance.expected import Expected, Run
    from hwspec.cli.common import Command, SubParsers
    from hwspec.diagnostics import Code, Diagnostic
    from hwspec.topology import ClusterTopology, Topology

EXIT_OK, EXIT_FINDINGS, EXIT_UNREADABLE = 0, 1, 2

HELP = "print what nccl-tests, rccl-tests and nvbandwidth should show on a platform, size by size"


def positive(text: str) -> int:
    """argparse type: a whole number from 1 to 1,000,000."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {visible(text)!r}") from None
    if not 1 <= value <= 1_000_000:
        raise argparse.ArgumentTypeError(f"expected a number from 1 to 1000000, got {value}")
    return value


def add_span_arguments(parser: argparse.ArgumentParser, results: bool = False) -> None:
    """`--nodes` and `--gpus-per-node`: the span figures are for (`expect`), or what a run spans
    where its output does not say (`diff` of `results`)."""
    where = " where its output lists no ranks" if results else ""
    parser.add_argument("--nodes", type=positive, metavar="N",
                        help=f"the run spans N nodes{where} (of a node platform: N of them on a non-blocking fabric of its "
                             "backend NICs; of a cluster: its first N, unless the output names its hosts)")
    parser.add_argument("--gpus-per-node", type=positive, metavar="G", dest="gpus_per_node",
                        help=f"ranks per node{where} (default: every GPU of the node)")


def add_diff_arguments(parser: argparse.ArgumentParser) -> None:
    """What `diff` takes for benchmark results: the span and collective where an output does not
    say them, and `--plot`."""
    from hwspec.acceptance.names import COLLECTIVES

    add_span_arguments(parser, results=True)
    parser.add_argument("--test", choices=COLLECTIVES, dest="collective", metavar="COLLECTIVE",
                        help="the collective a run is where its output does not say (no '# Collective test starting' "
                             f"line or command line): one of {', '.join(COLLECTIVES)}")
    parser.add_argument("--plot", type=Path, metavar="FILE",
                        help="draw each run's busbw over message size against its expected band to FILE (.svg or .png; "
                             "needs matplotlib)")


def add_parser(sub: SubParsers) -> dict[str, Command]:
    """Add the `expect` subcommand; returns its COMMANDS entry."""
    from hwspec.acceptance.names import COLLECTIVES, COPY_TESTS

    parser = sub.add_parser("expect", help=HELP)
    parser.add_argument("platform", type=Path, metavar="PLATFORM", help="a node or cluster platform file")
    add_span_arguments(parser)
    parser.add_argument("--test", action="append", choices=(*COLLECTIVES, *COPY_TESTS), default=[],
                        help="only this test (repeatable; default: all)")
    parser.add_argument("--nccl-version", metavar="VERSION", help="the NCCL release the run uses (default: a current one)")
    parser.add_argument("--env", metavar="NAME=VALUE", action="append", default=[],
                        help="NCCL_ALGO=..., NCCL_PROTO=..., NCCL_MNNVL_ENABLE=0 as the run sets them (repeatable)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--parts", metavar="DIR", action="append", default=[], type=Path,
                        help="also load parts from DIR (repeatable; later wins)")
    return {"expect": (cmd_expect, HELP)}


def load_topology(path: Path, parts: list[Path]) -> Topology | ClusterTopology | None:
    """The node or cluster topology of the platform at `path` (no rules run), or None after the
    reasons are written on stderr."""
    from hwspec import pipeline
    from hwspec.diagnostics import HwspecError, report
    from hwspec.model.cluster import Cluster
    from hwspec.model.node import Platform
    from hwspec.topology import topology_of

    try:
        platform, _ = pipeline.load_any(path, parts)
    except HwspecError as exc:
        sys.stderr.write(report.render(exc.diagnostics, "text"))
        return None
    if not isinstance(platform, Platform | Cluster):
        sys.stderr.write(f"hwspec: {visible(str(path))} is a {platform.kind} file; give a node or cluster platform\n")
        return None
    return topology_of(platform)


def _env(pairs: list[str]) -> dict[str, str] | str:
    env: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.startswith(("NCCL_", "RCCL_")):
            return f"--env takes NCCL_NAME=VALUE, got {visible(pair)!r}"
        env[name] = value
    return env


def cmd_expect(args: argparse.Namespace) -> int:
    from hwspec.acceptance import expected as ex
    from hwspec.acceptance.algorithms import COLLECTIVES
    from hwspec.acceptance.spans import cluster_span, node_span
    from hwspec.topology import Topology

    topology = load_topology(args.platform, args.parts)
    given = _env(args.env)
    if isinstance(given, str):
        sys.stderr.write(f"hwspec: {given}\n")
        return EXIT_UNREADABLE
    if topology is None:
        return EXIT_UNREADABLE
    env = {**ex.platform_environment(topology), **given}
    tests = args.test or [*COLLECTIVES, *ex.COPY_TESTS]
    if args.nodes is None and args.gpus_per_node is None:
        scopes = ex.scopes(topology)
    else:
        nodes = args.nodes or 1
        try:
            if isinstance(topology, Topology):
                span = node_span(topology, nodes, args.gpus_per_node)
            elif nodes > topology.platform.node_count:
                raise ValueError(f"{topology.name} has {topology.platform.node_count} nodes, not {nodes}")
            else:
                span = cluster_span(topology, range(nodes), args.gpus_per_node,
                                    mnnvl=env.get("NCCL_MNNVL_ENABLE") != "0")
        except ValueError as exc:
            sys.stderr.write(f"hwspec: {visible(str(exc))}\n")
            return EXIT_UNREADABLE
        scopes = [(f"{nodes} node{'s' if nodes > 1 else ''}", span)]
    runs = [(scope, span, c, ex.collective_figures(span, c, version=args.nccl_version, env=env))
            for scope, span in scopes for c in COLLECTIVES if c in tests and span.ranks > 1]
    copies = [(t, ex.copy_figures(topology, t)) for t in ex.COPY_TESTS if t in tests
              and isinstance(topology, Topology) and args.nodes in (None, 1) and ex.tool_of_platform(topology) == "nccl-tests"]
    if args.format == "json":
        doc = ex.document_of(topology, runs, copies)
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n")
        return EXIT_OK
    sys.stdout.write(text_report(topology, runs, copies))
    return EXIT_OK


def text_report(topology: Topology | ClusterTopology, runs: list[Run], copies: list[tuple[str, list[Expected]]]) -> str:
    """The figures as tables for people: GB/s = 1e9 bytes/s; `*` marks the judged sizes."""
    from hwspec.acceptance.expected import band, size_text
    from hwspec.perf.tables import number, table

    out = [f"{topology.name}: {topology.platform.title}",
           f"source: {visible(topology.file)}; busbw as nccl-tests prints it, GB/s = 1e9 bytes/s; * judged sizes: "
           "below 'low' is drift"]
    bands = {band(span.compute_capability) for _, span, _, _ in runs}
    for width, source in sorted(bands, key=str):
        out.append(f"band: {number(100 * width) + '% below the expected figure' if width is not None else 'none'}: {source}")

    def gb(value: float | None) -> str:
        return "-" if value is None else number(value / 1e9)

    for scope, span, collective, figures in runs:
        last = figures[-1] if figures else None
        limit = last.limit if last is not None else None
        out += ["", f"{collective} ({figures[0].tool if figures else ''}), {scope}: {span.nodes} node(s) x {span.gpus_per_node} GPU(s)"
                + (f"; limit at 16 GiB: {limit.tier}, {limit.what} ({limit.where.file}:{limit.where.line})" if limit else "")]
        if last is not None and last.busbw is None:
            out.append(f"  {last.note}")
            continue
        out += table(["size", "expected", "low", "high", "algorithm", "limit", ""],
                     [[size_text(f.bytes or 0), gb(f.busbw), gb(f.low), gb(f.high), f"{f.algorithm}/{f.protocol}",
                       f.limit.tier if f.limit else "-", "*" if f.judged else ""] for f in figures], align="lrrrlll")
    for test, figures in copies:
        out += ["", f"{test} (nvbandwidth), GB/s per copy"]
        out += table(["from", "to", "expected", "low", "high", "limit"],
                     [[f.pair[0] if f.pair else "", f.pair[1] if f.pair else "", gb(f.busbw), gb(f.low), gb(f.high),
                       f.limit.what if f.limit else f.note] for f in figures], align="llrrrl")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ hwspec diff PLATFORM RESULT...


def results_among(paths: list[Path]) -> bool | None:
    """Whether `paths` are benchmark results (nccl-tests, rccl-tests, nvbandwidth output, by
    content): True when all are, False when none is, None when some are (a usage error). A path
    that cannot be read counts as a result when another one is (its reader says why)."""
    from hwspec.acceptance.results import sniff

    kinds: list[bool | None] = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                head = handle.read(1 << 16)
        except OSError:
            kinds.append(None)
            continue
        kinds.append(sniff(head) is not None)
    known = {k for k in kinds if k is not None}
    if known == {True}:
        return True
    if known == {False} or not known:
        return False
    return None


def run_results_diff(args: argparse.Namespace) -> int:
    """`hwspec diff PLATFORM RESULT...`: the results read, compared with the platform's figures,
    reported in `args.format` (the json node report gains `acceptance`, one record per size)."""
    from hwspec.acceptance.compare import Outcome, check
    from hwspec.acceptance.results import read_result
    from hwspec.diagnostics import report

    topology = load_topology(args.spec, args.parts)
    if topology is None:
        return _report(args, None, Outcome(), [], EXIT_UNREADABLE)
    runs, problems = [], []
    for path in args.inputs:
        read = read_result(Path(path))
        runs.extend(read.runs)
        problems.extend(read.problems)
    if any(d.severity.label == "error" for d in problems) and not runs:
        sys.stderr.write(report.render(problems, "text"))
        return _report(args, topology, Outcome(), problems, EXIT_UNREADABLE)
    outcome = check(topology, runs, args.nodes, args.gpus_per_node, args.collective)
    status = outcome.status
    if any(d.severity.label == "error" for d in problems) and status == EXIT_OK:
        status = EXIT_UNREADABLE  # part of an input could not be read: never clean
    if args.plot is not None:
        from hwspec.acceptance.plot import render
        from hwspec.cli.common import cannot_write
        from hwspec.perf.plot import PlotUnavailable

        try:
            render(outcome, args.plot)
        except OSError as exc:
            sys.stderr.write(cannot_write(args.plot, exc))
            return EXIT_UNREADABLE
        except (PlotUnavailable, ValueError) as exc:
            sys.stderr.write(f"hwspec: --plot: {visible(str(exc))}\n")
            return EXIT_UNREADABLE
        sys.stderr.write(f"hwspec: plot written to {visible(str(args.plot))}\n")
    return _report(args, topology, outcome, problems, status)


def acceptance_codes() -> list[Code]:
    """The codes `diff` of results may report (SARIF describes them all)."""
    from hwspec.diagnostics import Code

    return [Code.BELOW_BAND, Code.ABOVE_BOUND, Code.WRONG_RESULTS, Code.RUN_UNCHECKED,
            Code.INPUT_UNREADABLE, Code.INPUT_SYNTAX, Code.INPUT_VALUE]


def _report(args: argparse.Namespace, topology: Topology | ClusterTopology | None, outcome: Outcome, problems: list[Diagnostic],
            status: int) -> int:
    """Write the report of a results check in `args.format` and return `status`. json and
    prometheus always write one (`unchecked` included), naming the node and the spec; json adds
    `acceptance`, one record per size compared."""
    from hwspec.acceptance.compare import EXIT_DRIFT, EXIT_UNCHECKED
    from hwspec.diagnostics import report
    from hwspec.live.health import node_name, with_devices
    from hwspec.topology import Topology

    diagnostics = [*outcome.diagnostics, *problems]
    node_platform = topology.platform if isinstance(topology, Topology) else None
    if args.format in ("json", "prometheus"):
        findings = with_devices(diagnostics, node_platform)
        if args.format == "json":
            doc = report.node_report(findings, node_name(args.node), str(args.spec),
                                     topology.name if topology is not None else None, status)
            doc["acceptance"] = [c.record() for c in outcome.compared]
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        else:
            sys.stdout.write(report.prometheus(findings, node_name(args.node), str(args.spec), status))
    elif topology is not None:
        sys.stdout.write(report.render(diagnostics, args.format, codes=acceptance_codes()))
    if args.format == "text" and topology is not None:
        sys.stdout.write(results_table(outcome))
        judged = sum(c.figure.judged for c in outcome.compared)
        verdict = {EXIT_OK: "every judged size within its band", EXIT_DRIFT: "below the band (drift)",
                   EXIT_UNCHECKED: "could not check"}[status]
        sys.stderr.write(f"hwspec: {visible(str(args.spec))} against {len(args.inputs)} result file(s): "
                         f"{len(outcome.compared)} size(s) compared, {judged} judged: {verdict}\n")
    return status


def results_table(outcome: Outcome) -> str:
    """The sizes compared, a table per run as nccl-tests prints its own: GB/s; `*` judged."""
    from hwspec.acceptance.expected import size_text
    from hwspec.perf.tables import number, table

    def gb(value: float | None) -> str:
        return "-" if value is None else number(value / 1e9)

    out: list[str] = []
    runs: dict[tuple[str, str, int], list[Compared]] = {}
    for c in outcome.compared:
        runs.setdefault((c.where.file, c.test, c.where.line if c.bytes is None else 0), []).append(c)
    for (file, test, _), rows in runs.items():
        first = rows[0]
        out += ["", f"{visible(file)}: {test}, {first.nodes} node(s) x {first.gpus_per_node}"]
        if first.bytes is None:
            out += table(["from", "to", "measured", "expected", "low", "verdict"],
                         [[*(c.pair or ("", "")), gb(c.measured), gb(c.figure.busbw), gb(c.figure.low), c.verdict] for c in rows],
                         align="llrrrl")
        else:
            out += table(["size", "measured", "expected", "low", "high", "algorithm", "verdict"],
                         [[size_text(c.bytes or 0), gb(c.measured), gb(c.figure.busbw), gb(c.figure.low), gb(c.figure.high),
                           f"{c.figure.algorithm}/{c.figure.protocol}" if c.figure.algorithm else "-", c.verdict] for c in rows],
                         align="lrrrrll")
    return "\n".join(out).lstrip("\n") + ("\n" if out else "")
