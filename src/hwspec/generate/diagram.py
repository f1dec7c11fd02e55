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

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from hwspec import hostlist
from hwspec.generate.engine import GenContext, generator
from hwspec.model.node import Bridge, Gpu, Nic, NumaNode, Platform
from hwspec.perf.roofline import gbps, gib
from hwspec.text import visible
from hwspec.text import xml_escape as escape
from hwspec.topology import topology_of

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
LEGEND_NODES = {
    "socket": "CPU socket", "root-port": "PCIe root port", "switch": "PCIe switch", "gpu": "GPU",
    "nic-backend": "backend NIC", "nic-host": "ingestion / frontend NIC", "nic-management": "management NIC",
    "ssd": "SSD", "nvswitch": "NVSwitch",
}
"""Legend text of each node kind; the legend shows only the kinds a picture draws."""
LINE, DASHES = "&#8212;" * 3, " ".join(["&#8211;"] * 3)
LEGEND_EDGES = {"pcie": ("PCIe", LINE), "nvlink": ("NVLink / xGMI", LINE), "c2c": ("NVLink-C2C", f"<b>{LINE}</b>"),
                "cpu": ("CPU interconnect", DASHES)}
"""Legend text and sample stroke (HTML: em dashes, en dashes for a dashed line) of each edge kind."""


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


def _unknown(value: Any, show: Callable[[Any], str]) -> str:
    return "unknown" if value is None else show(value)


def _device_label(platform: Platform, item_id: str) -> tuple[str, list[str]]:
    """(kind, label lines) of one device: a short label (id, bus id; what a NIC serves when it
    serves several GPUs). What the device is (part, figures, link) is in the devices table."""
    item = platform.by_id[item_id]
    if isinstance(item, NumaNode):
        return "socket", [f"{item.id} (NUMA {item.numa_node})"]
    bus = item.bus or "bus unknown"
    if isinstance(item, Bridge):
        return item.kind, [item.id, bus]
    if isinstance(item, Gpu):
        return "gpu", [f"{item.id} (index {item.index})", bus]
    if isinstance(item, Nic):
        names = " ".join(n for n in (item.device, item.interface) if n)
        shared = [f"for {', '.join(item.gpus)}"] if len(item.gpus) > 1 else []
        return nic_kind(item.role), [f"{item.id} {names}".strip(), bus, *shared]
    return "ssd", [item.id, bus]


def _device_line(platform: Platform, item_id: str) -> str:
    kind, lines = _device_label(platform, item_id)
    return _node_line(item_id, kind, label(*lines))


def _link_text(item: Any) -> str:
    """'Gen4 x16, 31.51 GB/s'; a presented link that differs from the trained one shows both."""
    if item.link is None or item.physical is None:
        return "link unknown"
    if item.physical == item.link:
        return f"{item.link}, {gbps(item.link.bandwidth)}"
    return f"{item.physical} (shown as {item.link}), {gbps(item.physical.bandwidth)}"


def details(platform: Platform, item_id: str) -> tuple[str, str, str, str]:
    """(what, model, figures, PCIe link) of a device: everything drawn about it but its id and
    bus id. Devices with the same details share a row of the devices table."""
    item = platform.by_id[item_id]
    if isinstance(item, NumaNode):
        memory = f"memory: {item.memory_shared_with}'s HBM (shared)" if item.memory_shared_with else _ddr(item)
        return "CPU socket", item.model_name, memory, ""
    if isinstance(item, Bridge):
        return ("root port" if item.kind == "root-port" else "PCIe switch"), item.model_name or "", "", _link_text(item)
    if isinstance(item, Gpu):
        figures = f"{_unknown(item.hbm_capacity, gib)} HBM, {_unknown(item.hbm_bandwidth, gbps)}"
        links = topology_of(platform).nvlink_links(item_id)
        if links:
            figures += (f"; {fabric_name(platform)} {links} x {item.fabric_kind}, "
                        f"{gbps(topology_of(platform).nvlink_bandwidth(item_id))}")
        if item.c2c_socket is not None:
            figures += f"; NVLink-C2C {item.c2c_links} x {gbps(item.c2c_link_bandwidth)}, {gbps(item.c2c_bandwidth)} to its CPU"
        return "GPU", item.model_name, figures, _link_text(item)
    if isinstance(item, Nic):
        return (f"{item.role} NIC", item.model_name, f"{item.transport}, {gbps(item.speed)}", _link_text(item))
    return "SSD", "", f"{item.capacity / 1e12:g} TB, {gbps(item.bandwidth)}", _link_text(item)


