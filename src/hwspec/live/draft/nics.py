"""The NICs of a draft: one entry per port (a card with `ports:` where they agree), the role and
transport the input shows, the GPUs each backend NIC serves, and `backend:`."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hwspec.formats.nccl_sockets import default_socket_interfaces
from hwspec.live.draft.context import UNKNOWN, DraftContext, Entry, note_assumed
from hwspec.live.draft.pcie import PcieWriter
from hwspec.live.identify import candidates_note, choose
from hwspec.live.observed import NUMA_PREFIX, RDMA_NAME, Nic, NicPort

if TYPE_CHECKING:
    from hwspec.spec.models import NicPart

CXI_NAME = re.compile(r"cxi[0-9]+")
"""The device names HPE's cxi driver gives Slingshot NICs (libfabric's cxi provider)."""
EFA_IDS = ("0x1d0f", frozenset({"0xefa0", "0xefa1", "0xefa2", "0xefa3"}))
"""Amazon's PCI vendor id and the device ids of its EFA functions (pci.ids; ENA, 0xec20, is plain Ethernet)."""


def libfabric_transport(nic: Nic, name: str | None) -> str | None:
    """`slingshot` or `efa` where the input shows a libfabric NIC (a cxi device name, an EFA PCI
    id), whatever NCCL's `<net>` says of its class; None for every other NIC."""
    if name is not None and CXI_NAME.fullmatch(name):
        return "slingshot"
    vendor, devices = EFA_IDS
    if nic.vendor == vendor and nic.device in devices:
        return "efa"
    return None


def _serving(entries: list[Entry], gpu_ids: list[str]) -> list[tuple[Entry, tuple[str, ...]]]:
    """Which GPUs the backend NICs under one bridge serve, from placement alone (NCCL dumps and
    lstopo show no pairing): each NIC serves every GPU under the bridge, which is what the
    placement says (a p5's four EFA devices beside one GPU; a DGX switch's two NICs beside two
    GPUs: pairing them by position would be a guess, and NCCL's own NIC order is no pairing). The
    summed NIC share per GPU is the same either way. NICs with no GPU beside them serve none."""
    if not gpu_ids:
        return []
    return [(entry, tuple(gpu_ids)) for entry in entries]


_PORT_KEYS = ("device", "interface", "port", "_position")
"""What a drafted per-port entry holds of its own; the rest is the card's. `port` is the verbs
port (NCCL_IB_HCA's), `_position` the port's place on its card where the input gives one."""


def _as_card(function: list[tuple[bool, Entry]]) -> list[tuple[bool, Entry]]:
    """The entries of one PCI function's ports as one card with `ports:` when it has several that
    agree on everything but their names and port numbers (one part, role, transport, link); else
    as they are (one entry per port)."""
    if len(function) < 2:
        return function
    shared = [{k: v for k, v in entry.items() if k not in _PORT_KEYS} for _, entry in function]
    if any(rest != shared[0] for rest in shared[1:]) or len({backend for backend, _ in function}) > 1:
        return function
    card = dict(shared[0])
    ports = [{"_port": entry.get("_position", entry.get("port", 1)), **{k: entry[k] for k in ("device", "interface") if k in entry}}
             for _, entry in function]
    if len({p["_port"] for p in ports}) < len(ports):
        return function  # the input numbers two ports alike: kept apart
    items = list(card.items())
    at = [k for k, _ in items].index("pcie")
    card = dict(items[:at] + [("ports", ports)] + items[at:])
    return [(function[0][0], card)]


