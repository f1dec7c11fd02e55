"""The resolved platform: the public model that rules and generators read.

Everything here is final: parts are merged in, repeat blocks expanded, references resolved to
ids that exist, and every device knows its socket and NUMA node (or `None` when the PCIe
tree does not lead to a socket, which rule HW101 reports). Units are canonical: bytes,
bytes/s per direction, FLOP/s. Generators must not look behind this model; if one needs
more, add it here.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, NoReturn, Protocol, TypeVar

from hwspec.diagnostics import Location
from hwspec.spec.checks import PCIE_GEN_RATES, UNKNOWN
from hwspec.spec.models import Transport

_PCIE_ENCODING: dict[int, float] = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 242 / 256}


T = TypeVar("T")


def known(value: T | None) -> T:
    """`value`, for a figure the caller has checked is known (`Platform.unknown_figures` is empty):
    a None here is a consumer that forgot to check, not a fact to compute with."""
    if value is None:
        raise ValueError("an unknown figure reached a computation: check Platform.unknown_figures first")
    return value


def climb(start: str, parent_of: Callable[[str], str | None], is_root: Container[str]) -> list[str]:
    """`start` and the ids above it, following `parent_of`, ending at the first root (a socket)
    or at the first id seen twice (a PCIe cycle), or at an id with no parent.

    The one walk up the PCIe tree: resolution uses it to find each device's socket, the
    topology for every path query. `climb("gpu0", ...) == ["gpu0", "sw0", "rp0", "cpu0"]`;
    a cycle ends with its repeated id: `["sw0", "sw1", "sw0"]`."""
    ids = [start]
    seen = {start}
    while ids[-1] not in is_root:
        parent = parent_of(ids[-1])
        if parent is None:
            break
        ids.append(parent)
        if parent in seen:
            break
        seen.add(parent)
    return ids


class SourceMap(Protocol):
    """Where the entries of a resolved model are written (`hwspec.source.sourcemap` implements it,
    so the model does not depend on the YAML layer)."""

    def locate(self, entity: str | None = None, *fields: str | int) -> Location: ...

    def locate_key(self, entity: str | None = None, *fields: str | int) -> Location: ...

    def provenance(self, entity: str, *fields: str | int) -> Any: ...


@dataclass(frozen=True, slots=True)
class PcieLink:
    """A PCIe link of `width` lanes at generation `gen`."""

    gen: int
    """PCIe generation, 1-6."""
    width: int
    """Lanes; 0 for a width a VM reports for a passed-through device."""

    @property
    def transfer_rate(self) -> float:
        """Transfers per second per lane (16e9 for Gen4)."""
        return PCIE_GEN_RATES[self.gen]

    @property
    def bandwidth(self) -> float:
        """Usable bytes/s per direction after line encoding: Gen4 x16 = 31.5e9 (0 for width 0)."""
        return self.transfer_rate * _PCIE_ENCODING[self.gen] * self.width / 8

    def __str__(self) -> str:
        return f"Gen{self.gen} x{self.width}"


@dataclass(frozen=True, slots=True)
class NumaNode:
    """A NUMA node of a CPU socket (an entry of `Platform.sockets`): a whole socket, or one of
    its NUMA nodes under sub-NUMA clustering / NPS modes. `package` is the id of the physical
    socket it belongs to (its own id for a socket that is one NUMA node); `cores` are the
    physical cores of this NUMA node; `cpus` its logical CPU numbers. Devices hang off it, and
    bind to it."""

    id: str
    """The id the file gives (`cpu0`), or the NUMA node's own (`cpu0n1`) under sub-NUMA clustering."""
    numa_node: int
    """The NUMA node number as the machine reports it for its devices; -1 where it reports none
    (a VM without NUMA tables: sysfs `numa_node` -1, NCCL's `<cpu numaid="-1">`), which the OS
    still calls node 0 (`os_node`)."""
    part: str
    """The catalogue part, or "unknown": then the figures the source does not give are None."""
    model_name: str
    """The CPU's model name (`Intel Xeon Platinum 8480+`)."""
    vendor: str | None
    """`intel`, `amd`, `arm` or `ibm`; None where the part is unknown and the source does not say."""
    arch: str | None
    """`x86_64`, `arm64` or `ppc64`; None where unknown."""
    family: int | None
    """CPUID family as NCCL computes it (base + extended); None where unknown."""
    model: int | None
    """CPUID model as NCCL computes it (base + extended<<4); None where unknown."""
    cores: int | None
    """Physical cores of this NUMA node; None where unknown."""
    threads_per_core: int | None
    """Hardware threads per core (2 with SMT); None where unknown."""
    cpus: tuple[int, ...]
    """Logical CPU numbers of this NUMA node, as Linux numbers them (empty when the file gives none)."""
    memory_capacity: int | None
    """Bytes; None where the spec says `capacity: unknown` (HW603)."""
    memory_bandwidth: float | None
    """Bytes/s; None where the spec says `bandwidth: unknown` (HW603)."""
    overridden: tuple[str, ...] = ()
    """Dotted paths of the part fields this entry overrides (`cores`), sorted."""
    package: str = ""
    """The physical socket's id (this entry's own id when the socket is one NUMA node)."""
    memory_shared_with: str | None = None
    """The GPU whose HBM is this NUMA node's memory (an APU: MI300A), None for memory of its own.
    Then `memory_capacity`/`memory_bandwidth` are that HBM's (what the OS shows for the node), and
    the pool is counted once, as the GPU's HBM: `Platform.memory_capacity` leaves it out."""

    def __post_init__(self) -> None:
        if not self.package:
            object.__setattr__(self, "package", self.id)

    @property
    def os_node(self) -> int:
        """The node `numactl` binds to and sysfs lists (`node0` where the machine reports -1)."""
        return max(self.numa_node, 0)