def _html_table(caption: str, header: list[str], rows: list[list[str]]) -> str:
    """An HTML-like graphviz table; `caption` and `header` are plain text, cells are HTML
    (escaped by the caller)."""
    td = '<td align="left">{}</td>'
    lines = [f'<tr><td colspan="{len(header)}"><b>{escape(caption)}</b></td></tr>']
    lines.append("<tr>" + "".join(td.format(f"<b>{escape(h)}</b>" if h else "") for h in header) + "</tr>")
    lines += ["<tr>" + "".join(td.format(cell) for cell in row) + "</tr>" for row in rows]
    return f'<table border="0" cellborder="1" cellspacing="0" cellpadding="3">{"".join(lines)}</table>'


def devices_table(platform: Platform, ids: Iterable[str], caption: str = "devices") -> str:
    """An HTML-like table node: one row per kind of device (same part, figures and link), its
    ids as a hostlist expression (`gpu[0-7]`)."""
    rows: dict[tuple[str, str, str, str], list[str]] = {}
    for item_id in ids:
        rows.setdefault(details(platform, item_id), []).append(item_id)
    body = [[escape(hostlist.compress(members)), *(escape(part) for part in row)] for row, members in rows.items()]
    table = _html_table(caption, ["ids", "what", "model", "figures", "PCIe link"], body)
    return f'{quote(LEGEND_PREFIX + "devices")} [shape="plaintext", class="legend", label=<{table}>];'


def _subtree(platform: Platform, root: str) -> list[str]:
    """`root` and every device below it, depth first in platform order."""
    found = [root]
    for kid in topology_of(platform).children.get(root, ()):
        found += _subtree(platform, kid)
    return found


def _signature(platform: Platform, root: str) -> tuple[Any, ...]:
    """What `root`'s subtree looks like with ids and bus ids left out: for each device its
    details, its parent's position and the positions of the GPUs a NIC serves. Two subtrees
    with the same signature are drawn the same but for their labels."""
    members = _subtree(platform, root)
    position = {item_id: n for n, item_id in enumerate(members)}
    shape = []
    for item_id in members:
        item = platform.by_id[item_id]
        served = tuple(position.get(g, -1) for g in item.gpus) if isinstance(item, Nic) else ()
        shape.append((details(platform, item_id), position.get(getattr(item, "upstream", ""), -1), served))
    return tuple(shape)


def repeated_groups(platform: Platform, parent: str) -> dict[str, list[str]]:
    """First subtree root -> the roots of the later subtrees below `parent` that look the same
    (`_signature`), for subtrees of more than one device that repeat: those are drawn once and
    the repeats listed in a table."""
    by_signature: dict[tuple[Any, ...], list[str]] = {}
    for kid in topology_of(platform).children.get(parent, ()):
        if topology_of(platform).children.get(kid):
            by_signature.setdefault(_signature(platform, kid), []).append(kid)
    return {roots[0]: roots[1:] for roots in by_signature.values() if len(roots) > 1}


SOCKET_TABLE_COLUMNS = 8
"""Sockets that look the same are drawn once when each has at most this many devices (a table
row per repeat, a column per device); larger ones are drawn each, their repeats summarised."""


def repeated_sockets(platform: Platform) -> dict[str, list[str]]:
    """First socket -> the later sockets that look the same (`_signature`), for sockets of at
    most SOCKET_TABLE_COLUMNS devices."""
    by_signature: dict[tuple[Any, ...], list[str]] = {}
    for socket in platform.sockets:
        if len(_subtree(platform, socket.id)) <= SOCKET_TABLE_COLUMNS:
            by_signature.setdefault(_signature(platform, socket.id), []).append(socket.id)
    return {ids[0]: ids[1:] for ids in by_signature.values() if len(ids) > 1}


