"""NIC rules: backend NICs serve GPUs they are close to and can serve (each GPU-NIC pair judged on its own); host NICs stay off GPU switches."""

from __future__ import annotations

import re
from collections.abc import Iterator

from hwspec.formats.nccl_tree import collective_library
from hwspec.formats.transports import TRANSPORTS, facts, interface_use
from hwspec.model.node import Gpu, Nic
from hwspec.rules import Context, Finding, rule
from hwspec.topology.node import RDMA_TRANSPORTS, served_field

from ._common import id_list, in_file_order, place


@rule("HW201", "backend-nic-per-gpu",
      hint="give each GPU a backend NIC of its own (gpu: on the NIC), or drop backend.nic_per_gpu")
def backend_nic_per_gpu(ctx: Context) -> Iterator[Finding]:
    """Where `backend.nic_per_gpu` is declared, every GPU has backend NICs of its own: at least one, none shared with another GPU, and every backend NIC names its GPU.

    With dedicated NICs, NCCL gives each rank its own NICs and rails line up across nodes; a GPU
    may have several (AWS p5: four EFA devices per GPU). A GPU without a NIC makes its rank
    borrow another GPU's NIC (halving both); a NIC that serves several GPUs, or names none, is
    shared. Without `nic_per_gpu` a NIC may serve several GPUs (`gpus:`, as on AWS p4d).
    """
    p = ctx.platform
    if p.backend is None or not p.backend.nic_per_gpu:
        return
    for gpu in p.gpus:
        if not ctx.topology.nics_of(gpu.id):
            yield ctx.finding(f"{gpu.id} has no backend NIC, but backend.nic_per_gpu is declared",
                              at=(gpu.id,), hint=f"add a backend NIC with 'gpu: {gpu.id}', or correct another NIC's 'gpu:'")
    for nic in in_file_order(p, p.backend_nics):
        if not nic.gpus:
            yield ctx.finding(f"{nic.id} is a backend NIC but names no GPU, and backend.nic_per_gpu is declared",
                              at=(nic.id, "gpu"), hint="add 'gpu:' with the GPU this NIC serves")
        elif len(nic.gpus) > 1:
            yield ctx.finding(f"{nic.id} serves {len(nic.gpus)} GPUs ({id_list(nic.gpus)}), but backend.nic_per_gpu "
                              "declares dedicated NICs per GPU",
                              at=served_field(p, nic), hint="give each GPU its own NICs, or do not declare backend.nic_per_gpu")


def _pairs(ctx: Context) -> Iterator[tuple[Nic, Gpu]]:
    """Each backend NIC with each GPU it names, both reaching a socket (HW101 reports the others)."""
    p = ctx.platform
    for nic in p.backend_nics:
        for gpu_id in nic.gpus:  # the NIC's own claims
            gpu = p.gpu_by_id.get(gpu_id)
            if gpu is not None and nic.socket is not None and gpu.socket is not None:
                yield nic, gpu


def _also_serves(nic: Nic, gpu: Gpu) -> str:
    others = [g for g in nic.gpus if g != gpu.id]
    return f" ({nic.id} also serves {id_list(others)})" if others else ""


@rule("HW202", "backend-nic-locality",
      hint="move the NIC (or the GPU) under the same PCIe switch, or name the GPUs it really serves")
def backend_nic_locality(ctx: Context) -> Iterator[Finding]:
    """A backend NIC sits under the same PCIe switch or root port as each GPU it serves, or, for a GPU attached over NVLink-C2C (or an APU sharing its socket's memory), on the GPU's own socket.

    GPUDirect RDMA moves data between GPU and NIC through the PCIe switch they share. Without a
    shared switch or root port the traffic goes through the CPU's host bridge (NCCL's PHB or SYS
    distance): NCCL then disables GPUDirect or runs it at a fraction of the NIC's speed. A Grace
    Blackwell GPU reaches the NICs on its own Grace's root ports over NVLink-C2C (NCCL's P2C),
    where GPUDirect RDMA runs at full speed; a NIC on the other Grace is SYS. An APU's (MI300A)
    memory is its socket's, so a NIC on that socket's root complex writes GPU memory directly. Each GPU-NIC pair
    is judged on its own: a NIC serving two GPUs may be close to one and far from the other.
    """
    for nic, gpu in _pairs(ctx):
        if ctx.topology.gpudirect_path(gpu.id, nic.id):
            continue
        if gpu.c2c_socket is not None:
            why = (f"they share no PCIe switch, and {nic.id} is not on {gpu.c2c_socket}, where {gpu.id}'s NVLink-C2C goes, "
                   "so their traffic crosses between the CPUs")
        else:
            why = "they share no PCIe switch or root port, so their traffic goes through the CPU"
        yield ctx.finding(f"{place(gpu)} is served by {place(nic)}: {why}{_also_serves(nic, gpu)}",
                          at=_pair_at(ctx, nic, gpu), hint=_move_hint(ctx, nic, gpu))


