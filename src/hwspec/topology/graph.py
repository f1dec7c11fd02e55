"""The topology graph: one node per device, one edge per link, built from a resolved platform.

A view for drawing and for site rules that want networkx: built on demand by
`Topology.graph`. Derived facts (paths, islands, NUMA placement) are `hwspec.topology.node`
queries, not graph walks. Node attributes:
`kind` (socket | root-port | switch | gpu | nic | ssd | nvswitch), `numa` (NUMA node or None)
and `item` (the model object; for an NVSwitch its `NvSwitch`, or None when the file lists none). Edge attributes: `kind` (pcie | nvlink |
cpu), `bandwidth` (bytes/s per direction), and `link` (the physical `PcieLink`) or `links` (NVLink count).
PCIe edges also carry `parent`, the upstream end. A GPU's NVLinks to its CPU (POWER8/POWER9) are an
`nvlink` edge between the GPU and the socket; where the GPU hangs right off the socket (one simple
graph edge for both), its PCIe edge carries them as `nvlinks` and `nvlink_bandwidth`.
"""

from __future__ import annotations

import networkx as nx

from hwspec.model.node import Platform

NVSWITCH = "nvswitch"


def build_graph(platform: Platform) -> nx.Graph[str]:
    """Build the topology graph of `platform` (deterministic node and edge order)."""
    graph: nx.Graph[str] = nx.Graph(name=platform.name)
    for socket in platform.sockets:
        graph.add_node(socket.id, kind="socket", numa=socket.numa_node, item=socket)
    for bridge in platform.bridges:
        graph.add_node(bridge.id, kind=bridge.kind, numa=_numa(platform, bridge.socket), item=bridge)
    for kind, items in (("gpu", platform.gpus), ("nic", platform.nics), ("ssd", platform.ssds)):
        for item in items:
            graph.add_node(item.id, kind=kind, numa=item.numa_node, item=item)
    for device in platform.pcie_items:
        graph.add_edge(device.upstream, device.id, kind="pcie", parent=device.upstream, link=device.physical,
                       bandwidth=device.physical.bandwidth if device.physical is not None else None)
    for a, b in platform.cpu_links:
        graph.add_edge(a, b, kind="cpu", bandwidth=platform.cpu_link_bandwidth)
    switches = {s.id: s for s in platform.baseboard.nvswitches} if platform.baseboard else {}
    for connection in platform.nvlinks:
        if connection.b not in platform.gpu_by_id and connection.b not in graph:
            graph.add_node(connection.b, kind="nvswitch", numa=None, item=switches.get(connection.b))
        graph.add_edge(connection.a, connection.b, kind="nvlink", links=connection.links,
                       bandwidth=connection.bandwidth)
    for link in platform.cpu_nvlinks:
        if graph.has_edge(link.gpu, link.socket):  # a GPU right under its socket: one edge, its PCIe, says both
            graph.edges[link.gpu, link.socket].update(nvlinks=link.links, nvlink_bandwidth=link.bandwidth)
        else:
            graph.add_edge(link.gpu, link.socket, kind="nvlink", links=link.links, bandwidth=link.bandwidth)
    return graph


def _numa(platform: Platform, socket: str | None) -> int | None:
    return platform.socket_by_id[socket].numa_node if socket in platform.socket_by_id else None


def subgraph(graph: nx.Graph[str], kind: str) -> nx.Graph[str]:
    """The edges of one kind (pcie, nvlink, cpu) with their end nodes."""
    return graph.edge_subgraph([(a, b) for a, b, data in graph.edges(data=True) if data.get("kind") == kind])


def pcie_tree(graph: nx.Graph[str]) -> nx.DiGraph[str]:
    """PCIe links as a directed graph, parent -> child, over every node of `graph`.

    Built from each node's `upstream`, not from the undirected edges: two bridges naming each
    other share one undirected edge, and the cycle (which rule HW101 reports) must survive."""
    tree: nx.DiGraph[str] = nx.DiGraph()
    tree.add_nodes_from(graph.nodes(data=True))
    for node, data in graph.nodes(data=True):
        item = data.get("item")
        parent = getattr(item, "upstream", None)
        if item is not None and parent is not None:
            tree.add_edge(parent, node, kind="pcie", parent=parent, link=item.physical, bandwidth=item.physical.bandwidth)
    return tree
