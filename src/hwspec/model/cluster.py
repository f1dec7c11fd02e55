"""The resolved cluster: node groups, the derived backend fabric, the frontend network.

Everything per node is arithmetic on the node index, so a 16,384-node cluster costs no more
than its hostnames. Bandwidths are bytes/s per direction. Built by `hwspec.model.resolve_cluster`;
derived facts that need the node topologies live in `hwspec.topology.cluster`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from hwspec.diagnostics import Location
from hwspec.model.node import Assumption, Platform, RuleSetting, SourceMap, build_topology

if TYPE_CHECKING:
    from hwspec.topology.cluster import ClusterTopology


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """`count` nodes of one node platform; `first_node` is the cluster index of the first."""

    platform: Platform
    count: int
    first_node: int
    hostnames: tuple[str, ...] = field(repr=False)
    addresses: tuple[str, ...] | None = field(repr=False)

    @property
    def topology(self):
        """The node platform's `Topology`."""
        return self.platform.topology

    @property
    def gpus_per_node(self) -> int:
        return len(self.platform.gpus)

    @property
    def nodes(self) -> range:
        return range(self.first_node, self.first_node + self.count)


@dataclass(frozen=True, slots=True)
class Leaf:
    """A leaf switch. It serves cluster nodes `nodes` on NIC index `rail` (rail-optimized) or
    on all backend NICs (`rail` None)."""

    id: str
    rail: int | None
    nodes: range
    ports: int
    down_ports: int
    uplinks: int


@dataclass(frozen=True, slots=True)
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
    sharp: bool = False
    """The switches reduce in the network (InfiniBand SHARP; NCCL's CollNet), as the platform states."""

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


@dataclass(frozen=True, slots=True)
class NvlinkDomains:
    """NVLink domains spanning several nodes: consecutive nodes in cluster order, `size`
    nodes each (the last one smaller if the node count is not a multiple; rule HW811 reports
    that). `names[d]` is domain d's name. Each domain has `switch_trays` NVLink switch trays
    of `switch_ports` ports. `clique_id` is 'nvml' or 'rack-serial' (see `NvlinkDomainSpec`)."""

    size: int
    names: tuple[str, ...]
    node_count: int
    switch_trays: int
    switch_ports: int
    clique_id: str

    @property
    def count(self) -> int:
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
    source_map: SourceMap = field(repr=False, compare=False)
    kind: str = "cluster"
    environment: dict[str, str] = field(default_factory=dict)
    """Extra cluster-wide settings as written (`environment:`)."""
    nvlink_domains: NvlinkDomains | None = None
    """NVLink domains beyond a node, or None when each node is its own NVLink domain."""

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

    @cached_property
    def hostnames(self) -> tuple[str, ...]:
        """Every node's hostname, in node order."""
        return tuple(h for g in self.groups for h in g.hostnames)

    def locate(self, entity: str | None = None, *fields: str | int) -> Location:
        """Where a top-level key (`entity`) and optionally its fields are written."""
        return self.source_map.locate(entity, *fields)

    @cached_property
    def topology(self) -> ClusterTopology:
        """The cluster's resolved topology (`hwspec.topology.cluster.ClusterTopology`), built once
        by the topology layer (`hwspec.model.node.register_topology`)."""
        return build_topology(self)
