"""The spec language: pydantic models of a platform file as written (after `expand`).

Every model forbids unknown keys and may carry `source` (where its values come from) and
`assumed` (why they are an assumption). Quantities use the unit types of `hwspec.spec.units`
and are stored canonically: sizes in bytes, bandwidths in bytes/s per direction, compute in
FLOP/s (or integer op/s), PCIe rates in transfers/s. References between entries are plain
ids (`upstream: sw0`); `hwspec.spec.references` checks that they resolve.

These models are the one definition of the spec language: `hwspec.spec.validate` (a node),
`hwspec.spec.workload` and `hwspec.spec.translate.validate_document` validate documents with
them, and the JSON Schema (`hwspec.spec.json_schema`) is generated from them.
The checks that are code live in `hwspec.spec.checks` and `hwspec.spec.units`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, StrictBool, Tag, WithJsonSchema, model_validator

from hwspec.spec import checks
from hwspec.spec.checks import MAX_CORES, MAX_SOCKETS, UNKNOWN
from hwspec.spec.unit_types import ByteRate, Bytes, FlopRate, TransferRate
from hwspec.spec.units import _BYTE_RATE_KIND, _SIZE_KIND

Bandwidth = Annotated[ByteRate, Field(gt=0)]
"""A bandwidth that must be above zero: a link or memory with no bandwidth is a mistake (leave
out a tier that does not exist instead)."""

WholeNumber = Annotated[int, BeforeValidator(checks.whole_number)]
"""A count, index or number: written as a number (`2`, `2.0`), never `"2"` or `true`. Every
integer field of the spec language is one (tests/test_spec_loading.py checks it)."""

OptionalWholeNumber = Annotated[int | None, BeforeValidator(checks.whole_number)]
"""A WholeNumber that may be left out. (Not `WholeNumber | None`: pydantic could not then put
a field's `ge`/`le` on the integer itself and would check them in Python.)"""

RealNumber = Annotated[float, BeforeValidator(checks.real_number)]
"""A plain number (a share, a ratio): `0.8`, `2`, never `"0.8"` or `true`. Every float field
of the spec language without a unit is one; yes/no fields are `StrictBool` (true or false,
never 1 or "yes"): what the JSON Schema accepts is what validation accepts."""

OptionalRealNumber = Annotated[float | None, BeforeValidator(checks.real_number)]
"""A RealNumber that may be left out (see OptionalWholeNumber for why not `RealNumber | None`)."""

SpecVersion = Annotated[Literal[1], BeforeValidator(checks.whole_number)]
"""`hwspec: 1` (`true`, equal to 1 in Python, is not a version)."""

Id = Annotated[str, Field(max_length=64, json_schema_extra={"pattern": f"^{checks.ID.pattern}$"}), AfterValidator(checks.check_id)]
"""An entry id: `gpu0`, `sw-1`. Used in references and in generated names."""

PartName = Annotated[str, Field(max_length=64, json_schema_extra={"pattern": f"^{checks.PART_NAME.pattern}$"}),
                     AfterValidator(checks.check_part_name)]

BusId = Annotated[str, Field(json_schema_extra={"pattern": f"^{checks.BUS_ID.pattern}$"}),
                  AfterValidator(checks.check_bus_id)]
"""PCI bus id, lower case, 4-digit domain: NCCL matches these strings byte for byte."""


Unknown = Literal["unknown"]


def _known_or_unknown_schema(known: dict[str, Any]) -> WithJsonSchema:
    """`known`'s schema, or the word `unknown`: chosen by `if`, so an error names the unit pattern."""
    return WithJsonSchema({"if": {"const": UNKNOWN}, "then": {"description": "The source does not give it."}, "else": known})


MemoryCapacity = Annotated[Annotated[Bytes, Tag("known")] | Annotated[Unknown, Tag("unknown")],
                           Discriminator(checks.known_or_unknown), _known_or_unknown_schema(_SIZE_KIND.json_schema("bytes"))]
"""A socket's memory size, or `unknown` where the source does not give it (an NCCL dump,
nvidia-smi topo -m). A value that is not `unknown` gets the size's own message when it is wrong."""

MemoryBandwidth = Annotated[Annotated[Bandwidth, Tag("known")] | Annotated[Unknown, Tag("unknown")],
                            Discriminator(checks.known_or_unknown),
                            _known_or_unknown_schema(_BYTE_RATE_KIND.json_schema("bytes per second per direction"))]
"""A socket's memory bandwidth, or `unknown` (no import input states it)."""

DeviceBusId = Annotated[str, Field(json_schema_extra={"pattern": f"^(unknown|{checks.BUS_ID.pattern})$"}),
                        AfterValidator(checks.check_device_bus_id)]
"""A device's PCI bus id, or `unknown` where the input does not give it (nvidia-smi topo -m)."""

CataloguePartName = Annotated[PartName, AfterValidator(checks.check_catalogue_part_name)]
"""A part name a catalogue may define: any part name but `unknown`, the spec word."""

OsName = Annotated[str, Field(max_length=15, json_schema_extra={"pattern": f"^{checks.OS_NAME.pattern}$"}),
                   AfterValidator(checks.check_os_name)]
"""A name as the OS shows it (`mlx5_0`, `eth0`). The safe set keeps generated shell and env
files free of quoting problems: anything else is refused here, never escaped later."""

CpuList = Annotated[str, AfterValidator(checks.check_cpu_list_syntax), AfterValidator(checks.check_cpu_list_size)]

Dtype = Literal["fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"]
Transport = Literal["infiniband", "rocev2", "efa", "tcpx", "tcpxo", "slingshot", "tcp"]
NicRole = Literal["backend", "ingestion", "frontend", "management"]


class Spec(BaseModel):
    """Base of every spec model: unknown keys are errors; `source`/`assumed` are notes; a plain
    number (`oversubscription`, a workload's `pooling`) is finite (YAML's `.nan`, `.inf` and
    `1e400` are refused)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, protected_namespaces=(),
                              allow_inf_nan=False)

    source: str | None = Field(None, description="Where the values of this entry come from.")
    assumed: str | None = Field(None, description="Set when the values are an assumption: say why.")


class _LinkRate(checks.LinkMethods, Spec):
    """What every PCIe link states about its rate: a generation or a transfer rate."""

    gen: OptionalWholeNumber = Field(None, ge=1, le=6, description="PCIe generation, 1-6.")
    speed: TransferRate | None = Field(None, description="Alternative to gen: '16 GT/s'.")

    _gen_or_speed = model_validator(mode="after")(checks.gen_or_speed)


class PhysicalLink(_LinkRate):
    """The PCIe link a device or bridge physically trains at: what bandwidth is computed from."""

    width: Annotated[Literal[1, 2, 4, 8, 16, 32], BeforeValidator(checks.whole_number)] = Field(description="Lanes.")


class PcieLink(_LinkRate):
    """A PCIe link as the OS presents it (`lspci`, sysfs): generation (or transfer rate) and lane
    count. This is what NCCL's topology file gets. A VM may present a virtual link (a Gen1 x1
    bridge, width 0 for a passed-through device); then `physical` states the link the hardware
    trains at, which rules and the roofline use. Without `physical`, the link is both."""

    width: Annotated[Literal[0, 1, 2, 4, 8, 16, 32], BeforeValidator(checks.whole_number)] = Field(
        description="Lanes (0: the width a VM reports for a passed-through device).")
    physical: PhysicalLink | None = Field(
        None, description="The link the hardware trains at, when the presented one differs (a VM's virtual bridge).")

    _width_zero_needs_physical = model_validator(mode="after")(checks.width_zero_needs_physical)


class PartRef(Spec):
    """Fields shared by entries built from a catalogue part."""

    part: PartName = Field(description="Name of a part in the catalogue (built-in, parts/ beside the platform file, or --parts DIR), "
                                       "or 'unknown' when the source does not identify it (then 'override:' holds what was observed).")
    override: dict[str, Any] | None = Field(None, description="Part fields that differ on this platform (merged over the part); with "
                                                    "'part: unknown', the identity that was observed (CpuIdentity, GpuIdentity, NicIdentity).")


# ---------------------------------------------------------------- parts


class CpuPart(Spec):
    vendor: Literal["intel", "amd", "arm", "ibm"]
    arch: Literal["x86_64", "arm64", "ppc64"]
    model_name: str
    family: WholeNumber = Field(ge=0, description="CPUID family as NCCL computes it (base + extended).")
    model: WholeNumber = Field(ge=0, description="CPUID model as NCCL computes it (base + extended<<4).")
    cores: WholeNumber = Field(ge=1, le=MAX_CORES, description="Physical cores per socket.")
    threads_per_core: WholeNumber = Field(2, ge=1, le=8)


class HbmSpec(Spec):
    capacity: Bytes
    bandwidth: Bandwidth


class FabricCapability(Spec):
    """What the accelerator part can do on its GPU-to-GPU fabric."""

    kind: Literal["nvlink1", "nvlink2", "nvlink3", "nvlink4", "nvlink5", "xgmi", "none"]
    links: WholeNumber = Field(ge=0, description="Links the part has.")
    link_bandwidth: Bandwidth | None = Field(None, description="Per link, per direction; left out by a part without links.")

    _links_need_bandwidth = model_validator(mode="after")(checks.fabric_links_need_bandwidth)


class C2cCapability(Spec):
    """The part's NVLink-C2C (chip-to-chip) links to a CPU, as NVML counts them (Grace Hopper, Grace Blackwell)."""

    links: WholeNumber = Field(ge=1, le=64, description="C2C links the GPU has to its CPU (NVML_FI_DEV_C2C_LINK_COUNT).")
    link_bandwidth: Annotated[ByteRate, Field(ge=1e6, le=1e15)] = Field(
        description="Per link, per direction (NVML_FI_DEV_C2C_LINK_GET_MAX_BW); NCCL's topology file takes it as whole MB/s.")