def _depth(platform: Platform, root: str) -> int:
    kids = topology_of(platform).children.get(root, ())
    return 1 + max((_depth(platform, k) for k in kids), default=0)


def _repeats_table(platform: Platform, first: list[str], repeats: list[list[str]]) -> str:
    """An HTML-like table node listing the ids and bus ids of device groups drawn like `first`
    (a subtree, or a GPU and its own NICs): a row per device of `first`, a column per repeat
    (groups have more devices than repeats, and a table grows better down than across)."""
    def cell(item_id: str) -> str:
        return f"{escape(item_id)}<br/>{escape(_bus(platform, item_id))}"

    rows = [[f"<b>like {escape(device)}</b>", *(cell(members[n]) for members in repeats)] for n, device in enumerate(first)]
    table = _html_table(f"{len(repeats)} more like {first[0]}", ["", *(f"group {n}" for n in range(2, len(repeats) + 2))], rows)
    return f'{quote(repeats_node(first[0]))} [shape="plaintext", class="legend", label=<{table}>];'


def _bus(platform: Platform, item_id: str) -> str:
    """A device's bus id, a socket's NUMA node."""
    item = platform.by_id[item_id]
    if isinstance(item, NumaNode):
        return f"NUMA {item.numa_node}"
    return item.bus or "bus unknown"


def repeats_node(first: str) -> str:
    """Node id of the table of subtrees drawn like `first`."""
    return f"{LEGEND_PREFIX}like_{first}"


def _side_by_side(members: list[str], nth: int) -> list[str]:
    """Lines that put a GPU and its own NICs (`members`, GPU first) in one row, the NICs on the
    left of the first GPU under a parent and on the right of the second (`nth` counts from 0), so two GPUs sit
    side by side and an NVLink between them crosses no NIC."""
    row = [*members[1:], members[0]] if nth % 2 == 0 else members
    return [f"{{ rank=\"same\"; {'; '.join(quote(m) for m in row)}; }}",
            *(f'{quote(a)} -- {quote(b)} [style="invis"];' for a, b in zip(row, row[1:]))]


def _layout(platform: Platform, summarise: bool) -> tuple[list[Any], set[str], list[str]]:
    """Top-level items (clusters and node lines), the set of ids placed, and layout-only edges.
    With `summarise`, a socket's repeated subtrees (`repeated_groups`) are drawn once, the
    repeats listed in a table below the one drawn."""
    placed: set[str] = set()
    listed: set[str] = set()
    layout_edges: list[str] = []
    topology = topology_of(platform)
    children = topology.children
    # a GPU is drawn together with the NICs that serve it alone (a NIC shared by GPUs stands apart)
    own_nics = {g.id: [n.id for n in topology.nics_of(g.id) if n.gpus == (g.id,)] for g in platform.gpus}

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
                cluster.items = [_device_line(platform, kid), *below(kid)]
                items.append(cluster)
            elif kind == "root-port":
                items += [_device_line(platform, kid), *below(kid)]
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
                pair.items = [_device_line(platform, m) for m in members] + _side_by_side(members, drawn_pairs)
                drawn_pairs += 1
                items.append(pair)
            else:
                items.append(_device_line(platform, kid))
        for first, *repeats in pairs_like.values():
            if repeats:
                items.append(_repeats_table(platform, first, repeats))
                layout_edges.append(f'{quote(first[0])} -- {quote(repeats_node(first[0]))} [style="invis"];')
        return items

    top: list[Any] = []
    like_sockets = repeated_sockets(platform) if summarise else {}
    for repeats in like_sockets.values():
        for root in repeats:
            listed.update(_subtree(platform, root))
    for socket in platform.sockets:
        if socket.id in listed:
            continue
        placed.add(socket.id)
        cluster = Cluster(quote(f"cluster_{socket.id}"),
                          attrs({"style": "rounded,filled", "fillcolor": "#f7fbff", "color": "#6c8ebf"},
                                label=label(f"socket {socket.id}, NUMA node {socket.numa_node}")))
        cluster.items = [_device_line(platform, socket.id)]
        groups = repeated_groups(platform, socket.id) if summarise else {}
        if socket.id in like_sockets:
            groups = {socket.id: like_sockets[socket.id], **groups}
        for repeats in groups.values():
            for root in repeats:
                listed.update(_subtree(platform, root))  # in the table, not drawn
        placed |= listed
        cluster.items += below(socket.id)
        for first, repeats in groups.items():
            cluster.items.append(_repeats_table(platform, _subtree(platform, first),
                                                [_subtree(platform, root) for root in repeats]))
            layout_edges.append(f"{quote(first)} -- {quote(repeats_node(first))} "
                                f'[style="invis", minlen="{_depth(platform, first) + 1}"];')  # below tables of pairs
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
    return top, placed - listed, layout_edges


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


