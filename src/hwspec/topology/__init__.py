"""Every derived connectivity fact, computed once and queried (node, cluster), the networkx
views and Slurm hostlists.

The topology is built on the model, so the model does not import this layer: importing it
(any of its modules) registers how `Platform.topology` and `Cluster.topology` are built
(`hwspec.model.node.register_topology`). `topology_of(model)` is the same topology, for code
that wants the dependency in its imports."""

from __future__ import annotations

from typing import Any

from hwspec.model.node import register_topology


def topology_of(model: Any) -> Any:
    """The resolved topology of a resolved model, built once per model: the `Topology` of a node
    `Platform` (`hwspec.topology.node`), the `ClusterTopology` of a `Cluster`
    (`hwspec.topology.cluster`). The same object as `model.topology`."""
    return model.topology


def _build(model: Any) -> Any:
    """A new topology of `model`, by its kind ("node" or "cluster")."""
    if model.kind == "cluster":
        from hwspec.topology.cluster import ClusterTopology

        return ClusterTopology(model)
    from hwspec.topology.node import Topology

    return Topology(model)


register_topology(_build)
