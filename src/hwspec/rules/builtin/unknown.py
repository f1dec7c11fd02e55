"""Unknown facts: what a platform says it does not know (`part: unknown`, `bus: unknown`), and what waits for it."""

from __future__ import annotations

from collections.abc import Iterator

from hwspec.formats.nccl_tree import collective_library
from hwspec.model.node import UNKNOWN_PART
from hwspec.rules import Context, Finding, rule

FIGURE_OUTPUTS = "the figures of roofline.json, torchrec-topology.json, calculon-system.json, 'hwspec estimate' and 'compare'"
"""What waits for an unknown HBM, compute, fabric or NIC speed figure."""


@rule("HW603", "unknown-facts", severity="warning")
def unknown_facts(ctx: Context) -> Iterator[Finding]:
    """Every `unknown` in the platform is reported with what is unknown, what to fill in, and which outputs wait for it.

    An import writes `part: unknown` where its input does not identify a part (nvidia-smi topo -m
    names no model; a PCI id the catalogue does not know), and `bus: unknown` where it gives no
    bus id, rather than a guess that NCCL, TorchRec or the estimates would trust. Generation
    still writes everything else: nccl-topo.xml leaves an unknown `sm`, NIC `speed` or `gdr` to
    NCCL's detection; a file that cannot be written without the fact (the topology file without
    bus ids, the performance views without HBM and compute figures) is left out until it is
    filled in.
    """
    p = ctx.platform
    topology_file = "rccl-topo.xml" if collective_library(p) == "rccl" else "nccl-topo.xml"
    for socket_id in p.packages:
        socket = next(s for s in p.sockets if s.package == socket_id)
        if socket.part == UNKNOWN_PART:
            yield ctx.finding(f"{socket_id}: the CPU part is unknown (the input does not identify it): its cores are unknown, "
                              f"and {topology_file} leaves what it lacks to detection",
                              at=(socket_id, "part"), hint="name the CPU part (lscpu's model name), or add it to parts/")
    for gpu in p.gpus:
        if gpu.part == UNKNOWN_PART:
            seen = f" {gpu.pci_vendor}:{gpu.pci_device}" if gpu.pci_vendor and gpu.pci_device else ""
            yield ctx.finding(f"{gpu.id}: the GPU part{seen} is unknown: its HBM, compute and fabric figures are unknown; "
                              f"waiting: {FIGURE_OUTPUTS}",
                              at=(gpu.id, "part"), hint="name the part, or import nvidia-smi -q -x with the other inputs")
    for nic in p.nics:
        if nic.part == UNKNOWN_PART:
            missing = [name for name, value in (("speed", nic.speed), ("GPUDirect support", nic.gpudirect)) if value is None]
            said = f": its {' and '.join(missing)} {'are' if len(missing) > 1 else 'is'} unknown" if missing else ""
            waiting = f"; waiting: {FIGURE_OUTPUTS}" if nic.speed is None else ""
            yield ctx.finding(f"{nic.id}: the NIC part is unknown{said}{waiting}", at=(nic.id, "part"),
                              hint="name the part (lspci -nn gives its PCI id), or give 'speed:' under 'override:' "
                                   "(ibstat's Rate, ethtool's Speed)")
    for item in p.pcie_items:
        if item.bus is None:
            yield ctx.finding(f"{item.id}: the PCI bus id is unknown; waiting: {topology_file} (NCCL names every device by "
                              "bus id)", at=(item.id, "bus") if item in p.bridges else (item.id, "pcie", "bus"),
                              hint="copy the bus id from 'lspci -D' (or nvidia-smi -q's Bus Id, lower case)")
    for device in (*p.gpus, *p.nics):
        if device.physical is None and device.part == UNKNOWN_PART:
            yield ctx.finding(f"{device.id}: the PCIe link is unknown (no part to take it from); waiting: {topology_file}, "
                              f"{FIGURE_OUTPUTS}",
                              at=(device.id, "pcie"), hint="write 'link: {gen: .., width: ..}' from 'lspci -vv' (LnkSta)")
