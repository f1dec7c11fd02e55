"""A live machine against its platform file (`hwspec diff`): one finding per difference,
located at the line of the spec that says otherwise, with both values and the input line
that shows the machine's.

Matching: with a PCIe tree in the inputs (NCCL dump, lstopo), GPUs and NICs are matched by bus
id and NUMA nodes by number; with `nvidia-smi topo -m` alone, GPUs by order and NICs by name.
Only what the inputs show is compared: a value they do not give is never a difference.
"""

from __future__ import annotations

from collections.abc import Collection

from hwspec.cpulist import format_cpu_list as cpu_list
from hwspec.diagnostics import Code, Diagnostic, Location, Severity
from hwspec.formats.nccl_tree import net_gdr
from hwspec.formats.transports import facts
from hwspec.live.observed import CPU, NUMA_PREFIX, NVSWITCH, Machine, NicPort, NvlinkDomain, PciNode
from hwspec.live.observed import Gpu as ObservedGpu
from hwspec.live.observed import Nic as ObservedNic
from hwspec.model.node import Bridge, Nic, PcieDevice, PcieLink, Platform
from hwspec.text import visible
from hwspec.topology import topology_of
from hwspec.topology.node import served_field

DIFF_CODES = tuple(code for code in Code if code.value.startswith("D") and code is not Code.NVLINK_DOMAIN_CLIQUE)
"""The codes of `diff`'s findings, D101-D113: errors (D114 is `fleet-report`'s)."""

REGISTERED = "Completed"
"""The fabric state of a GPU whose registration with the fabric manager finished (NVML, nvidia-smi -q)."""
GDR_HINT = "load nvidia-peermem (or nv_peer_mem) and check the ACS settings of the switches"
FABRIC_HINT = ("start the fabric manager and IMEX ('systemctl status nvidia-fabricmanager nvidia-imex') and check "
               "'nvidia-smi -q' (Fabric: State, CliqueId, ClusterUUID)")


def nvlink_leaves_the_node(platform: Platform) -> bool:
    """Whether the platform's GPUs reach NVLink switches outside the node: Grace superchips
    (every GPU attached to a CPU over NVLink-C2C) whose NVLinks go to NVSwitches the node's OS
    does not show (`nvlink: {topology: nvswitch}`, no switch with a bus id), as a GB200/GB300
    NVL72 or GH200 NVL32 tray is written. No Grace board has its NVSwitches on the board, so
    such a node is one of a multi-node NVLink domain and its GPUs must show one."""
    board = platform.baseboard
    return (bool(platform.gpus) and platform.nvlink_topology == "nvswitch"
            and all(gpu.c2c_socket is not None for gpu in platform.gpus)
            and (board is None or all(switch.bus is None for switch in board.nvswitches)))


def node_fabric(gpus: Collection[ObservedGpu]) -> NvlinkDomain | None:
    """The NVLink domain and clique every one of `gpus` (observed) shows, or None when one
    shows none or two differ (the node then has no one clique)."""
    domains = {(g.fabric.cluster_uuid, g.fabric.clique_id) if g.fabric else None for g in gpus}
    if len(domains) != 1 or None in domains:
        return None
    return next(g.fabric for g in gpus)


