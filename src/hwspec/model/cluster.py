"""The resolved cluster: node groups, the derived backend fabric, the frontend network.

Everything per node is arithmetic on the node index, so a 16,384-node cluster costs no more
than its hostnames. Bandwidths are bytes/s per direction. Built by `hwspec.model.resolve_cluster`;
derived facts that need the node topologies live in `hwspec.topology.cluster`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from hwspec.diagnostics import Location
from hwspec.model.node import Assumption, Platform, RuleSetting, SourceMap, topology_moved


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """`count` nodes of one node platform; `first_node` is the cluster index of the first."""

    platform: Platform
    """The node platform."""
    count: int
    """Nodes in the group."""
    first_node: int
    """Cluster index of the group's first node."""
    hostnames: tuple[str, ...] = field(repr=False)
    """The group's hostnames, in node order."""
    addresses: tuple[str, ...] | None = field(repr=False)
    """Their addresses, where the cluster file gives them."""

    @property
    def gpus_per_node(self) -> int:
        """GPUs of the node platform."""
        return len(self.platform.gpus)

    @property
    def nodes(self) -> range:
        """Cluster node indices of the group."""
        return range(self.first_node, self.first_node + self.count)


@dataclass(frozen=True, slots=True)
class Leaf:
    """A leaf switch. It serves cluster nodes `nodes` on NIC index `rail` (rail-optimized) or
    on all backend NICs (`rail` None)."""

    id: str
    """The switch's name (`rail0-leaf0`)."""
    rail: int | None
    """NIC index it serves (rail-optimized), or None for all backend NICs."""
    nodes: range
    """Cluster node indices it serves."""
    ports: int
    """Ports of the switch."""
    down_ports: int
    """Ports used towards nodes."""
    uplinks: int
    """Ports used towards the spines."""


@dataclass(frozen=True, slots=True)
class Fabric:
    """The derived backend wiring. Bandwidths are bytes/s per direction."""

    topology: str
    """`single-switch`, `rail-optimized` or `clos`, as the cluster file says."""
    transport: str
    """The backend transport (`ib`, `rocev2`, ...)."""
    nic_speed: float
    """Bytes/s per direction per backend NIC."""
    nics_per_node: int
    """Backend NICs per node."""
    leaves: tuple[Leaf, ...]
    """Every leaf switch."""
    spine_count: int
    """Spine switches (0: no spine tier)."""
    spine_ports: int
    """Ports per spine switch."""
    uplink_speed: float
    """Bytes/s per direction per leaf uplink."""
    declared_oversubscription: float | None
    """The oversubscription the file declares, or None."""
    declared_min_bisection: float | None
    """The minimum bisection bandwidth the file declares, bytes/s per direction, or None."""
    sharp: bool = False
    """The switches reduce in the network (InfiniBand SHARP; NCCL's CollNet), as the platform states."""

    @property
    def spine_ports_used(self) -> int:
        """Spine ports the leaves' uplinks take."""
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
        """Bytes/s per direction all nodes can inject (every leaf downlink at `nic_speed`)."""
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


@dataclass(frozen=True, slots=True)
class NvlinkDomains:
    """NVLink domains spanning several nodes: consecutive nodes in cluster order, `size`
    nodes each (the last one smaller if the node count is not a multiple; rule HW811 reports
    that). `names[d]` is domain d's name. Each domain has `switch_trays` NVLink switch trays
    of `switch_ports` ports. `clique_id` is 'nvml' or 'rack-serial' (see `NvlinkDomainSpec`)."""

    size: int
    """Nodes per domain."""
    names: tuple[str, ...]
    """Each domain's name, by domain index."""
    node_count: int
    """Nodes of the cluster."""
    switch_trays: int
    """NVLink switch trays per domain."""
    switch_ports: int
    """Ports per switch tray."""
    clique_id: str
    """`nvml` or `rack-serial`: how a node learns its domain."""

    @property
    def count(self) -> int:
        """Number of domains."""
        return len(self.names)

    def domain_of(self, node: int) -> int:
        """The index of the domain holding cluster node `node`."""
        return node // self.size

    def nodes(self, domain: int) -> range:
        """Cluster node indices of domain `domain`."""
        return range(domain * self.size, min(self.node_count, (domain + 1) * self.size))

    @property
    def switch_port_budget(self) -> int:
        """NVLink switch ports one domain has."""
        return self.switch_trays * self.switch_ports


@dataclass(frozen=True, slots=True)
class Frontend:
    """The frontend (ingestion) network: `speed` per node in bytes/s per direction, and the
    share of it ingestion may use (None when not declared)."""

    speed: float
    """Bytes/s per direction per node."""
    ingestion_share: float | None
    """Share (0-1) of it ingestion may use, or None."""


@dataclass(frozen=True)
class Cluster:
    """A resolved cluster. Node indices run 0..node_count-1 in group order; its derived facts
    are its topology's, `hwspec.topology.topology_of(cluster)`."""

    topology = property(topology_moved)
    """Gone: `hwspec.topology_of(cluster)`. Kept only to say so (an AttributeError naming it)."""

    name: str
    """The cluster's name: its output directory under generated/."""
    title: str
    """A human title."""
    file: str
    """The cluster file's path."""
    groups: tuple[NodeGroup, ...]
    """Node groups, in file order."""
    fabric: Fabric | None
    """The backend fabric, or None."""
    frontend: Frontend | None
    """The frontend network, or None."""
    rendezvous_port: int
    """torchrun's rendezvous port."""
    rendezvous_backend: str
    """torchrun's rendezvous backend: `c10d` or `static`."""
    declared_world_size: int | None
    """The world size the file declares, or None."""
    sources: dict[str, str]
    """The file's `sources:`."""
    rule_settings: dict[str, RuleSetting]
    """Rule id -> the cluster's change to it."""
    assumptions: tuple[Assumption, ...]
    """Every value marked `assumed:`."""
    source_map: SourceMap = field(repr=False, compare=False)
    """Where each entry is written (see `locate`)."""
    kind: str = "cluster"
    """`cluster`."""
    environment: dict[str, str] = field(default_factory=dict)
    """Extra cluster-wide settings as written (`environment:`)."""
    nvlink_domains: NvlinkDomains | None = None
    """NVLink domains beyond a node, or None when each node is its own NVLink domain."""

    @property
    def node_count(self) -> int:
        """Nodes of the cluster."""
        return sum(g.count for g in self.groups)

    @property
    def world_size(self) -> int:
        """GPUs of the cluster: torchrun's world size."""
        return sum(g.count * g.gpus_per_node for g in self.groups)

    @cached_property
    def node_platforms(self) -> tuple[Platform, ...]:
        """Distinct node platforms, in first-use order."""
        seen: dict[str, Platform] = {}
        for group in self.groups:
            seen.setdefault(group.platform.file, group.platform)
        return tuple(seen.values())

    @cached_property
    def hostnames(self) -> tuple[str, ...]:
        """Every node's hostname, in node order."""
        return tuple(h for g in self.groups for h in g.hostnames)

    def locate(self, entity: str | None = None, *fields: str | int) -> Location:
        """Where a top-level key (`entity`) and optionally its fields are written."""
        return self.source_map.locate(entity, *fields)
