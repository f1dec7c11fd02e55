"""The resolved topology of a cluster: the model plus the derived facts rules and generators read.

`ClusterTopology(cluster)` holds the `Cluster` model, each distinct node platform's
`Topology`, and cluster-wide figures computed once from them (per-GPU scale-out bandwidth).
The switch-level networkx graph is built only when something asks for `graph` (drawings,
site rules); no hwspec rule or generator needs it, so validating a 65,536-node cluster never
builds it.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING

from hwspec.model.cluster import Cluster
from hwspec.model.node import Platform
from hwspec.topology.hostlist import HostIndex
from hwspec.topology.node import ResolvedView, Topology, held, node_topology

if TYPE_CHECKING:
    import networkx as nx


class ClusterTopology(ResolvedView[Cluster]):
    """The resolved cluster: `platform` (the `Cluster` model) and its derived queries."""

    kind = "cluster"
    platform: Cluster
    """The cluster's resolved model (`hwspec.model.cluster.Cluster`): its node `groups`, each
    with its node `platform`, its `fabric` and `nvlink_domains`."""

    # -------------------------------------------------------------- node platforms

    @property
    def node_topologies(self) -> tuple[Topology, ...]:
        """The topology of each distinct node platform, in first-use order."""
        return tuple(node_topology(p) for p in self.platform.node_platforms)

    def per_gpu_scale_out(self, platform: Platform) -> float:
        """The smallest per-GPU scale-out share of a node platform (`Topology.scale_out_share`),
        bytes/s per direction; 0 without GPUs."""
        topology = node_topology(platform)
        return min((topology.scale_out_share(g.id) for g in platform.gpus), default=0.0)

    # -------------------------------------------------------------- hostnames

    @cached_property
    def _host_index(self) -> HostIndex:
        return HostIndex(self.platform.hostnames)

    def hostlist(self, nodes: range | None = None) -> str:
        """The Slurm hostlist expression (`hwspec.topology.hostlist.compress`) of the hostnames of cluster
        nodes `nodes` (consecutive node indices; all nodes when None)."""
        return self._host_index.compress(range(self.platform.node_count) if nodes is None else nodes)

    def hosts_in_order(self, nodes: range) -> str | None:
        """`hostlist(nodes)` when it expands to the nodes' hostnames in node order, else None
        (`hwspec.topology.hostlist.compress_in_order`)."""
        return self._host_index.compress_in_order(nodes)

    def spans_in_order(self, spans: Sequence[range]) -> str | None:
        """The hostlist of the hostnames of `spans` (ranges of node indices) one after the other,
        when it expands to them in that order, else None (`HostIndex.compress_spans_in_order`)."""
        return self._host_index.compress_spans_in_order(spans)

    # -------------------------------------------------------------- the fabric and NVLink domains

    @cached_property
    def leaf_groups(self) -> tuple[tuple[str, range], ...]:
        """The nodes sharing the fabric's lowest switch level, in node order: each leaf of a
        Clos or single-switch fabric, or each pod of a rail-optimized one (the nodes whose NIC
        i is on leaf k of rail i, named `pod<k>`, as in slurm/topology.conf). Empty without a
        backend fabric."""
        fabric = self.platform.fabric
        if fabric is None:
            return ()
        if fabric.topology == "rail-optimized":
            pods: dict[range, str] = {}
            for leaf in fabric.leaves:
                pods.setdefault(leaf.nodes, f"pod{len(pods)}")
            return tuple((name, nodes) for nodes, name in pods.items())
        return tuple((leaf.id, leaf.nodes) for leaf in fabric.leaves)

    @cached_property
    def _leaf_group_stops(self) -> list[int]:
        return [nodes.stop for _, nodes in self.leaf_groups]

    def leaf_group_of(self, node: int) -> int:
        """Index into `leaf_groups` of the group holding cluster node `node` (leaf groups hold
        consecutive node ranges)."""
        return bisect.bisect_right(self._leaf_group_stops, node)

    @cached_property
    def domains_split_by_leaves(self) -> tuple[int, ...]:
        """Indices of the NVLink domains whose nodes are under more than one leaf group (so
        domains do not nest in leaves); empty without domains or fabric."""
        domains = self.platform.nvlink_domains
        if domains is None or not self.leaf_groups:
            return ()
        return tuple(d for d in range(domains.count)
                     if self.leaf_group_of(domains.nodes(d).start) != self.leaf_group_of(domains.nodes(d).stop - 1))

    @property
    def domain_gpus(self) -> int:
        """GPUs in a full NVLink domain (nodes per domain x GPUs per node, the smallest node
        platform's); without domains, the GPUs of one node."""
        cluster = self.platform
        gpus = min((g.gpus_per_node for g in cluster.groups), default=0)
        return gpus * (cluster.nvlink_domains.size if cluster.nvlink_domains else 1)

    @cached_property
    def domain_gpu_bandwidth(self) -> float:
        """Per-GPU NVLink bandwidth into the domain's switches, bytes/s per direction: the
        GPU part's links x per-link bandwidth, the smallest over the cluster's GPUs (an unknown
        part's counts nothing: its node's `unknown_figures` say so)."""
        return min((g.fabric_links * (g.fabric_link_bandwidth or 0.0) for p in self.platform.node_platforms for g in p.gpus),
                   default=0.0)

    @cached_property
    def graph(self) -> nx.Graph[str]:
        """The switch-level graph (`build_cluster_graph`), built on first use only."""
        return build_cluster_graph(self.platform)


def cluster_topology(cluster: Cluster) -> ClusterTopology:
    """The cluster's `ClusterTopology`, built once per cluster (`hwspec.topology.topology_of`)."""
    return held(cluster, ClusterTopology)


def build_cluster_graph(cluster: Cluster) -> nx.Graph[str]:
    """Switch-level graph: one node per leaf and spine (kind leaf|spine) and one per node
    group (kind group); edges carry `links` (port count) and `bandwidth` (bytes/s per
    direction). Hosts are not nodes of their own: per-node facts are arithmetic."""
    import networkx as nx

    graph: nx.Graph[str] = nx.Graph(name=cluster.name)
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
    for leaf in fabric.leaves if fabric.spine_count else ():  # uplinks without `spine:` lead nowhere (HW808)
        for k in range(leaf.uplinks):
            spine_id = f"spine{(position + k) % fabric.spine_count}"
            data = graph.get_edge_data(leaf.id, spine_id)
            links = (data["links"] if data else 0) + 1
            graph.add_edge(leaf.id, spine_id, kind="network", links=links, bandwidth=links * fabric.uplink_speed)
        position += leaf.uplinks
    return graph
