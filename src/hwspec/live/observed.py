"""The observed machine: what a live node's own tools say about it, before any spec is involved.

Every parser (`nccl`, `lstopo`, `topo_matrix`) produces one `Machine`; `merge` combines several.
Every element carries `where`, the `Location` (input file and line) it was read from, so that a
diagnostic about the machine points at the evidence. Devices are keyed by PCI bus id when the
input gives one (lower case `dddd:bb:dd.f`); inputs without bus ids (`nvidia-smi topo -m`) use
their own names (`GPU0`, `NIC1`) and leave `bus` None. Quantities are canonical, as in `hwspec.model.node`:
bytes, bytes/s per direction. A value an input does not give is None, never guessed here:
guessing (and saying so with `assumed:`) is the draft writer's job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hwspec.diagnostics import Code, Diagnostic, Location, Severity
from hwspec.live.xmlread import Element, XmlError, parse_xml
from hwspec.model.node import PcieLink
from hwspec.spec.checks import PCIE_GEN_RATES
from hwspec.text import visible

NUMA_PREFIX = "numa:"
"""Parent key of a device or bridge attached directly to a NUMA node: `numa:0`."""
NVSWITCH = "nvswitch"
"""`NvLink.target` of links to NVSwitch chips (all of them fold into one, as NCCL does)."""
CPU = "cpu"
"""`NvLink.target` of links to the GPU's own CPU (IBM POWER8/POWER9: NCCL's tclass 0x068001, hwloc's
Package end): NCCL joins them to the CPU the GPU sits under, so the input need not say which."""

RDMA_NAME = re.compile(r"(mlx\d+_|ib|rdma|bnxt_re|efa|irdma|qedr|hfi1?_|rxe|siw|erdma|ionic)", re.IGNORECASE)
"""Names RDMA devices have (`ibv_devices`); other net names are network interfaces."""


@dataclass(frozen=True)
class Link:
    """An observed PCIe link. `gen`/`width` are None when the input does not say (hwloc gives
    only `bandwidth`; NCCL writes width 0 for virtual devices). `bandwidth` is bytes/s per
    direction after encoding, as `hwspec.model.node.PcieLink.bandwidth` computes it."""

    gen: int | None
    width: int | None
    bandwidth: float | None = None
    width_zero: bool = False
    """The input reported width 0: a device passed through to a VM (NCCL reads it as x16)."""
    down: str | None = None
    """The link is down or untrained, with what the input read (sysfs: `speed Unknown, width
    63`): the device cannot be reached at its speed, whatever the spec says."""
    speed_unstated: bool = False
    """The input writes the speed empty (NCCL's `link_speed=""`, where it could read none: a
    device whose parent is the root complex of a VM): NCCL reads it as Gen3 (`NCCL_EMPTY_SPEED_GEN`)."""

    @classmethod
    def of(cls, gen: int | None, width: int | None, width_zero: bool = False, speed_unstated: bool = False) -> Link:
        bandwidth = PcieLink(gen, width).bandwidth if gen in PCIE_GEN_RATES and width else None
        return cls(gen, width, bandwidth, width_zero, speed_unstated=speed_unstated)

    def forms(self) -> list[tuple[int, int]]:
        """The (gen, width) pairs this link may be, widest first: the one the input gives, or,
        from a bandwidth alone (hwloc), every pair whose bandwidth it is exactly (hwloc cannot
        tell Gen3 x16 from Gen4 x8). Empty when no PCIe link has this bandwidth."""
        if self.gen is not None and self.width:
            return [(self.gen, self.width)]
        if not self.bandwidth:
            return []
        return [(gen, width) for width in LINK_WIDTHS for gen in sorted(PCIE_GEN_RATES)
                if (self.gen is None or gen == self.gen) and same_bandwidth(PcieLink(gen, width).bandwidth, self.bandwidth)]

    def below(self, bandwidth: float) -> bool:
        """Whether this link, known by its bandwidth alone, is slower than `bandwidth`."""
        return self.bandwidth is not None and self.bandwidth < bandwidth and not same_bandwidth(self.bandwidth, bandwidth)

    def __str__(self) -> str:
        if self.down:
            return f"down ({self.down})"
        if self.gen and self.width:
            return f"Gen{self.gen} x{self.width}"
        if self.gen:
            return f"Gen{self.gen} x0 (passed through to a VM)" if self.width_zero else f"Gen{self.gen}"
        if self.speed_unstated:
            return f"x{0 if self.width_zero else self.width} at no stated speed" if self.width_zero or self.width else "no stated speed"
        if self.bandwidth:
            return f"{self.bandwidth / 1e9:.2f} GB/s"
        return "unknown"


NCCL_EMPTY_SPEED_GEN = 3
"""The generation NCCL reads an empty or unknown `link_speed` as: its fallback of 60 (8 GT/s x
8b/10b per lane in 100 Mb/s, Gen3) in `kvDictPciGen` (topo.cc `ncclTopoAddPci`, read at NVIDIA/nccl
ab2b89c4, 2.21.5, and 1708736f, 2.27.3); a width of 0 it reads as x16 (`if (width == 0) width = 16`)."""

LINK_WIDTHS = (16, 8, 4, 2, 1, 32, 12)
"""The widths a PCIe link trains at, in the order a link known by its bandwidth is read (widest first)."""
LINK_TOLERANCE = 1e-5
"""hwloc writes a link as GB/s with six decimals, computed in single precision
(`hwloc_pcidisc_find_linkspeed`: lanespeed x width / 8, with PCIe's 8b/10b, 128b/130b and
242b/256b encodings): a bandwidth within this fraction of a (gen, width)'s is that pair's.
Distinct pairs differ by more than 1% (Gen2 x16 8.0 GB/s, Gen3 x8 7.88 GB/s)."""


def same_bandwidth(a: float, b: float) -> bool:
    """Whether two link bandwidths are the same figure as hwloc writes it."""
    return abs(a - b) <= LINK_TOLERANCE * max(a, b)


@dataclass
class NumaNode:
    """A NUMA node with its CPUs (logical CPU numbers), the CPU's identity and its memory."""

    id: int
    where: Location
    cpus: tuple[int, ...] | None = None
    arch: str | None = None
    vendor: str | None = None
    """Spec vocabulary: intel, amd, arm, ibm."""
    family: int | None = None
    model: int | None = None
    model_name: str | None = None
    memory: int | None = None
    """Bytes of memory local to this node."""
    package: int | None = None
    """The socket (hwloc Package) holding the node, when the input says."""