@rule("HW203", "backend-nic-numa",
      hint="serve the GPU from a NIC on its own NUMA node ('numactl -H', the device's numa_node in sysfs)")
def backend_nic_numa(ctx: Context) -> Iterator[Finding]:
    """A backend NIC is on the same NUMA node as each GPU it serves.

    Traffic between a GPU and a NIC on another socket crosses the CPU interconnect (UPI), which is
    slower than the NIC and shared with everything else; NCCL rates such a pair SYS and avoids it.
    """
    for nic, gpu in _pairs(ctx):
        if nic.numa_node != gpu.numa_node:
            yield ctx.finding(f"{place(gpu)} is served by {place(nic)}: their traffic crosses the socket interconnect"
                              f"{_also_serves(nic, gpu)}", at=_pair_at(ctx, nic, gpu), hint=_move_hint(ctx, nic, gpu))


def _pair_at(ctx: Context, nic: Nic, gpu: Gpu) -> tuple[str | int, ...]:
    """A far pair is the NIC's placement when it serves one GPU; when it serves several, the
    far GPU's entry in its `gpus` (moving the NIC would part it from the others)."""
    return (nic.id, "pcie", "upstream") if len(nic.gpus) == 1 else served_field(ctx.platform, nic, gpu.id)


def _move_hint(ctx: Context, nic: Nic, gpu: Gpu) -> str:
    p = ctx.platform
    if len(nic.gpus) > 1:
        return f"serve {gpu.id} from a NIC under {gpu.upstream}, and leave it out of {nic.id}'s 'gpus'"
    near = [g.id for g in p.gpus if g.id != gpu.id and ctx.topology.gpudirect_path(g.id, nic.id)]
    where = (f"onto {gpu.c2c_socket} (the socket of {gpu.id}'s NVLink-C2C)" if gpu.c2c_socket is not None
             else f"under {gpu.upstream}")
    return f"move {nic.id} {where}" + (f", or pair it with {' or '.join(near)}" if near else "")


@rule("HW204", "backend-nic-rdma",
      hint="choose a NIC part that carries the backend's transport, RDMA and GPUDirect, or change the backend")
def backend_nic_rdma(ctx: Context) -> Iterator[Finding]:
    """Backend NICs can do what the backend declares: RDMA, its transport, and GPUDirect when declared.

    A backend NIC whose part cannot do RDMA (or the declared transport, or GPUDirect RDMA) makes
    NCCL fall back to sockets through host memory: the job runs, many times slower, with no error.
    Which transports are RDMA is `hwspec.formats.transports` (infiniband, rocev2, efa, slingshot).
    """
    p = ctx.platform
    backend = p.backend
    cards = {n.card_id: n for n in reversed(p.backend_nics)}  # a card's part and transport are judged once
    for nic in (n for n in p.backend_nics if cards[n.card_id] is n):
        rdma_backend = backend is None or facts(backend.transport).rdma
        if rdma_backend and nic.rdma is False:  # None: an unknown part, which HW603 reports
            yield ctx.finding(f"{nic.card_id}: backend NIC part {nic.part} ({nic.model_name}) cannot do RDMA",
                              at=(nic.id, "part"), hint="use an RDMA-capable part for backend NICs")
        if nic.transport not in nic.supported_transports:
            yield ctx.finding(f"{nic.card_id}: transport {nic.transport} is not supported by {nic.part} "
                              f"(supports {id_list(nic.supported_transports)})",
                              at=(nic.id, "transport"), hint="use a transport the part supports, or another part")
        if backend is not None and nic.transport != backend.transport:
            yield ctx.finding(f"{nic.card_id}: transport {nic.transport}, but backend.transport is {backend.transport}",
                              at=(nic.id, "transport"), hint="backend NICs carry the backend transport")
        if backend is not None and backend.gpudirect and nic.gpudirect is False and "gpudirect" not in nic.overridden:
            yield ctx.finding(f"{nic.card_id}: backend.gpudirect is declared, but {nic.part} does not support GPUDirect RDMA",
                              at=(nic.id, "part"), hint="use a GPUDirect-capable part, or do not declare backend.gpudirect")


@rule("HW207", "gpudirect-agrees", severity="warning",
      hint="check 'gdr' in NCCL's topology dump for the GPU and the NIC: GPUDirect RDMA needs both, the peer-memory module loaded")
