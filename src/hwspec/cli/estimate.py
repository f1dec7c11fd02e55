"""`hwspec estimate PLATFORM WORKLOAD` and `hwspec compare A B [WORKLOAD]`.

Exit status as for the other commands: 0 done, 1 error findings (a platform with errors, a
workload that does not validate or does not fit), 2 unreadable input or bad usage.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwspec.text import visible

if TYPE_CHECKING:
    from hwspec.cli.common import Command, SubParsers
    from hwspec.model.workload import Workload
    from hwspec.perf.platform_figures import Figures
    from hwspec.topology import ClusterTopology, Topology

EXIT_OK, EXIT_FINDINGS, EXIT_UNREADABLE = 0, 1, 2
PLACEMENTS = ("gpu", "cpu-host")
PLACEMENT_HELP = ("where the embedding tables live and are looked up, instead of the workload's embeddings.placement: "
                  "gpu (HBM, spilling to host DDR and SSD) or cpu-host (the CPU sockets' DDR, Zion's design)")


def _platform(path: Path, args: argparse.Namespace) -> tuple[Topology | ClusterTopology | None, int]:
    """The checked platform's topology, or None and the exit status (after printing why)."""
    from hwspec import pipeline
    from hwspec.cli.common import command_policy, command_sandbox
    from hwspec.cli.common import load_command_rules as _rules
    from hwspec.diagnostics import report

    rules = _rules(args)
    if rules is None:
        return None, EXIT_UNREADABLE
    checked = pipeline.check(path, rules, args.parts, args.platform_roots, sandbox=command_sandbox(args),
                             policy=command_policy(args))
    sys.stderr.write(report.render(checked.diagnostics, "text"))
    if checked.unreadable:
        return None, EXIT_UNREADABLE
    if checked.platform is not None and checked.topology is None:  # a workload or parts file
        sys.stderr.write(f"hwspec: {visible(path)} is a {checked.platform.kind} file; give the platform (node or cluster) file here\n")
        return None, EXIT_UNREADABLE
    if checked.failed():
        sys.stderr.write(f"hwspec: {visible(path)} has errors: fix them first ('hwspec validate {visible(path)}')\n")
        return None, EXIT_FINDINGS
    return checked.topology, EXIT_OK


def _workload(path: Path) -> tuple[Workload | None, int]:
    from hwspec.diagnostics import HwspecError, report
    from hwspec.model.workload import load_workload
    from hwspec.pipeline import READ_ERROR_CODES

    try:
        return load_workload(path), EXIT_OK
    except HwspecError as exc:
        sys.stderr.write(report.render(exc.diagnostics, "text"))
        unreadable = any(d.code in READ_ERROR_CODES for d in exc.diagnostics)
        return None, EXIT_UNREADABLE if unreadable else EXIT_FINDINGS


def placed(workload: Workload, placement: str | None) -> Workload:
    """`workload` with its embeddings placed as `--placement` says (None: as the file says)."""
    import dataclasses

    return workload if placement is None else dataclasses.replace(workload, placement=placement)


def _figures(topology: Topology | ClusterTopology) -> tuple[Figures | None, int]:
    """The platform's figures, or None and the exit status after reporting unknown ones (E403)."""
    from hwspec.diagnostics import HwspecError, report
    from hwspec.perf.platform_figures import figures

    try:
        return figures(topology), EXIT_OK
    except HwspecError as exc:
        sys.stderr.write(report.render(exc.diagnostics, "text"))
        return None, EXIT_FINDINGS


def _estimate(figures: Figures, workload: Workload) -> tuple[dict[str, Any] | None, int]:
    from hwspec.diagnostics import HwspecError, report
    from hwspec.perf.estimate import estimate

    try:
        return estimate(figures, workload), EXIT_OK
    except HwspecError as exc:
        sys.stderr.write(report.render(exc.diagnostics, "text"))
        return None, EXIT_FINDINGS


