"""NCCL topology XML (NCCL_TOPO_DUMP_FILE, NCCL_TOPO_FILE, hwspec's own nccl-topo.xml) -> Machine.

Reads what NCCL reads (see the reference nccl-topology-xml.md): `<cpu>` per NUMA node with its
affinity cpumap and CPUID identity, the `<pci>` tree (bus id, class, link speed and width,
vendor/device ids), `<gpu>` with `<nvlink>`s, and `<nic>`/`<net>`s. Skeleton files (no `<gpu>`
/`<net>`, as the cloud vendors ship) give devices by PCI class. RCCL's dumps (`version="2"`,
`<xgmi>` links) are read the same way. Anything else is reported and skipped, never fatal,
unless the file is not XML or has no `<system>`.
"""

from __future__ import annotations

import re

from hwspec.diagnostics import Code, Location, Severity
from hwspec.live.observed import (
    CPU,
    CPU_VENDORS,
    MAX_CPUS,
    NUMA_PREFIX,
    NVSWITCH,
    PCIE_SPEED_STRINGS,
    RDMA_NAME,
    Bridge,
    ElementReader,
    Gpu,
    Link,
    Machine,
    Nic,
    NicPort,
    NumaNode,
    NvLink,
    too_many_digits,
)
from hwspec.live.xmlread import Element