class GpuPart(Spec):
    vendor: Literal["nvidia", "amd", "intel", "other"]
    model_name: str
    form_factor: Literal["sxm2", "sxm3", "sxm4", "sxm5", "oam", "pcie", "superchip", "apu"] = Field(
        description="How the part is built; 'apu': CPU cores and GPU in one package sharing the HBM (MI300A).")
    sm: WholeNumber = Field(0, ge=0, description="CUDA compute capability x10 (80 for A100); NCCL's 'sm'. 0 for parts without CUDA.")
    gcn: str | None = Field(None, pattern=r"^gfx[0-9a-f]{3,4}$",
                            description="AMD GPUs: the gfx target (gfx942 for MI300X); RCCL's <gpu gcn>.")
    hip_arch: OptionalWholeNumber = Field(None, ge=0, description="AMD GPUs: hipDeviceProp_t.arch packed as an int (RCCL's <gpu arch>).")
    compute_units: OptionalWholeNumber = Field(None, ge=1, description="AMD GPUs: compute units; RCCL's <gpu sm> holds this count.")
    pci_vendor: str = Field(pattern=r"^0x[0-9a-f]{4}$")
    pci_device: str = Field(pattern=r"^0x[0-9a-f]{4}$")
    hbm: HbmSpec
    compute: dict[Dtype, FlopRate] = Field(description="Dense peak per dtype.")
    sparse: list[Dtype] = Field(default_factory=list, description="Dtypes with 2:4 structured sparsity (2x dense peak).")
    fabric: FabricCapability
    c2c: C2cCapability | None = Field(None, description="NVLink-C2C links to a CPU, for parts that have them.")
    pcie: PcieLink = Field(description="Host interface the part supports at most.")