def _plot(estimates: list[dict[str, Any]], path: Path | None) -> int:
    if path is None:
        return EXIT_OK
    from hwspec.cli.common import cannot_write
    from hwspec.perf.plot import PlotUnavailable, render

    try:
        render(estimates, path)
    except PlotUnavailable as exc:
        sys.stderr.write(f"hwspec: {exc}\n")
        return EXIT_UNREADABLE
    except OSError as exc:
        sys.stderr.write(cannot_write(path, exc))
        return EXIT_UNREADABLE
    except ValueError as exc:
        sys.stderr.write(f"hwspec: error: {exc}\n")
        return EXIT_UNREADABLE
    sys.stderr.write(f"hwspec: plot written to {path}\n")
    return EXIT_OK


def _check_plot_path(path: Path | None) -> bool:
    from hwspec.perf.plot import FORMATS

    if path is not None and path.suffix.lower() not in FORMATS:
        sys.stderr.write(f"hwspec: --plot {visible(path)}: the file must end in .svg or .png\n")
        return False
    return True


def _dump(document: dict[str, Any]) -> str:
    import json

    return json.dumps(document, sort_keys=True, indent=2, allow_nan=False) + "\n"


def node_counts(text: str) -> list[int]:
    """`--nodes`: counts and ranges, comma-separated ("1,2,4,8,16", "1-4,8"), distinct and ascending.
    Raises argparse.ArgumentTypeError (a usage error, exit 2) for anything else."""
    from hwspec.model.resolve_cluster import MAX_CLUSTER_NODES
    from hwspec.perf.scaling import MAX_NODE_COUNTS

    counts: set[int] = set()
    for item in text.split(","):
        match = re.fullmatch(r"([0-9]{1,9})(?:-([0-9]{1,9}))?", item.strip())
        if match is None:
            raise argparse.ArgumentTypeError(f"'{visible(text)}': give node counts and ranges, e.g. 1,2,4,8,16 or 1-4")
        first, last = int(match[1]), int(match[2] or match[1])
        if not 1 <= first <= last <= MAX_CLUSTER_NODES:
            raise argparse.ArgumentTypeError(f"'{visible(item.strip())}': node counts run from 1 to {MAX_CLUSTER_NODES}, "
                                             "a range low-high")
        if last - first + len(counts) >= MAX_NODE_COUNTS:
            raise argparse.ArgumentTypeError(f"'{visible(text)}': at most {MAX_NODE_COUNTS} node counts at once")
        counts.update(range(first, last + 1))
    return sorted(counts)


def _scaling(topology: Topology | ClusterTopology, args: argparse.Namespace) -> int:
    """`hwspec estimate CLUSTER WORKLOAD --nodes ...`: the scaling table."""
    from hwspec.diagnostics import HwspecError, report
    from hwspec.perf import scaling
    from hwspec.topology import ClusterTopology

    if not isinstance(topology, ClusterTopology):
        sys.stderr.write(f"hwspec: --nodes re-sizes a cluster, but {visible(args.platform)} is a node platform: give a cluster "
                         "file of these nodes (see platforms/zionex-16.yaml), or leave out --nodes\n")
        return EXIT_UNREADABLE
    workload, status = _workload(args.workload)
    if workload is None:
        return status
    try:
        document, problems = scaling.scaling(topology.platform, placed(workload, args.placement), args.nodes)
    except HwspecError as exc:
        sys.stderr.write(report.render(exc.diagnostics, "text"))
        return EXIT_FINDINGS
    sys.stderr.write(report.render(problems, "text"))
    sys.stdout.write(_dump(document) if args.format == "json" else scaling.text_report(document))
    return EXIT_FINDINGS if problems else EXIT_OK


def cmd_estimate(args: argparse.Namespace) -> int:
    """Per-iteration time bounds of WORKLOAD on PLATFORM, term by term; with --nodes, the
    scaling table of a cluster re-sized to each count."""
    from hwspec.perf.estimate import text_report

    if not _check_plot_path(args.plot):
        return EXIT_UNREADABLE
    if args.nodes is not None and args.plot is not None:
        sys.stderr.write("hwspec: --plot draws one estimate; leave it out with --nodes\n")
        return EXIT_UNREADABLE
    topology, status = _platform(args.platform, args)
    if topology is None:
        return status
    if args.nodes is not None:
        return _scaling(topology, args)
    workload, status = _workload(args.workload)
    if workload is None:
        return status
    found, status = _figures(topology)
    if found is None:
        return status
    document, status = _estimate(found, placed(workload, args.placement))
    if document is None:
        return status
    sys.stdout.write(_dump(document) if args.format == "json" else text_report(document))
    return _plot([document], args.plot)


