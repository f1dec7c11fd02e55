"""The NVLink cliques of a fleet against the cluster's NVLink domains (`hwspec fleet-report
--cluster`).

The cluster file says which nodes share a multi-node NVLink domain (`nvlink_domain:`, a GB200
NVL72 rack); each node report says which clique its GPUs are in (`fabric`: the fabric
manager's cluster UUID and clique id). They agree when every domain's nodes are in one clique
and no clique holds nodes of two domains; each disagreement is a D114 finding at the cluster
file's `nvlink_domain` line, naming the domain and the hostlists of the nodes per clique.

Plain data in, plain data out: `DomainPlan` is built from the cluster by the command line,
so that this module (and fleet-report without `--cluster`) never loads the model. Time and
memory are linear in the nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hwspec.diagnostics import Code, Diagnostic, Location, Severity
from hwspec.hostlist import compress

Clique = tuple[str, int | None]
"""(cluster UUID, clique id) as a node report's `fabric` gives them."""


@dataclass(frozen=True)
class DomainPlan:
    """The cluster's NVLink domains: `names[d]` holds the nodes `members[d]` (host names, short
    form), declared at `at` (the cluster file's `nvlink_domain` key)."""

    file: str
    at: Location
    names: tuple[str, ...]
    members: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class CliqueCheck:
    """What the comparison found: `findings` (D114, in domain order, then the shared cliques),
    the cluster's nodes without a report (`missing`, in cluster order) and the reported nodes
    the cluster does not list (`unknown`, in reading order)."""

    findings: tuple[Diagnostic, ...]
    missing: tuple[str, ...]
    unknown: tuple[str, ...]
    cliques: tuple[dict[str, Any], ...]
    """Each finding's nodes per clique, for the JSON report: {"domain", "cliques": [...]}."""


def short(host: str) -> str:
    """A host name's short form (`hostname -s`): reports name nodes so, clusters may not."""
    return host.split(".", 1)[0]


def describe(clique: Clique | None) -> str:
    if clique is None:
        return "no NVLink domain"
    uuid, clique_id = clique
    return f"NVLink domain {uuid}" + (f", clique {clique_id}" if clique_id is not None else "")


def _groups(nodes: Mapping[Clique | None, list[str]]) -> list[tuple[Clique | None, list[str]]]:
    """Most nodes first, then by clique (no domain last): the same reports give the same text."""
    return sorted(nodes.items(), key=lambda item: (-len(item[1]), item[0] is None, str(item[0])))


def _listing(groups: list[tuple[Clique | None, list[str]]]) -> str:
    return "; ".join(f"{describe(clique)}: {compress(nodes)}" for clique, nodes in groups)


def compare(plan: DomainPlan, fabrics: Mapping[str, Clique | None], reported: Sequence[str]) -> CliqueCheck:
    """Compare the cliques `fabrics` (node -> its report's clique; checked nodes only) with
    `plan`. `reported` is every node with a report (unchecked ones too), in reading order.
    A domain is split when its nodes are in two cliques or more, nodes in no NVLink domain
    counting as one when others are in one (a domain none of whose nodes shows one is left
    to the nodes' own D113); a clique is shared when nodes of two domains are in it."""
    domain_of = {short(host): d for d, hosts in enumerate(plan.members) for host in hosts}
    per_domain: list[dict[Clique | None, list[str]]] = [{} for _ in plan.names]
    per_clique: dict[Clique, dict[int, list[str]]] = {}
    for node, clique in fabrics.items():
        d = domain_of.get(short(node))
        if d is None:
            continue
        per_domain[d].setdefault(clique, []).append(node)
        if clique is not None:
            per_clique.setdefault(clique, {}).setdefault(d, []).append(node)
    findings, details = [], []

    def finding(message: str, domain: str | None, groups: list[tuple[Clique | None, list[str]]]) -> None:
        findings.append(Diagnostic(plan.at.file, plan.at.line, plan.at.col, Severity.ERROR, Code.NVLINK_DOMAIN_CLIQUE, message,
                                   name=Code.NVLINK_DOMAIN_CLIQUE.printed_name))
        details.append({"domain": domain, "cliques": [
            {"cluster_uuid": clique[0] if clique else None, "clique_id": clique[1] if clique else None,
             "nodes": len(nodes), "hostlist": compress(nodes)} for clique, nodes in groups]})

    for name, cliques in zip(plan.names, per_domain):
        if len(cliques) > 1:
            groups = _groups(cliques)
            finding(f"{name}: its nodes are in {len(groups)} NVLink cliques ({_listing(groups)}), but the cluster puts "
                    "them in one NVLink domain: one clique expected", name, groups)
    for clique, domains in sorted(per_clique.items(), key=lambda item: str(item[0])):
        if len(domains) > 1:
            named = "; ".join(f"{plan.names[d]}: {compress(nodes)}" for d, nodes in sorted(domains.items()))
            finding(f"{describe(clique)} holds nodes of {len(domains)} NVLink domains of the cluster ({named}): "
                    "one clique per domain expected", None, [(clique, [n for d in sorted(domains) for n in domains[d]])])
    seen = {short(node) for node in reported}
    missing = tuple(host for hosts in plan.members for host in hosts if short(host) not in seen)
    unknown = tuple(node for node in reported if short(node) not in domain_of)
    return CliqueCheck(tuple(findings), missing, unknown, tuple(details))
