"""`nccl-topo.xml`: the whole node as an NCCL_TOPO_FILE.

The file describes every socket as a `<cpu>`, the PCIe tree below it (bridges that lead to a
GPU or NIC, GPUs with their NVLinks, NICs with their `<net>`), sorted by bus id at every level but
where a GPU is below: sockets and entries with GPUs come in the order of their first GPU, as NCCL's
detection creates them (NCCL numbers them by their place, and its search breaks ties by number).
SSDs are left out (NCCL has no use for them), and so are bridges with nothing NCCL uses below.
The `<system>` tree is built by `hwspec.formats.nccl_tree`, which also states what keeps it from
being written (`topology_limits`, reported by rule HW901 during `validate`). The output is checked
with `hwspec.formats.nccl_topology` before it is returned: a file NCCL would misread
is a generation error, never a written file.

NCCL 2.21+ reads at most 256 elements. A node too large for the complete file gets the most
detailed form that fits, as NCCL's own merge with detection allows (DETAIL_LEVELS): first
without `<nvlink>` elements (NCCL then asks NVML for the NVLinks of a `<gpu>` that has none),
then as a skeleton of CPUs and PCIe devices by bus id (NCCL adds `<gpu>` and `<net>` itself,
as with the cloud vendors' files). The file says which form it is in a comment.
"""

from __future__ import annotations

from hwspec.formats.nccl_cpu_links import cpu_link_note
from hwspec.formats.nccl_topology import check_nccl_xml
from hwspec.formats.nccl_tree import (
    DETAIL_LEVELS,
    choose_topology,
    collective_library,
    cpu_attached,
    left_to_detection,
    missing_bus_ids,
    net_name,
    topology_limits,
)
from hwspec.generate.engine import GenContext, GenerationError, Plan, generator, refuse
from hwspec.model.node import Platform


def detection_notes(platform: Platform) -> list[str]:
    """Comments saying what the file leaves to NCCL's detection (fixed text, no platform names)."""
    notes = []
    if any(net_name(n) is None for n in platform.nics if n.role != "management"):
        notes.append("NICs without a device name in the platform file have a <pci> and no <nic>: "
                     "NCCL's detection adds their <net> under the same bus id")
    if platform.backend is not None and platform.backend.gpudirect is None:
        notes.append("gdr is left out (backend.gpudirect: detect): NCCL fills it in from detection")
    elif platform.backend is None:
        notes.append("gdr is left out (no backend network declares GPUDirect): NCCL fills it in from detection")
    if any(cpu_attached(n) for n in platform.nics):
        notes.append("backend NICs without a bus id in the platform file (no PCI device in the input) are a <nic> "
                     "under their <cpu>, as NCCL writes a NIC that is not a PCI device: its detection finds their <net> by name")
    if any(left_to_detection(n) for n in platform.nics):
        notes.append("NICs outside the backend without a PCIe link in the platform file (virtio and other paravirtual "
                     "NICs) are left out: NCCL's detection adds the ones it uses, attaching a NIC that is not a PCI "
                     "device to the first CPU")
    return notes


@generator("nccl-topo")
def nccl_topo(ctx: GenContext) -> Plan:
    """The node's NCCL_TOPO_FILE in the most detailed form within NCCL's limits, checked
    against NCCL's parser rules."""
    platform: Platform = ctx.platform
    if not platform.gpus or collective_library(platform) != "nccl":
        return {}  # AMD GPUs: RCCL rejects NCCL's version-1 file; rccl-topo.xml is written instead
    if missing_bus_ids(ctx.topology):
        return {}  # NCCL names every device by bus id: not written until they are known (HW603 says so)
    refuse(platform, "nccl-topo.xml", topology_limits(ctx.topology))
    detail, system = choose_topology(ctx.topology)
    cpu_links = cpu_link_note(system)  # which NCCL releases read the GPUs' NVLinks to their CPU (POWER8/POWER9)
    text = ctx.render("nccl-topo.xml.j2", "xml", system=system, detail=detail, note=DETAIL_LEVELS[detail],
                      notes=detection_notes(platform) + ([cpu_links] if cpu_links else []))
    problems = check_nccl_xml(text)
    if problems:  # a limit topology_limits does not know yet: a bug, but never a written file
        raise GenerationError(f"{platform.file}: nccl-topo.xml fails the NCCL compatibility check:\n  "
                              + "\n  ".join(problems))
    return {"nccl-topo.xml": text}
