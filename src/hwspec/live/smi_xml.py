"""`nvidia-smi -q -x` (NVML's query as XML, root `<nvidia_smi_log>`) -> Machine.

Read per `<gpu>`, in file order (nvidia-smi's index, which `topo -m` calls GPUn): the product
name, the PCI bus id (`00000000:07:00.0`, NVML's 8-digit domain, written as NCCL writes it:
`0000:07:00.0`), `pci_device_id` and `pci_sub_system_id` (`233010DE`: device 0x2330 of vendor
0x10de), `numa_id` where the driver gives one, the PCIe link (`max_link_gen`/`max_link_width`,
the most it trains at, as NCCL reads sysfs; `current_*` kept as evidence) and the `<fabric>`
section of multi-node NVLink trays (GB200/GB300 NVL72: cluster UUID, clique id, state).

What the format does not give stays None: no PCIe tree (a GPU hangs off its NUMA node when
the driver names one, else off nothing), no NICs, and no NVLinks (`-q` lists neither per-link NVLink state nor remote ids
on the drivers seen, 570-615; `nvidia-smi nvlink -R`/`-s` do: `smi_nvlink`), so the machine does not list NVLinks
and their absence means nothing to `diff`. Text values are hostile: every one is checked
against the shape NVML writes, and anything else is a located warning, never a traceback.
"""

from __future__ import annotations

import re

from hwspec.diagnostics import Code, Severity
from hwspec.live.observed import MAX_GPUS, NUMA_PREFIX, ElementReader, Gpu, Link, Machine, NvlinkDomain, is_decimal
from hwspec.live.xmlread import Element

ROOT = "nvidia_smi_log"
BUS_ID = re.compile(r"([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])")
PCI_ID_PAIR = re.compile(r"(?:0x)?([0-9a-fA-F]{4})([0-9a-fA-F]{4})")
"""NVML's 32-bit id: device (or subsystem device) in the high half, vendor in the low half."""
LINK_WIDTH = re.compile(r"([0-9]{1,2})x")
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
NOT_IN_A_CLUSTER = "00000000-0000-0000-0000-000000000000"
"""The cluster UUID of a GPU in no multi-node NVLink domain (an HGX board's GPUs report it)."""
ABSENT = frozenset({"", "N/A", "Unknown Error", "Not Supported", "Insufficient Permissions"})
"""What NVML writes for a value it does not have."""


def normalise_bus_id(text: str) -> str | None:
    """NVML's bus id (`00000000:07:00.0`, or `0000:0A:00.0`) as NCCL writes it (`0000:07:00.0`),
    or None when it is not one a PCI domain of 16 bits holds."""
    match = BUS_ID.fullmatch(text)
    if match is None or int(match.group(1), 16) > 0xFFFF:
        return None
    domain, bus, device, function = match.groups()
    return f"{int(domain, 16):04x}:{bus.lower()}:{device.lower()}.{function}"


def split_pci_id(text: str) -> tuple[str, str] | None:
    """`233010DE` (or `0x233010DE`) -> ("0x10de", "0x2330"): (vendor, device)."""
    match = PCI_ID_PAIR.fullmatch(text)
    if match is None:
        return None
    return f"0x{match.group(2).lower()}", f"0x{match.group(1).lower()}"