@dataclass(frozen=True, slots=True)
class Bridge:
    """A PCIe switch or root port. `link` is its upstream link as the OS presents it (written to
    NCCL's topology file); `physical` the link it trains at (used for every bandwidth: the
    uplink limits what crosses it, whatever the switch's own generation). `part` names its
    catalogue switch part (None without one); `gen` is its own generation, what the links
    below it may train at. The PCI ids are the ones it shows (its `pci:` over its part's),
    None where neither says."""

    id: str
    """The bridge's id in the file (`sw0`, `rp1`)."""
    kind: Literal["switch", "root-port"]
    """`switch` or `root-port`."""
    upstream: str
    """Id of its parent: a socket or another bridge."""
    bus: str | None
    """PCI bus id (`0000:17:00.0`); None: `bus: unknown`."""
    link: PcieLink
    """Upstream link as the OS presents it (NCCL's topology file gets it)."""
    max_oversubscription: float
    """Acceptable sum of child link bandwidth over uplink bandwidth (a ratio, 2.0 by default)."""
    socket: str | None
    """The socket (NUMA node entry) its tree leads to; None when it leads to none (HW101)."""
    physical: PcieLink
    """Upstream link the hardware trains at; every bandwidth is computed from it."""
    part: str | None = None
    """The catalogue PCIe switch part, or None."""
    model_name: str | None = None
    """The part's model name, or None without a part."""
    part_gen: int | None = None
    """The part's generation, or the spec's `gen:` (None with neither): see `gen`."""
    lanes: int | None = None
    """Lanes of the switch chip (its part's), or None."""
    pci_vendor: str | None = None
    """PCI vendor id it shows (`0x1000`), or None."""
    pci_device: str | None = None
    """PCI device id it shows (`0xc030`), or None."""
    subsystem_vendor: str | None = None
    """PCI subsystem vendor id, or None."""
    subsystem_device: str | None = None
    """PCI subsystem device id, or None."""

    @property
    def gen(self) -> int:
        """The bridge's own PCIe generation: its part's (or `gen:`), else the generation its uplink trains at."""
        return self.part_gen if self.part_gen is not None else self.physical.gen