class NicPart(Spec):
    vendor: str
    model_name: str
    speed: Bandwidth = Field(description="Per port, per direction.")
    ports: WholeNumber = Field(1, ge=1)
    transports: list[Transport]
    rdma: StrictBool
    gpudirect: StrictBool = Field(description="Supports GPUDirect RDMA (peer memory).")
    pci_vendor: str = Field(pattern=r"^0x[0-9a-f]{4}$")
    pci_device: str = Field(pattern=r"^0x[0-9a-f]{4}$")
    pcie: PcieLink


PciId = Annotated[str, Field(pattern=r"^0x[0-9a-f]{4}$")]
"""A 16-bit PCI id as lspci and NCCL's topology dumps write it: `0x1000`."""


class PcieSwitchPart(Spec):
    """A PCIe switch chip: its own generation (what its ports can train at) and the PCI ids its
    ports show. NCCL flattens Broadcom switches by these ids (vendor 0x1000, device 0xc010 Gen4
    or 0xc030 Gen5, with the subsystem ids the board gives each port)."""

    vendor: str
    model_name: str
    gen: WholeNumber = Field(ge=1, le=6, description="The PCIe generation the switch's ports support at most.")
    lanes: OptionalWholeNumber = Field(None, ge=1, le=1024, description="Lanes of the chip; left out for a family entry "
                                                                          "(one device id shared by chips of several sizes).")
    pci_vendor: PciId
    pci_device: PciId


class PartsCatalogue(Spec):
    """A parts file: `kind: parts` with named CPUs, GPUs, NICs and PCIe switches."""

    hwspec: SpecVersion
    kind: Literal["parts"]
    cpus: dict[CataloguePartName, CpuPart] = Field(default_factory=dict)
    gpus: dict[CataloguePartName, GpuPart] = Field(default_factory=dict)
    nics: dict[CataloguePartName, NicPart] = Field(default_factory=dict)
    pcie_switches: dict[CataloguePartName, PcieSwitchPart] = Field(default_factory=dict)


class CpuIdentity(Spec):
    """What is known of a CPU whose part is `unknown`: the identity its source gives, nothing else."""

    vendor: Literal["intel", "amd", "arm", "ibm"] | None = None
    arch: Literal["x86_64", "arm64", "ppc64"] | None = None
    model_name: str | None = None
    family: OptionalWholeNumber = Field(None, ge=0)
    model: OptionalWholeNumber = Field(None, ge=0)


class FabricIdentity(Spec):
    """What the source shows of an unknown GPU's fabric: its kind and links (their bandwidth stays unknown)."""

    kind: Literal["nvlink1", "nvlink2", "nvlink3", "nvlink4", "nvlink5", "xgmi", "none"] | None = None
    links: OptionalWholeNumber = Field(None, ge=0)