BUSID = re.compile(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")
_INT = re.compile(r"-?[0-9]{1,20}")  # at most MAX_DIGITS: longer is refused before int() sees it
_HEX_ID = re.compile(r"0x[0-9a-fA-F]{1,4}")
HOST_BRIDGE_CLASS, PCI_BRIDGE_CLASS = "0x0600", "0x0604"
"""PCI classes of a host bridge and a PCI-to-PCI bridge (a switch port or root port)."""
MAX_PLAUSIBLE_NET_SPEED_MBPS = 3_200_000
"""4x the fastest NIC port shipping (800 Gb/s, ConnectX-8): a `<net speed>` above it is in another unit."""
_CPUMAP = re.compile(r"[0-9a-fA-F]{1,8}(,[0-9a-fA-F]{1,8})*")


def parse_cpumap(text: str) -> tuple[int, ...] | None:
    """sysfs cpumap ("0000ffff,ffff0000": 32-bit words, most significant first) -> CPU numbers."""
    if not _CPUMAP.fullmatch(text) or text.count(",") >= MAX_CPUS // 32:
        return None  # not a cpumap, or one of more than MAX_CPUS CPUs (counted before expanding)
    words = text.split(",")
    cpus: list[int] = []
    for position, word in enumerate(reversed(words)):
        value = int(word, 16)
        cpus.extend(position * 32 + bit for bit in range(32) if value >> bit & 1)
    return tuple(cpus)


class _Reader(ElementReader):
    def __init__(self, file: str, machine: Machine):
        super().__init__(file, machine)
        self.repeated_nics: list[tuple[Location, list[str]]] = []
        """Each `<nic>` under a `<cpu>` that repeated NICs without a PCI device, with their names."""
        self.rdma_nets: list[tuple[int, Nic, NicPort]] = []
        """(`dev`, NIC, port) of every `<net>` named as an RDMA device, in input order, its
        `port` still NCCL's (`verbs_ports` makes it the verbs port)."""

    def int_attr(self, e: Element, key: str, required: bool = False) -> int | None:
        value = e.attrs.get(key)
        if value is None:
            if required:
                self.warn(e, f"<{e.tag}> has no '{key}'")
            return None
        if (problem := too_many_digits(value, f"<{e.tag}> {key}")) is not None:
            self.m.problem(self.at(e), Severity.ERROR, Code.INPUT_SYNTAX, f"{problem}: not an NCCL topology dump")
            return None
        if not _INT.fullmatch(value.strip()):
            self.warn(e, f"<{e.tag}> {key}=\"{value[:40]}\" is not an integer")
            return None
        return int(value)

    def busid(self, e: Element, key: str = "busid") -> str | None:
        value = e.attrs.get(key)
        if value is None or not BUSID.fullmatch(value):
            self.warn(e, f"<{e.tag}> {key}=\"{(value or '')[:40]}\" is not a PCI bus id 'dddd:bb:dd.f'")
            return None
        return value.lower()

    def link(self, e: Element) -> Link | None:
        speed, width = e.attrs.get("link_speed"), e.attrs.get("link_width")
        gen = PCIE_SPEED_STRINGS.get((speed or "").strip())
        if speed is not None and speed.strip() and gen is None:
            self.warn(e, f"link_speed=\"{speed[:40]}\" is not a PCIe speed NCCL knows (it would read Gen3)")
        lanes, zero = None, False
        if width is not None and width.strip():
            if not _INT.fullmatch(width.strip()) or int(width) < 0:
                self.warn(e, f"link_width=\"{width[:40]}\" is not a lane count")
            elif int(width) > 0:
                lanes = int(width)
            else:  # NCCL writes 0 for devices passed through to a VM and reads it as x16
                zero = True
        unstated = speed is not None and not speed.strip()  # NCCL writes "" where it read no speed
        if gen is None and lanes is None and not zero and not unstated:
            return None
        return Link.of(gen, lanes, zero, unstated)

    def pci_id(self, e: Element, key: str) -> str | None:
        value = e.attrs.get(key)
        if value is None:
            return None
        if not _HEX_ID.fullmatch(value):
            self.warn(e, f"{key}=\"{value[:40]}\" is not a PCI id such as 0x10de")
            return None
        return f"0x{int(value, 16):04x}"

    # ------------------------------------------------------------ tree

    def system(self, root: Element) -> None:
        if root.tag != "system":
            self.m.problem(self.at(root), Severity.ERROR, Code.INPUT_SYNTAX,
                           f"the root element is <{root.tag}>, not <system>: not an NCCL topology file")
            return
        version = root.attrs.get("version")
        if version not in ("1", "2"):
            self.warn(root, f"<system version=\"{(version or '')[:20]}\">: NCCL writes version 1 (RCCL 2)")
        for child in root.children:
            if child.tag == "cpu":
                self.cpu(child)
            else:
                self.warn(child, f"<{child.tag}> under <system> is ignored (NCCL reads only <cpu> there)", Code.INPUT_IGNORED)

    def cpu(self, e: Element) -> None:
        numa = self.int_attr(e, "numaid", required=True)
        if numa is None:
            return
        if numa < 0:
            self.warn(e, f"<cpu numaid=\"{numa}\">: the NUMA node is unknown (-1); its devices are read without a NUMA node")
        elif numa in self.m.numa:
            self.warn(e, f"<cpu numaid=\"{numa}\"> repeats the NUMA node of line {self.m.numa[numa].where.line}", Code.INPUT_CONTRADICTION)
            return
        node = NumaNode(numa, self.at(e))
        affinity = e.attrs.get("affinity")
        if affinity is not None:
            node.cpus = parse_cpumap(affinity)
            if node.cpus is None:
                self.warn(e, f"affinity=\"{affinity[:40]}\" is not a sysfs cpumap")
        node.arch = e.attrs.get("arch")
        vendor = e.attrs.get("vendor")
        node.vendor = CPU_VENDORS.get(vendor or "", "arm" if (node.arch or "").startswith("arm") else None)
        if vendor and node.vendor is None:
            self.warn(e, f"CPU vendor \"{vendor[:40]}\" is not one hwspec knows (GenuineIntel, AuthenticAMD)")
        node.family, node.model = self.int_attr(e, "familyid"), self.int_attr(e, "modelid")
        parent = f"{NUMA_PREFIX}{numa}"
        if numa >= 0:
            self.m.numa[numa] = node
        elif self.m.unknown_numa_cpu is None:
            self.m.unknown_numa_cpu = node
        for child in e.children:
            if child.tag == "pci":
                self.pci(child, parent)
            elif child.tag == "nic":
                self.cpu_nic(child, parent)
            else:
                self.warn(child, f"<{child.tag}> under <cpu> is ignored", Code.INPUT_IGNORED)

    def cpu_nic(self, e: Element, parent: str) -> None:
        """A `<nic>` directly under `<cpu>`: the NICs NCCL found without a PCI device (a virtual,
        bridge or tunnel interface). NCCL 2.22+ builds one topology per local rank, attaching
        such a NIC to the first `<cpu>` of its own (the CPU of its GPU: xml.cc `ncclTopoFillNet`,
        "Virtual NIC, no PCI device, attach to first CPU"), then fuses the ranks' topologies
        (`ncclTopoFuseXml`), so a dump repeats every one under each CPU that has a GPU. A net
        whose name an earlier `<nic>` without a PCI device gave is that interface again (Linux
        names an interface once): it is read once, where it is first listed."""
        known = {port.name for nic in self.m.nics.values() if nic.bus is None and nic.parent.startswith(NUMA_PREFIX)
                 for port in nic.ports if port.name}
        repeats = [c for c in e.children if c.tag == "net" and c.attrs.get("name") in known]
        if repeats:
            self.repeated_nics.append((self.at(e), [c.attrs.get("name", "") for c in repeats]))
            names = ", ".join(c.attrs.get("name", "") for c in repeats)
            self.warn(e, f"<nic> repeats {len(repeats)} NIC(s) without a PCI device listed under an earlier <cpu> ({names}): "
                      "NCCL 2.22+ writes them under every CPU with a GPU; read once", Code.INPUT_IGNORED)
        rest = [c for c in e.children if c not in repeats]
        if rest:
            self.nic(e, None, parent, key=f"{parent}/nic{len(self.m.nics)}", children=rest)

    def pci(self, e: Element, parent: str) -> None:
        bus = self.busid(e)
        if bus is None:
            return
        seen = self.m.node(bus)
        if seen is not None:
            self.warn(e, f"bus id {bus} repeats line {seen.where.line}", Code.INPUT_CONTRADICTION)
            return
        pci_class = (e.attrs.get("class") or "").lower()
        link, vendor, device = self.link(e), self.pci_id(e, "vendor"), self.pci_id(e, "device")
        kids = {c.tag for c in e.children}
        where = self.at(e)
        bridge_class = pci_class.startswith(HOST_BRIDGE_CLASS) or pci_class.startswith(PCI_BRIDGE_CLASS)
        if "gpu" in kids or (pci_class.startswith("0x03") and not kids):
            gpu = Gpu(bus, where, parent, bus, link, vendor, device)
            self.m.gpus[bus] = gpu
            for child in e.children:
                if child.tag == "gpu":
                    self.gpu(child, gpu)
                else:
                    self.warn(child, f"<{child.tag}> beside a <gpu> is ignored", Code.INPUT_IGNORED)
        elif ("nic" in kids and (not bridge_class or kids == {"nic"})) or (pci_class.startswith("0x02") and not kids):
            # NCCL reads a <pci> holding a <nic> as the NIC's own device, whatever its class: a
            # sandbox (gVisor) shows an RDMA device's function as a host bridge (0x060000)
            fabric = "infiniband" if pci_class.startswith("0x0207") else "ethernet" if pci_class.startswith("0x02") else None
            if bridge_class:  # its ids are the bridge's the sandbox shows, not the NIC's; its link is what NCCL reads for the NIC
                self.m.notes.append(f"{where}: the NIC {bus} reads PCI class {pci_class[:20]} (a bridge's), as a sandbox "
                                    "shows a NIC's function; it holds only the <nic>, so it is the NIC's device, as NCCL reads it")
                nic = Nic(bus, where, parent, bus, link, fabric=fabric, shown_as=pci_class[:20])
            else:
                nic = Nic(bus, where, parent, bus, link, vendor, device, fabric=fabric)
            self.m.nics[bus] = nic
            for child in e.children:
                if child.tag == "nic":
                    self.nic(child, nic, parent, bus)
                else:
                    self.warn(child, f"<{child.tag}> beside a <nic> is ignored", Code.INPUT_IGNORED)
        elif pci_class.startswith("0x0680"):
            self.m.nvswitches[bus] = where
        elif e.children or pci_class.startswith(PCI_BRIDGE_CLASS):
            self.m.bridges[bus] = Bridge(bus, where, parent, bus, link, vendor, device,
                                         self.pci_id(e, "subsystem_vendor"), self.pci_id(e, "subsystem_device"))
            for child in e.children:
                if child.tag == "pci":
                    self.pci(child, bus)
                elif child.tag == "pcilink":
                    continue
                elif child.tag == "nic":  # gVisor shows the host bridge where the NIC's own function is hidden
                    self.warn(child, f"<nic> directly under the bridge {bus} (class {pci_class[:20]}): a NIC whose "
                              "PCI device the input does not show; the bridge stays a bridge")
                    self.nic(child, None, bus, key=f"{bus}/nic{len(self.m.nics)}")
                else:
                    self.warn(child, f"<{child.tag}> under a PCIe bridge is ignored", Code.INPUT_IGNORED)
        else:
            self.warn(e, f"<pci busid=\"{bus}\" class=\"{pci_class[:20]}\"> is neither a bridge, a GPU nor a NIC: ignored", Code.INPUT_IGNORED)

    def gpu(self, e: Element, gpu: Gpu) -> None:
        gpu.index = self.int_attr(e, "dev", required=True)
        gpu.sm = self.int_attr(e, "sm")
        gpu.gcn = self.gcn(e)
        gpu.arch = self.int_attr(e, "arch")
        gdr = e.attrs.get("gdr")
        gpu.gdr = None if gdr is None else gdr == "1"
        for child in e.children:
            if child.tag not in ("nvlink", "xgmi"):
                if child.tag != "c2c":
                    self.warn(child, f"<{child.tag}> under <gpu> is ignored", Code.INPUT_IGNORED)
                continue
            count = self.int_attr(child, "count", required=True)
            if count is None or count <= 0:
                continue
            tclass = (child.attrs.get("tclass") or "").lower()
            if tclass.startswith("0x03") or child.tag == "xgmi":  # RCCL's xgmi always names a GPU
                target = self.busid(child, "target")
                if target is None:
                    continue
                if target == gpu.key:  # a passed-through PCIe GPU in a VM: NCCL skips a link to itself
                    self.self_link(child, gpu, count)
                    continue
            elif tclass.startswith("0x068001"):  # NCCL joins it to the GPU's own CPU, whatever the target
                self.m.nvlinks.append(NvLink(gpu.key, CPU, count, self.at(child)))
                continue
            else:
                target = NVSWITCH
                switch_bus = (child.attrs.get("target") or "").lower()
                switch: str | None = None  # NCCL's sentinel fffffff:ff:ff.0: a switch the VM does not show
                if BUSID.fullmatch(switch_bus):
                    switch = switch_bus
                    self.m.nvswitches.setdefault(switch, self.at(child))
                self.m.nvlinks.append(NvLink(gpu.key, target, count, self.at(child), switch))
                continue
            self.m.nvlinks.append(NvLink(gpu.key, target, count, self.at(child)))

    def gcn(self, e: Element) -> str | None:
        """The gfx target of RCCL's `gcn`: "gfx942" (a feature suffix such as ":sramecc+" dropped),
        or the bare number older RCCL wrote and read as an integer ("908": gfx908)."""
        gcn = e.attrs.get("gcn")
        if gcn is None:
            return None
        match = re.fullmatch(r"(gfx[0-9a-f]{3,4})(:[-+:a-z]*)?|([0-9]{3,4})", gcn)
        if match is None:
            self.warn(e, f"gcn=\"{gcn[:40]}\" is not a gfx target such as gfx942")
            return None
        return match.group(1) or f"gfx{match.group(3)}"

    def self_link(self, e: Element, gpu: Gpu, count: int) -> None:
        """An NVLink entry whose target is its own GPU (NCCL dumps of PCIe A100s in a VM, Azure's
        NC A100 v4 file): left out, with a warning and a note in the draft that say what NCCL
        makes of it. NCCL looks a GPU target up by its bus id, finds the GPU itself and links it to
        itself (topo.cc `ncclTopoAddNvLinks`), a link its search counts in the GPU's NVLink
        bandwidth (search.cc `getTotalBw` sums every NVLink of the GPU) though it reaches no other
        GPU; no platform can state such a link, so hwspec's nccl-topo.xml does not give it."""
        text = (f"{count} NVLink(s) of {gpu.key} target the GPU itself (a VM's passed-through PCIe GPU): not a link between "
                "GPUs, ignored; NCCL links the GPU to itself with them and counts them in its NVLink bandwidth "
                "(topo.cc ncclTopoAddNvLinks, search.cc getTotalBw), which nccl-topo.xml leaves out")
        self.warn(e, text, Code.INPUT_IGNORED)
        self.m.notes.append(f"{self.at(e)}: {text}")

    def nic(self, e: Element, nic: Nic | None, parent: str, key: str, children: list[Element] | None = None) -> None:
        if nic is None:  # a NIC without PCI device (virtual, fused): keyed by position
            nic = Nic(key, self.at(e), parent)
            self.m.nics[key] = nic
        for child in e.children if children is None else children:
            if child.tag != "net":
                self.warn(child, f"<{child.tag}> under <nic> is ignored", Code.INPUT_IGNORED)
                continue
            speed = self.net_speed(child)
            port = self.int_attr(child, "port")
            gdr = child.attrs.get("gdr")
            name = child.attrs.get("name")
            nic.ports.append(NicPort(name, self.at(child), port if port and port > 0 else 1,
                                     speed * 1e6 / 8 if speed else None,
                                     None if gdr is None else gdr == "1"))
            if name and RDMA_NAME.match(name):
                dev = self.int_attr(child, "dev")
                self.rdma_nets.append((len(self.rdma_nets) if dev is None else dev, nic, nic.ports[-1]))
            else:  # NCCL's socket net writes port 0 for every interface: its place under the <nic> tells them apart
                nic.ports[-1].position = len(nic.ports)

    def net_speed(self, e: Element) -> int | None:
        """A `<net speed>` in Mb/s, or None where it is absent, not positive, or beyond any NIC
        port (a figure in another unit: RCCL's MI300A model writes 200000000 for 200 Gb/s),
        which is then left for NCCL/RCCL to detect, with a warning and a note in the draft."""
        speed = self.int_attr(e, "speed")
        if speed is None or speed <= 0:
            return None
        if speed > MAX_PLAUSIBLE_NET_SPEED_MBPS:
            text = (f"<net> speed=\"{speed}\" is {speed / 1e6:g} Tb/s in NCCL's Mb/s, beyond any NIC port "
                    "(a figure in another unit?): the draft leaves the speed unknown")
            self.warn(e, text)
            self.m.notes.append(f"{self.at(e)}: {text}")
            return None
        return speed


def parse(data: bytes, file: str, machine: Machine) -> None:
    """Read NCCL topology XML `data` (named `file` in diagnostics) into `machine`."""
    root = machine.read_xml(data, file, "NCCL topology XML")
    if root is None:
        return
    reader = _Reader(file, machine)
    reader.system(root)
    if reader.repeated_nics:
        machine.notes.append(repeated_nics_note(machine, reader.repeated_nics))
    verbs_ports(reader.rdma_nets)
    gpus = set(machine.gpus)
    for link in machine.nvlinks:
        if link.target not in (NVSWITCH, CPU) and link.target not in gpus:
            machine.problem(link.where, Severity.WARNING, Code.INPUT_CONTRADICTION, f"NVLink target {link.target} is not a GPU in this file")
    machine.nvlinks[:] = [l for l in machine.nvlinks if l.target in (NVSWITCH, CPU) or l.target in gpus]
    counts = machine.nvlink_counts()
    reported: set[frozenset[str]] = set()
    for (a, b), (count, where) in counts.items():
        back = counts.get((b, a), (0, None))[0]
        if b not in (NVSWITCH, CPU) and back != count and frozenset((a, b)) not in reported:
            reported.add(frozenset((a, b)))
            machine.problem(where, Severity.WARNING, Code.INPUT_CONTRADICTION, f"{count} NVLinks from {a} to {b}, but {back} back: "
                            "NVLink counts are the same both ways")
    names = [p.name for n in machine.nics.values() for p in n.ports if p.name]
    if any(RDMA_NAME.match(n) for n in names):
        machine.listed.add("rdma-nics")
    if any(not RDMA_NAME.match(n) for n in names):
        machine.listed.add("tcp-nics")
    if any(g.sm is not None for g in machine.gpus.values()):  # <gpu> elements: NCCL lists their NVLinks, to CPUs too
        machine.listed.update(("nvlinks", "cpu-nvlinks"))


def repeated_nics_note(machine: Machine, repeats: list[tuple[Location, list[str]]]) -> str:
    """The draft's note on the NICs without a PCI device that a dump repeats under several CPUs
    (`_Reader.cpu_nic`): which, how often, and where each is drafted."""
    names = list(dict.fromkeys(name for _, group in repeats for name in group))
    first = next(n for n in machine.nics.values() if n.bus is None and any(p.name == names[0] for p in n.ports))
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    lines = ", ".join(str(where.line) for where, _ in repeats)
    return (f"{first.where}: {len(names)} NIC(s) without a PCI device ({shown}) are repeated under {len(repeats) + 1} CPUs "
            f"(again at lines {lines}): NCCL 2.22+ fuses its ranks' topologies and each rank attaches such a NIC to its "
            "own first CPU; drafted once each, where first listed")


def verbs_ports(nets: list[tuple[int, Nic, NicPort]]) -> None:
    """Turn NCCL's `<net port>` of RDMA devices into the verbs port, keeping NCCL's count as the
    port's `position`. NCCL's IB net writes `port` = the verbs port plus the number of IB
    devices it enumerated before this one on the same PCI bus (net_ib.cc `ncclIbGetPhysProperties`:
    `portNum + realPort`; `ncclIbGetPciPath` counts the earlier devices whose sysfs path matches
    but for its last four characters, the device and function digits, NCCL_IB_MERGE_VFS being on
    by default), in the order of their `dev`. So the second function of a dual-port ConnectX
    (mlx5_1, verbs port 1) reads port="2", and NCCL_IB_HCA=mlx5_1:2 would name no port; a
    ConnectX-3's second port (mlx4_0 port 2) reads port="3". A `port` lower than the count is
    not NCCL's sum: it is kept as given."""
    seen: dict[str, int] = {}
    for _, nic, port in sorted(nets, key=lambda net: net[0]):
        bus = nic.bus.rsplit(":", 1)[0] if nic.bus else nic.key  # the bus: its device and function digits dropped
        before = seen.get(bus, 0)
        seen[bus] = before + 1
        port.position = before + 1
        if port.port - before >= 1:
            port.port -= before