class _Reader(ElementReader):
    @staticmethod
    def child(e: Element | None, *path: str) -> Element | None:
        """The first element at `path` below `e`, or None."""
        for tag in path:
            if e is None:
                return None
            e = next((c for c in e.children if c.tag == tag), None)
        return e

    def value(self, e: Element | None, *path: str) -> tuple[str, Element] | None:
        """(text, element) at `path` below `e`, or None when absent or NVML's 'N/A'."""
        found = self.child(e, *path)
        if found is None or found.text in ABSENT:
            return None
        return found.text, found

    def number(self, e: Element, *path: str) -> int | None:
        found = self.value(e, *path)
        if found is None:
            return None
        text, where = found
        if not is_decimal(text) or len(text) > 9:
            self.warn(where, f"<{where.tag}> '{text[:40]}' is not a number")
            return None
        return int(text)

    def log(self, root: Element) -> None:
        if root.tag != ROOT:
            self.m.problem(self.at(root), Severity.ERROR, Code.INPUT_SYNTAX,
                           f"the root element is <{root.tag[:40]}>, not <{ROOT}>: not 'nvidia-smi -q -x' output")
            return
        gpus = [c for c in root.children if c.tag == "gpu"]
        if len(gpus) > MAX_GPUS:
            self.m.problem(self.at(gpus[MAX_GPUS]), Severity.ERROR, Code.INPUT_SYNTAX,
                           f"{len(gpus)} GPUs, more than the {MAX_GPUS} one node has: not one node's topology")
            return
        attached = self.number(root, "attached_gpus")
        if attached is not None and attached != len(gpus):
            where = self.child(root, "attached_gpus")
            assert where is not None
            self.warn(where, f"attached_gpus says {attached}, but the file has {len(gpus)} <gpu> elements", Code.INPUT_CONTRADICTION)
        for index, element in enumerate(gpus):
            self.gpu(element, index)

    def gpu(self, e: Element, index: int) -> None:
        bus = self.bus_id(e)
        key = bus or f"GPU{index}"
        if key in self.m.gpus:
            self.warn(e, f"bus id {bus} repeats line {self.m.gpus[key].where.line}", Code.INPUT_CONTRADICTION)
            return
        numa = self.number(e, "numa_id")
        # no parent without a NUMA node: the input says nothing of where the GPU hangs
        gpu = Gpu(key, self.at(e), f"{NUMA_PREFIX}{numa}" if numa is not None else "", bus, index=index, numa=numa)
        name = self.value(e, "product_name")
        gpu.model_name = name[0] if name else None
        ids = self.pci_ids(e, "pci_device_id")
        gpu.vendor, gpu.device = ids or (None, None)
        sub = self.pci_ids(e, "pci_sub_system_id")
        gpu.subsystem_vendor, gpu.subsystem_device = sub or (None, None)
        gpu.link = self.link(e, "max_link_gen", "max_link_width")
        gpu.current_link = self.link(e, "current_link_gen", "current_link_width")
        gpu.fabric = self.fabric(e)
        self.m.gpus[key] = gpu

    def bus_id(self, e: Element) -> str | None:
        """The GPU's bus id from `<pci><pci_bus_id>`, else the `id` attribute; the two must agree."""
        found = self.value(e, "pci", "pci_bus_id")
        attribute = e.attrs.get("id")
        text, where = found if found else (attribute, e)
        if text is None:
            self.warn(e, "<gpu> has no PCI bus id (no <pci_bus_id>, no id attribute)")
            return None
        bus = normalise_bus_id(text)
        if bus is None:
            self.warn(where, f"'{text[:40]}' is not a PCI bus id 'dddd:bb:dd.f'")
            return None
        if found and attribute is not None and normalise_bus_id(attribute) != bus:
            self.warn(e, f"<gpu id=\"{attribute[:40]}\"> differs from its <pci_bus_id> {text[:40]}: reading {bus}", Code.INPUT_CONTRADICTION)
        return bus

    def pci_ids(self, e: Element, tag: str) -> tuple[str, str] | None:
        found = self.value(e, "pci", tag)
        if found is None:
            return None
        text, where = found
        ids = split_pci_id(text)
        if ids is None:
            self.warn(where, f"<{tag}> '{text[:40]}' is not a PCI id pair such as 233010DE")
        return ids

    def link(self, e: Element, gen_tag: str, width_tag: str) -> Link | None:
        gen = self.number(e, "pci", "pci_gpu_link_info", "pcie_gen", gen_tag)
        if gen is not None and not 1 <= gen <= 6:
            self.warn(self.child(e, "pci", "pci_gpu_link_info", "pcie_gen", gen_tag) or e,
                      f"<{gen_tag}> {gen} is not a PCIe generation")
            gen = None
        width = None
        found = self.value(e, "pci", "pci_gpu_link_info", "link_widths", width_tag)
        if found is not None:
            match = LINK_WIDTH.fullmatch(found[0])
            if match is None or int(match.group(1)) == 0:
                self.warn(found[1], f"<{width_tag}> '{found[0][:40]}' is not a lane count such as 16x")
            else:
                width = int(match.group(1))
        if gen is None and width is None:
            return None
        return Link.of(gen, width)

    def fabric(self, e: Element) -> NvlinkDomain | None:
        """The GPU's NVLink domain from `<fabric>`, or None outside one (N/A, or the all-zero UUID)."""
        section = self.child(e, "fabric")
        if section is not None:
            self.m.listed.add("fabric")  # the driver reports the fabric: a GPU without a domain is in none
        found = self.value(section, "clusterUuid")
        if section is None or found is None or found[0] == NOT_IN_A_CLUSTER:
            return None
        text, where = found
        if not UUID.fullmatch(text):
            self.warn(where, f"<clusterUuid> '{text[:40]}' is not a UUID")
            return None
        state = self.value(section, "state")
        return NvlinkDomain(text.lower(), self.number(section, "cliqueId"), state[0][:40] if state else None, self.at(section))


def parse(data: bytes, file: str, machine: Machine) -> None:
    """Read `nvidia-smi -q -x` output `data` (named `file` in diagnostics) into `machine`."""
    root = machine.read_xml(data, file, "nvidia-smi -q -x")
    if root is None:
        return
    machine.flat_buses = True
    _Reader(file, machine).log(root)