class GpuIdentity(Spec):
    """What is known of a GPU whose part is `unknown` (a `topo -m` board, an unlisted PCI id): the
    identity its source gives. Its figures (HBM, compute, fabric) stay unknown."""

    vendor: Literal["nvidia", "amd", "intel", "other"] | None = None
    model_name: str | None = None
    pci_vendor: str | None = Field(None, pattern=r"^0x[0-9a-f]{4}$")
    pci_device: str | None = Field(None, pattern=r"^0x[0-9a-f]{4}$")
    sm: OptionalWholeNumber = Field(None, ge=0, description="CUDA compute capability x10, when the source gives it.")
    gcn: str | None = Field(None, pattern=r"^gfx[0-9a-f]{3,4}$", description="AMD: the gfx target, when the source gives it.")
    hip_arch: OptionalWholeNumber = Field(None, ge=0, description="AMD: hipDeviceProp_t.arch packed as an int (RCCL's <gpu arch>), "
                                                                  "when the source gives it.")
    compute_units: OptionalWholeNumber = Field(None, ge=1, description="AMD: the compute-unit count (RCCL's <gpu sm>), when the "
                                                                       "source gives it.")
    fabric: FabricIdentity | None = Field(None, description="The fabric links the source shows, when it shows them.")


class NicIdentity(Spec):
    """What is known of a NIC whose part is `unknown`: the identity and figures its source gives."""

    vendor: str | None = None
    model_name: str | None = None
    pci_vendor: str | None = Field(None, pattern=r"^0x[0-9a-f]{4}$")
    pci_device: str | None = Field(None, pattern=r"^0x[0-9a-f]{4}$")
    speed: Bandwidth | None = Field(None, description="Per port, per direction, when the source gives it.")
    rdma: StrictBool | None = None
    gpudirect: StrictBool | None = None


# ---------------------------------------------------------------- node


class SocketMemory(Spec):
    """A socket's (or NUMA node's) memory: its own DDR (`capacity`, `bandwidth`), or, on an APU
    (MI300A), the HBM of the GPU in the same package (`shared_with: gpu0`): one pool that the CPU
    cores and the GPU share, counted once, as the GPU's HBM."""

    capacity: MemoryCapacity | None = Field(None, description="DDR attached to this socket, or 'unknown' when the source "
                                                              "does not give it (HW603 says what to fill in).")
    bandwidth: MemoryBandwidth | None = Field(None, description="DDR bandwidth of this socket, or 'unknown' when the "
                                                                "source does not give it (HW603 says what to fill in).")
    shared_with: Id | None = Field(None, description="The GPU whose HBM is this memory (an APU: MI300A); then no capacity "
                                                     "or bandwidth here, they are the GPU part's.")

    _own_or_shared = model_validator(mode="after")(checks.own_or_shared_memory)


class NumaNodeSpec(Spec):
    """One NUMA node of a socket (sub-NUMA clustering, AMD NPS modes): its CPUs and memory.
    Its `id` is what PCIe entries hang off (`upstream:`)."""

    id: Id
    numa_node: WholeNumber = Field(ge=0, le=1023, description="The NUMA node number, as 'numactl -H' shows it.")
    cpus: CpuList | None = Field(None, description="Logical CPUs of this NUMA node; derived from the part when absent "
                                                    "(the socket's cores split evenly among its NUMA nodes).")
    memory: SocketMemory


class SocketSpec(PartRef):
    """A CPU socket. Either the socket is one NUMA node (`numa_node`, `cpus`, `memory` here),
    or it lists its `numa_nodes`, each with its own CPUs and memory."""

    id: Id
    numa_node: OptionalWholeNumber = Field(None, ge=-1, le=1023, description=(
        "The socket's NUMA node, when it is one; -1 where the machine reports no NUMA node for its devices (a VM "
        "without NUMA tables: sysfs numa_node -1, NCCL's <cpu numaid=\"-1\">), as nccl-topo.xml then writes it."))
    cpus: CpuList | None = Field(None, description="Logical CPUs of this NUMA node; derived from the part when absent.")
    memory: SocketMemory | None = None
    numa_nodes: list[NumaNodeSpec] | None = Field(None, min_length=1, max_length=64,
                                                  description="The socket's NUMA nodes, when it has several (SNC, NPS2/NPS4).")

    _one_numa_form = model_validator(mode="after")(checks.one_numa_form)


class CpuInterconnectSpec(Spec):
    kind: str = Field(description="e.g. upi, xgmi.")
    links: Literal["fully-connected"] | list[tuple[Id, Id]]
    bandwidth: Bandwidth = Field(description="Per link, per direction.")


class PcieAttach(Spec):
    """Where a device sits in the PCIe tree."""

    upstream: Id = Field(description="A socket, root port or switch id.")
    bus: DeviceBusId = Field(description="PCI bus id, or 'unknown' when the source does not give it.")
    link: PcieLink | None = Field(None, description="Defaults to the part's host interface (unknown for an unknown part).")


