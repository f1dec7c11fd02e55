"""The GPU fabric and the CPU interconnect in a diagram: drawn as edges when sparse, as tables of
links per pair when dense (`fabric_style`, `cpu_link_style`), NVSwitch chips as one node per
switch or one for a whole fabric (`switch_nodes`); and every edge between drawn devices
(`edges_between`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hwspec.generate.diagram.dot import LEGEND_PREFIX, Cluster, attrs, label, pair_table, quote
from hwspec.generate.diagram.look import EDGE_STYLES, HEAT, node_line
from hwspec.model.node import Platform
from hwspec.perf.tables import gbps

NVSWITCH = "nvswitch"


SWITCH_FABRIC = "NVSwitch fabric"
"""Node id of the one node drawn for several NVSwitch chips (no platform id has capitals or spaces)."""


SPARSE_PEERS = 2
"""A fabric where every GPU has at most this many GPU peers is drawn as edges; a denser one as a
table (eight GPUs with four to seven peers each draw as a tangle of crossing arcs)."""


def fabric_name(platform: Platform) -> str:
    """What the GPU fabric is called in labels: "xGMI" for AMD's Infinity Fabric links, else "NVLink"."""
    return "xGMI" if any(g.fabric_kind == "xgmi" for g in platform.gpus) else "NVLink"


def switch_ids(platform: Platform) -> list[str]:
    """The NVSwitch ids GPUs are linked to, in the order written ("nvswitch" when the file
    describes no switch chips)."""
    return list(dict.fromkeys(c.b for c in platform.nvlinks if c.b not in platform.gpu_by_id and c.b != c.a))


def switch_nodes(platform: Platform) -> dict[str, list[str]]:
    """Drawn switch node id -> the NVSwitch ids it stands for: one `SWITCH_FABRIC` node for
    several chips that all join the same GPUs (an HGX baseboard: 6 chips x 8 GPUs would be 48
    crossing edges), else one node per chip."""
    switches = switch_ids(platform)
    gpus_of = {s: frozenset(c.a for c in platform.nvlinks if c.b == s) for s in switches}
    if len(switches) > 1 and len(set(gpus_of.values())) == 1:
        return {SWITCH_FABRIC: switches}
    return {s: [s] for s in switches}