@dataclass
class PciNode:
    """Something in the PCIe tree. `parent` is the key of the bridge above, or `numa:N`."""

    key: str
    where: Location
    parent: str
    bus: str | None = None
    link: Link | None = None
    vendor: str | None = None
    """PCI vendor id, `0x10de`."""
    device: str | None = None
    """PCI device id, `0x20b0`."""


@dataclass
class Bridge(PciNode):
    """A PCIe switch port, root port or host bridge on the path to a device. The subsystem ids
    are the board's per port (NCCL flattens Broadcom switches by them)."""

    subsystem_vendor: str | None = None
    subsystem_device: str | None = None


@dataclass
class Gpu(PciNode):
    """An accelerator. `index` is its ordinal as the input numbers it (NCCL dev, topo -m GPUn)."""

    index: int | None = None
    sm: int | None = None
    """NVIDIA: the compute capability x10. AMD (RCCL's dump): the compute-unit count."""
    gcn: str | None = None
    """AMD: the gfx target RCCL's dump names (`gcn="gfx942"`)."""
    arch: int | None = None
    """AMD: RCCL's `arch`, hipDeviceProp_t.arch packed as an int."""
    gdr: bool | None = None
    numa: int | None = None
    """The NUMA node the input says the GPU is close to (topo -m 'NUMA Affinity')."""
    cpus: tuple[int, ...] | None = None
    """The CPUs the input says are close (topo -m 'CPU Affinity')."""
    model_name: str | None = None
    """The model as the driver names it (NVML's product name, hwloc's GPUModel)."""
    subsystem_vendor: str | None = None
    subsystem_device: str | None = None
    """The board's PCI subsystem ids (`0x10de`, `0x16c1`): which board carries the chip."""
    current_link: Link | None = None
    """The link as trained when the input was taken (nvidia-smi); `link` is the most it
    trains at, as NCCL reads it. A GPU at rest lowers its generation to save power, so the
    current link is kept as evidence, never compared."""
    fabric: NvlinkDomain | None = None
    """The multi-node NVLink domain the GPU is in (GB200/GB300 NVL72 trays), when the input says."""
    nvlink_state: dict[int, bool] | None = None
    """Link number -> active, as `nvidia-smi nvlink -s` lists the GPU's links (None: not given)."""
    unknown: set[str] = field(default_factory=set)
    """Facts an input that lists them for every GPU could not give for this one (`nvlinks`,
    `fabric`: an NVML query failed): not compared, never taken as none."""