def _edges(platform: Platform, drawn: set[str], fabric: bool) -> list[str]:
    """Edges between drawn devices: PCIe, NVLink-C2C and CPU interconnect; the GPU fabric too
    when `fabric` (the view that draws it)."""
    lines = []
    for item in platform.pcie_items:
        if item.upstream in drawn and item.id in drawn:
            lines.append(f"{quote(item.upstream)} -- {quote(item.id)} [{attrs(EDGE_STYLES['pcie'])}];")
    for gpu in platform.gpus:  # NVLink-C2C beside the PCIe presence (Grace Hopper/Blackwell)
        if gpu.c2c_socket is not None and gpu.c2c_socket in drawn and gpu.id in drawn:
            lines.append(f"{quote(gpu.c2c_socket)} -- {quote(gpu.id)} [{attrs(EDGE_STYLES['c2c'])}];")  # figures: devices table
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
    for node, chips in _switch_nodes(platform).items():
        for gpu_id in _switch_links(platform, chips):
            lines.append(f"{quote(gpu_id)} -- {quote(node)} [{attrs(look)}];")
    for c in platform.nvlinks if fabric_style(platform) in ("edges", "switch") else ():
        if c.b not in platform.gpu_by_id:
            continue  # drawn above
        lines.append(f"{quote(c.a)} -- {quote(c.b)} [{attrs(EDGE_STYLES['nvlink'], penwidth=quote('2'))}];")
    return lines


KIND = re.compile(r'\bclass="([a-z0-9-]+)"')
"""The kind of a node or edge line: the `class` attribute every drawn device and link carries."""
LEGEND = LEGEND_PREFIX + "legend"


def _kinds(lines: Iterable[str]) -> set[str]:
    return {m[1] for line in lines if (m := KIND.search(line))}


def _node_lines(items: Iterable[Any]) -> Iterable[str]:
    for item in items:
        if isinstance(item, Cluster):
            yield from _node_lines(item.items)
        else:
            yield item


def legend_node(items: list[Any], edges: list[str]) -> str:
    """An HTML-like table node with a small swatch per kind of device and a stroke per kind of
    link the picture draws (`items`, `edges`), in two rows: kinds absent from it are left out."""
    drawn, linked = _kinds(_node_lines(items)), _kinds(edges)
    swatch = '<td bgcolor="{fillcolor}" color="{color}" border="1" width="16" height="10" fixedsize="true"></td>'
    text = '<td align="left">{}</td>'
    devices = "".join(swatch.format(**STYLES[kind]) + text.format(escape(name))
                      for kind, name in LEGEND_NODES.items() if kind in drawn)
    links = "".join(f'<td><font color="{EDGE_STYLES[kind]["color"]}">{stroke}</font></td>' + text.format(escape(name))
                    for kind, (name, stroke) in LEGEND_EDGES.items() if kind in linked)
    inner = '<tr><td align="left"><table border="0" cellborder="0" cellspacing="2" cellpadding="1"><tr>{}</tr></table></td></tr>'
    rows = "".join(inner.format(row) for row in (devices, links) if row)
    table = f'<table border="0" cellborder="0" cellspacing="0" cellpadding="0"><tr><td align="left"><b>legend</b></td></tr>{rows}</table>'
    return f'{quote(LEGEND)} [shape="plaintext", class="legend", label=<{table}>];'


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


