"""How the diagrams look: the style of each kind of device (`STYLES`) and link (`EDGE_STYLES`),
and the legend of the kinds a picture draws (`legend_node`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from hwspec.generate.diagram.dot import LEGEND_PREFIX, attrs, node_lines, quote
from hwspec.text import xml_escape as escape

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


HEAT = ("#f1f8e9", "#dcedc8", "#c5e1a5", "#aed581")
"""Cell colours of the NVLink table, from one link up to the most links any pair has."""


KIND = re.compile(r'\bclass="([a-z0-9-]+)"')
"""The kind of a node or edge line: the `class` attribute every drawn device and link carries."""


LEGEND = LEGEND_PREFIX + "legend"


def node_line(node_id: str, style: str, text: str) -> str:
    return f"{quote(node_id)} [{attrs({'class': style, **STYLES[style]}, label=text)}];"


def _kinds(lines: Iterable[str]) -> set[str]:
    return {m[1] for line in lines if (m := KIND.search(line))}


def legend_node(items: list[Any], edges: list[str]) -> str:
    """An HTML-like table node with a small swatch per kind of device and a stroke per kind of
    link the picture draws (`items`, `edges`), in two rows: kinds absent from it are left out."""
    drawn, linked = _kinds(node_lines(items)), _kinds(edges)
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
