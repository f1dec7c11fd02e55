"""`hwspec fleet-report REPORT...`: the node reports of a fleet merged into one.

A node report counts only from its node's own file (`NODE.json`), or from a file given with
`--collected`; see `hwspec.live.fleet`.

Exit status: 0 every node read is clean and every acceptance run within its band, 1 a node
drifted or could not be checked, a report could not be read (E601/E602), a node report was in
another node's file (E604), two reports of a node or a run disagree (E605), an acceptance report
is not clean or a run was slow (A101, A105), or, with `--cluster`, the nodes' NVLink cliques
disagree with the cluster's NVLink domains (D114), 2 no report could be read at all, none was
given, or the cluster file gives neither NVLink domains nor leaves.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hwspec.cli.common import Command, SubParsers
    from hwspec.live.cliques import DomainPlan
    from hwspec.live.culprits import LeafPlan

EXIT_NO_DOMAINS = EXIT_USAGE = 2
"""`--cluster` names a file that gives neither NVLink domains nor leaves (unreadable, not a cluster, none declared);
no report given."""
FORMATS = ("text", "json", "markdown")
"""`hwspec.live.fleet.FORMATS`, written here so that building the parser imports none of it."""
HELP = ("merge node reports ('hwspec diff --format json') into one fleet report: nodes per platform, findings by device, "
        "acceptance runs and what is slow in every run it joins")


def add_parser(sub: SubParsers) -> dict[str, Command]:
    """Add the `fleet-report` subcommand; returns its COMMANDS entry."""
    parser = sub.add_parser("fleet-report", help=HELP)
    parser.add_argument("reports", nargs="*", type=Path, metavar="REPORT",
                        help="each node's report file, named for it (NODE.json, as srun --output=reports/%%N.json and the "
                             "DaemonSet write them: a node report counts only from its own node's file), directories of "
                             "them, or quoted glob patterns ('reports/*.json'); acceptance reports count from any file")
    parser.add_argument("--collected", action="append", default=[], type=Path, metavar="FILE",
                        help="a file of several nodes' reports you collected and vouch for (kubectl logs of the "
                             "DaemonSet's pods): each report in it speaks for the node it names (repeatable)")
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument("--cluster", type=Path, metavar="CLUSTER",
                        help="the cluster file: the nodes of each of its NVLink domains ('nvlink_domain:') must report "
                             "one clique of their own (the node report's 'fabric'); its nodes without a report are listed; "
                             "acceptance runs are also tallied by its leaf groups")
    return {"fleet-report": (cmd_fleet_report, HELP)}


def cluster_plans(path: Path) -> tuple[DomainPlan | None, LeafPlan | None] | None:
    """The NVLink domains (`hwspec.live.cliques.DomainPlan`) and leaf groups
    (`hwspec.live.culprits.LeafPlan`) of the cluster file at `path`, either None where the
    cluster has none; None after saying on stderr why there are neither (unreadable, not a
    cluster, no `nvlink_domain:` and no backend fabric). Loads the model: only `--cluster` calls it."""
    from hwspec import pipeline
    from hwspec.diagnostics import HwspecError, display_path, report
    from hwspec.live.cliques import DomainPlan, short
    from hwspec.live.culprits import LeafPlan
    from hwspec.model.cluster import Cluster
    from hwspec.text import visible
    from hwspec.topology import topology_of

    try:
        cluster, _ = pipeline.load_any(path)
    except HwspecError as exc:
        sys.stderr.write(report.render(exc.diagnostics, "text"))
        return None
    if not isinstance(cluster, Cluster):
        sys.stderr.write(f"hwspec: {visible(str(path))} is not a cluster file: no NVLink domains to compare the nodes' cliques with\n")
        return None
    hosts = cluster.hostnames
    domains, groups = cluster.nvlink_domains, topology_of(cluster).leaf_groups
    if domains is None and not groups:
        sys.stderr.write(f"hwspec: {visible(str(path))} declares no nvlink_domain and no backend fabric: no NVLink domains "
                         "or leaves to compare the reports with\n")
        return None
    plan = None
    if domains is not None:
        members = tuple(tuple(short(hosts[n]) for n in domains.nodes(d)) for d in range(domains.count))
        at = cluster.source_map.locate_key(None, "nvlink_domain")  # the key's line, not its block's first field
        plan = DomainPlan(display_path(path), at, domains.names, members)
    leaves = LeafPlan(display_path(path), tuple(name for name, _ in groups),
                      tuple(tuple(short(hosts[n]) for n in nodes) for _, nodes in groups),
                      plan.members if plan is not None else ()) if groups else None
    return plan, leaves


def cmd_fleet_report(args: argparse.Namespace) -> int:
    from hwspec.live.fleet import Fleet, render

    if not args.reports and not args.collected:
        sys.stderr.write("hwspec fleet-report: error: give at least one REPORT or --collected FILE\n")
        return EXIT_USAGE
    domains = leaves = None
    if args.cluster is not None:
        plans = cluster_plans(args.cluster)
        if plans is None:
            return EXIT_NO_DOMAINS
        domains, leaves = plans
    fleet = Fleet(domains, leaves)
    fleet.add_paths(args.reports)
    fleet.add_collected(args.collected)
    sys.stderr.write("".join(d.format() + "\n" for d in fleet.problems))
    if fleet.problems_dropped:
        sys.stderr.write(f"hwspec: {fleet.problems_dropped} more problem(s) with reports not listed\n")
    if not fleet.reports_read and not fleet.acceptance.read:
        sys.stderr.write("hwspec: no node report could be read\n")
    sys.stdout.write(render(fleet, args.format))
    return fleet.exit_code
