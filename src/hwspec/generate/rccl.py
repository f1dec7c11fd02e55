"""`rccl-topo.xml`: an AMD node as RCCL's NCCL_TOPO_FILE.

RCCL is NCCL's fork and reads the same grammar, but not the same file (ROCm/rccl
src/graph/xml.h, xml.cc, topo.cc): the root is `<system version="2">` (NCCL's version-1 file is
refused with "XML Topology has wrong version 1, 2 needed"), an AMD build reads only `<xgmi>`
under `<gpu>` (an `<nvlink>` is skipped), a GPU is described by `sm` (its compute-unit count),
`gcn` (the gfx target) and `arch` (hipDeviceProp_t.arch packed into an int), and the GPU and
its xGMI peers carry PCI class 0x120000. So an AMD node gets this file and no nccl-topo.xml.

The tree is built by `hwspec.generate.nccl.system_tree` in RCCL's form (one builder, two
dialects) and checked with `hwspec.formats.nccl_topology.check_rccl_xml` before it is returned. What the
generator cannot write is stated once, in `rccl_limits`; rule HW911 reports the same list at
validate time, so `validate` clean means this generator succeeds.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwspec.generate.engine import GenContext, GenerationError, Plan, generator
from hwspec.generate.nccl import (CPU_VENDORS, DETAIL_LEVELS, RCCL_FORM, XmlNode, collective_library, detection_notes,
                                   elements, system_tree)
from hwspec.model.node import Platform
from hwspec.formats.nccl_topology import RCCL_MAX_CHILDREN, check_rccl_xml
from hwspec.topology.node import Topology

RCCL_TOPO_FILE = "rccl-topo.xml"


@dataclass(frozen=True, slots=True)
class RcclLimit:
    """Something rccl-topo.xml cannot say; `at` is `(id, *keys)` of the YAML place to point at."""

    message: str
    at: tuple


def rccl_limits(topology: Topology) -> list[RcclLimit]:
    """Every reason rccl-topo.xml cannot be written for this node (empty for NVIDIA nodes and
    for AMD nodes RCCL can be told about)."""
    platform: Platform = topology.platform
    if collective_library(platform) != "rccl":
        return []
    limits: list[RcclLimit] = []
    others = [g.id for g in platform.gpus if g.vendor != "amd"]
    if others:
        limits.append(RcclLimit(f"{', '.join(others)} are not AMD GPUs on a node with AMD GPUs: neither RCCL's nor "
                                "NCCL's topology file can describe both", (others[0],)))
    for gpu in platform.gpus:
        if gpu.vendor != "amd":
            continue
        missing = [key for key, value in (("gcn", gpu.gcn), ("hip_arch", gpu.hip_arch),
                                          ("compute_units", gpu.compute_units)) if value is None]
        if missing:
            limits.append(RcclLimit(f"{gpu.id}: part {gpu.part} has no {', '.join(missing)}; RCCL's <gpu> needs "
                                    "gcn, arch and sm (the compute-unit count)", (gpu.id, "part")))
        if gpu.socket is None:
            limits.append(RcclLimit(f"{gpu.id} reaches no CPU socket through the PCIe tree, so it has no place in "
                                    "rccl-topo.xml", (gpu.id, "pcie", "upstream")))
    if platform.nvlink_topology == "nvswitch":
        limits.append(RcclLimit("an AMD GPU fabric is point-to-point xGMI: RCCL's file has no switch to join the GPUs "
                                "to; list the xGMI pairs (fully-connected or explicit)", (None, "nvlink", "topology")))
    for socket in platform.sockets:
        if socket.arch == "x86_64" and socket.vendor not in CPU_VENDORS:
            limits.append(RcclLimit(f"socket {socket.id} is x86_64 with vendor {socket.vendor!r}; RCCL knows Intel and AMD",
                                    (socket.id, "part")))
    for nic in platform.nics:
        if nic.socket is None:
            limits.append(RcclLimit(f"{nic.id} reaches no CPU socket through the PCIe tree, so it has no place in "
                                    "rccl-topo.xml", (nic.id, "pcie", "upstream")))
    if not limits:
        skeleton = system_tree(topology, "skeleton", RCCL_FORM)
        size = elements(skeleton)
        if size > RCCL_FORM.max_elements:
            limits.append(RcclLimit(f"even the skeleton topology has {size} elements; RCCL reads at most "
                                    f"{RCCL_FORM.max_elements}", (None, "gpus")))
        crowded = _most_children(skeleton)
        if crowded > RCCL_MAX_CHILDREN:
            limits.append(RcclLimit(f"a CPU or PCIe switch has {crowded} devices below it; RCCL reads at most "
                                    f"{RCCL_MAX_CHILDREN} children of one element", (None, "pcie")))
    return limits


def _most_children(node: XmlNode) -> int:
    """The largest number of children any element of the tree has."""
    return max([len(node.children), *(_most_children(child) for child in node.children)])


def _in_rccl_words(text: str) -> str:
    """A note about NCCL's detection, said of RCCL's (which asks ROCm SMI for xGMI links)."""
    for nccl, rccl in (("NCCL's 256 elements", f"RCCL's {RCCL_FORM.max_elements} elements"), ("NCCL", "RCCL"),
                       ("NVML", "ROCm SMI"), ("NVLinks", "xGMI links"), ("<nvlink>", "<xgmi>")):
        text = text.replace(nccl, rccl)
    return text


def _fits(system: XmlNode) -> bool:
    return elements(system) <= RCCL_FORM.max_elements and _most_children(system) <= RCCL_MAX_CHILDREN


@generator("rccl-topo")
def rccl_topo(ctx: GenContext) -> Plan:
    """An AMD node's NCCL_TOPO_FILE for RCCL (version 2, `<xgmi>` links), checked against
    RCCL's parser rules; nothing for other nodes."""
    topology: Topology = ctx.topology
    platform: Platform = ctx.platform
    if collective_library(platform) != "rccl":
        return {}
    limits = rccl_limits(topology)
    if limits:
        raise GenerationError(f"{platform.file}: {RCCL_TOPO_FILE} cannot be written:\n  "
                              + "\n  ".join(limit.message for limit in limits))
    for detail in DETAIL_LEVELS:
        system = system_tree(topology, detail, RCCL_FORM)
        if _fits(system):  # more than 32 xGMI peers (33+ GPUs) leave the links to RCCL's detection
            break
    notes = [_in_rccl_words(note) for note in detection_notes(platform)]  # RCCL's detection is NCCL's code
    text = ctx.render("nccl-topo.xml.j2", "xml", system=system, detail=detail, note=_in_rccl_words(DETAIL_LEVELS[detail]),
                      notes=notes)
    problems = check_rccl_xml(text)
    if problems:
        raise GenerationError(f"{platform.file}: {RCCL_TOPO_FILE} fails the RCCL compatibility check:\n  "
                              + "\n  ".join(problems))
    return {RCCL_TOPO_FILE: text}