class PciIds(Spec):
    """The PCI ids a bridge shows (`lspci -nn -vv`, NCCL's dump); each defaults to its part's."""

    vendor: PciId | None = Field(None, description="PCI vendor id, 0x1000.")
    device: PciId | None = Field(None, description="PCI device id, 0xc030.")
    subsystem_vendor: PciId | None = Field(None, description="PCI subsystem vendor id (the board's), 0x1000.")
    subsystem_device: PciId | None = Field(None, description="PCI subsystem device id, 0x0000.")


class PcieBridgeSpec(Spec):
    """A PCIe switch or root port; its `link` is its upstream link. Its own generation (what
    the links below it may train at) is its part's, else `gen`, else its uplink's
    (`link.physical`, else `link`): a Gen5 switch under a Gen4 root port names its part, or
    says `gen: 5` where its model is not public."""

    id: Id
    kind: Literal["switch", "root-port"] = "switch"
    part: PartName | None = Field(None, description="A PCIe switch part of the catalogue (pcie_switches:).")
    pci: PciIds | None = Field(None, description="The PCI ids this bridge shows, where they differ from or add to its "
                                                 "part's (the subsystem ids a board gives each port).")
    gen: OptionalWholeNumber = Field(None, ge=1, le=6, description=(
        "The bridge's own PCIe generation (what the links below it may train at) where no part names its model: "
        "a Gen5 switch under a Gen4 root port. Its uplink (`link`) still limits what crosses it."))
    upstream: Id
    bus: DeviceBusId = Field(description="PCI bus id, or 'unknown' when the source does not give it.")
    link: PcieLink
    max_oversubscription: RealNumber = Field(2.0, gt=0, description="Sum of child link bandwidth over uplink bandwidth that is acceptable.")

    _part_or_gen = model_validator(mode="after")(checks.part_or_gen)


Wiring = Literal["fully-connected", "hybrid-cube-mesh"]


class NvSwitchSpec(Spec):
    """An NVSwitch chip on the baseboard and how many fabric links each GPU it serves has to it."""

    id: Id
    links_per_gpu: WholeNumber = Field(ge=1, le=64, description="Fabric links from each GPU to this switch (HGX H100: 5, 5, 4, 4).")
    gpus: list[Id] | None = Field(None, min_length=1, max_length=64,
                                  description="The GPUs wired to this switch, where it serves only some (a DGX-2's two "
                                              "boards: each switch serves the eight GPUs of its own); all of the "
                                              "node's GPUs when absent.")
    bus: BusId | None = Field(None, description="The switch's PCI bus id where the OS shows it (NCCL names NVLink "
                                                 "targets by it); without one, NCCL's 'invisible NVSwitch' is written.")


class BaseboardSpec(Spec):
    """The accelerator baseboard's physical wiring: point-to-point ports between slots (the
    superset the logical fabric uses), or NVSwitch chips every GPU is wired to."""

    kind: Literal["oam-ubb", "hgx", "custom"] = "oam-ubb"
    slots: WholeNumber = Field(ge=1, le=64)
    ports_per_slot: WholeNumber = Field(0, ge=0, description="Fabric ports per slot (point-to-point wiring).")
    links_per_port: WholeNumber = Field(1, ge=1, description="Accelerator fabric links one port can carry.")
    wiring: Wiring | Literal["nvswitch"] | list[tuple[WholeNumber, WholeNumber]] = Field(
        description="A named superset topology, one [slot, slot] entry per wired port, or 'nvswitch'.")
    nvswitches: list[NvSwitchSpec] | None = Field(None, min_length=1, max_length=64,
                                                  description="The NVSwitch chips, for wiring: nvswitch.")
    nvswitch_generation: OptionalWholeNumber = Field(
        None, ge=1, le=8, description="NVSwitch generation of the switch chips (1 V100, 2 A100, 3 H100/H200, 4 Blackwell), "
                                      "for wiring: nvswitch. Generation 3 and later reduce in the switch (NVLink SHARP: "
                                      "NCCL's NVLS algorithm), which raises the AllReduce bound.")

    _switches_with_nvswitch_wiring = model_validator(mode="after")(checks.switches_with_nvswitch_wiring)


class C2cAttach(Spec):
    """A GPU's NVLink-C2C attachment to a CPU socket; links and bandwidth come from the part's `c2c`."""

    socket: Id = Field(description="The socket (or NUMA node) the GPU's C2C links go to, e.g. grace0.")


class GpuSpec(PartRef):
    id: Id
    slot: OptionalWholeNumber = Field(None, ge=0)
    pcie: PcieAttach
    c2c: C2cAttach | None = Field(None, description="NVLink-C2C to a CPU, besides the PCIe presence the OS shows "
                                                    "(Grace Blackwell): host traffic and GPUDirect to the socket's NICs use it.")


class NvlinkPair(Spec):
    gpus: tuple[Id, Id]
    links: WholeNumber = Field(ge=1)