def _merge_functions(pairs: list[tuple[Nic, Entry]]) -> list[tuple[Nic, Entry]]:
    """Single-port NIC entries that are functions of one PCI device (bus ids alike but for the
    function digit) with the same PCI ids, under the same bridge, agreeing on everything but their
    names, drafted as one card with `ports:`: a multi-function device has one PCIe link (a
    dual-port ConnectX shows each port as a function and mlx5 device of its own). Only a group
    holding function 0 is a device's own ports: SR-IOV virtual functions (another device id, no
    function 0 of theirs) stay apart. In input order otherwise."""
    groups: dict[tuple[str | int, ...], list[tuple[Nic, Entry]]] = {}
    order: list[tuple[str | int, ...]] = []
    for nic, entry in pairs:
        key: tuple[str | int, ...] = (nic.bus.rsplit(".", 1)[0], nic.parent, nic.vendor, nic.device) \
            if nic.bus and nic.vendor and nic.device and "ports" not in entry else ("alone", id(entry))
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append((nic, entry))
    out: list[tuple[Nic, Entry]] = []
    for key in order:
        group = groups[key]
        # a device's own ports start at function 0 (virtual functions of an SR-IOV device do not)
        with_function_0 = any(nic.bus is not None and nic.bus.endswith(".0") for nic, _ in group)
        merged = _functions_as_card(group) if len(group) > 1 and with_function_0 else None
        out.extend([(group[0][0], merged)] if merged is not None else group)
    return out


def _functions_as_card(group: list[tuple[Nic, Entry]]) -> Entry | None:
    """One card for the functions in `group`, each a port (its bus where it is not the card's);
    None when they differ in more than their names (then they stay apart)."""
    def shared(entry: Entry) -> Entry:
        rest = {k: v for k, v in entry.items() if k not in (*_PORT_KEYS, "_key", "_link", "pcie")}
        return {**rest, "pcie": {k: v for k, v in entry["pcie"].items() if k != "bus"}}

    first = group[0][1]
    if any(shared(entry) != shared(first) or entry.get("port", 1) != 1 for _, entry in group):
        return None
    ports = []
    for number, (_nic, entry) in enumerate(group, 1):
        port: Entry = {"_port": number, **{k: entry[k] for k in ("device", "interface") if k in entry}}
        if entry["pcie"]["bus"] != first["pcie"]["bus"]:
            port["bus"] = entry["pcie"]["bus"]
        ports.append(port)
    items = [(k, v) for k, v in first.items() if k not in _PORT_KEYS]
    at = [k for k, _ in items].index("pcie")
    return dict(items[:at] + [("ports", ports)] + items[at:])


