"""Repeated structure, drawn once: sockets and PCIe subtrees that look the same but for their ids
(`repeated_sockets`, `repeated_groups`), their repeats listed in a table of ids and bus ids
(`repeats_table`)."""

from __future__ import annotations

from typing import Any

from hwspec.generate.diagram.devices import bus_text, details
from hwspec.generate.diagram.dot import LEGEND_PREFIX, html_table, quote
from hwspec.model.node import Nic, Platform
from hwspec.text import xml_escape as escape
from hwspec.topology import topology_of


def subtree(platform: Platform, root: str) -> list[str]:
    """`root` and every device below it, depth first in platform order."""
    found = [root]
    for kid in topology_of(platform).children.get(root, ()):
        found += subtree(platform, kid)
    return found


def _signature(platform: Platform, root: str) -> tuple[Any, ...]:
    """What `root`'s subtree looks like with ids and bus ids left out: for each device its
    details, its parent's position and the positions of the GPUs a NIC serves. Two subtrees
    with the same signature are drawn the same but for their labels."""
    members = subtree(platform, root)
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
        if len(subtree(platform, socket.id)) <= SOCKET_TABLE_COLUMNS:
            by_signature.setdefault(_signature(platform, socket.id), []).append(socket.id)
    return {ids[0]: ids[1:] for ids in by_signature.values() if len(ids) > 1}


def depth(platform: Platform, root: str) -> int:
    kids = topology_of(platform).children.get(root, ())
    return 1 + max((depth(platform, k) for k in kids), default=0)


def repeats_table(platform: Platform, first: list[str], repeats: list[list[str]]) -> str:
    """An HTML-like table node listing the ids and bus ids of device groups drawn like `first`
    (a subtree, or a GPU and its own NICs): a row per device of `first`, a column per repeat
    (groups have more devices than repeats, and a table grows better down than across)."""
    def cell(item_id: str) -> str:
        return f"{escape(item_id)}<br/>{escape(bus_text(platform, item_id))}"

    rows = [[f"<b>like {escape(device)}</b>", *(cell(members[n]) for members in repeats)] for n, device in enumerate(first)]
    table = html_table(f"{len(repeats)} more like {first[0]}", ["", *(f"group {n}" for n in range(2, len(repeats) + 2))], rows)
    return f'{quote(repeats_node(first[0]))} [shape="plaintext", class="legend", label=<{table}>];'


def repeats_node(first: str) -> str:
    """Node id of the table of subtrees drawn like `first`."""
    return f"{LEGEND_PREFIX}like_{first}"