def gpudirect_agrees(ctx: Context) -> Iterator[Finding]:
    """A backend NIC port's stated GPUDirect support (its `gpudirect` override: the `gdr` the machine reports) agrees with the GPUs' (`backend.gpudirect`).

    NCCL uses GPUDirect RDMA between a GPU and a NIC only where both its `<gpu gdr>` and its
    `<net gdr>` say 1 (NVIDIA/nccl#2397: NICs reported with gdr 0 beside GPUs with gdr 1). Each is
    written as stated, neither overriding the other; where they differ, the GPUs' traffic through
    that port is staged in host memory, and this says so, naming both sides. A part that cannot do
    GPUDirect at all under a declared `backend.gpudirect` is HW204's error.
    """
    p = ctx.platform
    backend = p.backend
    if backend is None or backend.gpudirect is None:
        return  # no declaration, or `detect`: NCCL's detection decides both
    gpus_gdr = int(bool(backend.gpudirect))
    for nic in p.backend_nics:
        if "gpudirect" not in nic.overridden or nic.gpudirect is None or int(nic.gpudirect) == gpus_gdr:
            continue
        name = nic.device or nic.interface or nic.id
        gpus = id_list(nic.gpus) if nic.gpus else "the node's GPUs"
        yield ctx.finding(f"{nic.id} ({name}) states gdr {int(nic.gpudirect)}, but backend.gpudirect gives {gpus} gdr "
                          f"{gpus_gdr}: NCCL uses GPUDirect RDMA only where both say 1, so this port's GPU traffic "
                          "goes through host memory", at=(nic.id, "override", "gpudirect"),
                          hint="where the machine should use GPUDirect RDMA, load nvidia-peermem (or use DMA-BUF) and "
                               "import again; else leave both as the machine reports them")


@rule("HW205", "ingestion-nic-placement",
      hint="attach ingestion and frontend NICs to a socket or root port, outside the GPUs' switches")
def ingestion_nic_placement(ctx: Context) -> Iterator[Finding]:
    """Ingestion and frontend NICs attach to a CPU (a socket or root port), never below a PCIe switch that also holds a GPU.

    Host NIC traffic goes to host memory. Below a GPU's switch it competes with the GPU for the
    switch uplink, and data loading slows the very GPU it feeds.
    """
    p = ctx.platform
    for nic in p.host_nics:
        for bridge_id in ctx.topology.bridges_above(nic.id):
            if p.bridge_by_id[bridge_id].kind != "switch":
                continue
            under = ctx.topology.below(bridge_id)
            gpus = [g.id for g in p.gpus if g.id in under]
            if gpus:
                yield ctx.finding(f"{nic.id} ({nic.role}) sits below {bridge_id}, which also holds {id_list(gpus)}: "
                                  "host traffic shares the GPUs' uplink",
                                  at=(nic.id, "pcie", "upstream"), hint="attach it to a socket or a root port")
                break


@rule("HW206", "nic-names", waivable=False,
      hint="name each NIC's RDMA device and interface once ('ibdev2netdev', 'ip link'), all backend NICs or none")
def nic_names(ctx: Context) -> Iterator[Finding]:
    """NIC device and interface names are unique; backend RDMA NICs are all named or all left to NCCL; each NIC has the interface its transport needs.

    RDMA devices (rocev2, infiniband) may be left unnamed: NCCL then picks them itself, or by
    the filter in `backend.ib_hca`. But when some backend NICs are named and others not, the
    exact-name NCCL_IB_HCA built from the named ones would leave the others out. A
    GPUDirect-TCPX/-TCPXO NIC needs its network interface: the plugin takes the names and cannot
    run without them. Other NICs whose interface NCCL_SOCKET_IFNAME would name (sockets,
    Slingshot's hsn, host RoCE NICs) may leave it out: NCCL then picks its interfaces itself,
    and HW603 names the unknown fact. A shared name makes the generated environment pick the wrong NIC.
    """
    p = ctx.platform
    devices: dict[tuple[str, int], Nic] = {}
    interfaces: dict[str, Nic] = {}
    rdma = [n for n in p.backend_nics if n.transport in RDMA_TRANSPORTS]
    named = [n for n in in_file_order(p, rdma) if n.device is not None]
    for nic in in_file_order(p, p.nics):
        if nic in rdma and nic.device is None and named and (p.backend is None or p.backend.ib_hca is None):
            yield ctx.finding(f"{nic.id}: transport {nic.transport} needs the RDMA device name ('device:'), "
                              f"as {named[0].id} has one",
                              at=(nic.id, "device"), hint="e.g. 'device: mlx5_0', as 'ibv_devices' shows it; or name none "
                                                          "and let NCCL pick them (optionally by 'backend.ib_hca')")
        if interface_use(nic.transport, nic.role) == "required" and nic.interface is None:
            yield ctx.finding(f"{nic.id}: transport {nic.transport} needs the network interface name ('interface:'): "
                              f"its plugin ({facts(nic.transport).plugin}) takes the interfaces by name",
                              at=(nic.id, "interface"), hint="e.g. 'interface: eth1', as 'ip link' shows it")
        if nic.device is not None:
            other = devices.setdefault((nic.device, nic.port), nic)
            if other is not nic:
                line = p.locate(other.id, "device").line
                yield ctx.finding(f"{nic.id}: RDMA device {nic.device} port {nic.port} is already {other.id}'s (line {line})",
                                  at=(nic.id, "device"), hint="each NIC port has its own device name or port number")
        if nic.interface is not None:
            other = interfaces.setdefault(nic.interface, nic)
            if other is not nic:
                line = p.locate(other.id, "interface").line
                yield ctx.finding(f"{nic.id}: interface {nic.interface} is already {other.id}'s (line {line})",
                                  at=(nic.id, "interface"), hint="each NIC port has its own interface name")