class _Differ:
    def __init__(self, platform: Platform, machine: Machine):
        self.p, self.m = platform, machine
        self.findings: list[Diagnostic] = []
        self.gpu_key: dict[str, str] = {}  # spec GPU id -> machine key
        self.nic_key: dict[str, str] = {}
        self.nic_port: dict[str, NicPort] = {}  # spec NIC id -> its port of the machine's NIC (`match_ports`)

    def add(self, code: Code, at: Location, message: str, seen: Location | None = None, hint: str | None = None) -> None:
        related = ((seen, "observed here"),) if seen else ()
        if seen:
            message += f" (seen at {seen})"
        # the message quotes the inputs (names, file names): `visible` keeps the finding on one line
        self.findings.append(Diagnostic(at.file, at.line, at.col, Severity.ERROR, code, visible(message), hint, code.printed_name, related))

    # ------------------------------------------------------------ matching

    def match(self) -> None:
        m, p = self.m, self.p
        tree = m.has_tree
        if tree or m.flat_buses:  # nvidia-smi -q -x: GPU bus ids without a tree
            by_bus = {g.bus: g.key for g in m.gpus.values() if g.bus}
            for gpu in p.gpus:
                if gpu.bus in by_bus:
                    self.gpu_key[gpu.id] = by_bus[gpu.bus]
        else:
            observed = sorted(m.gpus.values(), key=lambda g: g.index or 0)
            for gpu, seen in zip(p.gpus, observed):
                self.gpu_key[gpu.id] = seen.key
        nic_by_bus = {n.bus: n.key for n in m.nics.values() if n.bus}
        nic_by_name = {name: n.key for n in m.nics.values() for name in [*(q.name for q in n.ports if q.name), *n.interfaces]}
        for nic in p.nics:
            key = nic_by_bus.get(nic.bus) if tree and nic.bus is not None else None
            names = {x for x in (nic.device, nic.interface) if x}
            if key is not None and names and self.m.nics[key].ports and not (
                    {q.name for q in self.m.nics[key].ports} | set(self.m.nics[key].interfaces)) & names:
                key = None  # the bus holds another NIC now: look for this one by name
            if key is None:
                key = nic_by_name.get(nic.device or "") or nic_by_name.get(nic.interface or "")
            if key is not None:
                self.nic_key[nic.id] = key
        self.match_unnamed_nics()
        self.match_ports()
        source = ", ".join(file for file, _ in m.sources)
        for gpu in p.gpus:
            if gpu.id not in self.gpu_key:
                what = f"bus id {gpu.bus}" if tree or m.flat_buses else "its position"
                self.add(Code.MISSING_DEVICE, p.locate(gpu.id),
                         f"{gpu.id} ({gpu.model_name}, {gpu.bus}) is not in the machine: no GPU at {what} in {source}")
        for nic in p.nics:
            if nic.id in self.nic_key or (nic.role == "management"):
                continue
            kind = "rdma-nics" if facts(nic.transport).net_name == "device" else "tcp-nics"
            if kind not in m.listed:
                continue  # the inputs do not list such NICs: their absence says nothing
            written = "/".join(x for x in (nic.device, nic.interface) if x) or "unnamed"
            missing = (f"no NIC with bus id {nic.bus}" if tree else f"no NIC with name {written}" if nic.device or nic.interface
                       else "no unnamed NIC left")
            self.add(Code.MISSING_DEVICE, p.locate(nic.id), f"{nic.id} ({written}, {nic.bus}) is not in the machine: {missing} in {source}")
        matched_gpus = set(self.gpu_key.values())
        for key, observed_gpu in m.gpus.items():
            if key not in matched_gpus:
                self.add(Code.EXTRA_DEVICE, p.locate(None, "gpus"), f"the machine has a GPU the spec does not describe: "
                         f"{observed_gpu.bus or key} ({observed_gpu.vendor or '?'}:{observed_gpu.device or '?'})", observed_gpu.where)
        matched_nics = set(self.nic_key.values())
        spec_buses = {n.bus for n in p.nics} | {s.bus for s in p.ssds}
        for key, observed_nic in m.nics.items():
            if key not in matched_nics and (not tree or observed_nic.bus not in spec_buses) and (observed_nic.bus or not tree):
                port_names = ", ".join(q.name for q in observed_nic.ports if q.name) or "unnamed"
                self.add(Code.EXTRA_DEVICE, p.locate(None, "nics"), f"the machine has a NIC the spec does not describe: "
                         f"{observed_nic.bus or key} ({port_names})", observed_nic.where)
        spec_numa = {s.os_node: s for s in p.sockets}
        for socket in p.sockets:
            if "numa" in m.listed and socket.os_node not in m.numa:
                self.add(Code.MISSING_DEVICE, p.locate(socket.id, "numa_node"),
                         f"{socket.id}: NUMA node {socket.numa_node} is not in the machine (it has {sorted(m.numa)})")
        for numa, node in m.numa.items():
            if numa not in spec_numa:
                self.add(Code.EXTRA_DEVICE, p.locate(None, "sockets"), f"the machine has NUMA node {numa}, which no socket of the spec is",
                         node.where)

    def match_unnamed_nics(self) -> None:
        """Without a PCIe tree (`topo -m`), NICs the input does not name (a column without a
        legend) are matched in order with the spec's NICs that name neither a device nor an
        interface (as an import draft leaves them): a name neither side knows cannot differ."""
        if self.m.has_tree:
            return
        matched = set(self.nic_key.values())
        unnamed = [n.key for n in self.m.nics.values()
                   if n.key not in matched and not any(q.name for q in n.ports) and not n.interfaces]
        nameless = [nic.id for nic in self.p.nics if nic.id not in self.nic_key and not (nic.device or nic.interface)]
        for ident, key in zip(nameless, unnamed):
            self.nic_key[ident] = key

    def match_ports(self) -> None:
        """Each spec NIC's port among the ports of the machine's NIC it matched, one to one (a
        card's ports are spec NICs of one machine NIC; a dump lists the nets without a PCI device
        under one `<nic>`): by name (device or interface) first, then by port number, then the
        ports left in order. A port serves one spec NIC at most, so each is compared once."""
        by_key: dict[str, list[Nic]] = {}
        for nic in self.p.nics:
            if nic.id in self.nic_key:
                by_key.setdefault(self.nic_key[nic.id], []).append(nic)
        for key, nics in by_key.items():
            free = list(self.m.nics[key].ports)
            rules = (lambda nic, q: q.name is not None and q.name in (nic.device, nic.interface),
                     lambda nic, q: (q.position or q.port if nic.card else q.port) == nic.port,
                     lambda nic, q: True)
            for rule in rules:
                for nic in nics:
                    if nic.id in self.nic_port:
                        continue
                    port = next((q for q in free if rule(nic, q)), None)
                    if port is not None:
                        self.nic_port[nic.id] = port
                        free.remove(port)

    # ------------------------------------------------------------ checks

    def observed_buses(self, key: str) -> list[str]:
        buses = [self.m.bridges[k].bus for k in self.m.ancestors(key) if k in self.m.bridges]
        return [bus for bus in buses if bus]

    def observed_chain(self, key: str) -> list[str | None]:
        """Bus ids of the observed bridges above `key`, nearest first (None: a bridge without one)."""
        return [self.m.bridges[k].bus for k in self.m.ancestors(key) if k in self.m.bridges]

    def spec_chain(self, ident: str) -> list[tuple[str, str | None]]:
        """(id, bus) of the spec's bridges above `ident`, nearest first (the topology's query)."""
        bridges = self.p.bridge_by_id
        return [(b, bridges[b].bus) for b in topology_of(self.p).bridges_above(ident)]

    def placement(self, ident: str, device: PcieDevice, seen: PciNode) -> None:
        """D103 when the chain of bridges above the device differs from the spec's: another
        length, or another bus id at a level where both give one. The socket at the chain's
        top is D104's (`numa`)."""
        if not self.m.has_tree:
            return
        spec = self.spec_chain(ident)
        if not spec and seen.bus is None and device.bus is None:
            return  # no PCI device in the machine, on its CPU in the spec: where NCCL attaches such a NIC
        observed = self.observed_chain(seen.key)
        same = len(spec) == len(observed) and all(
            mine is None or theirs is None or mine == theirs for (_, mine), theirs in zip(spec, observed)) and (
            device.bus is None or seen.bus is None or device.bus == seen.bus)  # a NIC found by its name elsewhere
        if same:
            return
        socket_id = self.p.bridge_by_id[spec[-1][0]].upstream if spec else device.upstream
        spec_text = " < ".join([f"{b} ({bus})" for b, bus in spec] + [socket_id])
        numa = self.m.numa_of(seen.key)
        observed_text = " < ".join([bus or "a bridge without bus id" for bus in observed]
                                   + [f"NUMA node {numa}" if numa is not None and numa >= 0 else "an unknown NUMA node"])
        moved = f"{seen.bus} " if seen.bus and seen.bus != device.bus else ""
        self.add(Code.DEVICE_PLACEMENT, self.p.locate(ident, "pcie", "upstream"),
                 f"{ident} ({device.bus}) is under {spec_text} in the spec, but {moved}under {observed_text} in the machine",
                 seen.where)

    def numa(self, ident: str, device: PcieDevice, seen: PciNode) -> None:
        """D104 when the device's NUMA node differs from the spec's. A machine that gives none
        (-1) differs from a spec that states one, not from one that assumes it (an import draft)
        nor from a spec of one NUMA node where the machine shows no other."""
        observed = self.m.numa_of(seen.key)
        if observed is None or device.numa_node is None:
            return
        if observed < 0 and (self.placement_assumed(ident, device) or self.one_numa_node()):
            return
        if observed != device.numa_node:
            self.add(Code.NUMA_NODE, self.p.locate(ident, "pcie", "upstream"),
                     f"{ident} is on NUMA node {device.numa_node} in the spec, but on NUMA node {observed} in the machine", seen.where)

    def one_numa_node(self) -> bool:
        """Whether the spec has one NUMA node and the machine shows no other: a device there
        without a NUMA node (-1, as Linux and NCCL report on a one-node machine) is on it."""
        spec_nodes = {s.os_node for s in self.p.sockets}
        return len(spec_nodes) == 1 and {n for n in self.m.numa if n >= 0} <= spec_nodes

    def placement_assumed(self, ident: str, device: PcieDevice) -> bool:
        """Whether the spec marks as `assumed` the socket the device's chain of bridges hangs from."""
        chain = self.spec_chain(ident)
        provenance = self.p.provenance(chain[-1][0], "upstream") if chain else self.p.provenance(ident, "pcie", "upstream")
        return provenance is not None and provenance.assumed is not None

    def link(self, ident: str, item: PcieDevice | Bridge, seen: PciNode, at: Location) -> None:
        """D105 when the observed link is slower or narrower than the spec's: than both its
        presented and its physical form when they differ (a VM shows the presented one)."""
        link = seen.link
        if link is None:
            return
        forms = [form for form in (item.link, item.physical) if form is not None]
        forms = list(dict.fromkeys(forms))
        if link.down:
            spec = f"{forms[-1]} in the spec, but " if forms else ""
            self.add(Code.PCIE_LINK, at, f"{ident}: PCIe link is {spec}down in the machine ({link.down})", seen.where,
                     "the link did not train: reseat the card, check the slot, its riser and cables, then reboot")
            return
        if not forms:
            return

        def below(form: PcieLink) -> list[str]:
            problems = []
            if link.gen is not None and link.gen < form.gen:
                problems.append("slower")
            if link.width is not None and link.width < form.width:
                problems.append("narrower")
            if link.gen is None and link.width is None and link.below(form.bandwidth):
                problems.append("slower")
            return problems

        verdicts = [below(form) for form in forms]
        if all(verdicts):
            self.add(Code.PCIE_LINK, at, f"{ident}: PCIe link is {forms[-1]} in the spec, but {link} in the machine "
                     f"({' and '.join(verdicts[-1])})", seen.where, "reseat the card, check the slot's lanes and the BIOS link settings")

    def devices(self) -> None:
        p = self.p
        for gpu in p.gpus:
            key = self.gpu_key.get(gpu.id)
            if key is None:
                continue
            seen = self.m.gpus[key]
            self.placement(gpu.id, gpu, seen)
            self.numa(gpu.id, gpu, seen)
            self.link(gpu.id, gpu, seen, p.locate(gpu.id, "pcie", "link"))
            if seen.vendor and seen.device and (seen.vendor, seen.device) != (gpu.pci_vendor, gpu.pci_device):
                self.add(Code.DEVICE_MODEL, p.locate(gpu.id, "part"), f"{gpu.id} is a {gpu.part} ({gpu.pci_vendor}:{gpu.pci_device}) in the spec, "
                         f"but {seen.vendor}:{seen.device} in the machine", seen.where)
        for nic in p.nics:
            key = self.nic_key.get(nic.id)
            if key is None:
                continue
            seen_nic = self.m.nics[key]
            self.placement(nic.id, nic, seen_nic)
            self.numa(nic.id, nic, seen_nic)
            self.link(nic.id, nic, seen_nic, p.locate(nic.id, "pcie", "link"))
            port = self.nic_port.get(nic.id)
            self.port_state(nic, seen_nic, port)
            if port is not None:
                if port.speed is not None and nic.speed is not None and port.speed < nic.speed:
                    self.add(Code.NIC_IDENTITY, p.locate(nic.id, "part"), f"{nic.id} runs at {nic.speed * 8 / 1e9:g} Gb/s in the spec, "
                             f"but at {port.speed * 8 / 1e9:g} Gb/s in the machine", port.where)
                spec_names = {x for x in (nic.device, nic.interface) if x}
                if port.name and spec_names and port.name not in spec_names:
                    self.add(Code.NIC_IDENTITY, p.locate(nic.id, "device" if nic.device else "interface"),
                             f"{nic.id} is named {' / '.join(sorted(spec_names))} in the spec, but {port.name} in the machine", port.where)
        for bridge in p.bridges:
            seen_bridge = self.m.bridges.get(bridge.bus) if self.m.has_tree and bridge.bus is not None else None
            if seen_bridge is not None:
                self.link(bridge.id, bridge, seen_bridge, p.locate(bridge.id, "link"))

    def port_state(self, nic: Nic, seen: ObservedNic, port: NicPort | None) -> None:
        """D112 when the inputs list every port (sysfs) and the spec's port is absent or not up."""
        if "nic-ports" not in self.m.listed or nic.role == "management":
            return
        at = self.p.locate(nic.id, "device" if nic.device else "interface" if nic.interface else "part")
        name = "/".join(x for x in (nic.device, nic.interface) if x) or nic.id
        if port is None:
            listed = ", ".join(str(q.port) for q in seen.ports) or "none"
            self.add(Code.NIC_PORT, at, f"{nic.id}: port {nic.port} of {name} is not in the machine (its ports: {listed})", seen.where,
                     "check the cable and the HCA's firmware ('ibstat', 'mlxlink')")
        elif port.up is False:
            self.add(Code.NIC_PORT, at, f"{nic.id}: port {port.port} of {name} is up in the spec, but not up in the machine", port.where,
                     "check the cable, the switch port and the subnet manager ('ibstat', 'ip link')")

    def nic_gpu_switch(self) -> None:
        for nic in self.p.backend_nics:
            for gpu_id in nic.gpus:
                self.nic_gpu_pair(nic, gpu_id)

    def nic_gpu_pair(self, nic: Nic, gpu_id: str) -> None:
        """One GPU-NIC pair of the spec on one PCIe switch is still on one in the machine."""
        if nic.id not in self.nic_key or gpu_id not in self.gpu_key:
            return
        if topology_of(self.p).common_bridge(nic.id, gpu_id) is None:
            return  # the spec puts them on no common switch either (a C2C GPU's NIC on its own CPU: P2C)
        at = self.p.locate(*served_field(self.p, nic, gpu_id))
        nic_key, gpu_key = self.nic_key[nic.id], self.gpu_key[gpu_id]
        seen = self.m.nics[nic_key]
        if self.m.has_tree:
            upstream = self.p.by_id.get(nic.upstream)
            shared = set(self.m.ancestors(nic_key)) & set(self.m.ancestors(gpu_key))
            shared_bridges = [k for k in shared if not k.startswith(NUMA_PREFIX)]
            if not shared_bridges:
                gpu_at = self.observed_buses(gpu_key)
                nic_at = self.observed_buses(nic_key)
                self.add(Code.NIC_GPU_SWITCH, at,
                         f"{nic.id} serves {gpu_id}: both under {nic.upstream} ({getattr(upstream, 'bus', '?')}) in the spec, "
                         f"but in the machine {nic.id} is under {nic_at[0] if nic_at else 'a CPU'} and {gpu_id} under "
                         f"{gpu_at[0] if gpu_at else 'a CPU'}: no PCIe switch in common", seen.where,
                         "GPU-NIC traffic now crosses the CPU: move the NIC back, or fix the spec")
        else:
            path = self.m.paths.get((gpu_key, nic_key)) or self.m.paths.get((nic_key, gpu_key))
            if path is not None and path[0] not in ("PIX", "PXB"):
                self.add(Code.NIC_GPU_SWITCH, at,
                         f"{nic.id} serves {gpu_id} on one PCIe switch in the spec, but the path between them is "
                         f"{path[0]} in the machine", path[1])

    def nvlinks(self) -> None:
        if "nvlinks" not in self.m.listed:
            return  # no input shows NVLinks (lstopo without hwloc's NVLink matrix, an NCCL skeleton)
        counts = self.m.nvlink_counts()
        at = self.p.locate(None, "nvlink")
        gpu_ids = {g.id for g in self.p.gpus}
        switch_bus = {s.id: s.bus for s in (self.p.baseboard.nvswitches if self.p.baseboard else ())}
        observed_switches = self.m.nvswitch_links()
        unknown = {key for key, gpu in self.m.gpus.items() if "nvlinks" in gpu.unknown}
        for link in self.p.nvlinks:
            a = self.gpu_key.get(link.a)
            if a is None or a in unknown or self.gpu_key.get(link.b) in unknown:
                continue
            if link.b not in gpu_ids:  # to an NVSwitch: per switch where both name it, else the GPU's total
                bus = switch_bus.get(link.b)
                per_switch = observed_switches.get(a, {})
                have = counts.get((a, NVSWITCH))
                if bus is not None and bus in per_switch:
                    observed, spec_links, what = per_switch[bus], link.links, f"to NVSwitch {link.b} ({bus})"
                    place = self.p.locate(link.b)
                    have = (observed, next(l.where for l in self.m.nvlinks if l.gpu == a and l.switch == bus))
                elif bus is not None and per_switch and None not in per_switch:
                    observed, spec_links, what = 0, link.links, f"to NVSwitch {link.b} ({bus})"
                    place = self.p.locate(link.b)
                else:
                    if link.b != next((c.b for c in self.p.nvlinks if c.a == link.a and c.b not in gpu_ids), None):
                        continue  # the GPU's total is compared once
                    spec_links = sum(c.links for c in self.p.nvlinks if c.a == link.a and c.b not in gpu_ids)
                    observed, what, place = (have[0] if have else 0), "to the NVSwitches", at
                    if have is None:  # topo -m of a small NVSwitch board: each pair shows the GPU's links to the switches
                        pairs = [(c, w) for (g, t), (c, w) in counts.items() if g == a and t != NVSWITCH]
                        if pairs:
                            observed, where = max(pairs, key=lambda cw: cw[0])
                            have = (observed, where)
                if observed < spec_links:
                    self.add(Code.NVLINK_COUNT, place, f"{link.a} has {spec_links} NVLinks {what} in the spec, but {observed} in the machine",
                             have[1] if have else None, "an NVLink down: check 'nvidia-smi nvlink --status' and the baseboard")
                continue
            b = self.gpu_key.get(link.b)
            if b is None:
                continue
            forward, backward = counts.get((a, b)), counts.get((b, a))
            observed = min(forward[0] if forward else 0, backward[0] if backward else 0) if (forward or backward) else 0
            seen_at = (forward or backward or (0, None))[1]
            if observed < link.links:
                place = self.p.locate(None, "nvlink", "topology", link.entry) if link.entry is not None else at
                self.add(Code.NVLINK_COUNT, place, f"{link.a}-{link.b}: {link.links} NVLinks in the spec, but {observed} in the machine", seen_at,
                         "an NVLink down: check 'nvidia-smi nvlink --status' and the baseboard")

    def cpu_nvlinks(self) -> None:
        """Each GPU's NVLinks to its CPU (POWER8/POWER9) against `nvlink.cpu_links`, either way: a
        link the spec leaves out is one NCCL's file does not give, so NCCL routes host traffic over
        PCIe. Compared only where the inputs list them (an NCCL dump with `<gpu>`, hwloc's matrix)."""
        if "cpu-nvlinks" not in self.m.listed:
            return
        counts = self.m.nvlink_counts()
        unknown = {key for key, gpu in self.m.gpus.items() if "nvlinks" in gpu.unknown}
        written = {link.gpu: link for link in self.p.cpu_nvlinks}
        for gpu in self.p.gpus:
            key = self.gpu_key.get(gpu.id)
            if key is None or key in unknown:
                continue
            spec = sum(link.links for link in self.p.cpu_nvlinks if link.gpu == gpu.id)
            observed, seen = counts.get((key, CPU), (0, None))
            if observed == spec:
                continue
            link = written.get(gpu.id)
            place = (self.p.locate(None, "nvlink", "cpu_links", link.entry) if link is not None
                     else self.p.locate(None, "nvlink") if self.p.nvlink_topology != "none" else self.p.locate(gpu.id))
            hint = ("an NVLink down: check 'nvidia-smi nvlink --status'" if observed < spec
                    else f"add {{gpu: {gpu.id}, socket: {gpu.socket}, links: {observed}}} to nvlink.cpu_links")
            self.add(Code.NVLINK_COUNT, place, f"{gpu.id} has {spec} NVLinks to its CPU in the spec, but {observed} in the machine",
                     seen, hint)

    def cpus(self) -> None:
        for socket in self.p.sockets:
            node = self.m.numa.get(socket.os_node)
            if node is None or node.cpus is None:
                continue
            if tuple(sorted(node.cpus)) != tuple(sorted(socket.cpus)):
                self.add(Code.CPU_LIST, self.p.locate(socket.id, "cpus"), f"{socket.id}: NUMA node {socket.numa_node} has CPUs "
                         f"{cpu_list(socket.cpus) if socket.cpus else 'none'} in the spec, but {cpu_list(node.cpus) if node.cpus else 'none'} "
                         "in the machine", node.where)
        for gpu in self.p.gpus:
            key = self.gpu_key.get(gpu.id)
            seen = self.m.gpus.get(key) if key else None
            if seen is None or seen.cpus is None or gpu.socket is None:
                continue
            socket = self.p.socket_by_id[gpu.socket]
            if tuple(sorted(seen.cpus)) != tuple(sorted(socket.cpus)):
                self.add(Code.CPU_LIST, self.p.locate(gpu.id), f"{gpu.id}: close CPUs are {cpu_list(socket.cpus)} ({socket.id}) in the spec, "
                         f"but {cpu_list(seen.cpus)} in the machine", seen.where)

    def gpudirect(self) -> None:
        """D109 where the spec declares GPUDirect RDMA (`backend.gpudirect: true`): a GPU the
        machine gives gdr=0, and each backend NIC whose own GPUDirect (`net_gdr`: its part's or
        its `gpudirect` override, what nccl-topo.xml writes as its net's gdr) is not its own
        port's gdr, either way (NCCL uses GPUDirect RDMA where both the GPU and the net say 1)."""
        backend = self.p.backend
        if backend is None or backend.gpudirect is not True:
            return  # not declared, or left to NCCL's detection
        at = self.p.locate(None, "backend", "gpudirect")
        for gpu in self.p.gpus:
            seen = self.m.gpus.get(self.gpu_key.get(gpu.id, ""))
            if seen is not None and seen.gdr is False:
                self.add(Code.GPUDIRECT, at, f"the spec declares GPUDirect RDMA, but {gpu.id} has gdr=0 in the machine", seen.where,
                         GDR_HINT)
        for nic in self.p.backend_nics:
            port = self.nic_port.get(nic.id)
            if port is None or port.gdr is None or port.gdr == net_gdr(self.p, nic):
                continue
            place = self.p.locate(nic.id, "override", "gpudirect") if "gpudirect" in nic.overridden else at
            if port.gdr:
                self.add(Code.GPUDIRECT, place, f"{nic.id} ({port.name}) has no GPUDirect RDMA in the spec, but gdr=1 in the "
                         "machine: nccl-topo.xml keeps NCCL from using it", port.where,
                         "drop the NIC's 'gpudirect: false' override, or name the part that supports it")
            else:
                self.add(Code.GPUDIRECT, place, f"the spec declares GPUDirect RDMA, but {nic.id} ({port.name}) has gdr=0 in the machine",
                         port.where, GDR_HINT)

    def fabric(self) -> None:
        """D113: where the inputs show the GPUs' fabric (NVML, nvidia-smi -q -x), every GPU is
        in the clique most of the node's GPUs are in, and registered (state Completed); a node
        whose NVLinks leave it (`nvlink_leaves_the_node`) shows a domain at all."""
        if "fabric" not in self.m.listed:
            return
        matched = [(gpu.id, self.m.gpus[self.gpu_key[gpu.id]]) for gpu in self.p.gpus
                   if gpu.id in self.gpu_key and "fabric" not in self.m.gpus[self.gpu_key[gpu.id]].unknown]
        in_domain = [(ident, seen.fabric) for ident, seen in matched if seen.fabric is not None]
        if not in_domain:
            if matched and nvlink_leaves_the_node(self.p):
                self.add(Code.NVLINK_CLIQUE, self.p.locate(None, "nvlink", "topology"),
                         f"{', '.join(ident for ident, _ in matched)}: NVLinks to the NVLink switches of a multi-node "
                         "domain in the spec, but in no NVLink domain in the machine (no fabric cluster UUID)",
                         matched[0][1].where, FABRIC_HINT)
            return
        self.cliques(matched, in_domain)
        for ident, fabric in in_domain:
            if fabric.state is not None and fabric.state != REGISTERED:
                self.add(Code.NVLINK_CLIQUE, self.p.locate(ident), f"{ident}: fabric state {REGISTERED} expected (registered with "
                         f"the fabric manager), but {fabric.state} in the machine", fabric.where, FABRIC_HINT)

    def cliques(self, matched: list[tuple[str, ObservedGpu]], in_domain: list[tuple[str, NvlinkDomain]]) -> None:
        """D113 for each GPU outside the clique most of the node's GPUs are in (the first such
        GPU's clique on a tie), naming the GPUs that are in it. `in_domain` holds the matched
        GPUs that show a domain, with it."""
        members: dict[tuple[str, int | None], list[str]] = {}
        for ident, domain in in_domain:
            members.setdefault((domain.cluster_uuid, domain.clique_id), []).append(ident)
        majority = max(members, key=lambda key: len(members[key]))  # max keeps the first of equals
        expected = next(domain for _, domain in in_domain if (domain.cluster_uuid, domain.clique_id) == majority)
        peers = ", ".join(members[majority])
        for ident, seen in matched:
            fabric = seen.fabric
            if fabric is not None and (fabric.cluster_uuid, fabric.clique_id) == majority:
                continue
            verb = "is" if len(members[majority]) == 1 else "are"
            observed = f"in {fabric}" if fabric is not None else "in no NVLink domain"
            self.add(Code.NVLINK_CLIQUE, self.p.locate(ident), f"{ident} is {observed} in the machine, but {peers} {verb} in {expected}: "
                     "every GPU of a node is in one clique", fabric.where if fabric is not None else seen.where, FABRIC_HINT)

    def run(self) -> list[Diagnostic]:
        self.match()
        self.devices()
        self.nic_gpu_switch()
        self.nvlinks()
        self.cpu_nvlinks()
        self.cpus()
        self.gpudirect()
        self.fabric()
        return sorted(dict.fromkeys(self.findings), key=Diagnostic.sort_key)


def diff(platform: Platform, machine: Machine) -> list[Diagnostic]:
    """Every difference between `platform` and the observed `machine`, at the spec's lines."""
    return _Differ(platform, machine).run()
