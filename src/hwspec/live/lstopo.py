"""hwloc XML (`lstopo --of xml`, hwloc 1.x and 2.x) -> Machine.

hwloc 3.x XML (`<topology version="3.0">`) is read too: OS device types are flags there.
What it gives: NUMA nodes with their CPU sets and memory, packages with CPUID vendor/family/
model (POWER and Arm CPUs: the architecture and CPUModel, no CPUID), the PCIe tree (host
bridges, bridges by bus id, devices with class and vendor/device ids, link bandwidth in GB/s),
and OS devices below PCI devices: network interfaces (`eth0`), RDMA devices (`mlx5_0`) and GPU
names. hwloc gives a link only as a bandwidth, so Gen3 x16 and Gen4 x8 look the same: links
keep `gen`/`width` None and `Link.forms()` says which pairs the bandwidth is exactly. A display
controller is a GPU only when `observed.is_accelerator` says so (not BMC graphics, not a Xeon
Phi). A PCI device whose locality is not one NUMA node hangs from `numa:-1`: unknown, not 0.
NVLinks come from hwloc's NVLinkBandwidth matrix, where the file has one (`lstopo_nvlinks`: a
`<distances2hetero>`, or a `<distances2>` of GPUs alone): then the file lists every NVLink (of
versions 1 to 4) of the GPUs it names.
"""

from __future__ import annotations

import re

from hwspec.diagnostics import Code, Severity
from hwspec.live.lstopo_nvlinks import NvlinkMatrix
from hwspec.live.observed import (
    MAX_CPUS,
    NUMA_PREFIX,
    Bridge,
    ElementReader,
    Gpu,
    Link,
    Machine,
    Nic,
    NicPort,
    NumaNode,
    cpu_vendor,
    is_accelerator,
    is_decimal,
    too_many_digits,
)
from hwspec.live.xmlread import Element, walk