@dataclass(frozen=True, slots=True)
class PcieDevice:
    """A device in the PCIe tree: its `upstream` bridge or socket, bus id, link, and the socket
    and NUMA node it reaches (None when its tree leads to no socket, which HW101 reports).
    `link` is the link as the OS presents it (written to NCCL's topology file, may be virtual
    with width 0); `physical` the link it trains at, which every bandwidth is computed from."""

    id: str
    """The device's id in the file (`gpu0`, `nic3`, `ssd0`)."""
    upstream: str
    """Id of its parent in the PCIe tree: a bridge or a socket."""
    bus: str | None
    """PCI bus id (`0000:18:00.0`); None: `bus: unknown` (the source gives no bus id)."""
    link: PcieLink | None
    """The link as the OS presents it (NCCL's topology file gets it); None: neither the entry nor its (unknown) part gives it."""
    socket: str | None
    """The socket (NUMA node entry) its tree leads to; None when it leads to none (HW101)."""
    numa_node: int | None
    """That socket's OS NUMA node number; None with no socket."""
    physical: PcieLink | None
    """The link the hardware trains at (the entry's `physical:`, else `link`); every bandwidth uses it. None when unknown."""


@dataclass(frozen=True, slots=True)
class Gpu(PcieDevice):
    """An accelerator. `index` is its ordinal by bus id (CUDA_DEVICE_ORDER=PCI_BUS_ID), which
    is also its local rank and NCCL `dev`."""

    index: int
    """Ordinal by bus id (CUDA_DEVICE_ORDER=PCI_BUS_ID): the local rank and NCCL's `dev`."""
    part: str
    """The catalogue part, or "unknown": then every figure the source does not give is None."""
    model_name: str
    """The part's model name (`NVIDIA H100 80GB HBM3`), or what the source observed."""
    vendor: str
    """`nvidia`, `amd`, `intel` or `other`."""
    form_factor: str | None
    """`sxm5`, `oam`, `pcie`, `apu`, ...; None for an unknown part."""
    slot: int | None
    """Baseboard slot, or None for a GPU on no baseboard."""
    sm: int | None
    """CUDA compute capability x10 (90 for H100; 0 without CUDA); None where unknown."""
    pci_vendor: str | None
    """PCI vendor id (`0x10de`), or None where unknown."""
    pci_device: str | None
    """PCI device id (`0x2330`), or None where unknown."""
    hbm_capacity: int | None
    """HBM (device memory) in bytes; None where unknown."""
    hbm_bandwidth: float | None
    """HBM bandwidth in bytes/s; None where unknown."""
    compute: Mapping[str, float] | None
    """Dense peak FLOP/s (OP/s for int8) by dtype (`bf16`, `fp8`, ...); None where unknown."""
    sparse: frozenset[str]
    """Dtypes with 2:4 structured sparsity (twice the dense peak)."""
    fabric_kind: str | None
    """The part's GPU-to-GPU fabric: `nvlink4`, `xgmi`, `none`, ...; None where unknown."""
    fabric_links: int
    """Fabric (NVLink, xGMI) links the part has."""
    fabric_link_bandwidth: float | None
    """Bytes/s per direction per fabric link; None where unknown."""
    max_link: PcieLink | None
    """The PCIe link the part supports at most (its host interface); None for an unknown part."""
    overridden: tuple[str, ...] = ()
    """Dotted paths of the part fields this GPU overrides (`hbm.capacity`), sorted."""
    gcn: str | None = None
    """AMD: gfx target (RCCL's `gcn`)."""
    hip_arch: int | None = None
    """AMD: packed hipDeviceArch_t (RCCL's `arch`)."""
    compute_units: int | None = None
    """AMD: compute units (RCCL's `sm`)."""
    c2c_socket: str | None = None
    """The socket the GPU's NVLink-C2C links go to (Grace Hopper/Blackwell), None without C2C."""
    c2c_links: int = 0
    """NVLink-C2C links to `c2c_socket` (0 without C2C)."""
    c2c_link_bandwidth: float = 0.0
    """Bytes/s per direction per C2C link."""

    @property
    def c2c_bandwidth(self) -> float:
        """NVLink-C2C bandwidth to `c2c_socket`, bytes/s per direction (0 without C2C)."""
        return self.c2c_links * self.c2c_link_bandwidth


