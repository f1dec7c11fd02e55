"""The `<system>` tree of NCCL's topology file (and RCCL's: one builder, two dialects,
`XmlForm`), built from a node's topology, and what keeps it from being written
(`topology_limits`, `rccl_limits`).

The generators (`hwspec.generate.nccl`, `hwspec.generate.rccl`) render this tree; the generation
rules (HW901, HW911) report its limits during `validate` without importing any generator. The
rendered text is checked against the libraries' parser rules by `hwspec.formats.nccl_topology`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from hwspec.formats.limits import GenerationError, Limit
from hwspec.formats.limits import collective_library as collective_library  # generators and rules import it from here
from hwspec.formats.nccl_topology import (
    CLASS_ACCELERATOR,
    MAX_ELEMENTS,
    MAX_STRING,
    NCCL,
    NVSWITCH_SENTINEL,
    PCIE_LINK_SPEED,
    RCCL,
    RCCL_MAX_CHILDREN,
    RCCL_MAX_ELEMENTS,
    Dialect,
    attribute_errors,
    missing_required,
)
from hwspec.formats.transports import facts
from hwspec.model.node import Bridge, Gpu, Nic, PcieLink, Platform
from hwspec.spec.checks import UNKNOWN
from hwspec.topology.node import Topology

CLASS_BRIDGE = "0x060400"
CLASS_GPU = "0x030200"
CLASS_ETHERNET = "0x020000"
CLASS_INFINIBAND = "0x020700"
TCLASS_GPU = "0x030200"
TCLASS_NVSWITCH = "0x068000"
TCLASS_CPU = "0x068001"
"""`tclass` of an NVLink to the GPU's own CPU (IBM POWER8/POWER9's NVLink ports, the "NPU")."""

DETAIL_LEVELS = {
    "complete": "the complete node: CPUs, PCIe tree, GPUs with their NVLinks, NICs with their nets",
    "no-nvlink": (f"NVLinks left out to stay within NCCL's {MAX_ELEMENTS} elements: NCCL asks NVML for the NVLinks "
                  "of a <gpu> that lists none"),
    "skeleton": (f"a skeleton to stay within NCCL's {MAX_ELEMENTS} elements: CPUs and the PCIe tree with GPUs and "
                 "NICs by bus id; NCCL adds <gpu> and <net> from detection"),
}
"""Forms of the file from most to least detailed; the first that fits NCCL's limit is written."""

CPU_VENDORS = {"intel": "GenuineIntel", "amd": "AuthenticAMD"}
"""spec vendor -> the CPUID vendor string NCCL expects on x86."""