_PCI_TYPE = re.compile(r"([0-9a-fA-F]{4}) \[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\](?: \[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\])?")
"""hwloc's `pci_type`: class [vendor:device] [subsystem vendor:subsystem device] revision."""
_BUSID = re.compile(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")
OSDEV_KIND_V2 = {"2": "network", "3": "openfabrics"}
"""hwloc 2.x writes the OS device type as an enum (0 block, 1 GPU, 2 network, 3 OpenFabrics, 4 DMA, 5 coproc)."""
OSDEV_FLAG_NETWORK, OSDEV_FLAG_OPENFABRICS = 1 << 4, 1 << 5
"""hwloc 3.x writes it as flags (storage 1, memory 2, GPU 4, coproc 8, network 16, OpenFabrics 32, DMA 64)."""


def parse_bitmap(text: str | None) -> tuple[int, ...] | None:
    """hwloc bitmap ("0x000000ff,0xffffffff", words most significant first; an empty word is
    0, as in "0x00000303,,0x0") -> set bits. None for a malformed or infinite set."""
    if not text or text.count(",") >= MAX_CPUS // 32:
        return None  # no bitmap, or one of more than MAX_CPUS bits (counted before expanding)
    words = text.split(",")
    bits: list[int] = []
    for position, word in enumerate(reversed(words)):
        word = word.strip() or "0x0"
        if not re.fullmatch(r"0x[0-9a-fA-F]{1,8}", word):
            return None
        value = int(word, 16)
        bits.extend(position * 32 + bit for bit in range(32) if value >> bit & 1)
    if text.startswith("0xf...f"):
        return None
    return tuple(sorted(bits))


def _info(e: Element) -> dict[str, str]:
    return {c.attrs.get("name", ""): c.attrs.get("value", "") for c in e.children if c.tag == "info"}


class _Reader(ElementReader):
    def __init__(self, file: str, machine: Machine):
        super().__init__(file, machine)
        self.arch: str | None = None
        self.flags = False  # OS device types as hwloc 3 flags

    def numa_of(self, e: Element) -> str | None:
        """`numa:N` of the nearest non-I/O ancestor whose nodeset holds one NUMA node."""
        node = e.parent
        while node is not None:
            if node.tag == "object" and node.attrs.get("type") not in ("Bridge", "PCIDev", "OSDev"):
                bits = parse_bitmap(node.attrs.get("nodeset"))
                if bits is not None and len(bits) == 1:
                    return f"{NUMA_PREFIX}{bits[0]}"
                if node.attrs.get("type") == "NUMANode" and is_decimal(node.attrs.get("os_index", "")):
                    return f"{NUMA_PREFIX}{int(node.attrs['os_index'])}"
                if bits is not None and len(bits) > 1:
                    return None
            node = node.parent
        return None

    def pci_parent(self, e: Element) -> str:
        node = e.parent
        while node is not None and node.tag == "object":
            kind = node.attrs.get("type")
            if kind in ("Bridge", "PCIDev") and node.attrs.get("pci_busid"):
                return node.attrs["pci_busid"].lower()
            if kind not in ("Bridge", "PCIDev"):
                break
            node = node.parent
        numa = self.numa_of(e)
        if numa is None:
            self.warn(e, "the PCI device's locality is not one NUMA node: left without a NUMA node")
            return f"{NUMA_PREFIX}-1"
        return numa

    def link(self, e: Element) -> Link | None:
        text = e.attrs.get("pci_link_speed")
        if text is None:
            return None
        try:
            value = float(text)
        except ValueError:
            self.warn(e, f"pci_link_speed=\"{text[:40]}\" is not a number (GB/s)")
            return None
        return Link(None, None, value * 1e9) if value > 0 else None

    def run(self, root: Element) -> None:
        if root.tag != "topology":
            self.m.problem(self.at(root), Severity.ERROR, Code.INPUT_SYNTAX, f"the root element is <{root.tag}>, not <topology>: not hwloc XML")
            return
        self.flags = root.attrs.get("version", "2.0").split(".")[0] not in ("1", "2")
        self.arch = _info(root).get("Architecture") or None  # hwloc 3 writes the machine's infos at the top
        objects: dict[str, Element] = {}
        matrices: list[Element] = []
        for e in walk(root):
            if e.tag in ("distances2hetero", "distances2"):
                matrices.append(e)
            if e.tag != "object":
                continue
            if "gp_index" in e.attrs:
                objects.setdefault(e.attrs["gp_index"], e)
            kind = e.attrs.get("type")
            if kind == "Machine":
                self.arch = _info(e).get("Architecture") or self.arch
            elif kind == "NUMANode":
                self.numa(e)
            elif kind in ("Bridge", "PCIDev"):
                self.pci(e, kind)
        for node in self.m.numa.values():
            node.arch = node.arch or self.arch
            node.vendor = node.vendor or cpu_vendor(None, node.arch)
        nvlinks = NvlinkMatrix(self.file, self.m, objects)
        for matrix in matrices:
            nvlinks.matrix(matrix)

    def numa(self, e: Element) -> None:
        index = e.attrs.get("os_index", "")
        for key in ("os_index", "local_memory"):
            if (problem := too_many_digits(e.attrs.get(key), f"NUMANode {key}")) is not None:
                self.m.problem(self.at(e), Severity.ERROR, Code.INPUT_SYNTAX, f"{problem}: not hwloc XML")
                return
        if not is_decimal(index):
            self.warn(e, f"NUMANode os_index=\"{index[:20]}\" is not a number")
            return
        numa = int(index)
        node = NumaNode(numa, self.at(e), cpus=parse_bitmap(e.attrs.get("cpuset")))
        memory = e.attrs.get("local_memory")
        if memory and is_decimal(memory):
            node.memory = int(memory)
        package = e.parent
        while package is not None and package.attrs.get("type") not in ("Package", "Socket"):
            package = package.parent
        if package is None:  # hwloc 1.x puts packages below NUMA nodes
            package = next((c for c in walk(e) if c.tag == "object" and c.attrs.get("type") in ("Package", "Socket")), None)
        if package is not None:
            info = _info(package)
            node.vendor = cpu_vendor(info.get("CPUVendor"), None)
            for attr, key in (("family", "CPUFamilyNumber"), ("model", "CPUModelNumber")):
                if is_decimal(info.get(key, "")):
                    setattr(node, attr, int(info[key]))
            node.model_name = info.get("CPUModel") or None
            if is_decimal(package.attrs.get("os_index", "")):
                node.package = int(package.attrs["os_index"])
        if numa in self.m.numa:
            self.warn(e, f"NUMA node {numa} repeats line {self.m.numa[numa].where.line}", Code.INPUT_CONTRADICTION)
            return
        self.m.numa[numa] = node

    def osdev_kind(self, osdev: Element) -> str | None:
        value = osdev.attrs.get("osdev_type", "")
        if not self.flags:
            return OSDEV_KIND_V2.get(value)
        flags = int(value) if is_decimal(value) else 0
        return "openfabrics" if flags & OSDEV_FLAG_OPENFABRICS else "network" if flags & OSDEV_FLAG_NETWORK else None

    def pci(self, e: Element, kind: str) -> None:
        bus = e.attrs.get("pci_busid")
        if bus is None:
            return  # a host bridge: its children attach to its NUMA node
        if not _BUSID.fullmatch(bus):
            self.warn(e, f"pci_busid=\"{bus[:40]}\" is not a PCI bus id")
            return
        bus = bus.lower()
        match = _PCI_TYPE.match(e.attrs.get("pci_type", ""))
        pci_class = match.group(1).lower() if match else ""  # class and subclass: "0302"
        vendor = f"0x{match.group(2).lower()}" if match else None
        device = f"0x{match.group(3).lower()}" if match else None
        parent = self.pci_parent(e)
        where = self.at(e)
        osdevs = [c for c in e.children if c.tag == "object" and c.attrs.get("type") == "OSDev"]
        if kind == "Bridge" or pci_class.startswith("0604"):
            subsystem = (f"0x{match.group(4).lower()}", f"0x{match.group(5).lower()}") if match and match.group(4) else (None, None)
            self.m.bridges[bus] = Bridge(bus, where, parent, bus, self.link(e), vendor, device, *subsystem)
        elif is_accelerator(vendor, pci_class, tuple(o.attrs.get("name", "") for o in osdevs)):
            gpu = Gpu(bus, where, parent, bus, self.link(e), vendor, device)
            for osdev in osdevs:
                model = _info(osdev).get("GPUModel")
                if model:
                    gpu.model_name = model
            self.m.gpus[bus] = gpu
        elif pci_class.startswith("02") or any(self.osdev_kind(o) == "openfabrics" for o in osdevs):
            if pci_class.startswith("02"):
                nic = Nic(bus, where, parent, bus, self.link(e), vendor, device,
                          fabric="infiniband" if pci_class.startswith("0207") else "ethernet")
            else:  # an RDMA device on a function of another class (a sandbox shows it as a host bridge): a NIC,
                # as NCCL takes it; its ids and link are the bridge's, not the NIC's
                nic = Nic(bus, where, parent, bus, shown_as=f"0x{pci_class}")
                self.m.notes.append(f"{where}: the RDMA function {bus} reads class 0x{pci_class} (as a sandbox shows a "
                                    "NIC's function): read as the NIC's device, as NCCL reads it")
            netdevs: list[NicPort] = []
            for osdev in osdevs:
                name = osdev.attrs.get("name")
                if not name:
                    continue
                osdev_kind = self.osdev_kind(osdev)
                if osdev_kind == "openfabrics":
                    nic.ports.append(NicPort(name, self.at(osdev), len(nic.ports) + 1))
                elif osdev_kind == "network":
                    nic.interfaces.append(name)
                    netdevs.append(NicPort(name, self.at(osdev), len(netdevs) + 1))
            if not nic.ports and len(netdevs) > 1:
                nic.ports = netdevs  # a function with several interfaces and no RDMA device: a port each (as sysfs reads it)
            self.m.nics[bus] = nic
        elif (pci_class.startswith("0680") and vendor == "0x10de") or e.attrs.get("subtype") == "NVSwitch":  # not IBM's NPU
            self.m.nvswitches[bus] = where


def parse(data: bytes, file: str, machine: Machine) -> None:
    """Read hwloc XML `data` (named `file` in diagnostics) into `machine`."""
    root = machine.read_xml(data, file, "hwloc XML (lstopo --of xml)")
    if root is None:
        return
    _Reader(file, machine).run(root)
    machine.listed.update({"numa", "rdma-nics", "tcp-nics"})
