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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from hwspec.generate.engine import GenContext, generator
from hwspec.model.node import Bridge, Gpu, Nic, NumaNode, Platform
from hwspec.perf.roofline import gbps, gib
from hwspec.text import visible
from hwspec.text import xml_escape as escape

NVSWITCH = "nvswitch"
SWITCH_FABRIC = "NVSwitch fabric"
"""Node id of the one node drawn for several NVSwitch chips (no platform id has capitals or spaces)."""
SPARSE_PEERS = 2
"""A fabric where every GPU has at most this many GPU peers is drawn as edges; a denser one as a
table (eight GPUs with four to seven peers each draw as a tangle of crossing arcs)."""
HEAT = ("#f1f8e9", "#dcedc8", "#c5e1a5", "#aed581")
"""Cell colours of the NVLink table, from one link up to the most links any pair has."""
LEGEND_PREFIX = "_legend_"
"""Legend node ids start with an underscore, which platform ids (lower-case letter first) cannot."""

STYLES: dict[str, dict[str, str]] = {
    "socket": {"shape": "box", "style": "filled,bold", "fillcolor": "#dae8fc", "color": "#6c8ebf"},
    "root-port": {"shape": "invtrapezium", "style": "filled", "fillcolor": "#eeeeee", "color": "#777777"},
    "switch": {"shape": "invtrapezium", "style": "filled", "fillcolor": "#f5f5f5", "color": "#333333"},
    "gpu": {"shape": "box", "style": "filled,bold", "fillcolor": "#d5e8d4", "color": "#4d7c0f"},
    "nic-backend": {"shape": "box", "style": "filled,rounded", "fillcolor": "#ffe6cc", "color": "#d79b00"},
    "nic-host": {"shape": "hexagon", "style": "filled", "fillcolor": "#e1d5e7", "color": "#9673a6"},
    "nic-management": {"shape": "hexagon", "style": "filled,dashed", "fillcolor": "#f5f5f5", "color": "#999999"},
    "ssd": {"shape": "cylinder", "style": "filled", "fillcolor": "#fff2cc", "color": "#b09500"},
    "nvswitch": {"shape": "octagon", "style": "filled,bold", "fillcolor": "#d5e8d4", "color": "#4d7c0f"},
}
EDGE_STYLES: dict[str, dict[str, str]] = {
    "pcie": {"class": "pcie", "color": "#555555", "fontcolor": "#333333"},
    "cpu": {"class": "cpu", "color": "#6c8ebf", "fontcolor": "#3d5a80", "style": "dashed", "penwidth": "2", "constraint": "false"},
    "nvlink": {"class": "nvlink", "color": "#76b900", "fontcolor": "#4d7c0f", "constraint": "false",
               "tailport": "s", "headport": "s"},
    "c2c": {"class": "c2c", "color": "#76b900", "fontcolor": "#4d7c0f", "style": "bold", "penwidth": "3", "constraint": "false"},
}
"""Edge styles; `class` also lands in the SVG, so the kinds can be styled or picked out. Labels
are `xlabel`s: dot (2.43 at least) fails on labelled flat edges inside clusters ("trouble in
init_rank") and does not place plain labels with splines=curved. NVLink edges leave and enter
GPUs at the bottom, so the curved arcs run below the GPU row."""
LEGEND_NODES = (
    ("socket", "CPU socket / NUMA node"), ("root-port", "PCIe root port"), ("switch", "PCIe switch"),
    ("gpu", "GPU"), ("nic-backend", "backend NIC (RDMA), boxed with\nthe GPU it serves alone"),
    ("nic-host", "ingestion / frontend NIC\n(on the CPU)"), ("ssd", "SSD"),
)
LEGEND_EDGES = (("nvlink", "NVLink (links, GB/s per direction)"), ("pcie", "PCIe (generation, width, GB/s)"),
                ("cpu", "CPU interconnect"))
LEGEND_C2C = ("c2c", "NVLink-C2C GPU to CPU (links, GB/s per direction)")
"""Legend edge added on platforms with a GPU attached over NVLink-C2C."""


def _printable(text: str) -> str:
    """`text` with every unprintable character (NUL, control characters, line breaks, lone
    surrogates) shown as its `visible` escape, so graphviz reads one clean line."""
    if text.isprintable():  # the common case; a surrogate is never printable
        return text
    return "".join(c if c.isprintable() else visible(c) for c in text)