@rule("HW210", "rccl-transport",
      hint="use a transport RCCL has (infiniband, rocev2, slingshot or tcp) for the AMD node's backend")
def rccl_transport(ctx: Context) -> Iterator[Finding]:
    """An AMD node's backend transport is one RCCL can use: infiniband, rocev2, slingshot (HPE's aws-ofi-nccl build for RCCL) or tcp.

    GPUDirect-TCPX/-TCPXO are NVIDIA-only NCCL plugins and no vendor documents RCCL over EFA: RCCL
    would fall back to sockets, or fail to start, on every node, while the generated files say otherwise.
    """
    p = ctx.platform
    if p.backend is None or not p.gpus or collective_library(p) != "rccl" or facts(p.backend.transport).rccl:
        return
    usable = ", ".join(name for name, net in TRANSPORTS.items() if net.rccl)
    yield ctx.finding(f"backend.transport is {p.backend.transport}, which RCCL (the library of this node's AMD GPUs) "
                      f"cannot use", at=("backend", "transport"), hint=f"use one RCCL supports: {usable}")


PCI_PATH_NAME = re.compile(r"(en|ib|sl|wl|ww|roce|iw|rdma)(?:P(\d+))?p(\d+)s(\d+)(?:f(\d+))?(?:n[A-Za-z0-9_]+|d\d+)?")
"""A network interface or RDMA device name made from its PCI location, as systemd's predictable
names (systemd.net-naming-scheme(7): `[P<domain>]p<bus>s<slot>[f<function>]`, `enp23s0f1np1`) and
rdma-core's rdma_rename NAME_PCI (`ibp23s0`, EFA's `rdmap16s27`) write them: every number decimal."""


@rule("HW208", "nic-name-bus",
      hint="copy the name from 'ip link' or 'ibv_devices' on the node, and the bus id from 'lspci -D'")
def nic_name_bus(ctx: Context) -> Iterator[Finding]:
    """A NIC name made from a PCI location (`enp23s0f1`, `ibp23s0`, `rdmap16s27`) names the bus, slot and function of the NIC's bus id.

    Linux writes those numbers in decimal: the device at 0000:17:00.0 (bus 0x17) is `ibp23s0`,
    never `ibp17s0`. A name that says another location is a typo in the name or in the bus id,
    and the generated NCCL_SOCKET_IFNAME or NCCL_IB_HCA would select another device, or none."""
    for nic in in_file_order(ctx.platform, ctx.platform.nics):
        for key, name in (("interface", nic.interface), ("device", nic.device)):
            match = PCI_PATH_NAME.fullmatch(name or "")
            if match is None or nic.bus is None:
                continue
            where = pci_location(nic.bus)
            prefix, domain, bus, slot, function = match.groups()
            said = {"domain": int(domain or 0), "bus": int(bus), "slot": int(slot)}
            if function is not None:
                said["function"] = int(function)
            wrong = [part for part, value in said.items() if where[part] != value]
            if wrong:
                named = ", ".join(f"{part} {said[part]}" for part in wrong)
                actual = ", ".join(f"{part} {where[part]}" for part in wrong)
                yield ctx.finding(f"{nic.id}: {key} {name} names {named}, but its bus id {nic.bus} is {actual} "
                                  f"(Linux writes them in decimal: {prefix}{location_name(where, function is not None)}...)",
                                  at=(nic.id, key))


def pci_location(bus_id: str) -> dict[str, int]:
    """A bus id (`0000:17:00.1`) as the numbers a PCI path name writes: domain, bus, slot, function."""
    domain, bus, rest = bus_id.split(":")
    slot, function = rest.split(".")
    return {"domain": int(domain, 16), "bus": int(bus, 16), "slot": int(slot, 16), "function": int(function, 16)}


def location_name(where: dict[str, int], with_function: bool) -> str:
    """The location part of a PCI path name (`P1p23s0f1`): the domain only when not 0, the
    function only where the name has one."""
    domain = f"P{where['domain']}" if where["domain"] else ""
    function = f"f{where['function']}" if with_function else ""
    return f"{domain}p{where['bus']}s{where['slot']}{function}"