@dataclass(frozen=True)
class NvlinkDomain:
    """A GPU's membership of a multi-node NVLink domain as the NVIDIA fabric manager reports
    it (`nvidia-smi -q -x` `<fabric>`): the NVLink domain's cluster UUID and the clique (the
    partition of GPUs that reach each other over NVLink) within it. `state` is the fabric
    manager's registration state (`Completed` once the GPU has joined)."""

    cluster_uuid: str
    clique_id: int | None
    state: str | None
    where: Location

    def __str__(self) -> str:
        clique = f", clique {self.clique_id}" if self.clique_id is not None else ""
        return f"NVLink domain {self.cluster_uuid}{clique}"


@dataclass
class NicPort:
    """One port of a network adapter, as NCCL or the RDMA stack names it."""

    name: str | None
    where: Location
    port: int = 1
    """The port's number on its RDMA device as the verbs stack numbers it (`ibv_devinfo`, sysfs
    `ports/N`, NCCL_IB_HCA's `mlx5_0:1`); 1 for a network interface."""
    speed: float | None = None
    """Bytes/s per direction."""
    gdr: bool | None = None
    up: bool | None = None
    """The port is active (RDMA state ACTIVE, interface operstate up); None: the input does not say."""
    position: int | None = None
    """The port's place among the RDMA ports of its PCI device, from 1, where the input numbers
    them so (NCCL's dump: its `port` is the verbs port plus the ports before it); None: `port`."""


@dataclass
class Nic(PciNode):
    """A network adapter function. `fabric` is what its PCI class says: infiniband or ethernet."""

    fabric: str | None = None
    ports: list[NicPort] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)
    """Network interface names (netdevs) of the function, when the input lists them."""
    numa: int | None = None
    shown_as: str | None = None
    """The PCI class the input shows the function as where it is not a NIC's (a sandbox such as
    gVisor shows an RDMA device's function as a host bridge, 0x060000, with no link): the PCI ids
    and link it gives are then not the NIC's."""


@dataclass(frozen=True)
class NvLink:
    """`count` fabric links from GPU `gpu` to `target`: another GPU's key, NVSWITCH (then
    `switch` is the NVSwitch's bus id when the input names it), or CPU (the GPU's own CPU)."""

    gpu: str
    target: str
    count: int
    where: Location
    switch: str | None = None
    per_link: float | None = None
    """Bytes/s per link per direction that the input's bandwidth was divided by to count the
    links (hwloc's NVLink matrix gives bandwidths, not counts); None where it gives counts."""


@dataclass(frozen=True)
class NvlinkPort:
    """One active NVLink of GPU `gpu` as `nvidia-smi nvlink -R` lists it: `link` (nvidia-smi's
    number for it) reaches link `remote_link` of the device with bus id `remote`, a GPU or an
    NVSwitch (`smi_nvlink.resolve_nvlinks` tells which, once the GPUs' bus ids are known)."""

    gpu: str
    link: int
    remote: str
    remote_link: int
    where: Location