def quote(value: Any) -> str:
    """A DOT quoted string: unprintable characters shown as escapes, backslash and double quote
    escaped, so any text is one safe ID."""
    return '"' + _printable(str(value)).replace("\\", "\\\\").replace('"', '\\"') + '"'


def label(*lines: Any) -> str:
    """A quoted label of `lines` joined by DOT line breaks; each line's own text is escaped
    (a backslash stays a backslash, newlines become breaks)."""
    escaped = []
    for line in lines:
        text = "\\n".join(_printable(part).replace("\\", "\\\\").replace('"', '\\"')
                          for part in str(line).replace("\r", "").split("\n"))
        escaped.append(text)
    return '"' + "\\n".join(escaped) + '"'


def attrs(style: dict[str, str], **extra: str) -> str:
    """`key="value", ...` with every value quoted, except values already quoted by `label`."""
    items = [f"{k}={quote(v)}" for k, v in style.items()]
    items += [f"{k}={v}" for k, v in extra.items()]
    return ", ".join(items)


@dataclass
class Cluster:
    """A DOT subgraph being built: its id, its attribute text, and its lines and nested
    subgraphs in order."""

    id: str
    attrs: str
    items: list[Any] = field(default_factory=list)  # Node lines (str) and nested Clusters, in order

    @property
    def is_cluster(self) -> bool:
        return True


def nic_kind(role: str) -> str:
    if role == "backend":
        return "nic-backend"
    if role in ("ingestion", "frontend"):
        return "nic-host"
    return "nic-management"


def _node_line(node_id: str, style: str, text: str) -> str:
    return f"{quote(node_id)} [{attrs({'class': style, **STYLES[style]}, label=text)}];"


def _ddr(numa: NumaNode) -> str:
    """`512 GiB DDR, 300 GB/s`, `unknown` for a figure the spec says is unknown."""
    capacity = "unknown" if numa.memory_capacity is None else gib(numa.memory_capacity)
    bandwidth = "unknown bandwidth" if numa.memory_bandwidth is None else gbps(numa.memory_bandwidth)
    return f"{capacity} DDR, {bandwidth}"


def _device_line(platform: Platform, item_id: str) -> str:
    item = platform.by_id[item_id]
    if isinstance(item, NumaNode):
        return _node_line(item_id, "socket", label(f"{item.id} (NUMA {item.numa_node})", item.model_name,
                                                   f"memory: {item.memory_shared_with}'s HBM (shared)" if item.memory_shared_with
                                                   else _ddr(item)))
    if isinstance(item, Bridge):
        name = "root port" if item.kind == "root-port" else "PCIe switch"
        return _node_line(item_id, item.kind, label(f"{item.id}: {name}", item.bus or "bus unknown"))
    if isinstance(item, Gpu):
        links = platform.topology.nvlink_links(item_id)
        fabric = [f"{fabric_name(platform)} {links} x {item.fabric_kind}, {gbps(platform.topology.nvlink_bandwidth(item_id))}"] if links else []
        return _node_line(item_id, "gpu", label(f"{item.id} (index {item.index})", item.model_name,
                                                f"{gib(item.hbm_capacity)} HBM, {gbps(item.hbm_bandwidth)}", *fabric,
                                                item.bus or "bus unknown"))
    if isinstance(item, Nic):
        names = ", ".join(n for n in (item.device, item.interface) if n)
        role = f"{item.role} {item.transport}" + (f" for {', '.join(item.gpus)}" if item.gpus else "")
        return _node_line(item_id, nic_kind(item.role), label(f"{item.id}" + (f" ({names})" if names else ""),
                                                              item.model_name, f"{role}, {gbps(item.speed)}",
                                                              item.bus or "bus unknown"))
    return _node_line(item_id, "ssd", label(item.id, f"{item.capacity / 1e12:g} TB, {gbps(item.bandwidth)}",
                                                        item.bus or "bus unknown"))


def _link_label(item: Any) -> str:
    """'Gen4 x16\n31.51 GB/s'; a presented link that differs from the trained one shows both."""
    if item.link is None or item.physical is None:
        return label("link unknown")
    if item.physical == item.link:
        return label(str(item.link), gbps(item.link.bandwidth))
    return label(f"{item.physical} (shown as {item.link})", gbps(item.physical.bandwidth))


