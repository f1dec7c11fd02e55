"""Every derived connectivity fact, computed once and queried (node, cluster), the networkx
views and Slurm hostlists.

The topology is built on the model, so the model does not import this layer and has no
`.topology` of its own: `topology_of(model)` builds a model's topology on first use and
returns the same object for that model from then on."""

from __future__ import annotations

from typing import overload

from hwspec.model.cluster import Cluster
from hwspec.model.node import Platform
from hwspec.topology.cluster import ClusterTopology, cluster_topology
from hwspec.topology.node import Topology, node_topology

__all__ = ["ClusterTopology", "Topology", "topology_of"]


@overload
def topology_of(model: Platform) -> Topology: ...


@overload
def topology_of(model: Cluster) -> ClusterTopology: ...


def topology_of(model: Platform | Cluster) -> Topology | ClusterTopology:
    """The resolved topology of a resolved model: the `Topology` of a node `Platform`, the
    `ClusterTopology` of a `Cluster`. Built on the first call for a model; every later call for
    the same model returns the same object (kept on the model, `hwspec.topology.node.held`),
    so its cached queries are computed once."""
    return cluster_topology(model) if isinstance(model, Cluster) else node_topology(model)