@dataclass(frozen=True, slots=True)
class XmlForm:
    """What differs between NCCL's topology file and RCCL's (same grammar, other rules)."""

    library: str
    """"nccl" or "rccl"."""
    version: str
    """`<system version>`: NCCL reads only 1, RCCL only 2."""
    gpu_class: str
    """PCI class of a GPU's `<pci>`."""
    gpu_link: str
    """Element of a GPU-to-GPU link."""
    gpu_tclass: str
    """`tclass` of a GPU peer."""
    max_elements: int

    def gpu_attrs(self, gpu: Gpu, gdr: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """`<gpu>` attributes in the order the library's own dump writes them; `gdr` is the
        `gdr` attribute, or nothing when the library is to detect it."""
        if self.library == "rccl":
            # RCCL's sm is the compute-unit count (topo.cc ncclTopoAddGpu); rccl_limits refuses a GPU without
            # gcn, arch or sm (a known part's or an unknown part's override:), so all three are known here
            known = [(key, str(value)) for key, value in (("sm", gpu.compute_units), ("gcn", gpu.gcn), ("arch", gpu.hip_arch))
                     if value is not None]
            return [("dev", str(gpu.index)), *known, ("rank", str(gpu.index)), *gdr]
        sm = [] if gpu.sm is None else [("sm", str(gpu.sm))]  # unknown: NCCL fills a missing sm from the device
        return [("dev", str(gpu.index)), *sm, ("rank", str(gpu.index)), *gdr]


NCCL_FORM = XmlForm("nccl", "1", CLASS_GPU, "nvlink", TCLASS_GPU, MAX_ELEMENTS)
RCCL_FORM = XmlForm("rccl", "2", CLASS_ACCELERATOR, "xgmi", CLASS_ACCELERATOR, RCCL_MAX_ELEMENTS)


@dataclass
class XmlNode:
    """One element: attributes in writing order, children sorted by the builder."""

    tag: str
    attrs: list[tuple[str, str]] = field(default_factory=list)
    children: list[XmlNode] = field(default_factory=list)
    at: str | None = None
    """The platform entity (id) the element describes, to locate a problem with it; not written."""


def cpumap(cpus: tuple[int, ...], total: int) -> str:
    """`cpus` as sysfs writes node/cpumap: 32-bit hex words, most significant first, enough
    words for `total` CPUs. cpumap((0, 1, 33), 64) == "00000002,00000003"."""
    mask = 0
    for cpu in cpus:
        mask |= 1 << cpu
    words = max(1, -(-total // 32))
    return ",".join(f"{(mask >> (32 * i)) & 0xFFFFFFFF:08x}" for i in reversed(range(words)))


def net_speed(nic: Nic) -> int | None:
    """`<net speed>` in Mbit/s from bytes/s per direction (25e9 B/s -> 200000); None when the
    speed is unknown (the attribute is then left out, and NCCL fills it from the plugin)."""
    return None if nic.speed is None else round(nic.speed * 8 / 1e6)


def missing_bus_ids(topology: Topology) -> list[str]:
    """The GPUs, NICs and bridges above them whose bus id or PCIe link is unknown: NCCL's and
    RCCL's topology files name every `<pci>` by bus id and require its link (NCCL reuses a file's
    `<net>` without reading sysfs, so a NIC's link is not filled in), so neither file is written
    while this is not empty (rule HW603 says what to fill in)."""
    platform = topology.platform
    return sorted(ident for ident in _wanted(topology)
                  if (item := platform.by_id.get(ident)) is not None and not (isinstance(item, Nic) and cpu_attached(item))
                  and (getattr(item, "bus", "") is None or getattr(item, "link", True) is None))


def net_name(nic: Nic) -> str | None:
    """What NCCL's net calls the NIC (`hwspec.formats.transports`): the RDMA device (IB verbs,
    EFA's rdmapXsY, Slingshot's cxiN), or the interface (sockets, GPUDirect-TCPX/-TCPXO); the
    other name when the NIC has only that one."""
    if facts(nic.transport).net_name == "device" and nic.device:
        return nic.device
    return nic.interface or nic.device


def nccl_net_port(platform: Platform, nic: Nic) -> int:
    """`<net port>` as NCCL writes it. NCCL's socket net gives every interface port 0
    (net_socket.cc `ncclNetSocketGetProperties`). Its IB net gives the verbs port plus the number
    of IB devices it enumerated before this one on the same PCI bus (net_ib.cc
    `ncclIbGetPhysProperties`: `portNum + realPort`, counted by `ncclIbGetPciPath`): here the
    backend IB-verbs NICs by bus id and place on their card. Other nets get the verbs port. NCCL
    keeps a file's `port` (it fills only a missing one) and tells the ports of one NIC apart by
    guid and port, so the file gives the value its own detection would."""
    net = facts(nic.transport)
    if net.net == "Socket":
        return 0
    if not net.ib_verbs or nic.bus is None:
        return platform.rdma_port(nic)
    bus = nic.bus.rsplit(":", 1)[0]
    same_bus = sorted((n for n in platform.backend_nics if facts(n.transport).ib_verbs and n.bus and n.bus.rsplit(":", 1)[0] == bus),
                      key=lambda n: (n.bus or "", n.port, n.id))
    before = next((i for i, n in enumerate(same_bus) if n.id == nic.id), 0)
    return platform.rdma_port(nic) + before


def card_guid(nic: Nic) -> str:
    """The `<net guid>` the ports of one multi-port card share: NCCL counts nets with one guid as
    ports of one NIC (its asic), told apart by `port`. NCCL keeps a file's guid (it fills only a
    missing one), so the card's bus id is written as a number: one value per card, stable."""
    digits = "".join(c for c in (nic.bus or "") if c in "0123456789abcdef")
    return f"0x{int(digits or '0', 16):x}"


def c2c_element(gpu: Gpu) -> XmlNode:
    """`<c2c bw count>` of a GPU attached over NVLink-C2C, as NCCL's xml.cc writes it from NVML:
    `bw` the per-link speed in MB/s (NVML_FI_DEV_C2C_LINK_GET_MAX_BW; NCCL takes bw x count / 1000
    as the link's GB/s), `count` the active links."""
    return XmlNode("c2c", [("bw", str(round(gpu.c2c_link_bandwidth / 1e6))), ("count", str(gpu.c2c_links))], at=gpu.id)


def gdr_detected(platform: Platform) -> bool:
    """Whether the topology file leaves `gdr` to NCCL's detection: the platform has no backend
    network, or its backend says `gpudirect: detect`."""
    return platform.backend is None or platform.backend.gpudirect is None


def net_gdr(platform: Platform, nic: Nic) -> bool:
    """GPUDirect for this NIC port, its own fact: a backend NIC whose part (or `gpudirect` override:
    the machine's `gdr`) and transport can do it (GPUDirect RDMA; or GPUDirect-TCPX/-TCPXO, whose
    NICs reach GPU memory without RDMA), on a platform with a backend. The GPUs' side is
    `backend.gpudirect`; NCCL uses GPUDirect where both say so (HW207 names a port that differs)."""
    net = facts(nic.transport)
    return bool(platform.backend is not None and nic.role == "backend" and net.gpudirect
                and nic.gpudirect and (nic.rdma or not net.rdma))


def topology_limits(topology: Topology) -> list[Limit]:
    """What keeps `nccl-topo.xml` from being written for `platform` (empty: it can be): a GPU or
    NIC that reaches no CPU socket, an x86 CPU vendor NCCL does not know, a CPU affinity
    mask longer than NCCL's 255-character attribute, a node whose smallest form (the
    skeleton) still has more than NCCL's 256 elements, any other attribute of the form that
    would be written longer than NCCL reads (a CPUID family, compute capability, port or speed
    with hundreds of digits). Nothing to check without GPUs (no file)."""
    platform = topology.platform
    if not platform.gpus or collective_library(platform) != "nccl":
        return []  # AMD GPUs get rccl-topo.xml, with RCCL's own form and limits
    if missing_bus_ids(topology):
        return []  # not written until the bus ids are known: HW603 reports it
    limits: list[Limit] = []
    for device in (*platform.gpus, *platform.nics):
        if device.socket is None:
            limits.append(Limit(f"{device.id} reaches no CPU socket through the PCIe tree, so it has no place in "
                                "nccl-topo.xml", (device.id, "pcie", "upstream"), "attach it under a socket's PCIe tree",
                                reported_by="HW101"))
    for socket in platform.sockets:
        if socket.arch == "x86_64" and socket.vendor is not None and socket.vendor not in CPU_VENDORS:
            limits.append(Limit(f"socket {socket.id} is x86_64 with vendor {socket.vendor!r}; NCCL's topology file "
                                "knows Intel and AMD", (socket.id, "part"), "use an Intel or AMD CPU part"))
    total = _cpu_total(platform)
    width = len(cpumap((), total))
    if width >= MAX_STRING:
        widest = max(platform.sockets, key=lambda s: max(s.cpus, default=0))
        limits.append(Limit(f"CPU {total - 1} needs a {width}-character affinity mask, but NCCL reads attributes "
                            f"of at most {MAX_STRING - 1} characters (CPU ids up to {MAX_AFFINITY_CPUS - 1})",
                            (widest.id, "cpus") if widest.cpus else (widest.id,),
                            "number the CPUs from 0 without large gaps"))
    if not limits:
        _, system = choose_topology(topology)
        size = elements(system)
        if size > MAX_ELEMENTS:
            limits.append(Limit(f"even the skeleton topology has {size} elements; NCCL 2.21+ reads at most "
                                f"{MAX_ELEMENTS}", (None, "gpus"), "split the node, or leave the topology to NCCL's detection"))
        limits += element_limits(platform, system, NCCL_FORM)
    return limits


def element_limits(platform: Platform, system: XmlNode, form: XmlForm) -> list[Limit]:
    """What keeps the elements of `system` (the tree about to be written in `form`) from being
    read as written: each element is asked the library's own rules of one element (the check
    the written file passes, `hwspec.formats.nccl_topology`), and each attribute whether it is
    within the library's length. Located at the entry the element describes."""
    dialect, file = _DIALECTS[form.library]
    limits: list[Limit] = []
    for node in _walk(system):
        limits += _missing_attributes(platform, node, dialect, file)
        limits += [Limit(f"{node.at or 'the node'}: {file} would break {dialect.name}'s rules: {error}",
                         _entry_of(platform, node), "use a realistic value")
                   for error in attribute_errors(node.tag, node.attrs, dialect)]
        for key, value in node.attrs:
            if len(value) >= MAX_STRING:
                limits.append(Limit(f"{node.at or 'the node'}: {key}=\"{value[:20]}...\" in <{node.tag}> would be "
                                    f"{len(value)} characters; {dialect.name} reads attributes of at most {MAX_STRING - 1}",
                                    (node.at,), "use a realistic value"))
    return limits


def choose_topology(topology: Topology) -> tuple[str, XmlNode]:
    """The most detailed form of the topology within NCCL's element limit (the skeleton when
    none fits): `(detail, tree)`."""
    for detail in DETAIL_LEVELS:
        system = system_tree(topology, detail)
        if elements(system) <= MAX_ELEMENTS:
            break
    return detail, system


_CPU_FIELD_HINTS = {
    "arch": "give the CPU's 'arch' under 'override:' ('uname -m': x86_64, arm64 or ppc64), or name its part",
    "vendor": "give the CPU's 'vendor' under 'override:' (intel or amd, lscpu's Vendor ID), or name its part",
    "familyid": "give the CPU's 'family' and 'model' under 'override:' (lscpu's CPU family and Model), or name its part",
    "modelid": "give the CPU's 'family' and 'model' under 'override:' (lscpu's CPU family and Model), or name its part",
}


_DIALECTS: dict[str, tuple[Dialect, str]] = {"nccl": (NCCL, "nccl-topo.xml"), "rccl": (RCCL, "rccl-topo.xml")}
"""A form's library -> the parser rules its file is read by, and the file's name."""


def _entry_of(platform: Platform, node: XmlNode) -> tuple[str | None, str]:
    """Where in the platform file an element's problem is: a CPU's at its part (its package's),
    another element at the entry it describes."""
    socket = platform.socket_by_id.get(node.at) if node.tag == "cpu" and node.at is not None else None
    return (socket.package, "part") if socket is not None else (node.at, "part")


def _missing_attributes(platform: Platform, node: XmlNode, dialect: Dialect, file: str) -> list[Limit]:
    """A limit for each attribute the library requires of `node` that the platform cannot give
    (a CPU of unknown architecture, an x86 CPU of unknown vendor, an Intel CPU, or for RCCL an
    AMD one, without family and model), located at the entry it comes from; the library fails
    init on such a file."""
    missing = missing_required(node.tag, node.attrs, dialect)
    if not missing or node.at is None:
        return []
    hints = [_CPU_FIELD_HINTS[k] for k in missing if k in _CPU_FIELD_HINTS] if node.tag == "cpu" else []
    what = f"CPU {node.at}" if node.tag == "cpu" else node.at
    return [Limit(f"{what}: its <{node.tag}> in {file} would lack {', '.join(repr(k) for k in missing)}, "
                  f"which {dialect.name} requires (its init fails on such a file)", _entry_of(platform, node),
                  "; ".join(dict.fromkeys(hints)) or "fill in what the part or the input did not give")]


def _walk(node: XmlNode) -> Iterator[XmlNode]:
    yield node
    for child in node.children:
        yield from _walk(child)


MAX_AFFINITY_CPUS = (MAX_STRING // 9) * 32
"""CPUs an affinity mask (32-bit hex words and commas, 9 characters a word) can name within
NCCL's attribute length: 28 words, 896 CPUs."""


def _cpu_total(platform: Platform) -> int:
    return max((cpu for s in platform.sockets for cpu in s.cpus), default=-1) + 1


def system_tree(topology: Topology, detail: str = "complete", form: XmlForm | None = None) -> XmlNode:
    """The `<system>` tree of a node's `topology` at `detail` (a key of DETAIL_LEVELS), in
    `form` (NCCL's by default, or RCCL's)."""
    form = form or NCCL_FORM
    platform = topology.platform
    orphans = [d.id for d in (*platform.gpus, *platform.nics) if d.socket is None]
    if orphans:
        raise GenerationError(f"{platform.file}: nccl-topo.xml: {', '.join(orphans)} reach no CPU socket "
                              "through the PCIe tree, so they have no place in the topology file")
    total = max((cpu for s in platform.sockets for cpu in s.cpus), default=-1) + 1
    # gdr: declared by the backend, else left out for NCCL's detection to fill in (backend.gpudirect:
    # detect; or no backend, where nothing declares it: the GPU's GPUDirect support is the node's
    # driver state, nvidia-peermem or DMA-BUF, which NCCL reads)
    detect = gdr_detected(platform)
    gdr = [] if detect else [("gdr", "1" if platform.backend is not None and platform.backend.gpudirect else "0")]
    nvlinks = _nvlinks(platform, form.gpu_tclass, cpu_links=form.library == "nccl")
    wanted = _wanted(topology)
    net_dev = _net_numbering(platform)
    arrange = detection_order(topology)

    def below(parent: str) -> list[XmlNode]:
        nodes = []
        done: set[str] = set()
        for child in arrange(topology.children.get(parent, ())):
            if child not in wanted or child in done:
                continue
            item = platform.by_id[child]
            if isinstance(item, Gpu):
                links = [] if detail != "complete" else nvlinks.get(item.id, [])
                c2c = detail == "complete" and form.library == "nccl" and item.c2c_socket is not None
                gpu = XmlNode("gpu", form.gpu_attrs(item, gdr),
                              [XmlNode(form.gpu_link, [("target", target), ("count", str(count)), ("tclass", tclass)], at=item.id)
                               for target, tclass, count in links] + ([c2c_element(item)] if c2c else []), at=item.id)
                nodes.append(XmlNode("pci", _pci(_bus_id(item.bus), form.gpu_class, item.link, item.pci_vendor, item.pci_device),
                                     [] if detail == "skeleton" else [gpu],
                                     at=item.id))
            elif isinstance(item, Nic):
                # the ports of one adapter function share its <pci> and <nic>: one <net> each
                ports = [n for n in platform.nics if n.card_id == item.card_id
                         or (n.bus is not None and n.bus == item.bus and n.upstream == item.upstream)]
                done.update(n.id for n in ports)
                pci_class = CLASS_INFINIBAND if item.transport == "infiniband" else CLASS_ETHERNET
                named = [(n, name) for n in ports if (name := net_name(n)) is not None and n.role != "management"]
                # the ports of one card are one NIC to NCCL: one guid (its asic), told apart by port
                guid = [("guid", card_guid(item))] if len(named) > 1 else []
                nets = [XmlNode("net", [("name", name), ("dev", str(net_dev(n))), *_net_speed(n),
                                        ("port", str(nccl_net_port(platform, n))), *guid, *_net_gdr(platform, n, detect)],
                                at=n.id)
                        for n, name in named]
                if cpu_attached(item):  # NCCL's form of a NIC that is no PCI device: its <nic> under <cpu>
                    nodes += [XmlNode("nic", [], nets, at=item.id)] if nets and detail != "skeleton" else []
                    continue
                nodes.append(XmlNode("pci", _pci(_bus_id(item.bus), pci_class, item.link),
                                     [XmlNode("nic", [], nets, at=item.id)] if nets and detail != "skeleton" else [],
                                     at=item.id))
            else:
                assert isinstance(item, Bridge), child  # wanted: GPUs, NICs and the bridges above them
                nodes.append(XmlNode("pci", _pci(_bus_id(item.bus), CLASS_BRIDGE, item.link, item.pci_vendor,
                                                 item.pci_device, item.subsystem_vendor, item.subsystem_device),
                                     below(child), at=item.id))
        return nodes

    system = XmlNode("system", [("version", form.version)])
    for socket in (platform.socket_by_id[ident] for ident in arrange(s.id for s in platform.sockets)):
        # what the platform does not know of the CPU is left out: NCCL fills affinity, arch, vendor,
        # familyid and modelid when missing (ncclTopoGetXmlFromCpu)
        attrs = [("numaid", str(socket.numa_node))]
        attrs += [("affinity", cpumap(socket.cpus, total))] if socket.cpus else []
        attrs += [("arch", socket.arch)] if socket.arch else []
        if socket.arch == "x86_64" and socket.vendor is not None:
            attrs += [("vendor", CPU_VENDORS[socket.vendor])]
            attrs += [(key, str(value)) for key, value in (("familyid", socket.family), ("modelid", socket.model)) if value is not None]
        system.children.append(XmlNode("cpu", attrs, below(socket.id), at=socket.id))
    return system


def detection_order(topology: Topology) -> Callable[[Iterable[str]], list[str]]:
    """Arranges sibling ids (sockets, or the entries below one socket or bridge) so that NCCL
    numbers the GPUs and CPUs of the file as its own detection does. NCCL adds each GPU's chain
    from its CPU down in rank (bus id) order, then each NIC's; its dumps keep that order, a file it
    reads gives the indices by which its search breaks ties, and a file in another order can get
    other rings (a second socket listed first). The entries with a GPU below them are put in the
    order of their first GPU, within the places they already have; every other entry keeps its
    place (NICs stay in bus id order: the net plugin's order is not a platform fact)."""
    first: dict[str, int] = {}
    for gpu in topology.platform.gpus:
        for entry in topology.chain(gpu.id):
            first[entry] = min(gpu.index, first.get(entry, gpu.index))

    def arrange(ids: Iterable[str]) -> list[str]:
        entries = list(ids)
        places = [i for i, entry in enumerate(entries) if entry in first]
        for place, entry in zip(places, sorted((entries[i] for i in places), key=first.__getitem__)):
            entries[place] = entry
        return entries
    return arrange


def _pci(bus: str, pci_class: str, link: PcieLink | None, vendor: str | None = None, device: str | None = None,
         subsystem_vendor: str | None = None, subsystem_device: str | None = None) -> list[tuple[str, str]]:
    """A `<pci>`'s attributes in the order NCCL's dumps write them. The ids are written in pairs
    (vendor and device; the subsystem's vendor and device) where both are known: NCCL packs them
    into one 64-bit id, by which it flattens Broadcom PEX switches. An unknown link is left out
    (NCCL fills link_speed/link_width from sysfs)."""
    attrs = [("busid", bus), ("class", pci_class)]
    if vendor and device:
        attrs += [("vendor", vendor), ("device", device)]
        if subsystem_vendor and subsystem_device:
            attrs += [("subsystem_vendor", subsystem_vendor), ("subsystem_device", subsystem_device)]
    if link is None:
        return attrs
    return attrs + [("link_speed", PCIE_LINK_SPEED[link.gen]), ("link_width", str(link.width))]


def _bus_id(bus: str | None) -> str:
    """A bus id to write: never None here (`missing_bus_ids` keeps the file from being written)."""
    if bus is None:
        raise GenerationError("a topology file needs every bus id: missing_bus_ids must be checked first")
    return bus


def _net_speed(nic: Nic) -> list[tuple[str, str]]:
    speed = net_speed(nic)
    return [] if speed is None else [("speed", str(speed))]


def _net_gdr(platform: Platform, nic: Nic, detect: bool) -> list[tuple[str, str]]:
    """`gdr` of a `<net>`: left out for NCCL's detection when the platform says 'detect', or when
    the NIC's part is unknown and so is its GPUDirect support."""
    if detect or (nic.gpudirect is None and nic.transport != "tcp"):
        return []
    return [("gdr", "1" if net_gdr(platform, nic) else "0")]


def _net_numbering(platform: Platform) -> Callable[[Nic], int]:
    """`dev` of each `<net>`, called in writing order: the NICs the collective net plugin reports
    are numbered 0.. in that order, the others after them, so an ingestion or frontend NIC never
    takes a plugin device's number. NCCL's detection sets `dev` of every net its plugin reports
    (by name) and trims the nets it does not report (NCCL 2.19+); the IB plugin reports the RDMA
    devices, the socket plugin (a TCP backend) the interfaces."""
    tcp_backend = platform.backend is None or platform.backend.transport == "tcp"
    reported = [n for n in platform.nics if n.role != "management" and net_name(n) is not None
                and (tcp_backend or n.transport != "tcp")]
    counters = {True: 0, False: len(reported)}
    reported_ids = {n.id for n in reported}

    def number(nic: Nic) -> int:
        group = nic.id in reported_ids
        counters[group] += 1
        return counters[group] - 1
    return number


def left_to_detection(nic: Nic) -> bool:
    """A NIC the topology file leaves out for NCCL's detection: outside the backend, with its bus
    id or PCIe link unknown (a virtio or other paravirtual NIC has no link: NCCL attaches such a
    NIC to the first CPU itself, "not a PCI device ... Attaching to first CPU"). It never keeps
    the file from being written; a backend NIC's place is the file's point, so it does."""
    return nic.role != "backend" and (nic.bus is None or nic.link is None)


def cpu_attached(nic: Nic) -> bool:
    """A backend NIC directly on its CPU with neither a bus id nor a PCIe link (not even its
    part's): an input's NIC that is no PCI device (an NCCL `<nic>` under `<cpu>`, or under a
    bridge a sandbox shows). The file writes it as NCCL does, a `<nic>` under the `<cpu>`
    (ncclTopoAddCpu attaches it to that CPU), whose `<net>` NCCL's detection finds by name. A
    PCIe NIC whose bus id is merely unknown keeps the file from being written (HW603)."""
    return (nic.role == "backend" and nic.bus is None and nic.link is None and nic.socket is not None
            and nic.upstream == nic.socket)


def _wanted(topology: Topology) -> set[str]:
    """GPUs, NICs (but those `left_to_detection`), and the bridges above them."""
    platform = topology.platform
    wanted: set[str] = set()
    for device in (*platform.gpus, *(n for n in platform.nics if not left_to_detection(n))):
        wanted.add(device.id)
        wanted.update(topology.bridges_above(device.id))
    return wanted


def _nvlinks(platform: Platform, gpu_tclass: str = TCLASS_GPU, cpu_links: bool = False) -> dict[str, list[tuple[str, str, int]]]:
    """GPU id -> [(target bus id, tclass, count)] sorted by target; counts per peer summed.
    `gpu_tclass` is the class a GPU peer is written with (NCCL 0x030200, RCCL 0x120000).
    An NVSwitch is named by its bus id, as NCCL's own dump does; a switch the OS does not show
    (no bus id, or not described) is NCCL's invisible NVSwitch, its links summed into one entry.
    With `cpu_links` (NCCL's file), a GPU's NVLinks to its own CPU (POWER8/POWER9) are one entry of
    tclass 0x068001: NCCL joins them to the CPU the GPU sits under and never reads their target
    (topo.cc, ncclTopoAddNvLinks: `findLocalCpu`). Its own dump names the CPU's NVLink device
    (the NPU, one PCI function per link), which a platform does not describe, so the target is
    NCCL's sentinel for a remote end it cannot see. Links written to another socket are left out
    (HW506 reports them): NCCL cannot say them."""
    switch_bus = {s.id: s.bus for s in platform.baseboard.nvswitches} if platform.baseboard else {}
    counts: dict[str, dict[tuple[str, str], int]] = {}
    for link in platform.nvlinks:
        ends = [(link.a, link.b), (link.b, link.a)] if link.b in platform.gpu_by_id else [(link.a, link.b)]
        for gpu, peer in ends:
            if peer in platform.gpu_by_id:
                key = (_bus_id(platform.gpu_by_id[peer].bus), gpu_tclass)
            else:
                key = (switch_bus.get(peer) or NVSWITCH_SENTINEL, TCLASS_NVSWITCH)
            per_gpu = counts.setdefault(gpu, {})
            per_gpu[key] = per_gpu.get(key, 0) + link.links
    for cpu_link in platform.cpu_nvlinks if cpu_links else ():
        if cpu_link.socket == platform.gpu_by_id[cpu_link.gpu].socket:
            per_gpu = counts.setdefault(cpu_link.gpu, {})
            key = (NVSWITCH_SENTINEL, TCLASS_CPU)
            per_gpu[key] = per_gpu.get(key, 0) + cpu_link.links
    return {gpu: [(target, tclass, n) for (target, tclass), n in sorted(peers.items())] for gpu, peers in counts.items()}


def elements(node: XmlNode) -> int:
    """Elements in the tree rooted at `node`, as NCCL counts them."""
    return 1 + sum(elements(child) for child in node.children)


def rccl_limits(topology: Topology) -> list[Limit]:
    """Every reason rccl-topo.xml cannot be written for this node (empty for NVIDIA nodes and
    for AMD nodes RCCL can be told about)."""
    platform: Platform = topology.platform
    if collective_library(platform) != "rccl" or missing_bus_ids(topology):
        return []  # without bus ids the file is not written: HW603 reports it
    limits: list[Limit] = []
    others = [g.id for g in platform.gpus if g.vendor != "amd"]
    if others:
        limits.append(Limit(f"{', '.join(others)} are not AMD GPUs on a node with AMD GPUs: neither RCCL's nor "
                                "NCCL's topology file can describe both", (others[0],)))
    for gpu in platform.gpus:
        if gpu.vendor != "amd":
            continue
        missing = [key for key, value in (("gcn", gpu.gcn), ("hip_arch", gpu.hip_arch),
                                          ("compute_units", gpu.compute_units)) if value is None]
        if missing:
            limits.append(Limit(_missing_rccl_identity(gpu, missing), (gpu.id, "part")))
        if gpu.socket is None:
            limits.append(Limit(f"{gpu.id} reaches no CPU socket through the PCIe tree, so it has no place in "
                                "rccl-topo.xml", (gpu.id, "pcie", "upstream")))
    if platform.nvlink_topology == "nvswitch":
        limits.append(Limit("an AMD GPU fabric is point-to-point xGMI: RCCL's file has no switch to join the GPUs "
                                "to; list the xGMI pairs (fully-connected or explicit)", (None, "nvlink", "topology")))
    for socket in platform.sockets:
        if socket.arch == "x86_64" and socket.vendor is not None and socket.vendor not in CPU_VENDORS:
            limits.append(Limit(f"socket {socket.id} is x86_64 with vendor {socket.vendor!r}; RCCL knows Intel and AMD",
                                (socket.id, "part")))
    for nic in platform.nics:
        if nic.socket is None:
            limits.append(Limit(f"{nic.id} reaches no CPU socket through the PCIe tree, so it has no place in "
                                "rccl-topo.xml", (nic.id, "pcie", "upstream")))
    if not limits:
        skeleton = system_tree(topology, "skeleton", RCCL_FORM)
        size = elements(skeleton)
        if size > RCCL_FORM.max_elements:
            limits.append(Limit(f"even the skeleton topology has {size} elements; RCCL reads at most "
                                f"{RCCL_FORM.max_elements}", (None, "gpus")))
        crowded = most_children(skeleton)
        if crowded > RCCL_MAX_CHILDREN:
            limits.append(Limit(f"a CPU or PCIe switch has {crowded} devices below it; RCCL reads at most "
                                f"{RCCL_MAX_CHILDREN} children of one element", (None, "pcie")))
    if not limits:
        limits += element_limits(platform, choose_rccl_topology(topology)[1], RCCL_FORM)
    return limits


def choose_rccl_topology(topology: Topology) -> tuple[str, XmlNode]:
    """The most detailed form of the topology within RCCL's element and children limits (the
    skeleton when none fits: more than 32 xGMI peers leave the links to RCCL's detection)."""
    for detail in DETAIL_LEVELS:
        system = system_tree(topology, detail, RCCL_FORM)
        if elements(system) <= RCCL_FORM.max_elements and most_children(system) <= RCCL_MAX_CHILDREN:
            break
    return detail, system


RCCL_IDENTITY_SOURCES = {
    "gcn": "gcn: rocminfo's gfx target (gfx942)",
    "hip_arch": "hip_arch: 38911, the arch HIP gives every AMD GPU (ROCm/clr hip_device.cpp)",
    "compute_units": "compute_units: rocminfo's Compute Unit count",
}
"""Where each field RCCL's <gpu> needs is found on the machine, for the message that asks for it
(an RCCL topology dump of the node gives all three as its gpu's gcn, arch and sm)."""


def _missing_rccl_identity(gpu: Gpu, missing: list[str]) -> str:
    """What to fill in for an AMD GPU that RCCL's <gpu> cannot be written for, and where to find
    it: RCCL requires gcn, arch and sm (the compute-unit count) and does not detect them when the
    file omits them."""
    needs = "RCCL's <gpu> needs gcn, arch and sm (the compute-unit count)"
    how = "; ".join(RCCL_IDENTITY_SOURCES[key] for key in missing)
    dump = "or an RCCL topology dump's gcn, arch and sm"
    if gpu.part == UNKNOWN:
        return f"{gpu.id}: part unknown and its override: gives no {', '.join(missing)}; {needs}: write them under override: ({how}; {dump})"
    return (f"{gpu.id}: part {gpu.part} has no {', '.join(missing)}; {needs}: write them under the GPU's override: "
            f"({how}; {dump}), or into the part")


def most_children(node: XmlNode) -> int:
    """The largest number of children any element of the tree has."""
    return max([len(node.children), *(most_children(child) for child in node.children)])