def _layout(platform: Platform) -> tuple[list[Any], set[str]]:
    """Top-level items (clusters and node lines) and the set of ids placed."""
    placed: set[str] = set()
    topology = platform.topology
    children = topology.children
    # a GPU is drawn together with the NICs that serve it alone (a NIC shared by GPUs stands apart)
    own_nics = {g.id: [n.id for n in topology.nics_of(g.id) if n.gpus == (g.id,)] for g in platform.gpus}

    def below(parent: str) -> list[Any]:
        """Items for the devices directly below `parent`, recursing into bridges."""
        items: list[Any] = []
        kids = [k for k in children.get(parent, ()) if k not in placed]
        beside = {k: [n for n in own_nics[k] if n in kids] for k in kids if own_nics.get(k)}
        paired_nics = {n for nics in beside.values() for n in nics}
        for kid in kids:
            if kid in placed or kid in paired_nics:
                continue
            placed.add(kid)
            bridge = platform.bridge_by_id.get(kid)
            kind = bridge.kind if bridge else None
            if kind == "switch":
                cluster = Cluster(quote(f"cluster_{kid}"), attrs({"label": "", "style": "rounded,dashed", "color": "#999999"}))
                cluster.items = [_device_line(platform, kid), *below(kid)]
                items.append(cluster)
            elif kind == "root-port":
                items += [_device_line(platform, kid), *below(kid)]
            elif beside.get(kid):
                placed.update(beside[kid])
                pair = Cluster(quote(f"cluster_pair_{kid}"), attrs({"label": "", "style": "rounded,dotted", "color": "#d79b00"}))
                pair.items = [_device_line(platform, kid), *(_device_line(platform, nic) for nic in beside[kid])]
                items.append(pair)
            else:
                items.append(_device_line(platform, kid))
        return items

    top: list[Any] = []
    for socket in platform.sockets:
        placed.add(socket.id)
        cluster = Cluster(quote(f"cluster_{socket.id}"),
                          attrs({"style": "rounded,filled", "fillcolor": "#f7fbff", "color": "#6c8ebf"},
                                label=label(f"socket {socket.id}, NUMA node {socket.numa_node}")))
        cluster.items = [_device_line(platform, socket.id), *below(socket.id)]
        top.append(cluster)
    # Devices whose PCIe tree leads to no socket (rule HW101 reports them): drawn outside.
    for item in platform.pcie_items:
        if item.id not in placed and item.upstream not in platform.by_id:
            placed.add(item.id)
            top.append(_device_line(platform, item.id))
            top += below(item.id)
    for item in platform.pcie_items:  # cycles
        if item.id not in placed:
            placed.add(item.id)
            top.append(_device_line(platform, item.id))
    for node, chips in _switch_nodes(platform).items():
        top.append(_node_line(node, "nvswitch", label(*_nvswitch_lines(platform, node, chips))))
        placed.add(node)
    return top, placed


def _switches(platform: Platform) -> list[str]:
    """The NVSwitch ids GPUs are linked to, in the order written ("nvswitch" when the file
    describes no switch chips)."""
    return list(dict.fromkeys(c.b for c in platform.nvlinks if c.b not in platform.gpu_by_id and c.b != c.a))


def _switch_nodes(platform: Platform) -> dict[str, list[str]]:
    """Drawn switch node id -> the NVSwitch ids it stands for: one `SWITCH_FABRIC` node for
    several chips that all join the same GPUs (an HGX baseboard: 6 chips x 8 GPUs would be 48
    crossing edges), else one node per chip."""
    switches = _switches(platform)
    gpus_of = {s: frozenset(c.a for c in platform.nvlinks if c.b == s) for s in switches}
    if len(switches) > 1 and len(set(gpus_of.values())) == 1:
        return {SWITCH_FABRIC: switches}
    return {s: [s] for s in switches}


def _peers(pairs) -> dict[str, set[str]]:
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


def _pair_table(rows: list[str], columns: list[str], links: dict[tuple[str, str], int],
                cell: Callable[[int], tuple[str, str]], caption: str) -> str:
    """An HTML-like table (graphviz label) of link counts between each row and column id,
    `links[(row, column)]`, like `nvidia-smi topo -m`: X on the diagonal, "-" where there is no
    link, else `cell(count)` -> (background colour, text)."""
    plain = '<td align="center">{}</td>'
    lines = ["<tr>" + plain.format("") + "".join(plain.format(f"<b>{escape(c)}</b>") for c in columns) + "</tr>"]
    for a in rows:
        cells = [plain.format(f"<b>{escape(a)}</b>")]
        for b in columns:
            n = links.get((a, b))
            if a == b:
                cells.append('<td align="center" bgcolor="#dddddd">X</td>')
            elif n:
                colour, text = cell(n)
                cells.append(f'<td align="center" bgcolor="{colour}">{text}</td>')
            else:
                cells.append(plain.format("-"))
        lines.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table border="0" cellborder="1" cellspacing="0" cellpadding="3"><tr><td colspan="{len(columns) + 1}">'
            f"{escape(caption)}</td></tr>{''.join(lines)}</table>")