def _peers(pairs: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    peers: dict[str, set[str]] = {}
    for a, b in pairs:
        if a != b:
            peers.setdefault(a, set()).add(b)
            peers.setdefault(b, set()).add(a)
    return peers


def cpu_link_style(platform: Platform) -> str:
    """How the CPU interconnect is drawn: "edges" when every socket has at most SPARSE_PEERS
    peers (two sockets, a ring), else "table" (four or eight sockets with three peers each draw
    as arcs crossing the whole picture)."""
    peers = _peers(platform.cpu_links)
    return "table" if peers and max(len(p) for p in peers.values()) > SPARSE_PEERS else "edges"


def cpu_link_table(platform: Platform) -> str:
    """An HTML-like table node: CPU interconnect links between each socket pair."""
    sockets = [s.id for s in platform.sockets]
    links: dict[tuple[str, str], int] = {}
    for a, b in platform.cpu_links:
        links[(a, b)] = links.get((a, b), 0) + 1
        if a != b:
            links[(b, a)] = links.get((b, a), 0) + 1
    name = (platform.cpu_interconnect or "CPU link").upper()
    each = f", {gbps(platform.cpu_link_bandwidth)} each per direction" if platform.cpu_link_bandwidth else ""
    table = pair_table(sockets, sockets, links, lambda n: ("#dae8fc", str(n)), f"{name} links per socket pair{each}")
    return f'{quote(LEGEND_PREFIX + "cpu_link_matrix")} [shape="plaintext", class="legend", label=<{table}>];'


def fabric_style(platform: Platform) -> str:
    """How the GPU fabric is drawn: "switch" (NVSwitch nodes), "edges" (sparse: at most
    SPARSE_PEERS GPU peers per GPU), "table" (a denser mesh), or "none" (no NVLink)."""
    if not platform.nvlinks:
        return "none"
    if switch_ids(platform):
        return "switch"
    peers: dict[str, set[str]] = {}
    for c in platform.nvlinks:
        peers.setdefault(c.a, set()).add(c.b)
        peers.setdefault(c.b, set()).add(c.a)
    return "edges" if max(len(p) for p in peers.values()) <= SPARSE_PEERS else "table"


def _nvswitch_lines(platform: Platform, node: str, chips: list[str]) -> list[str]:
    """The switch's name, then its GPUs with their links and bandwidth to it (summed over the
    chips a fabric node stands for; a range when GPUs differ)."""
    per_gpu = _switch_links(platform, chips)
    links = sorted({n for n, _ in per_gpu.values()})
    bandwidth = sorted({b for _, b in per_gpu.values()})
    kinds = sorted({platform.gpu_by_id[g].fabric_kind or "unknown" for g in per_gpu if g in platform.gpu_by_id}) or ["nvlink"]
    def span(values: list[Any], fmt: Callable[[Any], str]) -> str:
        return fmt(values[0]) if len(values) == 1 else f"{fmt(values[0])}-{fmt(values[-1])}"

    if node == SWITCH_FABRIC:
        name = f"NVSwitch fabric: {len(chips)} chips ({chips[0]}-{chips[-1]})"
    else:
        name = "NVSwitch" if node == NVSWITCH else f"{node}: NVSwitch"
    return [name, f"{len(per_gpu)} GPUs, {span(links, str)} x {'/'.join(kinds)} each",
            f"{span(bandwidth, gbps)} per GPU per direction"]


def _switch_links(platform: Platform, chips: list[str]) -> dict[str, tuple[int, float]]:
    """GPU id -> (links, bandwidth) to the switch chips `chips`, summed, in the order written."""
    found: dict[str, tuple[int, float]] = {}
    for c in platform.nvlinks:
        if c.b in chips:
            links, bandwidth = found.get(c.a, (0, 0.0))
            found[c.a] = (links + c.links, bandwidth + (c.bandwidth or 0.0))  # unknown: the GPU line says so
    return found


def edges_between(platform: Platform, drawn: set[str], fabric: bool) -> list[str]:
    """Edges between drawn devices: PCIe, NVLink-C2C, NVLinks to a CPU and CPU interconnect; the
    GPU fabric too when `fabric` (the view that draws it)."""
    lines = []
    for item in platform.pcie_items:
        if item.upstream in drawn and item.id in drawn:
            lines.append(f"{quote(item.upstream)} -- {quote(item.id)} [{attrs(EDGE_STYLES['pcie'])}];")
    for gpu in platform.gpus:  # NVLink-C2C beside the PCIe presence (Grace Hopper/Blackwell)
        if gpu.c2c_socket is not None and gpu.c2c_socket in drawn and gpu.id in drawn:
            lines.append(f"{quote(gpu.c2c_socket)} -- {quote(gpu.id)} [{attrs(EDGE_STYLES['c2c'])}];")  # figures: devices table
    for link in platform.cpu_nvlinks:  # NVLinks to a POWER8/POWER9 CPU (figures: devices table)
        if link.socket in drawn and link.gpu in drawn:
            lines.append(f"{quote(link.socket)} -- {quote(link.gpu)} [{attrs(EDGE_STYLES['nvlink'], penwidth=quote('2'))}];")
    for a, b in platform.cpu_links if cpu_link_style(platform) == "edges" else ():
        if a not in drawn or b not in drawn:
            continue
        name = (platform.cpu_interconnect or "CPU link").upper()
        text = label(f"{name} {gbps(platform.cpu_link_bandwidth)}") if platform.cpu_link_bandwidth else label(name)
        lines.append(f"{quote(a)} -- {quote(b)} [{attrs(EDGE_STYLES['cpu'], xlabel=text)}];")
    if fabric:
        lines += _fabric_edges(platform)
    return lines


def _fabric_edges(platform: Platform) -> list[str]:
    """One thin edge per GPU down to its NVSwitch node; NVLink edges of a sparse fabric."""
    lines = []
    look = {**EDGE_STYLES["nvlink"], "constraint": "true", "headport": "n", "penwidth": "2"}
    for node, chips in switch_nodes(platform).items():
        for gpu_id in _switch_links(platform, chips):
            lines.append(f"{quote(gpu_id)} -- {quote(node)} [{attrs(look)}];")
    for c in platform.nvlinks if fabric_style(platform) in ("edges", "switch") else ():
        if c.b not in platform.gpu_by_id:
            continue  # drawn above
        lines.append(f"{quote(c.a)} -- {quote(c.b)} [{attrs(EDGE_STYLES['nvlink'], penwidth=quote('2'))}];")
    return lines


def _nvlink_matrix(platform: Platform) -> str | None:
    """An HTML-like table node, like `nvidia-smi topo -m`: NVLink links between each GPU pair.
    Dense NVLink meshes are hard to follow as edges alone; the table is exact."""
    if not platform.nvlinks:
        return None
    gpus = [g.id for g in platform.gpus]
    links = {(c.a, c.b): c.links for c in platform.nvlinks} | {(c.b, c.a): c.links for c in platform.nvlinks}
    columns = gpus + switch_ids(platform)
    most = max(links.values(), default=1) or 1

    def shade(n: int) -> str:
        return HEAT[min(len(HEAT) - 1, max(0, round((len(HEAT) - 1) * n / most)))]

    per_link = sorted({g.fabric_link_bandwidth for g in platform.gpus if g.fabric_link_bandwidth is not None})
    caption = f"{fabric_name(platform)} links per GPU pair (NVn = n links" + (
        f", {' / '.join(gbps(b) for b in per_link)} each per direction)" if per_link else ")")
    table = pair_table(gpus, columns, links, lambda n: (shade(n), f"NV{n}"), caption)
    return f'{quote(LEGEND_PREFIX + "nvlink_matrix")} [shape="plaintext", class="legend", label=<{table}>];'


def table_panel(name: str, colour: str, caption: str, node: str) -> Cluster:
    """A framed cluster holding one table node."""
    panel = Cluster(quote(f"cluster_{name}"), attrs({"style": "rounded", "color": colour}, label=label(caption)))
    panel.items.append(node)
    return panel


def fabric_items(platform: Platform) -> tuple[list[Any], list[str]]:
    """The GPU fabric's nodes (NVSwitch, the NVLink table), and the ids of tables to place
    below the drawing: the NVLink table (link counts per pair) beside a sparse fabric's
    unlabelled edges, in a panel of its own for a dense mesh drawn without edges."""
    items: list[Any] = [node_line(node, "nvswitch", label(*_nvswitch_lines(platform, node, chips)))
                        for node, chips in switch_nodes(platform).items()]
    matrix = _nvlink_matrix(platform)
    style = fabric_style(platform)
    if matrix and style == "edges":
        items.append(matrix)
    elif matrix and style == "table":
        caption = f"{fabric_name(platform)} fabric (logical): drawn as a table, not as edges"
        items.append(table_panel("nvlink", "#76b900", caption, matrix))
    else:
        return items, []
    return items, [LEGEND_PREFIX + "nvlink_matrix"]