@dataclass
class Machine:
    """One live node as observed. Dicts keep input order; `problems` are the input diagnostics."""

    sources: list[tuple[str, str]] = field(default_factory=list)
    """(file, what it is) of every input."""
    numa: dict[int, NumaNode] = field(default_factory=dict)
    bridges: dict[str, Bridge] = field(default_factory=dict)
    gpus: dict[str, Gpu] = field(default_factory=dict)
    nics: dict[str, Nic] = field(default_factory=dict)
    nvlinks: list[NvLink] = field(default_factory=list)
    paths: dict[tuple[str, str], tuple[str, Location]] = field(default_factory=dict)
    """topo -m path types between two device keys (PIX, PXB, PHB, NODE, SYS)."""
    nvswitches: dict[str, Location] = field(default_factory=dict)
    """NVSwitch chips the input names (by bus id), beyond the links to them."""
    cpu_link_ends: dict[str, Location] = field(default_factory=dict)
    """PCI functions of class 0x068001 by bus id (sysfs): a POWER8/POWER9 CPU's NVLink ports (IBM's
    NPU), one per link. An NVLink whose remote end is one goes to the GPU's own CPU."""
    nvlink_ports: list[NvlinkPort] = field(default_factory=list)
    """Active NVLinks by remote bus id (`nvidia-smi nvlink -R`), until resolved into `nvlinks`."""
    link_listing: bool = False
    """The input is `nvidia-smi nvlink` output: GPUs by index, nothing else; merged last."""
    problems: list[Diagnostic] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What a reader set aside that the draft should say in a `# note:` (an NVLink entry
    targeting its own GPU), each with its location."""
    unknown_numa_cpu: NumaNode | None = None
    """The first CPU an input gives without a NUMA node (NCCL's `<cpu numaid="-1">`): its identity
    (arch, vendor, family, model) is still the node's CPU, which a draft of one socket names."""
    flat_buses: bool = False
    """The GPUs' bus ids come from an input without a PCIe tree (`nvidia-smi -q -x`): they
    identify the GPUs (diff matches them by bus id) but say nothing of the bridges above."""
    listed: set[str] = field(default_factory=set)
    """What the inputs list completely, so that its absence means something: `numa` (every
    NUMA node: lstopo), `rdma-nics` (every RDMA NIC), `tcp-nics` (every plain network NIC),
    `nvlinks` (every NVLink of the GPUs), `cpu-nvlinks` (every NVLink of the GPUs to a CPU, POWER8/POWER9:
an NCCL dump with `<gpu>` elements, hwloc's NVLink matrix; `topo -m` shows none). An NCCL dump lists the NICs of the network plugin in
    use and, with `<gpu>` elements, the NVLinks; topo -m lists RDMA NICs and NVLinks; lstopo
    lists NUMA nodes and NICs, and NVLinks where it has hwloc's NVLinkBandwidth matrix. `fabric`: the GPUs' NVLink domain (NVML's
    answers, `nvidia-smi -q -x` with `<fabric>`), so that a GPU without one is in none."""

    @property
    def has_tree(self) -> bool:
        """Whether the input gave a PCIe tree with bus ids (NCCL dump, lstopo)."""
        return not self.flat_buses and any(d.bus for d in (*self.gpus.values(), *self.nics.values()))

    def node(self, key: str) -> PciNode | None:
        return self.bridges.get(key) or self.gpus.get(key) or self.nics.get(key)

    def ancestors(self, key: str) -> list[str]:
        """Keys of the bridges above `key`, nearest first, ending with `numa:N` when known."""
        out: list[str] = []
        node = self.node(key)
        seen = {key}
        while node is not None and node.parent not in seen:
            out.append(node.parent)
            seen.add(node.parent)
            node = self.bridges.get(node.parent)
        return out

    def numa_below(self, key: str) -> set[int]:
        """The NUMA nodes the GPUs and NICs at or below `key` say they are on themselves (their
        own `numa`, whatever their place in the tree shows)."""
        said = [(device.key, device.numa) for device in self.gpus.values()]
        said += [(device.key, device.numa) for device in self.nics.values()]
        return {numa for device, numa in said
                if numa is not None and numa >= 0 and (device == key or key in self.ancestors(device))}

    def numa_of(self, key: str) -> int | None:
        """The NUMA node `key` hangs off in the tree, else what the input says about it."""
        for parent in self.ancestors(key):
            if parent.startswith(NUMA_PREFIX):
                return int(parent[len(NUMA_PREFIX):])
        device = self.node(key)
        return getattr(device, "numa", None)

    def gpus_in_order(self) -> list[Gpu]:
        """GPUs by bus id (CUDA_DEVICE_ORDER=PCI_BUS_ID), or by index when bus ids are unknown."""
        return sorted(self.gpus.values(), key=lambda g: (g.bus is None, g.bus or "", g.index if g.index is not None else 0))

    def nvlink_counts(self) -> dict[tuple[str, str], tuple[int, Location]]:
        """(gpu, target) -> links in that direction, summed over the input's elements."""
        counts: dict[tuple[str, str], tuple[int, Location]] = {}
        for link in self.nvlinks:
            previous = counts.get((link.gpu, link.target))
            counts[(link.gpu, link.target)] = ((previous[0] if previous else 0) + link.count,
                                               previous[1] if previous else link.where)
        return counts

    def nvswitch_links(self) -> dict[str, dict[str | None, int]]:
        """GPU key -> {NVSwitch bus id (None: unnamed): links}, in input order."""
        out: dict[str, dict[str | None, int]] = {}
        for link in self.nvlinks:
            if link.target == NVSWITCH:
                per_gpu = out.setdefault(link.gpu, {})
                per_gpu[link.switch] = per_gpu.get(link.switch, 0) + link.count
        return out

    def problem(self, where: Location, severity: Severity, code: Code, message: str, hint: str | None = None) -> None:
        """Record a diagnostic about the inputs (an I1xx `code`). `message` may quote them: it is
        kept `visible`, one line of printable text, in every report format."""
        self.problems.append(Diagnostic(where.file, where.line, where.col, severity, code, visible(message), hint,
                                        code.printed_name))

    def read_xml(self, data: bytes, file: str, what: str) -> Element | None:
        """The root element of XML input `file` (listed as a source: `what` it is), or None
        after recording I101 at the position where it stops being XML this reader accepts."""
        self.sources.append((file, what))
        try:
            return parse_xml(data)
        except XmlError as exc:
            self.problem(Location(file, exc.line, exc.col), Severity.ERROR, Code.INPUT_SYNTAX, exc.message)
            return None


FATAL_INPUT_CODES = frozenset({Code.INPUT_UNREADABLE, Code.INPUT_SYNTAX})
"""The codes of problems in the inputs of `import` and `diff` that make an input unusable (exit 2)."""

MAX_INPUT_BYTES = 32 * 1024 * 1024
"""Inputs larger than this are refused: a node's topology is a few hundred kilobytes at most."""
MAX_GPUS = 64
"""The most GPUs one input may describe: the largest boards have 16 (DGX-2), a GB200 tray 4.
An input beyond it is refused (I101) before a draft is made: the NVLink pairs and PCIe paths
grow with the square of the count."""
MAX_NICS = 512
"""The most NICs (RDMA devices) one input may describe: a port per GPU, frontends, SR-IOV
functions; refused (I101) beyond."""


class ElementReader:
    """Base of the XML readers (NCCL/RCCL dumps, lstopo, nvidia-smi -q -x): `file`, the
    `Machine` being filled, and a located warning at an element."""

    def __init__(self, file: str, machine: Machine):
        self.file, self.m = file, machine

    def at(self, e: Element) -> Location:
        return Location(self.file, e.line, e.col)

    def warn(self, e: Element, message: str, code: Code = Code.INPUT_VALUE) -> None:
        self.m.problem(self.at(e), Severity.WARNING, code, message)


def refuse_oversized(machine: Machine, file: str) -> None:
    """An I101 at the top of `file` when `machine` (read from it) has more GPUs or NICs than
    one node has: the input is then unusable, and no draft or comparison is made."""
    for count, limit, what in ((len(machine.gpus), MAX_GPUS, "GPUs"), (len(machine.nics), MAX_NICS, "NICs")):
        if count > limit:
            machine.problem(Location(file, 1), Severity.ERROR, Code.INPUT_SYNTAX,
                            f"{count} {what}, more than the {limit} one node has: not one node's topology")

PCIE_SPEED_STRINGS: dict[str, int] = {
    "2.5 GT/s": 1, "5 GT/s": 2, "8 GT/s": 3, "16 GT/s": 4, "32 GT/s": 5, "64 GT/s": 6,
    "2.5 GT/s PCIe": 1, "5.0 GT/s PCIe": 2, "8.0 GT/s PCIe": 3, "16.0 GT/s PCIe": 4, "32.0 GT/s PCIe": 5,
    "64.0 GT/s PCIe": 6,
}
"""Link speed strings as sysfs (old and new kernels) and NCCL write them, by PCIe generation."""

CPU_VENDORS = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}
"""CPUID vendor strings (hwloc's CPUVendor, NCCL's vendor) -> spec vocabulary."""
ARCH_VENDORS = {"ppc64le": "ibm", "ppc64": "ibm", "aarch64": "arm", "arm64": "arm"}
"""Architectures whose CPUs have no CPUID vendor (POWER, Arm) -> spec vocabulary."""


