"""Clusters: N nodes of node platforms, a backend fabric and a frontend network.

A cluster file names its node platforms by path; each node platform is loaded (and later
validated) once, however many nodes use it. The backend fabric's wiring is derived, not
listed: a leaf tier (one leaf per rail per pod when rail-optimized) and, when there is more
than one leaf, a spine tier. Everything per node is arithmetic on the node index, so a
16,384-node cluster costs no more than its hostnames.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import networkx as nx
from pydantic import ValidationError

from hwspec.diagnostics import Diagnostic, HwspecError, Position, Severity
from hwspec.errors import DataPath, dotted, validation_diagnostics
from hwspec.expand import Expanded, compile_pattern
from hwspec.model import Assumption, Location, Platform, RuleSetting
from hwspec.source import SourceDoc
from hwspec.spec import ClusterSpec


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


@dataclass(frozen=True)
class NodeGroup:
    """`count` nodes of one node platform; `first_node` is the cluster index of the first."""

    platform: Platform
    graph: nx.Graph = field(repr=False, compare=False)
    count: int
    first_node: int
    hostnames: tuple[str, ...] = field(repr=False)
    addresses: tuple[str, ...] | None = field(repr=False)

    @property
    def gpus_per_node(self) -> int:
        return len(self.platform.gpus)

    @property
    def nodes(self) -> range:
        return range(self.first_node, self.first_node + self.count)


@dataclass(frozen=True)
class Leaf:
    """A leaf switch. It serves cluster nodes `nodes` on NIC index `rail` (rail-optimized) or
    on all backend NICs (`rail` None)."""

    id: str
    rail: int | None
    nodes: range
    ports: int
    down_ports: int
    uplinks: int


@dataclass(frozen=True)
class Fabric:
    """The derived backend wiring. Bandwidths are bytes/s per direction."""

    topology: str
    transport: str
    nic_speed: float
    nics_per_node: int
    leaves: tuple[Leaf, ...]
    spine_count: int
    spine_ports: int
    uplink_speed: float
    declared_oversubscription: float | None
    declared_min_bisection: float | None

    @property
    def spine_ports_used(self) -> int:
        return sum(leaf.uplinks for leaf in self.leaves)

    @property
    def design_oversubscription(self) -> float | None:
        """Leaf downlink capacity over uplink capacity (None without a spine tier)."""
        if not self.spine_count:
            return None
        leaf = max(self.leaves, key=lambda l: l.ports - l.uplinks)
        return (leaf.ports - leaf.uplinks) * self.nic_speed / (leaf.uplinks * self.uplink_speed) if leaf.uplinks else math.inf

    @property
    def injection_total(self) -> float:
        return sum(leaf.down_ports for leaf in self.leaves) * self.nic_speed

    @property
    def bisection(self) -> float:
        """Per-direction bandwidth across a balanced cut of the nodes.

        Every leaf is non-blocking. With a spine tier, traffic between the halves crosses the
        uplinks of half the leaves; without one (a single switch, or rails with one leaf each),
        each leaf carries its half of the cut itself."""
        half_injection = self.injection_total / 2
        if not self.spine_count:
            return half_injection
        uplink_capacity = sum(leaf.uplinks for leaf in self.leaves) * self.uplink_speed / 2
        return min(half_injection, uplink_capacity)


@dataclass(frozen=True)
class Frontend:
    speed: float
    ingestion_share: float | None


@dataclass(frozen=True)
class Cluster:
    """A resolved cluster. Node indices run 0..node_count-1 in group order."""

    name: str
    title: str
    file: str
    groups: tuple[NodeGroup, ...]
    fabric: Fabric | None
    frontend: Frontend | None
    rendezvous_port: int
    rendezvous_backend: str
    declared_world_size: int | None
    sources: dict
    rule_settings: dict[str, RuleSetting]
    assumptions: tuple[Assumption, ...]
    _doc: SourceDoc = field(repr=False, compare=False)
    _expanded: Expanded = field(repr=False, compare=False)
    kind: str = "cluster"

    @property
    def node_count(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def world_size(self) -> int:
        return sum(g.count * g.gpus_per_node for g in self.groups)

    @cached_property
    def node_platforms(self) -> tuple[Platform, ...]:
        """Distinct node platforms, in first-use order."""
        seen: dict[str, Platform] = {}
        for group in self.groups:
            seen.setdefault(group.platform.file, group.platform)
        return tuple(seen.values())

    @property
    def hostnames(self) -> list[str]:
        return [h for g in self.groups for h in g.hostnames]

    def locate(self, entity: str | None = None, *fields: str | int) -> Location:
        path = ((entity,) if entity is not None else ()) + tuple(fields)
        pos = self._doc.locate(self._expanded.written_path(path))
        return Location(self._doc.file, pos.line, pos.col)


def load_cluster(doc: SourceDoc, expanded: Expanded, cluster_file: Path, load_node) -> Cluster:
    """Validate and resolve a cluster file. `load_node(path)` loads a node platform (cached
    by the caller, so each node platform is loaded once)."""

    def locate(p: DataPath) -> Position:
        return doc.locate(expanded.written_path(p))

    try:
        spec = ClusterSpec.model_validate(expanded.data)
    except ValidationError as exc:
        raise HwspecError(validation_diagnostics(exc, ClusterSpec, expanded.data, doc.file, locate,
                                                 locate_key=lambda p: doc.locate_key(expanded.written_path(p)))) from None
    errors: list[Diagnostic] = []

    def error(p: DataPath, message: str, hint: str | None = None, code: str = "E205") -> None:
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
            platform, graph = load_node(path)
        except HwspecError as exc:
            errors.extend(exc.diagnostics)
            error(here + ("platform",), f"{dotted(here)}: node platform '{_short(group.platform)}' has errors (reported above)", code="E206")
            first += group.count
            continue
        except FileNotFoundError:
            error(here + ("platform",), f"{dotted(here)}: node platform file '{_short(group.platform)}' not found", code="E206")
            first += group.count
            continue
        except PlatformOutsideRoots as exc:
            error(here + ("platform",), f"{dotted(here)}: node platform '{_short(group.platform)}' is outside the cluster "
                  f"file's directory ({exc.root})", "move it below that directory, or allow its directory with "
                  "--platform-root DIR", code="E207")
            first += group.count
            continue
        hostnames = _expand_names(group.hostname, group, first, here + ("hostname",), error)
        addresses = _expand_names(group.address, group, first, here + ("address",), error) if group.address else None
        groups.append(NodeGroup(platform, graph, group.count, first, hostnames or (), addresses))
        first += group.count
    if errors:
        raise HwspecError(errors)

    try:
        fabric = _fabric(spec, groups) if spec.backend else None
    except FabricTooLarge as exc:
        error(exc.path, str(exc), "use switches with more ports, or fewer uplinks")
        raise HwspecError(errors) from None
    frontend = Frontend(spec.frontend.speed, spec.frontend.ingestion_share) if spec.frontend else None

    def location(p: DataPath) -> Location:
        pos = locate(p)
        return Location(doc.file, pos.line, pos.col)

    assumptions = tuple(Assumption(dotted(p), note.assumed, note.source, location(p))
                        for p, note in expanded.provenance.items() if note.assumed)
    return Cluster(
        name=spec.name, title=spec.title or spec.name, file=doc.file, groups=tuple(groups), fabric=fabric,
        frontend=frontend, rendezvous_port=spec.rendezvous.port, rendezvous_backend=spec.rendezvous.backend,
        declared_world_size=spec.world_size, sources=dict(spec.sources),
        rule_settings={k: RuleSetting(v.severity, v.reason, location(("rules", k))) for k, v in spec.rules.items()},
        assumptions=assumptions, _doc=doc, _expanded=expanded)


def _short(text: str, limit: int = 80) -> str:
    """A path from the file as shown in a message: printable, at most `limit` characters."""
    from hwspec.text import visible

    shown = visible(text)
    return shown if len(shown) <= limit else shown[:limit - 3] + "..."


def _expand_names(pattern: str, group, first: int, where: DataPath, error) -> tuple[str, ...] | None:
    if len(pattern) > MAX_PATTERN:
        error(where, f"{dotted(where)}: the pattern is {len(pattern)} characters long, more than {MAX_PATTERN}")
        return None
    try:
        render = compile_pattern(pattern, ("n", "i"))
        names = []
        for k in range(group.count):
            name = render({"n": first + k, "i": group.first + k})
            if len(name) > MAX_NAME:
                error(where, f"{dotted(where)}: node {first + k} would be named '{name[:MAX_NAME]}...' "
                      f"({len(name)} characters), longer than {MAX_NAME}",
                      "a host name is one DNS label (at most 63 characters); use a shorter pattern")
                return None
            names.append(name)
        return tuple(names)
    except ValueError as exc:
        error(where, f"{dotted(where)}: {exc}", "patterns may use n (node index in the cluster) and i (index in the group)")
        return None


def _fabric(spec: ClusterSpec, groups: list[NodeGroup]) -> Fabric:
    backend = spec.backend
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
                  declared_min_bisection=backend.min_bisection)


def build_cluster_graph(cluster: Cluster) -> nx.Graph:
    """Switch-level graph: one node per leaf and spine (kind leaf|spine) and one per node
    group (kind group); edges carry `links` (port count) and `bandwidth` (bytes/s per
    direction). Hosts are not nodes of their own: per-node facts are arithmetic."""
    graph = nx.Graph(name=cluster.name)
    fabric = cluster.fabric
    for index, group in enumerate(cluster.groups):
        graph.add_node(f"group{index}", kind="group", item=group)
    if fabric is None:
        return graph
    for spine in range(fabric.spine_count):
        graph.add_node(f"spine{spine}", kind="spine")
    stops = [group.nodes.stop for group in cluster.groups]  # groups hold consecutive node ranges
    for leaf in fabric.leaves:
        graph.add_node(leaf.id, kind="leaf", item=leaf)
        for index in range(bisect.bisect_right(stops, leaf.nodes.start), len(cluster.groups)):
            group = cluster.groups[index]
            if group.nodes.start >= leaf.nodes.stop:
                break  # only the groups overlapping the leaf's nodes, not every group per leaf
            shared = len(range(max(leaf.nodes.start, group.nodes.start), min(leaf.nodes.stop, group.nodes.stop)))
            if shared:
                ports = shared * (1 if leaf.rail is not None else fabric.nics_per_node)
                graph.add_edge(f"group{index}", leaf.id, kind="network", links=ports, bandwidth=ports * fabric.nic_speed)
    position = 0
    for leaf in fabric.leaves if fabric.spine_count else ():  # uplinks without `spine:` lead nowhere (HW809)
        for k in range(leaf.uplinks):
            spine = f"spine{(position + k) % fabric.spine_count}"
            data = graph.get_edge_data(leaf.id, spine)
            links = (data["links"] if data else 0) + 1
            graph.add_edge(leaf.id, spine, kind="network", links=links, bandwidth=links * fabric.uplink_speed)
        position += leaf.uplinks
    return graph