def cmd_compare(args: argparse.Namespace) -> int:
    """Two platforms side by side; with a workload, both estimates and the speedup."""
    from hwspec.perf import compare

    if not _check_plot_path(args.plot):
        return EXIT_UNREADABLE
    if args.plot is not None and args.workload is None:
        sys.stderr.write("hwspec: --plot needs a WORKLOAD to estimate\n")
        return EXIT_UNREADABLE
    found, platforms = [], []
    for path in (args.a, args.b):
        topology, status = _platform(path, args)
        if topology is None:
            return status
        platform_figures, status = _figures(topology)
        if platform_figures is None:
            return status
        found.append(platform_figures)
        platforms.append(topology.platform)
    a, b = found
    estimates: list[dict[str, Any]] = []
    scaled: list[dict[str, Any]] = []
    if args.workload is not None:
        from hwspec.model.cluster import Cluster
        from hwspec.perf.scaling import against_one_node

        workload, status = _workload(args.workload)
        if workload is None:
            return status
        for f, platform, placement in zip(found, platforms, (args.placement_a, args.placement_b)):
            side = placed(workload, placement)
            document, status = _estimate(f, side)
            if document is None:
                return status
            estimates.append(document)
            if isinstance(platform, Cluster):
                scaled.append(against_one_node(platform, side, document))
    document = compare.comparison(a, b, *estimates)
    if len(scaled) == 2:
        document["scaling"] = dict(zip(("a", "b"), scaled))
    sys.stdout.write(_dump(document) if args.format == "json" else compare.text_report(document))
    return _plot(estimates, args.plot) if estimates else EXIT_OK


def add_parsers(sub: SubParsers, add_common: Callable[[argparse.ArgumentParser], None]) -> dict[str, Command]:
    """Add the `estimate` and `compare` subcommands; returns their COMMANDS entries."""
    commands: dict[str, Command] = {
        "estimate": (cmd_estimate, "estimate a workload's per-iteration time and QPS bounds on a platform, term by term"),
        "compare": (cmd_compare, "two platforms side by side (and, with a workload, what the change buys it)"),
    }
    est = sub.add_parser("estimate", help=commands["estimate"][1])
    est.add_argument("platform", type=Path, metavar="PLATFORM", help="a node or cluster platform file")
    est.add_argument("workload", type=Path, metavar="WORKLOAD", help="a workload file (kind: workload)")
    est.add_argument("--format", choices=("text", "json"), default="text")
    est.add_argument("--plot", type=Path, metavar="FILE", help="also draw a stacked-bar chart to FILE (.svg or .png; needs matplotlib)")
    est.add_argument("--nodes", type=node_counts, metavar="COUNTS",
                     help="estimate the cluster re-sized to each node count (1,2,4,8,16 or 1-16) at the workload's per-GPU "
                          "batch, and print the scaling efficiency")
    est.add_argument("--placement", choices=PLACEMENTS, help=PLACEMENT_HELP)
    add_common(est)
    cmp_ = sub.add_parser("compare", help=commands["compare"][1])
    cmp_.add_argument("a", type=Path, metavar="A", help="the platform compared from (node or cluster file)")
    cmp_.add_argument("b", type=Path, metavar="B", help="the platform compared to")
    cmp_.add_argument("workload", type=Path, nargs="?", metavar="WORKLOAD", help="a workload file to estimate on both")
    cmp_.add_argument("--format", choices=("text", "json"), default="text")
    cmp_.add_argument("--plot", type=Path, metavar="FILE", help="draw both estimates to FILE (.svg or .png; needs a WORKLOAD)")
    cmp_.add_argument("--placement-a", choices=PLACEMENTS, help=PLACEMENT_HELP + " on A")
    cmp_.add_argument("--placement-b", choices=PLACEMENTS, help=PLACEMENT_HELP + " on B")
    add_common(cmp_)
    return commands
