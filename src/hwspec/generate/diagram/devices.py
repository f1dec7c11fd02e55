"""What a diagram says of each device: its short label in the drawing (`device_label`) and its
details (part, figures, PCIe link) in the devices table under it (`details`, `devices_table`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hwspec import hostlist
from hwspec.generate.diagram.dot import LEGEND_PREFIX, html_table, label, quote
from hwspec.generate.diagram.fabric import fabric_name
from hwspec.generate.diagram.look import node_line
from hwspec.model.node import Bridge, Gpu, Nic, NumaNode, Platform
from hwspec.perf.tables import gbps, gib
from hwspec.text import xml_escape as escape
from hwspec.topology import topology_of


def nic_kind(role: str) -> str:
    if role == "backend":
        return "nic-backend"
    if role in ("ingestion", "frontend"):
        return "nic-host"
    return "nic-management"


def _ddr(numa: NumaNode) -> str:
    """`512 GiB DDR, 300 GB/s`, `unknown` for a figure the spec says is unknown."""
    capacity = "unknown" if numa.memory_capacity is None else gib(numa.memory_capacity)
    bandwidth = "unknown bandwidth" if numa.memory_bandwidth is None else gbps(numa.memory_bandwidth)
    return f"{capacity} DDR, {bandwidth}"


def _unknown(value: Any, show: Callable[[Any], str]) -> str:
    return "unknown" if value is None else show(value)


def device_label(platform: Platform, item_id: str) -> tuple[str, list[str]]:
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


def device_line(platform: Platform, item_id: str) -> str:
    kind, lines = device_label(platform, item_id)
    return node_line(item_id, kind, label(*lines))


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
        to_cpu = topology_of(platform).own_cpu_nvlinks(item_id)
        if to_cpu:
            count = sum(c.links for c in to_cpu)
            bandwidth = topology_of(platform).cpu_nvlink_bandwidth(item_id)
            figures += f"; NVLink {count} x {item.fabric_kind}, {_unknown(bandwidth, gbps)} to its CPU"
        return "GPU", item.model_name, figures, _link_text(item)
    if isinstance(item, Nic):
        return (f"{item.role} NIC", item.model_name, f"{item.transport}, {gbps(item.speed)}", _link_text(item))
    return "SSD", "", f"{item.capacity / 1e12:g} TB, {gbps(item.bandwidth)}", _link_text(item)


def devices_table(platform: Platform, ids: Iterable[str], caption: str = "devices") -> str:
    """An HTML-like table node: one row per kind of device (same part, figures and link), its
    ids as a hostlist expression (`gpu[0-7]`)."""
    rows: dict[tuple[str, str, str, str], list[str]] = {}
    for item_id in ids:
        rows.setdefault(details(platform, item_id), []).append(item_id)
    body = [[escape(hostlist.compress(members)), *(escape(part) for part in row)] for row, members in rows.items()]
    table = html_table(caption, ["ids", "what", "model", "figures", "PCIe link"], body)
    return f'{quote(LEGEND_PREFIX + "devices")} [shape="plaintext", class="legend", label=<{table}>];'


def bus_text(platform: Platform, item_id: str) -> str:
    """A device's bus id, a socket's NUMA node."""
    item = platform.by_id[item_id]
    if isinstance(item, NumaNode):
        return f"NUMA {item.numa_node}"
    return item.bus or "bus unknown"
