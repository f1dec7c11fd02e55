"""Cluster resolution: a cluster file's `ClusterSpec` becomes the `Cluster` model.

A cluster file names its node platforms by path; each node platform is loaded (and later
validated) once, however many nodes use it. The backend fabric's wiring is derived, not
listed: a leaf tier (one leaf per rail per pod when rail-optimized) and, when there is more
than one leaf, a spine tier.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Location, Severity
from hwspec.model.cluster import Cluster, Fabric, Frontend, Leaf, NodeGroup, NvlinkDomains
from hwspec.model.node import Assumption, Platform, RuleSetting
from hwspec.source.expand import Expanded, Pattern
from hwspec.source.loader import SourceDoc
from hwspec.source.sourcemap import DocumentSourceMap
from hwspec.spec.translate import DataPath, dotted, validate_document

if TYPE_CHECKING:
    from hwspec.spec.models import BackendNetworkSpec, ClusterSpec, NodeGroupSpec, NvlinkDomainSpec

Error = Callable[..., None]
"""`error(path, message, hint=None, code=E4xx)`: records a located problem of the cluster file."""

MAX_CLUSTER_NODES = 1_000_000
"""Nodes in one cluster (all groups together), the bound each group's `count` already has."""
MAX_PATTERN = 253
"""Characters in a hostname or address pattern: a DNS name is at most 253 (a label 63)."""
MAX_NAME = 63
"""Characters in one rendered host name (a DNS label) or address (an IPv6 address with a zone
fits): each name is checked as it is rendered, so a group's names take at most
count x MAX_NAME characters, bounded before expansion starts."""
MAX_SWITCHES = 262_144
"""Leaf plus spine switches the derived backend fabric may have: a 1M-node, 8-rail fabric of
64-port leaves has 250k. Each is an object and a graph node, so the bound is one on memory."""
MAX_UPLINK_PORTS = 2_097_152
"""Leaf-to-spine ports the derived fabric may wire (16x the 16,384-node benchmark's)."""


class PlatformOutsideRoots(Exception):
    """A cluster's node platform path leads outside the directories it may name (`root` is the
    cluster file's directory)."""

    def __init__(self, root: Path):
        super().__init__(str(root))
        self.root = root


class FabricTooLarge(ValueError):
    """The backend fabric a cluster file asks for is too large to derive; `path` is the key."""

    def __init__(self, message: str, path: DataPath):
        super().__init__(message)
        self.path = path


