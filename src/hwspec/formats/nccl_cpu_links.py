"""Which NCCL releases read a topology file that gives GPUs NVLinks to their CPU (POWER8/POWER9,
`<nvlink tclass="0x068001">`), decided on the file's own `<system>` tree.

NCCL joins such a link to the CPU it finds by walking up the PCIe tree from the GPU, `findLocalCpu`
in src/graph/topo.cc, called from `ncclTopoAddNvLinks` once the CPUs and the PCIe tree are built
and before `ncclTopoSortSystem` orders the links. The walk follows a node's PCIe links in the
order `ncclTopoConnectNodes` keeps them: by bandwidth, highest first, equal ones in the order they
were added, and `ncclTopoAddPci` adds a device's children before it links itself to its parent,
so a bridge lists its links down before its link up unless that one is faster. Three forms of
the walk, read at NVIDIA/nccl (version from makefiles/version.mk at the same commit):

- 2.20.3 (b6475625), 2.21.5 (ab2b89c4): every PCIe link is followed, the one back down included;
- 2.22.3 (178b6b75), 2.23.4 (a6979c9f), 2.25.1 (80f6bda4): only links to a bridge or a CPU
  ("Follow only PCI switches"), so a bridge's link down to another bridge is still followed;
- 2.26.2 (f44ac759), 2.27.3 (1708736f): as 2.22, and never back to the node it came from.

A walk that comes back to a node it is still in repeats itself for ever: the recursion overflows
the stack and the process dies (NCCL 2.18.1 on such a file, reported in issue 44). Which files
each form reads is computed here by running the walk on the tree as NCCL would build it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hwspec.formats.nccl_topology import CLASS_ACCELERATOR

if TYPE_CHECKING:
    from hwspec.formats.nccl_tree import XmlNode

TCLASS_CPU = "0x068001"
LOC_BW = 5000.0
"""NCCL's bandwidth of a link to a NIC that is no PCI device (topo.h LOC_BW)."""
LANE_RATE = {"2.5 GT/s": 15, "5 GT/s": 30, "8 GT/s": 60, "16 GT/s": 120, "32 GT/s": 240, "2.5 GT/s PCIe": 15,
             "5.0 GT/s PCIe": 30, "8.0 GT/s PCIe": 60, "16.0 GT/s PCIe": 120, "32.0 GT/s PCIe": 240, "64.0 GT/s PCIe": 480}
"""topo.cc `kvDictPciGen`: per-lane rate in 100 Mb/s; anything else is 60."""
WALKS = (("2.21 and earlier", "every", "2.21"), ("2.22 to 2.25", "switches", "2.22"),
         ("2.26 and later", "switches-not-back", "2.26"))
"""(releases, form of the walk, first release) of each form, oldest first, as the module docstring reads them."""


@dataclass(eq=False)
class _Node:
    kind: str
    """GPU, NIC, PCI or CPU, as NCCL types them."""
    links: list[tuple[_Node, float]] = field(default_factory=list)

    def connect(self, other: _Node, bw: float) -> None:
        """`ncclTopoConnectNodes`: add a link, moved ahead of the ones of lower bandwidth."""
        at = len(self.links)
        while at > 0 and self.links[at - 1][1] < bw:
            at -= 1
        self.links.insert(at, (other, bw))


def _link_bw(attrs: dict[str, str]) -> float:
    width = int(attrs.get("link_width") or 0) or 16
    return width * LANE_RATE.get(attrs.get("link_speed", ""), 60) / 80


def _add_pci(element: XmlNode, parent: _Node, gpus: list[tuple[_Node, XmlNode]]) -> None:
    """`ncclTopoAddPci`: the device's children first, then its link to `parent`."""
    tags = {child.tag for child in element.children}
    attrs = dict(element.attrs)
    if "gpu" in tags:
        node = _Node("GPU")
        gpus.append((node, next(c for c in element.children if c.tag == "gpu")))
    elif "nic" in tags:
        node = _Node("NIC")
    elif attrs.get("class", "").startswith(("0x03", "0x02", CLASS_ACCELERATOR)):
        return  # a GPU or NIC class without its <gpu>/<nic>: NCCL leaves it out
    else:
        node = _Node("PCI")
        for child in element.children:
            if child.tag == "pci":
                _add_pci(child, node, gpus)
    bw = _link_bw(attrs)
    node.connect(parent, bw)
    parent.connect(node, bw)


def _walk(node: _Node, walk: str, came_from: _Node | None = None, stack: tuple[_Node, ...] = ()) -> bool | None:
    """`findLocalCpu` in form `walk` from `node`: True when it finds a CPU, False when it ends
    without one, None when it comes back to a node it is still in (and so recurses for ever)."""
    if node in stack:
        return None
    if node.kind == "CPU":
        return True
    for remote, _ in node.links:
        if (walk != "every" and remote.kind not in ("PCI", "CPU")) or (walk == "switches-not-back" and remote is came_from):
            continue
        found = _walk(remote, walk, node, (*stack, node))
        if found is not False:
            return found
    return False


def cpu_link_readers(system: XmlNode) -> list[tuple[str, bool]]:
    """(releases, whether they read `system`) for each form of NCCL's walk, oldest first; empty
    when no GPU of the file has an NVLink to its CPU."""
    gpus: list[tuple[_Node, XmlNode]] = []
    for cpu in system.children:
        node = _Node("CPU")
        for child in cpu.children:
            if child.tag == "pci":
                _add_pci(child, node, gpus)
            elif child.tag == "nic":
                nic = _Node("NIC")
                node.connect(nic, LOC_BW)
                nic.connect(node, LOC_BW)
    linked = [gpu for gpu, element in gpus
              if any(c.tag == "nvlink" and dict(c.attrs).get("tclass", "").startswith(TCLASS_CPU) for c in element.children)]
    if not linked:
        return []
    return [(releases, all(_walk(gpu, walk) is not None for gpu in linked)) for releases, walk, _ in WALKS]


def cpu_link_note(system: XmlNode) -> str | None:
    """The file's comment on which NCCL releases read its NVLinks to a CPU, or None without any."""
    readers = cpu_link_readers(system)
    if not readers:
        return None
    fails = [releases for releases, reads in readers if not reads]
    text = ("GPUs' NVLinks to their CPU (tclass 0x068001): NCCL joins each to the CPU it finds by walking up the PCIe tree "
            "(topo.cc findLocalCpu); ")
    if not fails:
        return text + "every release's walk ends on this file"
    last = max(i for i, (_, reads) in enumerate(readers) if not reads)
    return text + (f"on this file the walk of NCCL {' and of NCCL '.join(fails)} comes back to a node it is still in and "
                   f"recurses until the process dies: run NCCL {WALKS[min(last + 1, len(WALKS) - 1)][2]} or later with it")
