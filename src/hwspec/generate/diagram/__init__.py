"""`topology.dot`: the node's topology for graphviz.

Sockets are clusters holding their PCIe tree; each PCIe switch is a cluster inside its socket,
and a GPU and the backend NICs that serve it alone, under the same parent, are boxed together as
on the board (a NIC serving several GPUs stands apart under its switch). PCIe
edges (generation, width, GB/s) and CPU interconnect edges are drawn; backend and
ingestion/frontend NICs differ in shape and colour, and a legend says which is which.

The GPU fabric is drawn so that it stays readable (`fabric_style`): a sparse fabric (every GPU
with at most `SPARSE_PEERS` GPU peers, e.g. a ring) as green NVLink edges (`constraint=false`, so
they do not distort the PCIe tree); a dense mesh not as edges at all but as a heat table of links
per GPU pair in its own panel, each GPU's box saying its NVLink total; an NVSwitch as one node
with one unlabelled edge per GPU, its label giving the per-GPU figures.

Everything visible is prepared here as quoted DOT strings; the template only lays it out.
Output is deterministic: platform order (sockets by NUMA node, devices by bus id), no dates.

The jobs, one module each: `dot` (DOT text and tables), `look` (styles and legend), `devices`
(labels and the devices table), `tree` (the PCIe tree), `repeats` (repeated structure drawn
once), `width` (whether the whole drawing fits), `fabric` (GPU fabric, CPU links, edges); this
module puts the views together and registers the generator.
"""

from __future__ import annotations

from typing import Any

from hwspec.generate.diagram.devices import device_line, devices_table
from hwspec.generate.diagram.dot import LEGEND_PREFIX, Cluster, attrs, iter_clusters, label, quote
from hwspec.generate.diagram.fabric import (
    NVSWITCH,
    SWITCH_FABRIC,
    cpu_link_style,
    cpu_link_table,
    edges_between,
    fabric_items,
    fabric_name,
    fabric_style,
    switch_ids,
    switch_nodes,
    table_panel,
)
from hwspec.generate.diagram.look import LEGEND, STYLES, legend_node
from hwspec.generate.diagram.repeats import depth, repeated_sockets, repeats_node
from hwspec.generate.diagram.tree import tree_items
from hwspec.generate.diagram.width import WIDTH_BUDGET_PT, drawing_width, fits_unsummarised
from hwspec.generate.engine import GenContext, generator
from hwspec.model.node import Platform

__all__ = [  # what the generator's users and tests take from here, wherever it is defined
    "FABRIC_VIEW", "LEGEND", "LEGEND_PREFIX", "NVSWITCH", "STYLES", "SWITCH_FABRIC", "WIDTH_BUDGET_PT", "Cluster",
    "cpu_link_style", "device_ids", "devices_table", "drawing_width", "fabric_style", "fabric_view", "iter_clusters",
    "label", "quote", "repeated_sockets", "repeats_node", "topology_dot", "topology_view",
]

FABRIC_VIEW = "topology-fabric.dot"
"""The file of the GPU fabric's own view, written when `topology.dot` lists GPUs in tables."""


def _below(drawn_sockets: list[str], nodes: list[str], ranks: int) -> list[str]:
    """Invisible edges that stack `nodes` (tables) in a column under the drawing: the first
    `ranks` ranks below each drawn socket (past its deepest device), each next one below the
    one before."""
    lines = [f'{quote(socket)} -- {quote(nodes[0])} [style="invis", minlen="{ranks}"];' for socket in drawn_sockets]
    return lines + [f'{quote(a)} -- {quote(b)} [style="invis"];' for a, b in zip(nodes, nodes[1:])]