@dataclass(frozen=True, slots=True)
class Nic(PcieDevice):
    """A network adapter port (a single-port card, or one of a card's `ports:`, `card`). `gpus`
    are the GPUs a backend NIC serves, in file order (empty
    for a NIC that serves none; a GPU may be served by several NICs). `speed` is bytes/s per
    direction."""

    index: int
    """Ordinal among the NICs by bus id."""
    part: str
    """The catalogue part, or "unknown": then every figure the source does not give is None."""
    model_name: str
    """The part's model name (`ConnectX-7 400G`), or what the source observed."""
    role: Literal["backend", "ingestion", "frontend", "management"]
    """`backend` (collectives), `ingestion`, `frontend` or `management`."""
    transport: Transport
    """The transport it runs here: `ib`, `rocev2`, `efa`, `tcp`, ..."""
    supported_transports: tuple[str, ...]
    """Transports the part supports."""
    speed: float | None
    """Bytes/s per direction per port; None where unknown."""
    rdma: bool | None
    """The NIC does RDMA (verbs); None where unknown."""
    gpudirect: bool | None
    """Supports GPUDirect RDMA (peer memory); None where unknown."""
    pci_vendor: str | None
    """PCI vendor id (`0x15b3`), or None where unknown."""
    pci_device: str | None
    """PCI device id, or None where unknown."""
    max_link: PcieLink | None
    """The PCIe link the part supports at most; None for an unknown part."""
    gpus: tuple[str, ...]
    """Ids of the GPUs a backend NIC serves, in file order (empty for one that serves none)."""
    device: str | None
    """RDMA device name (`mlx5_0`), or None."""
    interface: str | None
    """Network interface name (`eth0`), or None."""
    port: int
    """Port number on the device, from 1."""
    overridden: tuple[str, ...] = ()
    """Dotted paths of the part fields this NIC overrides (`gpudirect`), sorted."""
    card: str | None = None
    """The card entry this port belongs to when the file lists the card's `ports:` (then `id` is
    the port's id); None for a NIC entry that is its own single port."""

    @property
    def card_id(self) -> str:
        """The id of the card (one PCI function, one PCIe link) this port is on: `card`, else `id`.
        Rules that judge the card's link count it once per card."""
        return self.card if self.card is not None else self.id


@dataclass(frozen=True, slots=True)
class Ssd(PcieDevice):
    """An NVMe SSD: `capacity` in bytes, `bandwidth` in bytes/s (read)."""

    capacity: int
    """Bytes."""
    bandwidth: float
    """Sequential read bandwidth, bytes/s."""


@dataclass(frozen=True, slots=True)
class CpuNvlink:
    """NVLinks from GPU `gpu` to its CPU socket `socket` (IBM POWER8/POWER9): its host traffic and
    NCCL's paths through the CPU cross them instead of PCIe. `bandwidth` is bytes/s per direction
    for all `links`: links x the GPU part's per-link rate (None for an unknown part)."""

    gpu: str
    """The GPU's id."""
    socket: str
    """The socket (NUMA node entry) the links go to; NCCL joins them to the GPU's own (HW506)."""
    links: int
    """NVLinks between the GPU and the CPU."""
    bandwidth: float | None
    """Bytes/s per direction for all `links`; None for an unknown part (its per-link rate is unknown)."""
    entry: int
    """Index of the entry in `nvlink.cpu_links`."""


@dataclass(frozen=True, slots=True)
class NvlinkConnection:
    """Logical fabric links between two GPUs (`a` before `b` by index), or between a GPU and
    an NVSwitch (`b` = the switch's id, or "nvswitch" for switches the file does not list).
    `bandwidth` is bytes/s per direction for all `links`."""

    a: str
    """The first GPU's id (the lower index)."""
    b: str
    """The second GPU's id, or an NVSwitch's id (`nvswitch` for switches the file does not list)."""
    links: int
    """Fabric links between them."""
    bandwidth: float | None
    """None when a GPU's part is unknown (its per-link bandwidth is not known)."""
    entry: int | None = None
    """Index of the pair in an explicit `nvlink.topology` list (None for a named pattern)."""