def cpu_vendor(vendor_string: str | None, arch: str | None) -> str | None:
    """The spec's CPU vendor from a CPUID vendor string or, without one, the architecture."""
    return CPU_VENDORS.get(vendor_string or "") or ARCH_VENDORS.get(arch or "")


ACCELERATOR_CLASSES: dict[str, frozenset[str]] = {
    "0x10de": frozenset({"0300", "0302"}),
    "0x1002": frozenset({"0380", "0302", "1200"}),
}
"""PCI class (4 hex digits) of the accelerators of each GPU vendor: NVIDIA's data-centre GPUs
are 3D controllers (0302), its consumer cards VGA (0300); AMD Instinct parts are display
controllers (0380) or processing accelerators (1200, as RCCL's models write MI300X).
Display controllers of other vendors (Matrox, ASPEED BMC graphics) and coprocessors (0b40, a
Xeon Phi) are not GPUs."""
COMPUTE_OS_DEVICES = ("cuda", "nvml", "rsmi", "opencl")
"""Prefixes of the OS devices (hwloc) of a GPU that runs compute: an AMD VGA card with one
(a Radeon under ROCm) is a GPU; ATI's on-board VGA (ES1000) has none."""


def is_accelerator(vendor: str | None, pci_class: str, os_devices: tuple[str, ...] = ()) -> bool:
    """Whether a PCI function of `vendor` and class `pci_class` ("0302") is a GPU hwspec
    describes; `os_devices` are the names of its OS devices, when the input lists them."""
    if vendor is None or vendor not in ACCELERATOR_CLASSES:
        return False
    if pci_class in ACCELERATOR_CLASSES[vendor]:
        return True
    return pci_class == "0300" and any(name.lower().startswith(COMPUTE_OS_DEVICES) for name in os_devices)