def topology_view(platform: Platform) -> dict[str, Any]:
    """The values the template lays out for `topology.dot`: quoted graph name and title, the
    items (clusters and node lines, tables and legend included), edges, and whether the fabric
    is in a view of its own (`split`).

    A node that fits the width budget (`fits_unsummarised`) draws every device and its fabric.
    A wider one draws sockets and PCIe subtrees that repeat once (`repeated_sockets`,
    `repeated_groups`), their repeats listed in tables of ids and bus ids; when that leaves
    GPUs undrawn the fabric goes to its own view (`fabric_view`). What each device is (part,
    figures, PCIe link) is in the devices table under the drawing, the legend under that."""
    summarise = not fits_unsummarised(platform)
    top, drawn, layout_edges = tree_items(platform, summarise)
    split = any(g.id not in drawn for g in platform.gpus) and bool(platform.nvlinks)
    tables: list[str] = []
    caption = "devices" + (f" ({fabric_name(platform)} fabric: see {FABRIC_VIEW})" if split else "")
    if not split:
        fabric, tables = fabric_items(platform)
        top += fabric
    if cpu_link_style(platform) == "table":
        name = (platform.cpu_interconnect or "CPU link").upper()
        top.append(table_panel("cpu_links", "#6c8ebf", f"CPU interconnect ({name}): drawn as a table, not as edges",
                          cpu_link_table(platform)))
        tables.append(LEGEND_PREFIX + "cpu_link_matrix")
    top.append(devices_table(platform, [s.id for s in platform.sockets] + [i.id for i in platform.pcie_items], caption))
    # past the deepest device, and past the tables of repeats and the NVSwitch a rank further down
    ranks = max((depth(platform, s.id) for s in platform.sockets), default=0) + (1 if summarise else 0) + 1
    layout_edges += _below([s.id for s in platform.sockets if s.id in drawn], [*tables, LEGEND_PREFIX + "devices", LEGEND], ranks)
    edges = edges_between(platform, drawn, fabric=not split)
    return {"graph_id": quote(platform.name), "graph_label": label(platform.title),
            "items": _with_legend(top, edges), "edges": edges + layout_edges, "split": split}


def _with_legend(items: list[Any], edges: list[str]) -> list[Any]:
    """`items` and the legend of what they and `edges` draw, placed under the devices table."""
    return [*items, legend_node(items, edges)]


def fabric_view(platform: Platform) -> dict[str, Any]:
    """The values the template lays out for `FABRIC_VIEW`: each socket that has GPUs, with them
    (joined by NVLink-C2C where they are, else by an invisible edge that only places them), and
    the fabric. Sockets without a GPU are left out (Zion's: eight frames would not fit)."""
    top: list[Any] = []
    layout_edges: list[str] = []
    sockets = [s for s in platform.sockets if any(s.id == (g.c2c_socket or g.socket) for g in platform.gpus)]
    for socket in sockets:
        cluster = Cluster(quote(f"cluster_{socket.id}"),
                          attrs({"style": "rounded,filled", "fillcolor": "#f7fbff", "color": "#6c8ebf"},
                                label=label(f"socket {socket.id}, NUMA node {socket.numa_node}")))
        cluster.items.append(device_line(platform, socket.id))
        for gpu in platform.gpus:
            if socket.id == (gpu.c2c_socket or gpu.socket):
                cluster.items.append(device_line(platform, gpu.id))
                if gpu.c2c_socket is None:
                    layout_edges.append(f'{quote(socket.id)} -- {quote(gpu.id)} [style="invis"];')
        top.append(cluster)
    top += [device_line(platform, g.id) for g in platform.gpus if (g.c2c_socket or g.socket) not in platform.by_id]
    drawn = {s.id for s in sockets} | {g.id for g in platform.gpus}
    fabric, tables = fabric_items(platform)
    top += [*fabric, devices_table(platform, [s.id for s in sockets] + [g.id for g in platform.gpus])]
    layout_edges += _below([s.id for s in sockets], [*tables, LEGEND_PREFIX + "devices", LEGEND], 3 if switch_ids(platform) else 2)
    edges = [e for e in edges_between(platform, drawn, fabric=True) if 'class="pcie"' not in e]
    return {"graph_id": quote(platform.name), "graph_label": label(platform.title, f"{fabric_name(platform)} fabric view"),
            "items": _with_legend(top, edges), "edges": edges + layout_edges}


def device_ids(platform: Platform) -> list[str]:
    """Every device id (the legend aside): drawn as a node, or listed in a table of repeats."""
    ids = [s.id for s in platform.sockets] + [i.id for i in platform.pcie_items]
    return ids + list(switch_nodes(platform))


@generator("diagram")
def topology_dot(ctx: GenContext) -> dict[str, str]:
    """topology.dot, and `FABRIC_VIEW` when topology.dot does not draw every GPU."""
    view = topology_view(ctx.platform)
    plan = {"topology.dot": ctx.render("topology.dot.j2", "slash", **view)}
    if view["split"]:
        plan[FABRIC_VIEW] = ctx.render("topology.dot.j2", "slash", **fabric_view(ctx.platform))
    return plan
