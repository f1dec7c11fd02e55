"""Unknown facts: what a platform says it does not know (`part: unknown`, `bus: unknown`, a socket's
`capacity: unknown`/`bandwidth: unknown`), and what waits for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from hwspec.formats.nccl_tree import collective_library, cpu_attached, left_to_detection
from hwspec.formats.transports import interface_use
from hwspec.model.node import Bridge, NumaNode, PcieDevice, Platform
from hwspec.rules import Context, Finding, rule
from hwspec.spec.checks import UNKNOWN


@rule("HW603", "unknown-facts", severity="warning",
      hint="fill in the facts the findings name (part, bus id, memory), then generate again")
def unknown_facts(ctx: Context) -> Iterator[Finding]:
    """Every device with `unknown` facts is reported once, naming them all and what to fill in; one more finding names the outputs that wait, for which facts of which devices.

    An import writes `part: unknown` where its input does not identify a part (nvidia-smi topo -m
    names no model; a PCI id the catalogue does not know), `bus: unknown` where it gives no
    bus id, and a socket's memory `capacity: unknown`/`bandwidth: unknown` where it gives none
    (an NCCL dump, topo -m; lstopo gives capacity only), and no `interface:` where it names none
    (a NIC whose interface NCCL_SOCKET_IFNAME would name), rather than a guess that NCCL, TorchRec or the estimates would trust. Generation
    still writes everything else: nccl-topo.xml leaves an unknown `sm`, NIC `speed` or `gdr` to
    NCCL's detection, and an unknown interface leaves NCCL_SOCKET_IFNAME to NCCL; a file that cannot be written without the fact (the topology file without
    bus ids, the performance views without HBM and compute figures) is left out until it is
    filled in. `hwspec generate` prints only that last finding (WAITING starts it) unless
    --verbose: validate lists each device.
    """
    p = ctx.platform
    topology_file = "rccl-topo.xml" if collective_library(p) == "rccl" else "nccl-topo.xml"
    waiting: dict[str, dict[str, dict[str, None]]] = {topology_file: {}, FIGURES: {}}  # output -> fact -> devices
    for device_id, facts in _unknowns(p):
        yield ctx.finding(f"{device_id}: unknown {', '.join(f.what for f in facts)}", at=(device_id,),
                          hint="; ".join(dict.fromkeys(f.hint for f in facts)))
        for fact in facts:
            for output in fact.waits:
                waiting[topology_file if output == TOPOLOGY else output].setdefault(fact.short, {})[device_id] = None
    waits = [f"{output} ({_facts_of_devices(facts)})" for output, facts in waiting.items() if facts]
    if waits:
        yield ctx.finding(f"{WAITING}: {'; '.join(waits)}",
                          hint="fill in the facts the findings above name, then generate again")


def _facts_of_devices(facts: dict[str, dict[str, None]]) -> str:
    """'PCI bus id of gpu0, gpu1; memory capacity and memory bandwidth of cpu0': the facts an
    output waits for, those of the same devices together."""
    by_devices: dict[tuple[str, ...], list[str]] = {}
    for fact, devices in facts.items():
        by_devices.setdefault(tuple(devices), []).append(fact)
    return "; ".join(f"{' and '.join(names)} of {', '.join(devices)}" for devices, names in by_devices.items())


WAITING = "waiting for the unknown facts of devices"
"""How the finding that names the waiting outputs starts."""


TOPOLOGY = "topology file"
FIGURES = "the figures of roofline.json, torchrec-topology.json, calculon-system.json, 'hwspec estimate' and 'compare'"


class _Fact(NamedTuple):
    what: str
    """The fact as the device's finding names it."""
    hint: str
    waits: tuple[str, ...]
    """The outputs that wait for it: TOPOLOGY (nccl-topo.xml or rccl-topo.xml) and FIGURES."""
    short: str = ""
    """The fact as the waiting outputs' summary names it (only facts an output waits for)."""


