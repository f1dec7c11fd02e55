"""Helpers shared by the built-in rules: numbers for people, walks of the PCIe tree, the fabric.

Rule modules import them relatively (`from ._common import gbit`); the rule engine makes this
directory a private package, so nothing here is importable as `validators`.
"""

from __future__ import annotations

from typing import Iterable, TypeVar

from hwspec.model import Bridge, Gpu, Nic, NvlinkConnection, PcieLink, Platform, Socket

T = TypeVar("T")  # a model item with an `id`
RDMA_TRANSPORTS = ("rocev2", "infiniband")


# ---------------------------------------------------------------- numbers


def number(x: float) -> str:
    """Three significant digits, no exponent: 7.8769 -> '7.88', 31.5077 -> '31.5', 1555.0 -> '1555'."""
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def gbit(rate: float) -> str:
    """A NIC speed (bytes/s per direction) as people quote it: '200 Gb/s'."""
    return f"{number(rate * 8 / 1e9)} Gb/s"


def gbyte(rate: float) -> str:
    """A PCIe, NVLink or memory bandwidth (bytes/s per direction): '7.88 GB/s'."""
    return f"{number(rate / 1e9)} GB/s"


def link_text(link: PcieLink, noun: str = "link") -> str:
    """'Gen3 x8 link (7.88 GB/s)'."""
    return f"{link} {noun} ({gbyte(link.bandwidth)})"


def id_list(ids: Iterable[str]) -> str:
    return ", ".join(ids)


def cpu_list(cpus: Iterable[int]) -> str:
    """(0, 1, 2, 5) -> '0-2,5'."""
    ranges: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges)


# ---------------------------------------------------------------- places in the file


def in_file_order(platform: Platform, items: Iterable[T]) -> list[T]:
    """`items` in the order they are written (repeat-expanded copies keep their model order)."""
    def key(item: T) -> tuple[int, int]:
        where = platform.locate(item.id)
        return (where.line, where.col)
    return sorted(items, key=key)


def pcie_field(item: Bridge | Gpu | Nic, name: str) -> tuple[str, ...]:
    """Where a PCIe attachment field is written: a bridge's own `link`, a device's `pcie.link`."""
    return (item.id, name) if isinstance(item, Bridge) else (item.id, "pcie", name)


# ---------------------------------------------------------------- the PCIe tree


def chain(platform: Platform, start: str) -> list[str]:
    """`start` and the ids above it, following `upstream`: ends at a socket, or at the first
    id seen twice (a cycle), e.g. ['gpu0', 'sw0', 'rp0', 'cpu0'] or ['sw0', 'sw1', 'sw0']."""
    ids = [start]
    while True:
        item = platform.by_id.get(ids[-1])
        if item is None or isinstance(item, Socket):
            return ids
        ids.append(item.upstream)
        if ids[-1] in ids[:-1]:
            return ids


def ancestors(platform: Platform, item_id: str) -> list[str]:
    """The bridges above `item_id`, nearest first (no socket; stops at a cycle)."""
    above = (i for i in chain(platform, item_id)[1:] if i != item_id and isinstance(platform.by_id.get(i), Bridge))
    return list(dict.fromkeys(above))


def below(platform: Platform, parent: str) -> set[str]:
    """Every id below `parent` in the PCIe tree (cycle-safe)."""
    found: set[str] = set()
    todo = list(platform.children.get(parent, ()))
    while todo:
        child = todo.pop()
        if child not in found:
            found.add(child)
            todo.extend(platform.children.get(child, ()))
    return found


def common_bridge(platform: Platform, a: str, b: str) -> str | None:
    """The lowest PCIe switch or root port above both `a` and `b`, or None (they meet at a CPU)."""
    above_b = set(ancestors(platform, b))
    return next((bridge for bridge in ancestors(platform, a) if bridge in above_b), None)


def place(item: Gpu | Nic) -> str:
    """'gpu3 (sw1, NUMA 0)': a device with its PCIe parent and NUMA node."""
    return f"{item.id} ({item.upstream}, NUMA {item.numa_node})"


def gpudirect(platform: Platform, nic: Nic) -> bool:
    """Whether `nic` moves its GPU's data by GPUDirect RDMA (declared and supported)."""
    backend = platform.backend
    return (nic.role == "backend" and nic.gpu is not None and nic.gpudirect
            and backend is not None and backend.gpudirect)


def turn_point(platform: Platform, nic: Nic) -> str | None:
    """Where a NIC's traffic turns: the bridge it shares with its GPU under GPUDirect RDMA,
    else its socket (None when it reaches none)."""
    if gpudirect(platform, nic):
        shared = common_bridge(platform, nic.id, nic.gpu)
        if shared is not None:
            return shared
    return nic.socket


def nic_path(platform: Platform, nic: Nic) -> list[Bridge | Nic]:
    """The items whose upstream link a NIC's traffic crosses: the NIC itself, then each bridge
    above it below its turn point."""
    stop = turn_point(platform, nic)
    path: list[Bridge | Nic] = [nic]
    for bridge_id in ancestors(platform, nic.id):
        if bridge_id == stop:
            break
        path.append(platform.by_id[bridge_id])
    return path


# ---------------------------------------------------------------- the GPU fabric


def gpu_pairs(platform: Platform) -> dict[tuple[str, str], NvlinkConnection]:
    """Logical GPU-to-GPU connections by (a, b), a pair listed twice kept once (the larger);
    self-links and NVSwitch connections are left out (HW303 reports the first kind)."""
    pairs: dict[tuple[str, str], NvlinkConnection] = {}
    for c in platform.nvlinks:
        if c.a == c.b or c.b not in platform.gpu_by_id:
            continue
        key = (c.a, c.b)
        if key not in pairs or c.links > pairs[key].links:
            pairs[key] = c
    return pairs


def gpu_fabric(platform: Platform, gpu_id: str) -> list[NvlinkConnection]:
    """The logical connections of one GPU: its GPU pairs and its NVSwitch connection."""
    mine = [c for pair, c in gpu_pairs(platform).items() if gpu_id in pair]
    return mine + [c for c in platform.nvlinks if c.a == gpu_id and c.b not in platform.gpu_by_id and c.b != c.a]


FABRIC_AT = (None, "nvlink", "topology")
"""Where fabric findings about the whole pattern point."""


def connection_at(connection: NvlinkConnection) -> tuple:
    """Where a finding about one GPU pair points: its entry in an explicit `nvlink.topology`
    list, or the named pattern it comes from."""
    return FABRIC_AT if connection.entry is None else FABRIC_AT + (connection.entry,)