class NvlinkCpuLink(Spec):
    """NVLinks from a GPU to its own CPU (IBM POWER8/POWER9: the CPU's NVLink ports, which NCCL's
    dump lists as `<nvlink tclass="0x068001">`): host traffic crosses them instead of PCIe. The
    per-link rate is the GPU part's (`fabric.link_bandwidth`); the links count against its `fabric.links`."""

    gpu: Id = Field(description="The GPU, e.g. gpu0.")
    socket: Id = Field(description="The socket (or NUMA node) the GPU's PCIe presence reaches: NCCL joins such links "
                                   "to the GPU's own CPU, so another socket cannot be written (HW506).")
    links: WholeNumber = Field(ge=1, le=64, description="NVLinks between the GPU and the CPU.")


class NvlinkSpec(Spec):
    """The logical GPU fabric in use; must embed in the baseboard wiring. NVLinks from GPUs to
    their CPU (POWER8/POWER9) are listed beside it, in `cpu_links`."""

    topology: Literal["fully-connected", "hybrid-cube-mesh", "nvswitch"] | list[NvlinkPair]
    links_per_pair: WholeNumber = Field(1, ge=1, description="For fully-connected: links between every pair.")
    exclude: list[tuple[WholeNumber, WholeNumber]] = Field(default_factory=list, description="Slot pairs left out of a named pattern.")
    symmetric: StrictBool = Field(True, description="Every GPU has the same fabric bandwidth (HW305 checks it).")
    cpu_links: list[NvlinkCpuLink] = Field(default_factory=list, max_length=64, description=(
        "NVLinks from a GPU to its CPU socket (IBM POWER8/POWER9), one entry per GPU: "
        "[{gpu: gpu0, socket: cpu0, links: 2}]. GPU pairs stay in 'topology' (an empty list where there are none)."))


class NicPortSpec(Spec):
    """One port of a multi-port NIC card (the card's `ports:`): its own id, port number, names,
    speed and the GPUs it serves. The card (one PCI function, one PCIe link) gives the part, role,
    transport and place in the PCIe tree."""

    id: Id = Field(description="The port's id, unique in the file like every entry's (nic0p1).")
    port: OptionalWholeNumber = Field(None, ge=1, le=64, description="The port number on the card (NCCL's <net port>, "
                                                                    "NCCL_IB_HCA's mlx5_0:1); left out, its position in 'ports' (1, 2, ...).")
    gpu: Id | None = Field(None, description="The GPU this port serves (shorthand for 'gpus: [id]').")
    gpus: list[Id] | None = Field(None, min_length=1, max_length=64, description="The GPUs this port serves, when it serves several.")
    device: OsName | None = Field(None, description="RDMA device name of the port, e.g. mlx5_0.")
    interface: OsName | None = Field(None, description="Network interface name of the port, e.g. eth0.")
    speed: Bandwidth | None = Field(None, description="The port's speed per direction, when it differs from the part's "
                                                      "(a 400G port run at 200 Gb/s).")
    bus: BusId | None = Field(None, description="The port's own PCI function, when the card shows each port as a function "
                                                "of its own (a ConnectX's 0000:1c:00.0 and 0000:1c:00.1, one mlx5 device "
                                                "each); left out, the card's bus. The card's link is still one.")

    _gpu_or_gpus = model_validator(mode="after")(checks.gpu_or_gpus)


class NicSpec(PartRef):
    """A NIC card: one PCI function with one PCIe link. A single-port card names its port's GPUs
    and names here; a card with several ports used lists them in `ports:` (one entry each: id,
    names, speed, GPUs), and every consumer counts each port's bandwidth and the card's link once."""

    id: Id
    role: NicRole
    transport: Transport
    gpu: Id | None = Field(None, description="The GPU a backend NIC serves (shorthand for 'gpus: [id]').")
    gpus: list[Id] | None = Field(None, min_length=1, max_length=64,
                                  description="The GPUs a backend NIC serves, when it serves several (p4d: one NIC for 2 GPUs).")
    device: OsName | None = Field(None, description="RDMA device name, e.g. mlx5_0.")
    interface: OsName | None = Field(None, description="Network interface name, e.g. eth0.")
    port: WholeNumber = Field(1, ge=1)
    ports: list[NicPortSpec] | None = Field(None, min_length=1, max_length=64,
                                            description="The card's ports, each with its id, names, speed and GPUs (a "
                                                        "ConnectX-7 2x200G with both ports cabled). With 'ports', the card "
                                                        "itself names no port, device, interface or GPU.")
    pcie: PcieAttach

    _gpu_or_gpus = model_validator(mode="after")(checks.gpu_or_gpus)
    _ports = model_validator(mode="after")(checks.card_ports)


class SsdSpec(Spec):
    id: Id
    capacity: Bytes
    bandwidth: Bandwidth = Field(description="Sequential read bandwidth.")
    pcie: PcieAttach