def _panel(name: str, colour: str, caption: str, node: str) -> Cluster:
    """A framed cluster holding one table node."""
    panel = Cluster(quote(f"cluster_{name}"), attrs({"style": "rounded", "color": colour}, label=label(caption)))
    panel.items.append(node)
    return panel


def _fabric_items(platform: Platform) -> tuple[list[Any], list[str]]:
    """The GPU fabric's nodes (NVSwitch, the NVLink table), and the ids of tables to place
    below the drawing: the NVLink table (link counts per pair) beside a sparse fabric's
    unlabelled edges, in a panel of its own for a dense mesh drawn without edges."""
    items: list[Any] = [_node_line(node, "nvswitch", label(*_nvswitch_lines(platform, node, chips)))
                        for node, chips in _switch_nodes(platform).items()]
    matrix = _nvlink_matrix(platform)
    style = fabric_style(platform)
    if matrix and style == "edges":
        items.append(matrix)
    elif matrix and style == "table":
        caption = f"{fabric_name(platform)} fabric (logical): drawn as a table, not as edges"
        items.append(_panel("nvlink", "#76b900", caption, matrix))
    else:
        return items, []
    return items, [LEGEND_PREFIX + "nvlink_matrix"]


def _below(drawn_sockets: list[str], nodes: list[str], ranks: int) -> list[str]:
    """Invisible edges that stack `nodes` (tables) in a column under the drawing: the first
    `ranks` ranks below each drawn socket (past its deepest device), each next one below the
    one before."""
    lines = [f'{quote(socket)} -- {quote(nodes[0])} [style="invis", minlen="{ranks}"];' for socket in drawn_sockets]
    return lines + [f'{quote(a)} -- {quote(b)} [style="invis"];' for a, b in zip(nodes, nodes[1:])]


FABRIC_VIEW = "topology-fabric.dot"
"""The file of the GPU fabric's own view, written when `topology.dot` lists GPUs in tables."""


WIDTH_BUDGET_PT = 1400
"""A node whose drawing of every device is estimated wider than this (in points, 72 to the inch)
has its repeated structure summarised; 1,500 points (2,000 px) is a browser window, and the
estimate (`drawing_width`) is within a few percent of what dot draws for the shipped nodes."""
CHAR_PT = 5.4
"""Mean width of a character of a 10-point Helvetica label."""
SHAPE_WIDTH = {"root-port": 2.1, "switch": 2.1, "nic-host": 1.65, "nic-management": 1.65, "nvswitch": 1.4}
"""How much wider than a box of the same label dot draws a shape (the label fits inside it)."""
GAP_PT = 11.0
"""Between two nodes or clusters side by side (nodesep 0.15 in)."""
FRAME_PT = 16.0
"""What a cluster's frame adds to the width of what it holds."""


def _node_width(platform: Platform, item_id: str) -> float:
    kind, lines = _device_label(platform, item_id)
    box = max(len(line) for line in lines) * CHAR_PT + 12
    return max(54.0, box * SHAPE_WIDTH.get(kind, 1.0))


def _row_width(widths: list[float]) -> float:
    return sum(widths) + GAP_PT * max(0, len(widths) - 1)


def _subtree_width(platform: Platform, root: str, own_nics: dict[str, list[str]]) -> float:
    """Estimated width of `root` drawn with everything below it: the widest of its own node and
    its children's row (a GPU boxed with its own NICs side by side); framed when a cluster."""
    kids = topology_of(platform).children.get(root, ())
    paired = {n for k in kids for n in own_nics.get(k, ()) if n in kids}
    row = [_row_width([_node_width(platform, k), *(_node_width(platform, n) for n in own_nics[k] if n in kids)]) + FRAME_PT
           if any(n in kids for n in own_nics.get(k, ())) else _subtree_width(platform, k, own_nics)
           for k in kids if k not in paired]
    width = max(_node_width(platform, root), _row_width(row))
    item = platform.by_id[root]
    framed = isinstance(item, NumaNode) or (isinstance(item, Bridge) and item.kind == "switch")
    return width + (FRAME_PT if framed else 0.0)