def load_cluster(doc: SourceDoc, expanded: Expanded, cluster_file: Path, load_node: Callable[[Path], Platform]) -> Cluster:
    """Validate and resolve a cluster file. `load_node(path)` loads a node platform (cached
    by the caller, so each node platform is loaded once)."""

    def locate(p: DataPath) -> Location:
        return doc.locate(expanded.written_path(p))

    from hwspec.spec.models import ClusterSpec  # pydantic, imported when a cluster is validated

    spec: ClusterSpec = validate_document(ClusterSpec, doc, expanded)
    errors: list[Diagnostic] = []

    def error(p: DataPath, message: str, hint: str | None = None, code: Code = Code.CLUSTER_NOT_DERIVABLE) -> None:
        pos = locate(p)
        errors.append(Diagnostic(doc.file, pos.line, pos.col, Severity.ERROR, code, message, hint))

    groups: list[NodeGroup] = []
    first = 0
    for index, group in enumerate(spec.nodes):
        here = ("nodes", index)
        if first + group.count > MAX_CLUSTER_NODES:
            error(here + ("count",), f"{dotted(here)}: the cluster would have more than {MAX_CLUSTER_NODES} nodes",
                  "split it into several clusters")
            break
        path = (cluster_file.parent / group.platform)
        try:
            platform = load_node(path)
        except HwspecError as exc:
            errors.extend(exc.diagnostics)
            error(here + ("platform",), f"{dotted(here)}: node platform '{_short(group.platform)}' has errors (reported above)",
                  code=Code.NODE_PLATFORM_UNUSABLE)
            first += group.count
            continue
        except FileNotFoundError:
            error(here + ("platform",), f"{dotted(here)}: node platform file '{_short(group.platform)}' not found",
                  code=Code.NODE_PLATFORM_UNUSABLE)
            first += group.count
            continue
        except PlatformOutsideRoots as exc:
            error(here + ("platform",), f"{dotted(here)}: node platform '{_short(group.platform)}' is outside the cluster "
                  f"file's directory ({exc.root})", "move it below that directory, or allow its directory with "
                  "--platform-root DIR", code=Code.NODE_PLATFORM_OUTSIDE)
            first += group.count
            continue
        hostnames = _expand_names(group.hostname, group, first, here + ("hostname",), error)
        addresses = _expand_names(group.address, group, first, here + ("address",), error) if group.address else None
        groups.append(NodeGroup(platform, group.count, first, hostnames or (), addresses))
        first += group.count
    if errors:
        raise HwspecError(errors)

    try:
        fabric = _fabric(spec.backend, groups) if spec.backend else None
    except FabricTooLarge as exc:
        error(exc.path, str(exc), "use switches with more ports, or fewer uplinks")
        raise HwspecError(errors) from None
    frontend = Frontend(spec.frontend.speed, spec.frontend.ingestion_share) if spec.frontend else None
    domains = _nvlink_domains(spec.nvlink_domain, first, error) if spec.nvlink_domain else None
    if errors:
        raise HwspecError(errors)

    source_map = DocumentSourceMap(doc, expanded)
    location = source_map.at

    assumptions = tuple(Assumption(dotted(p), note.assumed, note.source, location(p))
                        for p, note in expanded.provenance.items() if note.assumed)
    return Cluster(
        name=spec.name, title=spec.title or spec.name, file=doc.file, groups=tuple(groups), fabric=fabric,
        frontend=frontend, rendezvous_port=spec.rendezvous.port, rendezvous_backend=spec.rendezvous.backend,
        declared_world_size=spec.world_size, sources=dict(spec.sources),
        rule_settings={k: RuleSetting(v.severity, v.reason, location(("rules", k))) for k, v in spec.rules.items()},
        assumptions=assumptions, source_map=source_map, environment=dict(spec.environment),
        nvlink_domains=domains)


DOMAIN_NAME = re.compile(r"[a-z]([-a-z0-9_.]{0,61}[a-z0-9])?")
"""A domain name: valid as a Kubernetes label value and a Slurm block name, and never a number."""