IbHcaFilter = Annotated[str, Field(max_length=256), AfterValidator(checks.check_ib_hca)]
"""NCCL_IB_HCA's syntax: an optional '^' (exclude) and '=' (exact names, else prefixes), then
comma-separated device names with an optional ':port'."""


class BackendSpec(Spec):
    """The scale-out (collective) network as this node sees it."""

    transport: Transport
    nic_per_gpu: StrictBool = Field(False, description="Declares one dedicated backend NIC per GPU.")
    gpudirect: StrictBool | Literal["detect"] = Field(False, description="Declares GPUDirect RDMA between GPU and NIC; "
                                                                   "'detect' leaves it to NCCL's detection (no gdr in nccl-topo.xml).")
    ib_hca: IbHcaFilter | None = Field(None, description="NCCL_IB_HCA as NCCL takes it ('mlx5', '^mlx5_an0', '=mlx5_0:1'): how "
                                                         "NCCL selects the backend RDMA devices when their names are not written "
                                                         "('device:') or differ between images.")
    rail_optimized: StrictBool | None = Field(None, description="NIC i of every node is on rail i (nccl.conf: NCCL_CROSS_NIC=0), "
                                                                "or not (NCCL_CROSS_NIC=1); left out, NCCL_CROSS_NIC is not "
                                                                "written and NCCL chooses.")
    gid_index: OptionalWholeNumber = Field(None, ge=0, le=255, description="RoCE GID index.")
    traffic_class: OptionalWholeNumber = Field(None, ge=0, le=255)
    service_level: OptionalWholeNumber = Field(None, ge=0, le=15)


class DeclaresSpec(Spec):
    """Counts and totals the platform promises; rules check them against what is wired."""

    sockets: OptionalWholeNumber = Field(None, ge=1)
    gpus: OptionalWholeNumber = Field(None, ge=0)
    memory: Bytes | None = Field(None, description="Total host DDR.")


class RuleSetting(Spec):
    severity: Annotated[Literal["error", "warning", "info", "off"], BeforeValidator(checks.off_is_off),
                        WithJsonSchema({"enum": ["error", "warning", "info", "off", False]})] = Field(
        description="New severity, or off (written bare or quoted; false is read as off too).")
    reason: str = Field(min_length=1, description="Why this platform changes the rule.")


EnvName = Annotated[str, Field(max_length=128, json_schema_extra={"pattern": f"^{checks.ENV_NAME.pattern}$"}),
                    AfterValidator(checks.check_env_name)]
EnvValue = Annotated[str, Field(max_length=1023), BeforeValidator(checks.env_value_text), AfterValidator(checks.check_env_value),
                    WithJsonSchema({"anyOf": [{"type": "string", "maxLength": 1023, "pattern": f"^{checks.ENV_VALUE.pattern}$"},
                                              {"type": "number"}, {"type": "boolean"}]})]
"""An environment value: strings as written, numbers as written, booleans as 1/0; at most 1023
characters, what NCCL copies of a nccl.conf value."""


class NodeSpec(Spec):
    """A node platform file (`kind: node`)."""

    hwspec: SpecVersion = Field(description="Spec language version.")
    kind: Literal["node"]
    name: Id
    title: str | None = None
    description: str | None = None
    sources: dict[str, str] = Field(default_factory=dict, description="Named sources the notes refer to.")
    declares: DeclaresSpec = Field(default_factory=DeclaresSpec)
    sockets: Annotated[list[SocketSpec], Field(min_length=1, max_length=MAX_SOCKETS), AfterValidator(checks.cpus_bounded)]

    cpu_interconnect: CpuInterconnectSpec | None = None
    pcie: list[PcieBridgeSpec] = Field(default_factory=list)
    baseboard: BaseboardSpec | None = None
    gpus: list[GpuSpec] = Field(default_factory=list)
    nvlink: NvlinkSpec | None = None
    nics: list[NicSpec] = Field(default_factory=list)
    ssds: list[SsdSpec] = Field(default_factory=list)
    backend: BackendSpec | None = None
    rules: dict[str, RuleSetting] = Field(default_factory=dict, description="Per-rule severity changes, by id or name.")
    environment: dict[EnvName, EnvValue] = Field(default_factory=dict, description=(
        "Tunables for this platform, e.g. the NCCL settings its vendor documents (NCCL_IB_QPS_PER_CONNECTION: 4): "
        "NCCL_* names go to nccl.conf and launch.env (replacing hwspec's own value of the same name), others to "
        "launch.env only. Only tunables pass: HW702 refuses names that load code, name files or move the launch "
        "(LD_*, PATH, *_PLUGIN, *_FILE, PET_*, ...) and unreviewed ones; HW701 warns about NCCL_* names NCCL does not know."))


# ---------------------------------------------------------------- cluster


