"""`rccl-topo.xml`: an AMD node as RCCL's NCCL_TOPO_FILE.

RCCL is NCCL's fork and reads the same grammar, but not the same file (ROCm/rccl
src/graph/xml.h, xml.cc, topo.cc): the root is `<system version="2">` (NCCL's version-1 file is
refused with "XML Topology has wrong version 1, 2 needed"), an AMD build reads only `<xgmi>`
under `<gpu>` (an `<nvlink>` is skipped), a GPU is described by `sm` (its compute-unit count),
`gcn` (the gfx target) and `arch` (hipDeviceProp_t.arch packed into an int), and the GPU and
its xGMI peers carry PCI class 0x120000. So an AMD node gets this file and no nccl-topo.xml.

The tree is built by `hwspec.formats.nccl_tree.system_tree` in RCCL's form (one builder, two
dialects) and checked with `hwspec.formats.nccl_topology.check_rccl_xml` before it is returned. What the
generator cannot write is stated once, in `hwspec.formats.nccl_tree.rccl_limits`; rule HW911 reports the
same list at validate time, so `validate` clean means this generator succeeds.
"""

from __future__ import annotations

from hwspec.formats.nccl_topology import check_rccl_xml
from hwspec.formats.nccl_tree import (
    DETAIL_LEVELS,
    RCCL_FORM,
    choose_rccl_topology,
    collective_library,
    missing_bus_ids,
    rccl_limits,
)
from hwspec.generate.engine import GenContext, GenerationError, Plan, generator
from hwspec.generate.nccl import detection_notes
from hwspec.model.node import Platform
from hwspec.topology.node import Topology

RCCL_TOPO_FILE = "rccl-topo.xml"


def _in_rccl_words(text: str) -> str:
    """A note about NCCL's detection, said of RCCL's (which asks ROCm SMI for xGMI links)."""
    for nccl, rccl in (("NCCL's 256 elements", f"RCCL's {RCCL_FORM.max_elements} elements"), ("NCCL", "RCCL"),
                       ("NVML", "ROCm SMI"), ("NVLinks", "xGMI links"), ("<nvlink>", "<xgmi>")):
        text = text.replace(nccl, rccl)
    return text


@generator("rccl-topo")
def rccl_topo(ctx: GenContext) -> Plan:
    """An AMD node's NCCL_TOPO_FILE for RCCL (version 2, `<xgmi>` links), checked against
    RCCL's parser rules; nothing for other nodes."""
    topology: Topology = ctx.topology
    platform: Platform = ctx.platform
    if collective_library(platform) != "rccl" or missing_bus_ids(topology):
        return {}  # without bus ids RCCL's file cannot name the devices: HW603 says what to fill in
    limits = rccl_limits(topology)
    if limits:
        raise GenerationError(f"{platform.file}: {RCCL_TOPO_FILE} cannot be written:\n  "
                              + "\n  ".join(limit.message for limit in limits))
    detail, system = choose_rccl_topology(topology)
    notes = [_in_rccl_words(note) for note in detection_notes(platform)]  # RCCL's detection is NCCL's code
    text = ctx.render("nccl-topo.xml.j2", "xml", system=system, detail=detail, note=_in_rccl_words(DETAIL_LEVELS[detail]),
                      notes=notes)
    problems = check_rccl_xml(text)
    if problems:
        raise GenerationError(f"{platform.file}: {RCCL_TOPO_FILE} fails the RCCL compatibility check:\n  "
                              + "\n  ".join(problems))
    return {RCCL_TOPO_FILE: text}