class NicsWriter:
    """Writes the NICs (part by PCI ids, transport and speed), pairs backend NICs with the GPUs
    beside them, and declares `backend:` as the input shows it."""

    def __init__(self, ctx: DraftContext, pcie: PcieWriter):
        self.ctx, self.m, self.pcie = ctx, ctx.machine, pcie

    def entries(self) -> tuple[list[Entry], Entry | None]:
        """The NIC entries (backend NICs first, `nic0`...; then the others, `fe0`...) and the
        `backend:` section (None where the input says nothing of a backend)."""
        catalogue = self.ctx.parts("nics")
        gpu_bridges = {self.m.gpus[k].parent for k in self.m.gpus}
        order = self.socket_interfaces_used(sorted(self.m.nics.values(), key=lambda n: (n.bus is None, n.bus or n.key)))
        backend_entries: list[tuple[Nic, Entry]] = []
        other_pairs: list[tuple[Nic, Entry]] = []
        stated = [g.gdr for g in self.m.gpus.values() if g.gdr is not None]
        gpus_gdr = all(stated) if stated else None  # the GPUs' gdr as the input states it: backend.gpudirect below
        for nic in order:
            parent = self.busless_parent(nic) if nic.bus is None and self.m.has_tree else nic.parent
            near_gpu = nic.parent in gpu_bridges and nic.parent in self.m.bridges
            ports: list[NicPort | None] = [*nic.ports] or [None]
            function = [self.port_entry(nic, port, parent, near_gpu, gpus_gdr, catalogue) for port in ports]
            for is_backend, entry in _as_card(function):
                (backend_entries if is_backend else other_pairs).append((nic, entry))
        # the functions .0, .1, ... of one PCI device are its ports, on its one link (a ConnectX card)
        backend_entries = _merge_functions(backend_entries)
        other_entries = [entry for _, entry in _merge_functions(other_pairs)]
        self.name_entries([e for _, e in backend_entries], other_entries)
        served = self.pair_with_gpus(backend_entries)
        return [e for _, e in backend_entries] + other_entries, self.backend(backend_entries, served)

    def socket_interfaces_used(self, nics: list[Nic]) -> list[Nic]:
        """`nics` less the interfaces without a PCI device that NCCL's socket transport does not
        take when NCCL_SOCKET_IFNAME is unset (`default_socket_interfaces` over every interface
        the input names: a docker or libvirt bridge, the loopback, beside others), each left out
        with a note; a NIC left with no port is left out whole. Such an interface is known by its
        name alone, and NCCL lists it only where NCCL_SOCKET_IFNAME named it."""
        names = [p.name for n in nics for p in n.ports if p.name and not RDMA_NAME.match(p.name)]
        used = set(default_socket_interfaces(names))
        kept: list[Nic] = []
        for nic in nics:
            unused = [p for p in nic.ports if nic.bus is None and p.name and not RDMA_NAME.match(p.name) and p.name not in used]
            if unused:
                self.ctx.notes.append(f"{nic.where}: {', '.join(p.name or '' for p in unused)} left out: no PCI device, and "
                                      "NCCL's socket transport does not take such an interface unless NCCL_SOCKET_IFNAME names it "
                                      "(it takes ib* first, else every interface but docker*, lo* and virbr*)")
            if not unused:
                kept.append(nic)
            elif len(unused) < len(nic.ports):
                kept.append(replace(nic, ports=[p for p in nic.ports if p not in unused]))
        return kept

    def port_entry(self, nic: Nic, port: NicPort | None, parent: str, near_gpu: bool, gpus_gdr: bool | None,
                   catalogue: dict[str, NicPart]) -> tuple[bool, Entry]:
        """(whether it is a backend NIC, its entry) for one port of `nic` (None: the input lists
        no port), drafted under `parent`; the entry's id is given later (`name_entries`)."""
        assumed: list[str] = []
        name = port.name if port is not None else None
        gdr = port.gdr if port is not None else None
        if name is not None:
            rdma_name = bool(RDMA_NAME.match(name))
        elif "rdma-nics" in self.m.listed:
            rdma_name = False  # the inputs list every RDMA device, and this function has none
        else:  # a skeleton: NCCL lists the PCI device only
            rdma_name = nic.fabric == "infiniband" or near_gpu or bool(gdr)
        libfabric = libfabric_transport(nic, name)
        rdma_name = rdma_name or libfabric is not None
        is_backend = bool(gdr) or rdma_name  # NCCL runs on every RDMA device, GPUDirect or not
        if libfabric is not None:
            transport = libfabric
        elif not rdma_name:
            transport = "tcp"
        elif nic.fabric == "infiniband":
            transport = "infiniband"
        else:
            transport = "rocev2"
        speed = port.speed if port is not None else None
        part, override = self.nic_part(nic, speed, transport, gdr)
        known = catalogue.get(part)
        if gdr is not None and known is not None and transport != "tcp" \
                and (known.gpudirect != gdr or (gpus_gdr is not None and gpus_gdr != gdr)):
            # the machine's gdr where it is not the part's or not the GPUs': written, and HW207 compares
            override = {**(override or {}), "gpudirect": gdr}
        entry: dict[str, Any] = {"id": "", "part": part}
        if override:
            entry["override"] = override
        entry["role"] = "backend" if is_backend else "ingestion" if transport == "tcp" else "frontend"
        entry["transport"] = transport
        # a name the input does not give is left out, never a placeholder: NCCL finds an
        # unnamed RDMA device by its bus id, and an unknown interface is HW603's
        if transport != "tcp" and name:
            entry["device"] = name
        if interface := self.interface(nic, port, transport, name):
            entry["interface"] = interface
        if port is not None and port.port != 1:
            entry["port"] = port.port
        if port is not None and port.position is not None:
            entry["_position"] = port.position
        link: Entry | None
        trained: tuple[int, int] | None
        if nic.shown_as:  # the sandbox's bridge function: its link is what NCCL reads, the NIC's own is a guess
            link, pcie_override, trained = self.pcie.sandboxed_link(nic, assumed)
        else:
            link, pcie_override, trained = self.pcie.device_link(nic.link, known.pcie if known else None, assumed, "NIC")
        if pcie_override:
            entry.setdefault("override", {})["pcie"] = pcie_override
        upstream = self.ctx.upstream(parent, nic.key)
        if parent != nic.parent:  # an assumed place, which diff does not take for a fact
            moved = (f"the input shows it under the bridge {nic.parent} without a PCI device of its own: "
                     "attached to the bridge's CPU, as NCCL attaches a NIC that is no PCI device")
            upstream = {"value": upstream["value"], "assumed": f"{upstream['assumed']}; {moved}"} \
                if isinstance(upstream, dict) else {"value": upstream, "assumed": moved}
        entry["pcie"] = {"upstream": upstream, "bus": self.ctx.bus(nic.bus)}
        if link:
            entry["pcie"]["link"] = link
        entry["_link"], entry["_key"] = trained, nic.key
        note_assumed(entry, assumed)
        return is_backend, entry

    def name_entries(self, backend_entries: list[Entry], other_entries: list[Entry]) -> None:
        """Give the entries their ids (`nic0`..., `fe0`...) and their ports theirs (`nic0p1`),
        and record their machine keys and trained links in the context."""
        for i, entry in enumerate(backend_entries):
            entry["id"] = f"nic{i}"
        for i, entry in enumerate(other_entries):
            entry["id"] = f"fe{i}"
        for entry in (*backend_entries, *other_entries):
            for position, port in enumerate(entry.get("ports", ())):
                number = port.pop("_port")
                port["id"] = f"{entry['id']}p{number}"
                port.update({k: port.pop(k) for k in ("device", "interface", "bus") if k in port})  # after the id
                if number != position + 1:
                    port["port"] = number
        for entry in (*backend_entries, *other_entries):
            entry.pop("_position", None)
            trained = entry.pop("_link")
            if trained:
                self.ctx.links[entry["id"]] = trained
            self.ctx.ids.setdefault(entry.pop("_key"), entry["id"])  # a function's first port names it

    def pair_with_gpus(self, backend_entries: list[tuple[Nic, Entry]]) -> set[str]:
        """Write the GPUs each backend NIC serves (`gpu:`/`gpus:` after its transport): those
        below the lowest bridge above it that has any (the GPUs NCCL finds nearest, PIX or PXB:
        a GPU and a NIC on two downstream ports of one PEX switch). The ids of the GPUs served."""
        gpus_by_bridge: dict[str, list[str]] = {}
        for gpu in self.m.gpus_in_order():
            for bridge in self.pcie.bridges_above(gpu.parent):
                gpus_by_bridge.setdefault(bridge, []).append(self.ctx.ids[gpu.key])
        by_bridge: dict[str, list[Entry]] = {}
        for nic, entry in backend_entries:
            # on a NUMA node itself, a NIC is placed beside no GPU
            nearest = next((b for b in self.pcie.bridges_above(nic.parent) if b in gpus_by_bridge), None) if nic.bus else None
            if nearest is not None:
                by_bridge.setdefault(nearest, []).append(entry)
        served: set[str] = set()
        for bridge, entries in by_bridge.items():
            for entry, gpu_ids in _serving(entries, gpus_by_bridge.get(bridge, [])):
                pairing = ("gpu", gpu_ids[0]) if len(gpu_ids) == 1 else ("gpus", list(gpu_ids))
                for target in entry.get("ports") or [entry]:
                    items = list(target.items())
                    keys = [k for k, _ in items]
                    at = keys.index("transport") + 1 if "transport" in keys else keys.index("id") + 1
                    target.clear()
                    target.update(items[:at] + [pairing] + items[at:])
                served.update(gpu_ids)
        return served

    def backend(self, backend_entries: list[tuple[Nic, Entry]], served: set[str]) -> Entry | None:
        """`backend:` as the input shows it: its transport (the backend NICs' most common),
        `nic_per_gpu` where every GPU has NICs of its own, and whether GPUDirect RDMA works (the
        GPUs' gdr, else the NICs'; `detect` where the input does not say). None without backend
        NICs or any gdr. `served`: the GPUs some backend NIC serves."""
        dedicated = (all("gpu" in p for _, e in backend_entries for p in e.get("ports") or [e])
                     and len(served) == len(self.m.gpus))
        backend: dict[str, Any] | None = None
        gdr_values = [g.gdr for g in self.m.gpus.values() if g.gdr is not None]
        if len(set(gdr_values)) > 1:  # one backend.gpudirect holds the GPUs' side: say which GPUs it overrides
            on = ", ".join(g.key for g in self.m.gpus_in_order() if g.gdr)
            self.ctx.notes.append(f"the input gives gdr 1 for GPU(s) {on} and gdr 0 for the others: backend.gpudirect "
                                  "(one value for every GPU) is drafted false, so nccl-topo.xml writes gdr 0 for them all")
        if backend_entries or gdr_values:  # the input says whether GPUDirect works: the backend declares it, as it is
            transports = Counter(e["transport"] for _, e in backend_entries)
            if gdr_values:
                gpudirect = all(gdr_values)
            else:
                gpudirect = any(p.gdr for n, _ in backend_entries for p in n.ports)
            backend = {"transport": transports.most_common(1)[0][0] if transports else "tcp"}
            if backend_entries and dedicated:
                backend["nic_per_gpu"] = True
            if gpudirect:
                backend["gpudirect"] = True
            elif not gdr_values and not any(p.gdr is not None for n, _ in backend_entries for p in n.ports):
                backend["gpudirect"] = "detect"
                backend["assumed"] = "the input does not say whether GPUDirect RDMA works (no gdr attribute): left to NCCL's detection"
            backend["source"] = f"observed: {self.ctx.source()}"
        return backend

    def busless_parent(self, nic: Nic) -> str:
        """Where a NIC without a PCI device in a PCIe tree (an NCCL `<nic>` directly under `<cpu>`,
        as NCCL writes a virtio NIC or Azure's eth0, or under a bridge a sandbox shows) is drafted:
        on its CPU, as NCCL attaches such a NIC, with `bus: unknown`. nccl-topo.xml leaves one
        outside the backend to NCCL's detection and writes a backend one under its `<cpu>`."""
        names = [p.name for p in nic.ports if p.name] or ["a NIC"]
        numa = self.m.numa_of(nic.key)
        self.ctx.notes.append(f"{nic.where}: {', '.join(names)} {'has' if len(names) == 1 else 'have'} no PCI device in the input "
                              "(virtual, fused, or hidden by a sandbox): drafted with bus unknown on its CPU, where NCCL attaches it")
        return nic.parent if nic.parent.startswith(NUMA_PREFIX) or numa is None else f"{NUMA_PREFIX}{numa}"

    @staticmethod
    def interface(nic: Nic, port: NicPort | None, transport: str, name: str | None) -> str | None:
        """The network interface of one NIC port as the input names it, where the generated files
        would use it (a TCP NIC's net name; an lstopo interface of a RoCE or Slingshot NIC); else None."""
        if transport == "tcp" and name:
            return name
        if transport in ("rocev2", "tcp", "slingshot") and nic.interfaces:
            return nic.interfaces[min(len(nic.interfaces), (port.position or port.port if port else 1)) - 1]
        return None

    def nic_part(self, nic: Nic, speed: float | None, transport: str, gdr: bool | None) -> tuple[str, Entry | None]:
        """(`part`, `override`) of one NIC port: the one catalogue NIC with the observed PCI
        vendor/device that runs the transport (at the observed speed, where the input gives one),
        as `identify.choose` settles ties; else `unknown` with what the input gives: the PCI ids,
        the speed, RDMA and GPUDirect (and a note naming the tied parts)."""
        if nic.vendor and nic.device:
            matches = [n for n, p in self.ctx.parts("nics").items() if (p.pci_vendor, p.pci_device) == (nic.vendor, nic.device)
                       and transport in p.transports and (speed is None or p.speed == speed)]
            chosen = choose(self.ctx.catalogue, "nics", matches, None)
            if chosen.part:
                return chosen.part, None
            note = candidates_note(f"{nic.where}", f"the NIC {nic.vendor}:{nic.device}", chosen.candidates)
            if chosen.candidates and note not in self.ctx.notes:  # once per function, not per port
                self.ctx.notes.append(note)
        seen: dict[str, Any] = {"pci_vendor": nic.vendor, "pci_device": nic.device,
                                "speed": None if speed is None else f"{speed * 8 / 1e9:g} Gb/s",
                                "rdma": True if transport != "tcp" else None, "gpudirect": gdr}
        return UNKNOWN, {k: v for k, v in seen.items() if v is not None} or None