class NodeGroupSpec(Spec):
    """`count` nodes of one node platform. Hostname/address patterns use `${...}` with `n`
    (index in the cluster, from 0) and `i` (index in this group, from `first`)."""

    platform: str = Field(description="A node platform file, relative to this file (e.g. zionex.yaml).")
    count: WholeNumber = Field(ge=1, le=1_000_000)
    first: WholeNumber = Field(0, ge=0, description="Value of `i` for the group's first node.")
    hostname: str = Field(description="Pattern, e.g. 'zx${i:04}'.")
    address: str | None = Field(None, description="Backend/bootstrap IPv4 pattern, e.g. '10.1.${n//256}.${n%256}'.")


class SwitchTier(Spec):
    ports: WholeNumber = Field(ge=2, description="Ports per switch.")
    uplinks: WholeNumber = Field(0, ge=0, description="Leaf ports used as uplinks to the spine tier.")
    speed: Bandwidth | None = Field(None, description="Uplink speed per port; defaults to the NIC speed.")
    count: OptionalWholeNumber = Field(None, ge=1, description="Spine switches; derived from the uplinks when absent.")


class BackendNetworkSpec(Spec):
    """The scale-out network for collectives."""

    transport: Transport
    speed: Bandwidth = Field(description="Per backend NIC, per direction.")
    topology: Literal["single-switch", "rail-optimized", "clos"]
    leaf: SwitchTier
    spine: SwitchTier | None = None
    oversubscription: OptionalRealNumber = Field(None, ge=1, description="Declared leaf downlink:uplink bandwidth ratio.")
    min_bisection: Bandwidth | None = Field(None, description="Declared minimum bisection bandwidth, per direction.")
    sharp: StrictBool = Field(False, description="The switches reduce in the network (InfiniBand SHARP, used by NCCL's "
                                                 "CollNet algorithms through the SHARP plugin): raises the AllReduce bound. "
                                                 "State it only where the switches have it and it is enabled; say so in source.")


class FrontendNetworkSpec(Spec):
    """The frontend/ingestion network: the nodes' ingestion or frontend NICs."""

    speed: Bandwidth = Field(description="Per NIC, per direction.")
    ingestion_share: OptionalRealNumber = Field(None, gt=0, le=1, description="Share of frontend bandwidth the data-ingestion service may use.")


class RendezvousSpec(Spec):
    port: WholeNumber = Field(29500, ge=1, le=65535)
    backend: Literal["c10d", "static"] = "c10d"


class NvlinkDomainSpec(Spec):
    """NVLink domains larger than a node (GB200 NVL72: 18 compute trays, 72 GPUs, 9 NVLink
    switch trays). Consecutive nodes in cluster order form a domain: domain d holds nodes
    d*nodes .. d*nodes+nodes-1. Every GPU of a domain reaches every other one over NVLink
    through the domain's switch trays, so a domain is a scheduling block (Slurm), a topology
    level (Kubernetes), a TorchRec pod and an NCCL multi-node NVLink (MNNVL) clique."""

    nodes: WholeNumber = Field(ge=1, le=4096, description="Nodes (compute trays) per domain, e.g. 18 for GB200 NVL72.")
    name: str = Field("nvl${d}", description="Domain name pattern; d = domain index from 0, e.g. 'rack${d:02}'.")
    switch_trays: WholeNumber = Field(ge=1, le=1024, description="NVLink switch trays per domain (9 in a GB200 NVL72 rack).")
    switch_ports: WholeNumber = Field(ge=1, le=65536, description="NVLink ports per switch tray (144 in GB200 NVL72: 2 switch chips x 72).")
    clique_id: Literal["nvml", "rack-serial"] = Field(
        "nvml", description="How NCCL identifies the clique: 'nvml' (the fabric manager's cliqueId, NCCL's default) "
                            "or 'rack-serial' (NCCL_MNNVL_CLIQUE_ID=-2: a hash of the rack chassis serial, NCCL >= 2.23.4).")


class ClusterSpec(Spec):
    """A cluster platform file (`kind: cluster`)."""

    hwspec: SpecVersion
    kind: Literal["cluster"]
    name: Id
    title: str | None = None
    description: str | None = None
    sources: dict[str, str] = Field(default_factory=dict)
    nodes: list[NodeGroupSpec] = Field(min_length=1)
    backend: BackendNetworkSpec | None = None
    frontend: FrontendNetworkSpec | None = None
    rendezvous: RendezvousSpec = Field(default_factory=RendezvousSpec)
    world_size: OptionalWholeNumber = Field(None, ge=1, description="Declared number of ranks (GPUs).")
    nvlink_domain: NvlinkDomainSpec | None = Field(None, description="NVLink domains spanning several nodes (racks such as GB200 NVL72).")
    rules: dict[str, RuleSetting] = Field(default_factory=dict)
    environment: dict[EnvName, EnvValue] = Field(default_factory=dict, description=(
        "Cluster-wide tunables: NCCL_* names go to the cluster's nccl.conf and cluster.env, others to cluster.env. "
        "Only tunables pass (HW812, as HW702 for nodes); HW811 warns about NCCL_* names NCCL does not know."))