def _unknowns(p: Platform) -> Iterator[tuple[str, list[_Fact]]]:
    """(device id, its unknown facts) for every device with one, in platform order."""
    for socket_id in p.packages:
        numa_nodes = [s for s in p.sockets if s.package == socket_id]
        facts = []
        if numa_nodes[0].part == UNKNOWN:
            facts.append(_Fact("CPU part (so its cores)", "name the CPU part (lscpu's model name), or add it to parts/", ()))
        if numa_nodes[0].id == socket_id:  # the socket is one NUMA node: its memory is the socket's
            facts += _memory_facts(numa_nodes[0])
        if facts:
            yield socket_id, facts
        for numa in numa_nodes:
            if numa.id != socket_id and _memory_facts(numa):
                yield numa.id, _memory_facts(numa)
    link_known = {d.id for d in p.gpus if d.physical is not None or d.part != UNKNOWN} | \
                 {d.id for d in p.nics if d.physical is not None or d.part != UNKNOWN}
    for gpu in p.gpus:
        facts = []
        if gpu.part == UNKNOWN:
            seen = f" {gpu.pci_vendor}:{gpu.pci_device}" if gpu.pci_vendor and gpu.pci_device else ""
            facts.append(_Fact(f"GPU part{seen} (so its HBM, compute and fabric figures)",
                               "name the part, or import nvidia-smi -q -x with the other inputs", (FIGURES,), "GPU part"))
        facts += _pcie_facts(gpu, gpu.id in link_known)
        if facts:
            yield gpu.id, facts
    for nic in p.nics:
        facts = []
        if nic.part == UNKNOWN:
            facts.append(_Fact("NIC part", "name the part (lspci -nn gives its PCI id)", ()))
            if nic.speed is None:
                facts.append(_Fact("speed", "or give 'speed:' under 'override:' (ibstat's Rate, ethtool's Speed)",
                                   (FIGURES,), "NIC speed"))
            if nic.gpudirect is None:
                facts.append(_Fact("GPUDirect support",
                                   "or give 'gpudirect:' under 'override:' (NCCL's log says whether it uses GPU Direct RDMA)", ()))
        if nic.interface is None and interface_use(nic.transport, nic.role) == "socket":
            facts.append(_INTERFACE)
        facts += _pcie_facts(nic, nic.id in link_known, topology=not (left_to_detection(nic) or cpu_attached(nic)))
        if facts:
            yield nic.id, facts
    devices = {d.id for d in (*p.gpus, *p.nics)}
    for item in p.pcie_items:  # bridges and SSDs
        if item.bus is None and item.id not in devices:
            yield item.id, [_BUS]


_BUS = _Fact("PCI bus id", "copy the bus id from 'lspci -D' (or nvidia-smi -q's Bus Id, lower case)", (TOPOLOGY,), "PCI bus id")
_LINK = _Fact("PCIe link (no part to take it from)", "write 'link: {gen: .., width: ..}' from 'lspci -vv' (LnkSta)",
              (TOPOLOGY, FIGURES), "PCIe link")


_INTERFACE = _Fact("network interface name", "give 'interface:' as 'ip link' shows it; until then NCCL_SOCKET_IFNAME "
                                            "is left out and NCCL picks its interfaces itself", ())


_CAPACITY = _Fact("memory capacity", "give the memory's 'capacity:' (lsmem's total online memory, 'free -b', "
                                     "or the DIMM sizes of 'dmidecode -t memory')", (FIGURES,), "memory capacity")
_BANDWIDTH = _Fact("memory bandwidth", "give the memory's 'bandwidth:' (the DIMMs' speed x 8 bytes x populated channels "
                                       "from 'dmidecode -t memory', or the CPU datasheet's figure)", (FIGURES,), "memory bandwidth")


def _memory_facts(numa: NumaNode) -> list[_Fact]:
    """The unknown facts of a NUMA node's own memory (a GPU's shared HBM is the GPU's fact)."""
    return ([_CAPACITY] if numa.memory_capacity is None else []) + ([_BANDWIDTH] if numa.memory_bandwidth is None else [])


def _pcie_facts(device: Bridge | PcieDevice, link_known: bool, topology: bool = True) -> list[_Fact]:
    """The unknown bus id and link; `topology`: the topology file waits for them (not for a NIC
    it leaves to NCCL's detection)."""
    facts = ([_BUS] if device.bus is None else []) + ([] if link_known else [_LINK])
    return facts if topology else [f._replace(waits=tuple(w for w in f.waits if w != TOPOLOGY)) for f in facts]