def _cpu_link_table(platform: Platform) -> str:
    """An HTML-like table node: CPU interconnect links between each socket pair."""
    sockets = [s.id for s in platform.sockets]
    links: dict[tuple[str, str], int] = {}
    for a, b in platform.cpu_links:
        links[(a, b)] = links.get((a, b), 0) + 1
        if a != b:
            links[(b, a)] = links.get((b, a), 0) + 1
    name = (platform.cpu_interconnect or "CPU link").upper()
    each = f", {gbps(platform.cpu_link_bandwidth)} each per direction" if platform.cpu_link_bandwidth else ""
    table = _pair_table(sockets, sockets, links, lambda n: ("#dae8fc", str(n)), f"{name} links per socket pair{each}")
    return f'{quote(LEGEND_PREFIX + "cpu_link_matrix")} [shape="plaintext", class="legend", label=<{table}>];'


def fabric_style(platform: Platform) -> str:
    """How the GPU fabric is drawn: "switch" (NVSwitch nodes), "edges" (sparse: at most
    SPARSE_PEERS GPU peers per GPU), "table" (a denser mesh), or "none" (no NVLink)."""
    if not platform.nvlinks:
        return "none"
    if _switches(platform):
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
    span = lambda values, fmt: fmt(values[0]) if len(values) == 1 else f"{fmt(values[0])}-{fmt(values[-1])}"  # noqa: E731
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


def _edges(platform: Platform, placed: set[str]) -> list[str]:
    lines = []
    for item in platform.pcie_items:
        if item.upstream in placed:
            lines.append(f"{quote(item.upstream)} -- {quote(item.id)} "
                     f"[{attrs(EDGE_STYLES['pcie'], xlabel=_link_label(item))}];")
    for gpu in platform.gpus:  # NVLink-C2C beside the PCIe presence (Grace Hopper/Blackwell)
        if gpu.c2c_socket is not None and gpu.c2c_socket in placed:
            text = label(f"NVLink-C2C {gpu.c2c_links} x {gbps(gpu.c2c_link_bandwidth)}", gbps(gpu.c2c_bandwidth))
            lines.append(f"{quote(gpu.c2c_socket)} -- {quote(gpu.id)} [{attrs(EDGE_STYLES['c2c'], xlabel=text)}];")
    for a, b in platform.cpu_links if cpu_link_style(platform) == "edges" else ():
        name = (platform.cpu_interconnect or "CPU link").upper()
        text = label(name, gbps(platform.cpu_link_bandwidth)) if platform.cpu_link_bandwidth else label(name)
        lines.append(f"{quote(a)} -- {quote(b)} [{attrs(EDGE_STYLES['cpu'], xlabel=text)}];")
    style = fabric_style(platform)
    look = {**EDGE_STYLES["nvlink"], "constraint": "true", "headport": "n", "penwidth": "2"}
    for node, chips in _switch_nodes(platform).items():  # one thin edge per GPU down to its switch, below the GPUs
        for gpu_id in _switch_links(platform, chips):
            lines.append(f"{quote(gpu_id)} -- {quote(node)} [{attrs(look)}];")
    for c in platform.nvlinks if style in ("edges", "switch") else ():
        if c.b not in platform.gpu_by_id:
            continue  # drawn above
        kind = platform.gpu_by_id[c.a].fabric_kind if c.a in platform.gpu_by_id else "nvlink"
        text = label(f"{c.links} x {kind}, {gbps(c.bandwidth)}")  # e.g. "2 x nvlink3, 50 GB/s"
        lines.append(f"{quote(c.a)} -- {quote(c.b)} "
                     f"[{attrs(EDGE_STYLES['nvlink'], xlabel=text, penwidth=quote(f'{1 + c.links:g}'))}];")
    return lines