def _nvlink_domains(domain: NvlinkDomainSpec, node_count: int, error: Error) -> NvlinkDomains | None:
    """Domains of `domain.nodes` consecutive nodes (the cluster's `nvlink_domain`), named by the
    `name` pattern (variable d). Names must be unique and safe as Kubernetes label values and Slurm names."""
    where = ("nvlink_domain", "name")
    count = -(-node_count // domain.nodes)
    if len(domain.name) > MAX_PATTERN:
        error(where, f"nvlink_domain.name: the pattern is {len(domain.name)} characters long, more than {MAX_PATTERN}")
        return None
    try:
        names = tuple(Pattern(domain.name, ("d",)).many({"d": range(count)}, count))
    except ValueError as exc:
        error(where, f"nvlink_domain.name: {exc}", "the pattern may use d (the domain index)")
        return None
    for name in names:
        if not DOMAIN_NAME.fullmatch(name):
            error(where, f"nvlink_domain.name: '{name}' is not a domain name: lower-case letters, digits, '-', '_' and '.', "
                         "starting with a letter and ending with a letter or digit, at most 63",
                  "domain names become Kubernetes label values and Slurm block names, e.g. 'rack${d:02}'")
            return None
    seen: set[str] = set()
    duplicate: str | None = None
    for name in names:
        if name in seen:
            duplicate = name
            break
        seen.add(name)
    if duplicate is not None:
        error(where, f"nvlink_domain.name: {count} domains but the pattern gives '{duplicate}' more than once",
              "use d in the pattern, e.g. 'nvl${d}'")
        return None
    return NvlinkDomains(size=domain.nodes, names=names, node_count=node_count, switch_trays=domain.switch_trays,
                         switch_ports=domain.switch_ports, clique_id=domain.clique_id)


def _short(text: str, limit: int = 80) -> str:
    """A path from the file as shown in a message: printable, at most `limit` characters."""
    from hwspec.text import visible

    shown = visible(text)
    return shown if len(shown) <= limit else shown[:limit - 3] + "..."


NAME_CHUNK = 4096
"""Host names rendered at once: a pattern giving over-long names is stopped after one chunk."""


def _expand_names(pattern: str, group: NodeGroupSpec, first: int, where: DataPath, error: Error) -> tuple[str, ...] | None:
    if len(pattern) > MAX_PATTERN:
        error(where, f"{dotted(where)}: the pattern is {len(pattern)} characters long, more than {MAX_PATTERN}")
        return None
    try:
        render = Pattern(pattern, ("n", "i"))
        names: list[str] = []
        for start in range(0, group.count, NAME_CHUNK):  # chunks bound the memory of over-long names
            size = min(NAME_CHUNK, group.count - start)
            chunk = render.many({"n": range(first + start, first + start + size),
                                 "i": range(group.first + start, group.first + start + size)}, size)
            for k, name in enumerate(chunk, start) if max(map(len, chunk), default=0) > MAX_NAME else ():
                if len(name) > MAX_NAME:
                    error(where, f"{dotted(where)}: node {first + k} would be named '{name[:MAX_NAME]}...' "
                          f"({len(name)} characters), longer than {MAX_NAME}",
                          "a host name is one DNS label (at most 63 characters); use a shorter pattern")
                    return None
            names.extend(chunk)
        return tuple(names)
    except ValueError as exc:
        error(where, f"{dotted(where)}: {exc}", "patterns may use n (node index in the cluster) and i (index in the group)")
        return None


def _fabric(backend: BackendNetworkSpec, groups: list[NodeGroup]) -> Fabric:
    nics_per_node = max((len(g.platform.collective_nics) for g in groups), default=0) or 1
    node_count = sum(g.count for g in groups)
    leaf = backend.leaf
    spine = backend.spine
    down = max(leaf.ports - leaf.uplinks, 1)
    leaves: list[Leaf] = []

    def at_most(count: int, what: str, path: DataPath, limit: int = MAX_SWITCHES) -> None:
        if count > limit:
            raise FabricTooLarge(f"backend: the fabric would have {count} {what}, more than {limit}", path)

    if backend.topology == "single-switch":
        leaves.append(Leaf("switch0", None, range(node_count), leaf.ports, node_count * nics_per_node, 0))
    elif backend.topology == "rail-optimized":
        per_leaf = down
        pods = math.ceil(node_count / per_leaf)
        at_most(nics_per_node * pods, "leaf switches", ("backend", "leaf", "ports"))
        for rail in range(nics_per_node):
            for pod in range(pods):
                nodes = range(pod * per_leaf, min(node_count, (pod + 1) * per_leaf))
                leaves.append(Leaf(f"rail{rail}-leaf{pod}", rail, nodes, leaf.ports, len(nodes), leaf.uplinks if pods > 1 else 0))
    else:
        per_leaf = max(down // nics_per_node, 1)
        count = math.ceil(node_count / per_leaf)
        at_most(count, "leaf switches", ("backend", "leaf", "ports"))
        for index in range(count):
            nodes = range(index * per_leaf, min(node_count, (index + 1) * per_leaf))
            leaves.append(Leaf(f"leaf{index}", None, nodes, leaf.ports, len(nodes) * nics_per_node,
                               leaf.uplinks if count > 1 else 0))
    uplinks = sum(l.uplinks for l in leaves)
    at_most(uplinks, "leaf-to-spine ports", ("backend", "leaf", "uplinks"), MAX_UPLINK_PORTS)
    spine_ports = spine.ports if spine else 0
    spine_count = (spine.count or (math.ceil(uplinks / spine.ports) if spine.ports else 0)) if (spine and uplinks) else 0
    at_most(len(leaves) + spine_count, "switches", ("backend", "spine"))
    return Fabric(topology=backend.topology, transport=backend.transport, nic_speed=backend.speed,
                  nics_per_node=nics_per_node, leaves=tuple(leaves), spine_count=spine_count, spine_ports=spine_ports,
                  uplink_speed=leaf.speed or backend.speed, declared_oversubscription=backend.oversubscription,
                  declared_min_bisection=backend.min_bisection, sharp=backend.sharp)


# ---------------------------------------------------------------- re-sizing (scaling estimates)


def resized(cluster: Cluster, nodes: int) -> Cluster:
    """`cluster` with `nodes` nodes instead of the count its file gives, resolved again from the
    file's data by `load_cluster`: host names, addresses, the backend fabric (leaves, spines,
    bisection), NVLink domains and a declared `world_size` all follow the new count. The node
    platform is the one already loaded. Only a cluster of one node group can be re-sized.

    Raises HwspecError (E405, located in the cluster file) for several node groups, a count
    under 1 or over MAX_CLUSTER_NODES, or more nodes than the backend's switches have ports for."""
    source = cluster.source_map
    assert isinstance(source, DocumentSourceMap), "load_cluster gives every cluster its document's source map"
    doc, expanded = source.doc, source.expanded

    def refuse(path: DataPath, message: str, hint: str) -> HwspecError:
        pos = doc.locate(expanded.written_path(path))
        return HwspecError([Diagnostic(doc.file, pos.line, pos.col, Severity.ERROR, Code.CANNOT_SCALE, message, hint)])

    if len(cluster.groups) != 1:
        raise refuse(("nodes",), f"{cluster.name} has {len(cluster.groups)} node groups: '{nodes} nodes' does not say "
                     "how many of each", "scaling re-sizes a cluster of one node group: write a cluster file with one "
                     "group (or one file per size) and give that")
    if not 1 <= nodes <= MAX_CLUSTER_NODES:
        raise refuse(("nodes", 0, "count"), f"{cluster.name} cannot have {nodes} nodes: a cluster has 1 to "
                     f"{MAX_CLUSTER_NODES}", f"give a node count from 1 to {MAX_CLUSTER_NODES}")
    from hwspec.spec.models import ClusterSpec

    spec: ClusterSpec = validate_document(ClusterSpec, doc, expanded)
    group = cluster.groups[0]
    if spec.backend is not None:
        backend = spec.backend

        def shortfall(count: int) -> tuple[DataPath, str] | None:
            try:
                return cabling_shortfall(_fabric(backend, [dataclasses.replace(group, count=count)]))
            except FabricTooLarge as exc:
                return exc.path, str(exc)

        problem = shortfall(nodes)
        if problem is not None:
            most = _largest(lambda count: shortfall(count) is None, nodes - 1)
            where, why = problem
            raise refuse(where, f"{cluster.name} cannot take {nodes} nodes: {why}",
                         f"give at most {most} nodes, or a cluster file whose backend has more ports (more leaves: "
                         "rail-optimized or clos)")
    data = dict(expanded.data)
    data["nodes"] = [dict(expanded.data["nodes"][0], count=nodes)]
    if "world_size" in data:
        data["world_size"] = nodes * group.gpus_per_node
    again = dataclasses.replace(expanded, data=data)
    return load_cluster(doc, again, Path(doc.file), lambda _path: group.platform)


def cabling_shortfall(fabric: Fabric) -> tuple[DataPath, str] | None:
    """Where and why the derived `fabric` cannot be cabled (a switch with more cables than ports,
    rule HW802's condition), or None when it can."""
    overfull = [leaf for leaf in fabric.leaves if leaf.down_ports + leaf.uplinks > leaf.ports]
    if overfull:
        leaf = max(overfull, key=lambda l: l.down_ports + l.uplinks)
        return ("backend", "leaf", "ports"), (f"its backend switch {leaf.id} would carry {leaf.down_ports} NIC ports + "
                                              f"{leaf.uplinks} uplinks on {leaf.ports} ports")
    if fabric.spine_count and fabric.spine_ports_used > fabric.spine_count * fabric.spine_ports:
        return ("backend", "spine"), (f"its spine tier would need {fabric.spine_ports_used} ports, but {fabric.spine_count} "
                                      f"spines x {fabric.spine_ports} ports = {fabric.spine_count * fabric.spine_ports}")
    return None


def _largest(fits: Callable[[int], bool], below: int) -> int:
    """The largest count in 1..`below` that `fits` (monotone: fits up to some count, then not), or 0."""
    low, high = 0, below
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low
