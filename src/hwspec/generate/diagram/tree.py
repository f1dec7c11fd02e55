"""The PCIe tree of a diagram (`tree_items`): a cluster per socket and per PCIe switch, a GPU boxed
with the NICs that serve it alone, repeated subtrees drawn once when summarising."""

from __future__ import annotations

from typing import Any

from hwspec.generate.diagram.devices import details, device_line
from hwspec.generate.diagram.dot import Cluster, attrs, label, quote
from hwspec.generate.diagram.repeats import depth, repeated_groups, repeated_sockets, repeats_node, repeats_table, subtree
from hwspec.model.node import Platform
from hwspec.topology import topology_of


def _side_by_side(members: list[str], nth: int) -> list[str]:
    """Lines that put a GPU and its own NICs (`members`, GPU first) in one row, the NICs on the
    left of the first GPU under a parent and on the right of the second (`nth` counts from 0), so two GPUs sit
    side by side and an NVLink between them crosses no NIC."""
    row = [*members[1:], members[0]] if nth % 2 == 0 else members
    return [f"{{ rank=\"same\"; {'; '.join(quote(m) for m in row)}; }}",
            *(f'{quote(a)} -- {quote(b)} [style="invis"];' for a, b in zip(row, row[1:]))]


def tree_items(platform: Platform, summarise: bool) -> tuple[list[Any], set[str], list[str]]:
    """Top-level items (clusters and node lines), the set of ids placed, and layout-only edges.
    With `summarise`, a socket's repeated subtrees (`repeated_groups`) are drawn once, the
    repeats listed in a table below the one drawn."""
    placed: set[str] = set()
    listed: set[str] = set()
    layout_edges: list[str] = []
    topology = topology_of(platform)
    children = topology.children
    # a GPU is drawn together with the NICs that serve it alone (a NIC shared by GPUs stands apart)
    own_nics = {g.id: [n for n in topology.nics_of(g.id) if topology.gpus_of(n) == (g.id,)] for g in platform.gpus}

    def below(parent: str) -> list[Any]:
        """Items for the devices directly below `parent`, recursing into bridges."""
        items: list[Any] = []
        kids = [k for k in children.get(parent, ()) if k not in placed]
        beside = {k: [n for n in own_nics[k] if n in kids] for k in kids if own_nics.get(k)}
        paired_nics = {n for nics in beside.values() for n in nics}
        pairs_like: dict[tuple[Any, ...], list[list[str]]] = {}  # a GPU and its own NICs, by their details
        drawn_pairs = 0
        for kid in kids:
            if kid in placed or kid in paired_nics:
                continue
            placed.add(kid)
            bridge = platform.bridge_by_id.get(kid)
            kind = bridge.kind if bridge else None
            if kind == "switch":
                cluster = Cluster(quote(f"cluster_{kid}"), attrs({"label": "", "style": "rounded,dashed", "color": "#999999"}))
                cluster.items = [device_line(platform, kid), *below(kid)]
                items.append(cluster)
            elif kind == "root-port":
                items += [device_line(platform, kid), *below(kid)]
            elif beside.get(kid):
                members = [kid, *beside[kid]]
                placed.update(members)
                look = tuple(details(platform, m) for m in members)
                if summarise and look in pairs_like:  # drawn once under this parent: a row of its table
                    pairs_like[look].append(members)
                    listed.update(members)
                    continue
                pairs_like[look] = [members]
                pair = Cluster(quote(f"cluster_pair_{kid}"), attrs({"label": "", "style": "rounded,dotted", "color": "#d79b00"}))
                pair.items = [device_line(platform, m) for m in members] + _side_by_side(members, drawn_pairs)
                drawn_pairs += 1
                items.append(pair)
            else:
                items.append(device_line(platform, kid))
        for first, *repeats in pairs_like.values():
            if repeats:
                items.append(repeats_table(platform, first, repeats))
                layout_edges.append(f'{quote(first[0])} -- {quote(repeats_node(first[0]))} [style="invis"];')
        return items

    top: list[Any] = []
    like_sockets = repeated_sockets(platform) if summarise else {}
    for repeats in like_sockets.values():
        for root in repeats:
            listed.update(subtree(platform, root))
    for socket in platform.sockets:
        if socket.id in listed:
            continue
        placed.add(socket.id)
        cluster = Cluster(quote(f"cluster_{socket.id}"),
                          attrs({"style": "rounded,filled", "fillcolor": "#f7fbff", "color": "#6c8ebf"},
                                label=label(f"socket {socket.id}, NUMA node {socket.numa_node}")))
        cluster.items = [device_line(platform, socket.id)]
        groups = repeated_groups(platform, socket.id) if summarise else {}
        if socket.id in like_sockets:
            groups = {socket.id: like_sockets[socket.id], **groups}
        for repeats in groups.values():
            for root in repeats:
                listed.update(subtree(platform, root))  # in the table, not drawn
        placed |= listed
        cluster.items += below(socket.id)
        for first, repeats in groups.items():
            cluster.items.append(repeats_table(platform, subtree(platform, first),
                                                [subtree(platform, root) for root in repeats]))
            layout_edges.append(f"{quote(first)} -- {quote(repeats_node(first))} "
                                f'[style="invis", minlen="{depth(platform, first) + 1}"];')  # below tables of pairs
        top.append(cluster)
    # Devices whose PCIe tree leads to no socket (rule HW101 reports them): drawn outside.
    for item in platform.pcie_items:
        if item.id not in placed and item.upstream not in platform.by_id:
            placed.add(item.id)
            top.append(device_line(platform, item.id))
            top += below(item.id)
    for item in platform.pcie_items:  # cycles
        if item.id not in placed:
            placed.add(item.id)
            top.append(device_line(platform, item.id))
    return top, placed - listed, layout_edges