def _legend(c2c: bool = False) -> Cluster:
    """Sample nodes in a column (invisible edges keep the order) and one horizontal sample
    edge per link kind (NVLink-C2C only when `c2c`)."""
    legend = Cluster(quote("cluster_legend"), attrs({"style": "rounded", "color": "#bbbbbb"}, label=label("legend")))
    previous = None
    for kind, text in LEGEND_NODES:
        node = f"{LEGEND_PREFIX}{kind}"
        legend.items.append(_node_line(node, kind, label(*text.split("\n"))))
        if previous:
            legend.items.append(f'{quote(previous)} -- {quote(node)} [style="invis"];')
        previous = node
    for kind, text in (*LEGEND_EDGES, *((LEGEND_C2C,) if c2c else ())):
        a, b = f"{LEGEND_PREFIX}{kind}_a", f"{LEGEND_PREFIX}{kind}_b"
        point = attrs({"shape": "point", "width": "0.05"})
        style = {k: v for k, v in EDGE_STYLES[kind].items() if k not in ("constraint", "tailport", "headport")}
        legend.items += [f"{quote(a)} [{point}];", f"{quote(b)} [{point}];",
                         f"{{ rank=\"same\"; {quote(a)}; {quote(b)}; }}",
                         f'{quote(previous)} -- {quote(a)} [style="invis"];',
                         f"{quote(a)} -- {quote(b)} [{attrs(style, xlabel=label(text), minlen='3')}];"]
        previous = a
    return legend


def _nvlink_matrix(platform: Platform) -> str | None:
    """An HTML-like table node, like `nvidia-smi topo -m`: NVLink links between each GPU pair.
    Dense NVLink meshes are hard to follow as edges alone; the table is exact."""
    if not platform.nvlinks:
        return None
    gpus = [g.id for g in platform.gpus]
    links = {(c.a, c.b): c.links for c in platform.nvlinks} | {(c.b, c.a): c.links for c in platform.nvlinks}
    columns = gpus + _switches(platform)
    most = max(links.values(), default=1) or 1

    def shade(n: int) -> str:
        return HEAT[min(len(HEAT) - 1, max(0, round((len(HEAT) - 1) * n / most)))]

    per_link = sorted({g.fabric_link_bandwidth for g in platform.gpus if g.fabric_link_bandwidth is not None})
    caption = f"{fabric_name(platform)} links per GPU pair (NVn = n links" + (
        f", {' / '.join(gbps(b) for b in per_link)} each per direction)" if per_link else ")")
    table = _pair_table(gpus, columns, links, lambda n: (shade(n), f"NV{n}"), caption)
    return f'{quote(LEGEND_PREFIX + "nvlink_matrix")} [shape="plaintext", class="legend", label=<{table}>];'


def fabric_name(platform: Platform) -> str:
    """What the GPU fabric is called in labels: "xGMI" for AMD's Infinity Fabric links, else "NVLink"."""
    return "xGMI" if any(g.fabric_kind == "xgmi" for g in platform.gpus) else "NVLink"


def topology_view(platform: Platform) -> dict[str, Any]:
    """The values the template lays out: quoted graph name and title, clusters, edges, legend."""
    top, placed = _layout(platform)
    legend = _legend(c2c=any(g.c2c_socket is not None for g in platform.gpus))
    matrix = _nvlink_matrix(platform)
    style = fabric_style(platform)
    if matrix and style == "edges":
        legend.items.append(matrix)
    elif matrix and style == "table":
        panel = Cluster(quote("cluster_nvlink"), attrs({"style": "rounded", "color": "#76b900"},
                                                       label=label(f"{fabric_name(platform)} fabric (logical): drawn as a table, not as edges")))
        panel.items.append(matrix)
        top.insert(0, panel)
    if cpu_link_style(platform) == "table":
        name = (platform.cpu_interconnect or "CPU link").upper()
        panel = Cluster(quote("cluster_cpu_links"), attrs({"style": "rounded", "color": "#6c8ebf"},
                                                          label=label(f"CPU interconnect ({name}): drawn as a table, not as edges")))
        panel.items.append(_cpu_link_table(platform))
        top.insert(0, panel)
    return {"graph_id": quote(platform.name), "graph_label": label(platform.title),
            "items": top, "edges": _edges(platform, placed), "legend": legend}


def device_ids(platform: Platform) -> list[str]:
    """Every id drawn as a node (the legend aside)."""
    ids = [s.id for s in platform.sockets] + [i.id for i in platform.pcie_items]
    return ids + list(_switch_nodes(platform))


@generator("diagram")
def topology_dot(ctx: GenContext) -> dict[str, str]:
    return {"topology.dot": ctx.render("topology.dot.j2", "slash", **topology_view(ctx.platform))}


def iter_clusters(items: Iterable[Any]) -> Iterable[Cluster]:
    for item in items:
        if isinstance(item, Cluster):
            yield item
            yield from iter_clusters(item.items)