MAX_CPUS = 65_536
"""The most CPUs one CPU list, cpumap or hwloc bitmap may hold: 8 times Linux's largest NR_CPUS
(8,192). Counted from the text before anything is expanded."""

MAX_DIGITS = 20
"""The most digits of a decimal number a reader converts: 2**64 has 20, and nothing a machine
reports (bytes of memory, a NUMA node, a link speed) comes near it. A longer one is refused
before `int` sees it: `int` of more than 4,300 digits raises, and fewer still cost quadratic time."""


def is_decimal(text: str) -> bool:
    """Whether `text` is a number in ASCII digits, at most `MAX_DIGITS` of them, which `int`
    reads. `str.isdigit` is not enough for hostile input: it also holds `²` true, which `int`
    refuses (a traceback)."""
    return len(text) <= MAX_DIGITS and text.isascii() and text.isdigit()


def too_many_digits(text: str | None, what: str) -> str | None:
    """The message of a located error when `text` is a decimal number (an optional `-`, ASCII
    digits) longer than `MAX_DIGITS`, None otherwise: `what` names the value."""
    digits = (text or "").strip().removeprefix("-")
    if len(digits) > MAX_DIGITS and digits.isascii() and digits.isdigit():
        return f"{what} is a number of {len(digits)} digits, more than the {MAX_DIGITS} a reader converts"
    return None
