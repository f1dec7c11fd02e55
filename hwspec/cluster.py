"""Clusters, layered like nodes: `cluster_resolve` (file -> model), `cluster_model` (the
resolved `Cluster`), `cluster_topology` (derived facts, the lazily built switch graph).

This module re-exports their public names for existing imports.
"""

from hwspec.cluster_model import Cluster, Fabric, Frontend, Leaf, NodeGroup, NvlinkDomains
from hwspec.cluster_resolve import (MAX_CLUSTER_NODES, MAX_PATTERN, MAX_SWITCHES, MAX_UPLINK_PORTS,
                                    FabricTooLarge, load_cluster)
from hwspec.cluster_topology import ClusterTopology, build_cluster_graph

__all__ = ["Cluster", "ClusterTopology", "Fabric", "FabricTooLarge", "Frontend", "Leaf", "MAX_CLUSTER_NODES",
           "MAX_PATTERN", "MAX_SWITCHES", "MAX_UPLINK_PORTS", "NodeGroup", "NvlinkDomains", "build_cluster_graph", "load_cluster"]
