"""How wide a node's drawing of every device would be (`drawing_width`), estimated without
graphviz: whether it fits a browser window or its repeats are summarised (`fits_unsummarised`)."""

from __future__ import annotations

from hwspec.generate.diagram.devices import device_label
from hwspec.model.node import Bridge, NumaNode, Platform
from hwspec.topology import topology_of

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
    kind, lines = device_label(platform, item_id)
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
    own_nics = {g.id: [n for n in topology.nics_of(g.id) if topology.gpus_of(n) == (g.id,)] for g in platform.gpus}
    return _row_width([_subtree_width(platform, s.id, own_nics) for s in platform.sockets])


def fits_unsummarised(platform: Platform) -> bool:
    """Whether every device is drawn: the drawing of all of them fits `WIDTH_BUDGET_PT`."""
    return drawing_width(platform) <= WIDTH_BUDGET_PT