def drawing_width(platform: Platform) -> float:
    """Estimated width in points of the drawing of every device (its sockets side by side), the
    tables under it aside: label lengths times a mean character width, shapes and frames added.
    Deterministic, without graphviz."""
    topology = topology_of(platform)
    own_nics = {g.id: [n.id for n in topology.nics_of(g.id) if n.gpus == (g.id,)] for g in platform.gpus}
    return _row_width([_subtree_width(platform, s.id, own_nics) for s in platform.sockets])


def fits_unsummarised(platform: Platform) -> bool:
    """Whether every device is drawn: the drawing of all of them fits `WIDTH_BUDGET_PT`."""
    return drawing_width(platform) <= WIDTH_BUDGET_PT


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
    top, drawn, layout_edges = _layout(platform, summarise)
    split = any(g.id not in drawn for g in platform.gpus) and bool(platform.nvlinks)
    tables: list[str] = []
    caption = "devices" + (f" ({fabric_name(platform)} fabric: see {FABRIC_VIEW})" if split else "")
    if not split:
        fabric, tables = _fabric_items(platform)
        top += fabric
    if cpu_link_style(platform) == "table":
        name = (platform.cpu_interconnect or "CPU link").upper()
        top.append(_panel("cpu_links", "#6c8ebf", f"CPU interconnect ({name}): drawn as a table, not as edges",
                          _cpu_link_table(platform)))
        tables.append(LEGEND_PREFIX + "cpu_link_matrix")
    top.append(devices_table(platform, [s.id for s in platform.sockets] + [i.id for i in platform.pcie_items], caption))
    # past the deepest device, and past the tables of repeats and the NVSwitch a rank further down
    ranks = max((_depth(platform, s.id) for s in platform.sockets), default=0) + (1 if summarise else 0) + 1
    layout_edges += _below([s.id for s in platform.sockets if s.id in drawn], [*tables, LEGEND_PREFIX + "devices", LEGEND], ranks)
    edges = _edges(platform, drawn, fabric=not split)
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
        cluster.items.append(_device_line(platform, socket.id))
        for gpu in platform.gpus:
            if socket.id == (gpu.c2c_socket or gpu.socket):
                cluster.items.append(_device_line(platform, gpu.id))
                if gpu.c2c_socket is None:
                    layout_edges.append(f'{quote(socket.id)} -- {quote(gpu.id)} [style="invis"];')
        top.append(cluster)
    top += [_device_line(platform, g.id) for g in platform.gpus if (g.c2c_socket or g.socket) not in platform.by_id]
    drawn = {s.id for s in sockets} | {g.id for g in platform.gpus}
    fabric, tables = _fabric_items(platform)
    top += [*fabric, devices_table(platform, [s.id for s in sockets] + [g.id for g in platform.gpus])]
    layout_edges += _below([s.id for s in sockets], [*tables, LEGEND_PREFIX + "devices", LEGEND], 3 if _switches(platform) else 2)
    edges = [e for e in _edges(platform, drawn, fabric=True) if 'class="pcie"' not in e]
    return {"graph_id": quote(platform.name), "graph_label": label(platform.title, f"{fabric_name(platform)} fabric view"),
            "items": _with_legend(top, edges), "edges": edges + layout_edges}


def device_ids(platform: Platform) -> list[str]:
    """Every device id (the legend aside): drawn as a node, or listed in a table of repeats."""
    ids = [s.id for s in platform.sockets] + [i.id for i in platform.pcie_items]
    return ids + list(_switch_nodes(platform))


@generator("diagram")
def topology_dot(ctx: GenContext) -> dict[str, str]:
    """topology.dot, and `FABRIC_VIEW` when topology.dot does not draw every GPU."""
    view = topology_view(ctx.platform)
    plan = {"topology.dot": ctx.render("topology.dot.j2", "slash", **view)}
    if view["split"]:
        plan[FABRIC_VIEW] = ctx.render("topology.dot.j2", "slash", **fabric_view(ctx.platform))
    return plan


def iter_clusters(items: Iterable[Any]) -> Iterable[Cluster]:
    for item in items:
        if isinstance(item, Cluster):
            yield item
            yield from iter_clusters(item.items)