@dataclass(frozen=True, slots=True)
class NvSwitch:
    """An NVSwitch chip: every GPU it serves (`gpus`, or every GPU of the node when None) has
    `links_per_gpu` fabric links to it. `bus` is its PCI bus id when the OS shows it, else None
    (NCCL's invisible NVSwitch)."""

    id: str
    """The switch's id (`nvswitch0`)."""
    links_per_gpu: int
    """Fabric links every GPU it serves has to this switch."""
    bus: str | None
    """PCI bus id where the OS shows the switch, else None (NCCL's invisible NVSwitch)."""
    gpus: tuple[str, ...] | None = None
    """The ids of the GPUs wired to it, where it serves only some (a DGX-2's boards); None: all."""

    def serves(self, gpu_id: str) -> bool:
        """Whether GPU `gpu_id` is wired to this switch."""
        return self.gpus is None or gpu_id in self.gpus


NVLS_MIN_NVSWITCH_GENERATION = 3
"""NVLink SHARP (in-switch reduction, NCCL's NVLS algorithm) came with the third-generation
NVSwitch (HGX H100; NVIDIA, 'NVIDIA NVLink and NVSwitch', and NCCL 2.17's release notes)."""


NVSWITCH_GENERATION_OF = {"nvlink2": 1, "nvlink3": 2, "nvlink4": 3, "nvlink5": 4}
"""The NVSwitch generation a GPU's NVLink generation attaches to: NVLink2 (V100, DGX-2) to the
first, NVLink3 (A100) the second, NVLink4 (H100/H200) the third, NVLink5 (Blackwell) the fourth
(NVIDIA, 'NVLink and NVSwitch' generations table)."""


def nvswitch_generation_of_gpus(gpus: Iterable[Gpu]) -> int | None:
    """The NVSwitch generation the GPUs' NVLink generation attaches to (`NVSWITCH_GENERATION_OF`):
    None without GPUs, with a GPU whose fabric the parts do not give, or with GPUs of several."""
    kinds = {g.fabric_kind for g in gpus}
    if len(kinds) != 1:
        return None
    (kind,) = kinds
    return NVSWITCH_GENERATION_OF.get(kind) if kind is not None else None


@dataclass(frozen=True, slots=True)
class Baseboard:
    """Physical accelerator baseboard. `ports` counts wired ports per slot pair (a < b);
    `nvswitches` lists the switch chips of an NVSwitch board (wiring "nvswitch");
    `nvswitch_generation` is their generation where the platform states it."""

    kind: str
    """The board's name (`hgx-h100-8gpu`)."""
    slots: int
    """GPU slots."""
    ports_per_slot: int
    """Fabric ports per slot."""
    links_per_port: int
    """Fabric links one port carries."""
    wiring: str
    """How slots are wired: `nvswitch`, `fully-connected`, `hybrid-cube-mesh`, or `explicit` (a list of slot pairs)."""
    ports: Mapping[tuple[int, int], int]
    """Wired ports per slot pair `(a, b)`, a < b."""
    nvswitches: tuple[NvSwitch, ...] = ()
    """The NVSwitch chips of an NVSwitch board (empty otherwise)."""
    nvswitch_generation: int | None = None
    """The NVSwitch generation: the file's, else the one the GPUs' NVLink generation attaches to
    (None when the GPU parts do not say)."""
    nvswitch_generation_written: bool = False
    """Whether the file states `nvswitch_generation`; otherwise it is the one the GPUs' NVLink
    generation attaches to (`NVSWITCH_GENERATION_OF`), None when the GPU parts do not say."""

    @property
    def nvlink_sharp(self) -> bool:
        """The switches reduce in the fabric (NVLink SHARP, NCCL's NVLS): NVSwitch generation 3 and later."""
        return self.nvswitch_generation is not None and self.nvswitch_generation >= NVLS_MIN_NVSWITCH_GENERATION


@dataclass(frozen=True, slots=True)
class Backend:
    """The scale-out network as the node sees it. `gpudirect` is None when left to NCCL's
    detection ('detect'); `ib_hca` is the declared NCCL_IB_HCA filter, if any."""

    transport: str
    """The scale-out transport: `ib`, `rocev2`, `efa`, `tcp`, ..."""
    nic_per_gpu: bool
    """Every GPU has a backend NIC of its own."""
    gpudirect: bool | None
    """GPUDirect RDMA on (True) or off (False); None: left to NCCL's detection (`detect`)."""
    rail_optimized: bool | None
    """None: the platform does not say (NCCL_CROSS_NIC is left to NCCL)."""
    gid_index: int | None
    """RoCE GID index (NCCL_IB_GID_INDEX), or None."""
    traffic_class: int | None
    """RoCE/IB traffic class (NCCL_IB_TC), or None."""
    service_level: int | None
    """InfiniBand service level (NCCL_IB_SL), or None."""
    ib_hca: str | None = None
    """The declared NCCL_IB_HCA filter, or None."""


@dataclass(frozen=True, slots=True)
class Declares:
    """What the platform file declares it holds (`declares:`), checked against what it
    describes; None when not declared. `memory` in bytes."""

    sockets: int | None
    """Declared CPU sockets, or None."""
    gpus: int | None
    """Declared GPUs, or None."""
    memory: int | None
    """Declared host memory in bytes, or None."""


@dataclass(frozen=True, slots=True)
class RuleSetting:
    """A platform's change to one rule: new severity ("off" disables it) and the reason."""

    severity: str
    """`error`, `warning`, `info` or `off`."""
    reason: str
    """Why the platform changes the rule."""
    location: Location
    """Where the setting is written."""


@dataclass(frozen=True, slots=True)
class Assumption:
    """A value marked `assumed:` in the platform or its parts, with where it is written."""

    path: str
    """The dotted path of the value (`sockets.cpu0.memory.capacity`)."""
    assumed: str
    """The reason it is an assumption."""
    source: str | None
    """The `source:` given with it, or None."""
    location: Location
    """Where it is written."""


def topology_moved(model: object) -> NoReturn:
    """`model.topology`, which the model no longer has: the message says where it went."""
    raise AttributeError(f"{type(model).__name__} has no '.topology': use hwspec.topology_of(model) "
                         "(a rule or generator has it as ctx.topology)")


@dataclass(frozen=True, slots=True)
class CataloguePart:
    """A catalogue part a platform names, as a parts file writes it: `kind` (`gpus`, `nics`,
    `cpus`, `pcie_switches`), `name`, and `entry`, its fields with every figure's `source:` and
    `assumed:` notes (a value with a note as `{value: ..., source: ...}`)."""

    kind: str
    """The catalogue section: `gpus`, `nics`, `cpus` or `pcie_switches`."""
    name: str
    """The part's name (`connectx-7-400g`)."""
    entry: Mapping[str, Any]
    """Its fields as a parts file writes them, each figure's notes beside it."""


@dataclass(frozen=True)
class Platform:
    """A resolved node platform. Device lists are sorted: sockets by NUMA node, GPUs and NICs
    by bus id. Lookups are derived (`by_id`, `gpu_by_id`, ...); connectivity (paths, NUMA
    placement, NIC shares) is its topology's, `hwspec.topology.topology_of(platform)`."""

    topology = property(topology_moved)
    """Gone: `hwspec.topology_of(platform)`. Kept only to say so (an AttributeError naming it)."""

    name: str
    """The platform's name: its output directory under generated/."""
    title: str
    """A human title (the name when the file gives none)."""
    file: str
    """The platform file's path."""
    sockets: tuple[NumaNode, ...]
    """CPU sockets, one entry per NUMA node, by NUMA node number."""
    cpu_links: tuple[tuple[str, str], ...]
    """CPU interconnect links (UPI, xGMI) as socket id pairs."""
    cpu_link_bandwidth: float | None
    """Bytes/s per direction per CPU link; None without a CPU interconnect."""
    cpu_interconnect: str | None
    """The CPU interconnect's kind (`upi`, `xgmi`, ...), or None."""
    bridges: tuple[Bridge, ...]
    """PCIe switches and root ports, in file order."""
    gpus: tuple[Gpu, ...]
    """GPUs by bus id."""
    nics: tuple[Nic, ...]
    """NICs by bus id."""
    ssds: tuple[Ssd, ...]
    """NVMe SSDs."""
    baseboard: Baseboard | None
    """The accelerator baseboard, or None."""
    nvlink_topology: str
    """The GPU fabric as written: `nvswitch`, `fully-connected`, `hybrid-cube-mesh`, `explicit` (a list of pairs), or `none` (no `nvlink:`)."""
    nvlinks: tuple[NvlinkConnection, ...]
    """Every logical fabric connection (GPU-GPU or GPU-NVSwitch)."""
    cpu_nvlinks: tuple[CpuNvlink, ...]
    """NVLinks from GPUs to their CPU (`nvlink.cpu_links`, POWER8/POWER9), in file order; not in `nvlinks`."""
    fabric_symmetric: bool
    """Every GPU is declared to have the same fabric bandwidth (HW305 checks it)."""
    backend: Backend | None
    """The scale-out network as the node sees it, or None."""
    declares: Declares
    """What the file declares it holds, checked against what it describes."""
    sources: Mapping[str, str]
    """The file's `sources:`: name -> reference."""
    rule_settings: Mapping[str, RuleSetting]
    """Rule id -> the platform's change to it (`rules:`)."""
    assumptions: tuple[Assumption, ...]
    """Every value marked `assumed:` in the platform and its parts."""
    source_map: SourceMap = field(repr=False, compare=False)
    """Where each entry is written (see `locate`)."""

    kind: str = "node"
    """`node`."""
    environment: Mapping[str, str] = field(default_factory=dict)
    """Extra settings as written (`environment:`): NCCL_* names for NCCL, the rest for the launcher."""
    catalogue_parts: tuple[CataloguePart, ...] = ()
    """The catalogue parts it names (built-in or a site's), by kind and name, each as the
    catalogue it was loaded with defines it: what an installed health check bundles."""

    @cached_property
    def pcie_items(self) -> tuple[Bridge | Gpu | Nic | Ssd, ...]:
        """Every bridge and device that hangs in the PCIe tree (`upstream`, `bus`, `link`):
        bridges, GPUs, NICs, SSDs, in that order."""
        return (*self.bridges, *self.gpus, *self.nics, *self.ssds)

    @cached_property
    def by_id(self) -> dict[str, NumaNode | Bridge | Gpu | Nic | Ssd]:
        """Every socket, bridge and device by id."""
        items: tuple[NumaNode | Bridge | Gpu | Nic | Ssd, ...] = (*self.sockets, *self.pcie_items)
        return {item.id: item for item in items}

    @cached_property
    def socket_by_id(self) -> dict[str, NumaNode]:
        """Sockets (NUMA node entries) by id."""
        return {s.id: s for s in self.sockets}

    @cached_property
    def gpu_by_id(self) -> dict[str, Gpu]:
        """GPUs by id."""
        return {g.id: g for g in self.gpus}

    @cached_property
    def nic_by_id(self) -> dict[str, Nic]:
        """NICs by id."""
        return {n.id: n for n in self.nics}

    @cached_property
    def bridge_by_id(self) -> dict[str, Bridge]:
        """PCIe switches and root ports by id."""
        return {b.id: b for b in self.bridges}

    def rdma_port(self, nic: Nic) -> int:
        """The port number of `nic` on its RDMA device, as NCCL_IB_HCA (`mlx5_0:1`) and the verbs
        stack name it: 1 for a card's port with an RDMA device of its own (a ConnectX card shows
        each port as its own mlx5 device; its place on the card, `port`, is what NCCL's topology
        file writes), else `port` (ports sharing one device, or a NIC entry per port)."""
        if nic.card is None or nic.device is None:
            return nic.port
        sharing = [n for n in self.nics if n.card == nic.card and n.device == nic.device]
        return 1 if len(sharing) == 1 else nic.port

    @cached_property
    def backend_nics(self) -> tuple[Nic, ...]:
        """The NICs of role `backend`, by bus id."""
        return tuple(n for n in self.nics if n.role == "backend")

    @cached_property
    def host_nics(self) -> tuple[Nic, ...]:
        """Ingestion/frontend NICs: what bootstrap and socket traffic use."""
        return tuple(n for n in self.nics if n.role in ("ingestion", "frontend"))

    @cached_property
    def collective_nics(self) -> tuple[Nic, ...]:
        """The NICs that carry inter-node collectives: the backend NICs, or, on a platform
        without any (Zion), the host NICs running the backend transport (also
        `topology.collective_nics` by id; here because cluster resolution needs it)."""
        if self.backend_nics:
            return self.backend_nics
        transport = self.backend.transport if self.backend else "tcp"
        return tuple(n for n in self.host_nics if n.transport == transport)

    @cached_property
    def unknown_figures(self) -> tuple[str, ...]:
        """What the platform does not know that figures (roofline, TorchRec, Calculon, estimates)
        need, one line per entry: `gpu0: HBM, compute and fabric bandwidth (part unknown)`. Empty
        when every figure is known; consumers of figures check it before computing."""
        lines = []
        for gpu in self.gpus:
            missing = [name for name, value in (("HBM", gpu.hbm_capacity), ("compute", gpu.compute),
                                                 ("fabric bandwidth", gpu.fabric_link_bandwidth), ("PCIe link", gpu.physical))
                       if value is None]
            if missing:
                lines.append(f"{gpu.id}: {', '.join(missing)} ({'part unknown' if gpu.part == UNKNOWN else 'not given'})")
        for nic in self.nics:
            missing = [name for name, value in (("speed", nic.speed), ("PCIe link", nic.physical)) if value is None]
            if missing:
                lines.append(f"{nic.id}: {', '.join(missing)} ({'part unknown' if nic.part == UNKNOWN else 'not given'})")
        for ssd in self.ssds:
            if ssd.physical is None:
                lines.append(f"{ssd.id}: PCIe link (not given)")
        for socket in self.sockets:
            missing = [name for name, value in (("memory capacity", socket.memory_capacity),
                                                 ("memory bandwidth", socket.memory_bandwidth)) if value is None]
            if missing:
                lines.append(f"{socket.id}: {', '.join(missing)} (not given)")
        return tuple(lines)

    @cached_property
    def packages(self) -> tuple[str, ...]:
        """Physical CPU sockets by id, in NUMA order (`sockets` lists NUMA nodes)."""
        return tuple(dict.fromkeys(s.package for s in self.sockets))

    @property
    def memory_capacity(self) -> int | None:
        """Host DDR in bytes, summed over the sockets with memory of their own: a socket whose
        memory is a GPU's HBM (an APU) adds nothing, that pool is counted as the GPU's HBM.
        None when any of those sockets' capacity is unknown (a partial sum is no total)."""
        own = [s.memory_capacity for s in self.sockets if s.memory_shared_with is None]
        return None if None in own else sum(c for c in own if c is not None)

    @property
    def memory_bandwidth(self) -> float | None:
        """Host DDR bandwidth, bytes/s, summed as `memory_capacity` is; None when any is unknown."""
        own = [s.memory_bandwidth for s in self.sockets if s.memory_shared_with is None]
        return None if None in own else sum(b for b in own if b is not None)

    def locate(self, entity: str | None = None, *fields: str | int) -> Location:
        """Where `entity` (an id, or None for the file top) and optionally one of its fields
        is written. Repeat-expanded entries point at their template line."""
        return self.source_map.locate(entity, *fields)

    def provenance(self, entity: str, *fields: str | int) -> Any:
        """The `source:`/`assumed:` note of an entry or field, or None."""
        return self.source_map.provenance(entity, *fields)
