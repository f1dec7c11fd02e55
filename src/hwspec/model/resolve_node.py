"""Resolution: a validated `NodeSpec` plus its parts becomes the public `Platform`.

Called only after references have been checked, so lookups here do not fail; structural
faults that rules report (a PCIe cycle, a device that reaches no socket) resolve to `None`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, cast

from hwspec.cpulist import parse_cpu_list
from hwspec.model import node as m
from hwspec.model.node import climb
from hwspec.source.expand import Expanded
from hwspec.source.loader import SourceDoc
from hwspec.source.sourcemap import DocumentSourceMap
from hwspec.spec.checks import UNKNOWN
from hwspec.spec.translate import dotted

if TYPE_CHECKING:
    from hwspec.spec.models import (
        CpuIdentity,
        CpuPart,
        FabricCapability,
        GpuIdentity,
        GpuPart,
        GpuSpec,
        NicIdentity,
        NicPart,
        NicSpec,
        NodeSpec,
        PcieBridgeSpec,
        PcieSwitchPart,
    )
    from hwspec.spec.models import PcieLink as PcieLinkSpec
    from hwspec.spec.models import PhysicalLink as PhysicalLinkSpec

# DGX-1V hybrid cube mesh: two fully connected quads, each GPU joined to its twin in the other
# quad, 6 links per GPU with two doubled pairs (nvidia-smi topo -m on a DGX-1V).
HYBRID_CUBE_MESH: dict[tuple[int, int], int] = {
    (0, 1): 1, (0, 2): 1, (0, 3): 2, (0, 4): 2, (1, 2): 2, (1, 3): 1, (1, 5): 2, (2, 3): 2,
    (2, 6): 1, (3, 7): 1, (4, 5): 1, (4, 6): 1, (4, 7): 2, (5, 6): 2, (5, 7): 1, (6, 7): 2,
}


def _link(spec: PhysicalLinkSpec | PcieLinkSpec) -> m.PcieLink:
    """The link as presented."""
    return m.PcieLink(spec.generation, spec.width)


def _physical(spec: PcieLinkSpec) -> m.PcieLink:
    """The link the hardware trains at: `physical` when given, else the presented link."""
    return _link(spec.physical) if spec.physical is not None else _link(spec)


def _pattern(name: str, slots: Iterable[int], per_pair: int = 1) -> dict[tuple[int, int], int]:
    """Slot pair -> count for a named topology over the given slots."""
    slots = sorted(set(slots))
    if name == "fully-connected":
        return {(a, b): per_pair for i, a in enumerate(slots) for b in slots[i + 1:]}
    if name == "hybrid-cube-mesh":
        present = set(slots)
        return {pair: n for pair, n in HYBRID_CUBE_MESH.items() if set(pair) <= present}
    return {}


@dataclass(frozen=True, slots=True)
class _Domain:
    """One NUMA node as written: a whole socket, or one entry of a socket's `numa_nodes`."""

    id: str
    numa_node: int
    cpus: str | None
    memory: Any
    package: Any  # the SocketSpec
    cores: int | None
    path: tuple[str | int, ...]


def _domains(spec: NodeSpec, parts: dict[str, Any]) -> list[_Domain]:
    domains = []
    for i, s in enumerate(spec.sockets):
        part: CpuPart | CpuIdentity = parts[s.id]
        cores = None if s.part == UNKNOWN else part.cores  # type: ignore[union-attr]
        if s.numa_nodes is None:
            assert s.numa_node is not None  # checks.one_numa_form: without numa_nodes, a socket has its numa_node
            domains.append(_Domain(s.id, s.numa_node, s.cpus, s.memory, s, cores, ("sockets", i)))
            continue
        share = max(1, cores // len(s.numa_nodes)) if cores is not None else None
        for j, n in enumerate(s.numa_nodes):
            domains.append(_Domain(n.id, n.numa_node, n.cpus, n.memory, s, share, ("sockets", i, "numa_nodes", j)))
    return domains


def _memory(memory: Any, parts: dict[str, Any]) -> dict[str, Any]:
    """A NUMA node's memory fields of `m.NumaNode`: its own (None where the spec says `unknown`), or
    the HBM of the GPU it is shared with (0 where that GPU's part is unknown: the GPU's HBM is then
    an unknown figure, HW603)."""
    if memory.shared_with is None:
        return {"memory_capacity": _known(memory.capacity), "memory_bandwidth": _known(memory.bandwidth)}
    hbm = getattr(parts.get(memory.shared_with), "hbm", None)
    return {"memory_capacity": hbm.capacity if hbm is not None else 0,
            "memory_bandwidth": hbm.bandwidth if hbm is not None else 0.0,
            "memory_shared_with": memory.shared_with}


def _known(value: Any) -> Any:
    """`value`, or None for the spec word `unknown`."""
    return None if value == UNKNOWN else value


def _cpu_lists(domains: list[_Domain], parts: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Linux's usual numbering: first thread of every core, NUMA node by NUMA node, then siblings.
    Empty lists when a socket's part is unknown (its cores are not known)."""
    ordered = sorted(domains, key=lambda d: d.numa_node)
    counts = [d.cores for d in ordered]
    if any(c is None for c in counts):
        return {d.id: () for d in ordered}
    total = sum(c for c in counts if c is not None)
    lists, offset = {}, 0
    for domain in ordered:
        part: CpuPart = parts[domain.package.id]
        assert domain.cores is not None
        cpus = [offset + c + thread * total for thread in range(part.threads_per_core) for c in range(domain.cores)]
        lists[domain.id] = tuple(cpus)
        offset += domain.cores
    return lists


def _overridden(override: dict[str, Any] | None, prefix: str = "") -> tuple[str, ...]:
    """Dotted paths of the leaves of a part `override` mapping: `{hbm: {capacity: ..}}` -> `hbm.capacity`."""
    paths: list[str] = []
    for key, value in (override or {}).items():
        path = f"{prefix}{key}"
        paths.extend(_overridden(value, path + ".") if isinstance(value, dict) and value else [path])
    return tuple(sorted(paths))


class _C2cFields(TypedDict, total=False):
    """The NVLink-C2C fields of `m.Gpu`, as `_c2c` passes them."""

    c2c_socket: str
    c2c_links: int
    c2c_link_bandwidth: float



def _link_bandwidth(fabric: FabricCapability) -> float:
    """A catalogue part's per-link fabric bandwidth, 0.0 for a part with no fabric links (a PCIe
    card such as the L4 leaves `link_bandwidth` out: there is nothing to know, not an unknown)."""
    if not fabric.links:
        return 0.0
    assert fabric.link_bandwidth is not None, "checks.fabric_links_need_bandwidth"
    return fabric.link_bandwidth


def _c2c(gpu: GpuSpec, part: GpuPart | GpuIdentity) -> _C2cFields:
    """The GPU's NVLink-C2C fields (none when it is not attached over C2C; the loader has checked the part)."""
    if gpu.c2c is None or gpu.part == UNKNOWN or cast("GpuPart", part).c2c is None:
        return {}
    c2c = cast("GpuPart", part).c2c
    assert c2c is not None
    return {"c2c_socket": gpu.c2c.socket, "c2c_links": c2c.links, "c2c_link_bandwidth": c2c.link_bandwidth}


def _bus(bus: str) -> str | None:
    """A written bus id; None for `bus: unknown`."""
    return None if bus == UNKNOWN else bus


def _bus_order(bus: str | None, ident: str) -> tuple[bool, str, str]:
    """Sort key of devices: by bus id, devices whose bus is unknown last (by id)."""
    known = bus is not None and bus != UNKNOWN
    return (not known, bus if known and bus is not None else "", ident)


def _gpu(g: GpuSpec, part: GpuPart | GpuIdentity, index: int, socket: str | None, numa_node: int | None) -> m.Gpu:
    """The resolved GPU: its part's figures, or for `part: unknown` the identity written and None for the rest."""
    common = dict(id=g.id, index=index, part=g.part, slot=g.slot, upstream=g.pcie.upstream, bus=_bus(g.pcie.bus),
                  socket=socket, numa_node=numa_node, overridden=_overridden(g.override))
    if g.part == UNKNOWN:
        seen = cast("GpuIdentity", part)
        link = _link(g.pcie.link) if g.pcie.link else None
        fabric = seen.fabric
        return m.Gpu(**common, model_name=seen.model_name or "unknown GPU", vendor=seen.vendor or "other",  # type: ignore[arg-type]
                     form_factor=None, sm=seen.sm, pci_vendor=seen.pci_vendor, pci_device=seen.pci_device,
                     hbm_capacity=None, hbm_bandwidth=None, compute=None, sparse=frozenset(),
                     fabric_kind=fabric.kind if fabric else None, fabric_links=(fabric.links or 0) if fabric else 0,
                     fabric_link_bandwidth=None, max_link=None, link=link,
                     physical=_physical(g.pcie.link) if g.pcie.link else None, gcn=seen.gcn, hip_arch=seen.hip_arch,
                     compute_units=seen.compute_units)
    part = cast("GpuPart", part)
    return m.Gpu(**common, model_name=part.model_name, vendor=part.vendor,  # type: ignore[arg-type]
                 form_factor=part.form_factor, sm=part.sm, pci_vendor=part.pci_vendor,
                 pci_device=part.pci_device, hbm_capacity=part.hbm.capacity, hbm_bandwidth=part.hbm.bandwidth,
                 compute=dict(sorted(part.compute.items())), sparse=frozenset(part.sparse),
                 fabric_kind=part.fabric.kind, fabric_links=part.fabric.links,
                 fabric_link_bandwidth=_link_bandwidth(part.fabric), max_link=_link(part.pcie),
                 link=_link(g.pcie.link or part.pcie), physical=_physical(g.pcie.link or part.pcie),
                 gcn=part.gcn, hip_arch=part.hip_arch, compute_units=part.compute_units, **_c2c(g, part))


PORT_FIELDS = frozenset({"id", "port", "gpu", "gpus", "device", "interface", "speed", "bus"})
"""The fields a card's port entry has of its own; the rest (part, pcie, role) are the card's."""


@dataclass(frozen=True)
class _Port:
    """One port of a NIC entry as resolution reads it: the entry itself (a single-port card) or
    one of its `ports:` (`card` = the card's id)."""

    id: str
    port: int
    gpus: tuple[str, ...]
    device: str | None
    interface: str | None
    speed: float | None
    card: str | None
    bus: str
    """The port's PCI function as written (its own `bus:`, else the card's `pcie.bus`)."""


def _ports(n: NicSpec) -> list[_Port]:
    """The ports of a NIC entry, in the order written."""
    if n.ports is None:
        return [_Port(n.id, n.port, tuple(n.gpus or ([n.gpu] if n.gpu else [])), n.device, n.interface, None, None,
                      n.pcie.bus)]
    return [_Port(p.id, p.port if p.port is not None else i + 1, tuple(p.gpus or ([p.gpu] if p.gpu else [])),
                  p.device, p.interface, p.speed, n.id, p.bus or n.pcie.bus) for i, p in enumerate(n.ports)]


def _nic(n: NicSpec, port: _Port, part: NicPart | NicIdentity, index: int, socket: str | None,
         numa_node: int | None) -> m.Nic:
    """The resolved NIC port: its part's figures (its own speed where the port gives one), or for
    `part: unknown` the identity written and None for the rest."""
    common = dict(id=port.id, index=index, part=n.part, role=n.role, transport=n.transport,
                  gpus=port.gpus, device=port.device, card=port.card,
                  interface=port.interface, port=port.port, upstream=n.pcie.upstream, bus=_bus(port.bus), socket=socket,
                  numa_node=numa_node, overridden=_overridden(n.override))
    if n.part == UNKNOWN:
        seen = cast("NicIdentity", part)
        return m.Nic(**common, model_name=seen.model_name or "unknown NIC", supported_transports=(n.transport,),  # type: ignore[arg-type]
                     speed=port.speed or seen.speed, rdma=seen.rdma, gpudirect=seen.gpudirect, pci_vendor=seen.pci_vendor,
                     pci_device=seen.pci_device, max_link=None, link=_link(n.pcie.link) if n.pcie.link else None,
                     physical=_physical(n.pcie.link) if n.pcie.link else None)
    part = cast("NicPart", part)
    return m.Nic(**common, model_name=part.model_name, supported_transports=tuple(part.transports),  # type: ignore[arg-type]
                 speed=port.speed or part.speed, rdma=part.rdma, gpudirect=part.gpudirect, pci_vendor=part.pci_vendor,
                 pci_device=part.pci_device, max_link=_link(part.pcie), link=_link(n.pcie.link or part.pcie),
                 physical=_physical(n.pcie.link or part.pcie))


class _SwitchFields(TypedDict, total=False):
    """The part and PCI id fields of `m.Bridge`, as `_switch_part` passes them."""

    part: str
    model_name: str
    part_gen: int
    lanes: int | None
    pci_vendor: str | None
    pci_device: str | None
    subsystem_vendor: str | None
    subsystem_device: str | None


def _switch_part(bridge: PcieBridgeSpec, part: PcieSwitchPart | None) -> _SwitchFields:
    """A bridge's part (its own generation, lanes, name), or its own generation (`gen:`), and
    the PCI ids it shows: its `pci:` ids over its part's. Nothing for a bridge with none of them."""
    fields: _SwitchFields = {}
    if part is not None and bridge.part is not None:
        fields = {"part": bridge.part, "model_name": part.model_name, "part_gen": part.gen, "lanes": part.lanes,
                  "pci_vendor": part.pci_vendor, "pci_device": part.pci_device}
    if bridge.gen is not None:
        fields["part_gen"] = bridge.gen
    ids = bridge.pci
    if ids is not None:
        if ids.vendor is not None:
            fields["pci_vendor"] = ids.vendor
        if ids.device is not None:
            fields["pci_device"] = ids.device
        if ids.subsystem_vendor is not None:
            fields["subsystem_vendor"] = ids.subsystem_vendor
        if ids.subsystem_device is not None:
            fields["subsystem_device"] = ids.subsystem_device
    return fields


def resolve_node(spec: NodeSpec, parts: dict[str, Any], doc: SourceDoc, expanded: Expanded) -> m.Platform:
    entity_paths: dict[str, tuple[str | int, ...]] = {}
    for section in ("sockets", "pcie", "gpus", "nics", "ssds"):
        for index, entry in enumerate(getattr(spec, section)):
            entity_paths[entry.id] = (section, index)
    domains = _domains(spec, parts)
    entity_paths.update({d.id: d.path for d in domains})
    if spec.baseboard is not None:
        entity_paths.update({s.id: ("baseboard", "nvswitches", i) for i, s in enumerate(spec.baseboard.nvswitches or ())})
    # a card's port: its own fields at its entry in `ports:`, the card's (part, pcie, role) at the card
    inherited: dict[str, tuple[tuple[str | int, ...], frozenset[str]]] = {}
    for index, n in enumerate(spec.nics):
        for j, written in enumerate(n.ports or ()):
            entity_paths[written.id] = ("nics", index, "ports", j)
            inherited[written.id] = (("nics", index), PORT_FIELDS)

    derived_cpus = _cpu_lists(domains, parts)
    sockets = []
    for d in sorted(domains, key=lambda d: (d.numa_node, d.id)):
        s = d.package
        cpu_part: CpuPart | CpuIdentity = parts[s.id]
        sockets.append(m.NumaNode(
            id=d.id, numa_node=d.numa_node, part=s.part, model_name=cpu_part.model_name or "unknown CPU", vendor=cpu_part.vendor,
            arch=cpu_part.arch, family=cpu_part.family, model=cpu_part.model, cores=d.cores,
            threads_per_core=None if s.part == UNKNOWN else cpu_part.threads_per_core,  # type: ignore[union-attr]
            cpus=parse_cpu_list(d.cpus) if d.cpus else derived_cpus[d.id],
            **_memory(d.memory, parts), overridden=_overridden(s.override), package=s.id))
    numa = {s.id: s.os_node for s in sockets}
    upstream = {b.id: b.upstream for b in spec.pcie}

    def socket_of(parent: str) -> str | None:
        top = climb(parent, upstream.get, numa)[-1]
        return top if top in numa else None

    bridges = tuple(sorted((m.Bridge(id=b.id, kind=b.kind, upstream=b.upstream, bus=_bus(b.bus), link=_link(b.link),
                                     max_oversubscription=b.max_oversubscription, socket=socket_of(b.upstream),
                                     physical=_physical(b.link), **_switch_part(b, parts.get(b.id)))
                            for b in spec.pcie), key=lambda b: _bus_order(b.bus, b.id)))

    gpus = []
    for index, g in enumerate(sorted(spec.gpus, key=lambda g: _bus_order(g.pcie.bus, g.id))):
        socket = socket_of(g.pcie.upstream)
        gpus.append(_gpu(g, parts[g.id], index, socket, numa.get(socket) if socket else None))

    nics = []
    nic_ports = [(n, port) for n in spec.nics for port in _ports(n)]
    for index, (n, port) in enumerate(sorted(nic_ports, key=lambda np: (*_bus_order(np[0].pcie.bus, np[0].id),
                                                                          *_bus_order(np[1].bus, np[1].id), np[1].port))):
        socket = socket_of(n.pcie.upstream)
        nics.append(_nic(n, port, parts[n.id], index, socket, numa.get(socket) if socket else None))

    ssds = []
    for s in sorted(spec.ssds, key=lambda s: _bus_order(s.pcie.bus, s.id)):
        socket = socket_of(s.pcie.upstream)
        link = _link(s.pcie.link) if s.pcie.link else m.PcieLink(3, 4)
        physical = _physical(s.pcie.link) if s.pcie.link else link
        ssds.append(m.Ssd(id=s.id, capacity=s.capacity, bandwidth=s.bandwidth, upstream=s.pcie.upstream,
                          bus=_bus(s.pcie.bus), link=link, physical=physical, socket=socket, numa_node=numa.get(socket) if socket else None))

    baseboard = None
    if spec.baseboard is not None:
        board = spec.baseboard
        if isinstance(board.wiring, str):
            ports = _pattern(board.wiring, range(board.slots))  # none for nvswitch: GPUs meet at the switches
            wiring: str = board.wiring
        else:
            ports = {}
            for a, b in board.wiring:
                pair = (min(a, b), max(a, b))
                ports[pair] = ports.get(pair, 0) + 1
            wiring = "explicit"
        baseboard = m.Baseboard(kind=board.kind, slots=board.slots, ports_per_slot=board.ports_per_slot,
                                links_per_port=board.links_per_port, wiring=wiring, ports=dict(sorted(ports.items())),
                                nvswitches=tuple(m.NvSwitch(s.id, s.links_per_gpu, s.bus, tuple(s.gpus) if s.gpus is not None else None)
                                                 for s in board.nvswitches or ()),
                                nvswitch_generation=(board.nvswitch_generation if board.nvswitch_generation is not None
                                                     else _nvswitch_generation(wiring, gpus)),
                                nvswitch_generation_written=board.nvswitch_generation is not None)

    gpu_by_id = {g.id: g for g in gpus}
    nvlinks: list[m.NvlinkConnection] = []
    topology, symmetric = "none", True
    if spec.nvlink is not None:
        symmetric = spec.nvlink.symmetric
        def connect(a: m.Gpu, b: m.Gpu, links: int, entry: int | None = None) -> None:
            first, second = sorted((a, b), key=lambda g: g.index)
            rates = (a.fabric_link_bandwidth, b.fabric_link_bandwidth)
            bandwidth = None if None in rates else links * min(r for r in rates if r is not None)
            nvlinks.append(m.NvlinkConnection(first.id, second.id, links, bandwidth, entry))

        if isinstance(spec.nvlink.topology, list):
            topology = "explicit"
            for entry, nvlink_pair in enumerate(spec.nvlink.topology):
                connect(gpu_by_id[nvlink_pair.gpus[0]], gpu_by_id[nvlink_pair.gpus[1]], nvlink_pair.links, entry)
        elif spec.nvlink.topology == "nvswitch":
            topology = "nvswitch"
            switches = baseboard.nvswitches if baseboard is not None else ()
            for gpu in gpus:
                rate = gpu.fabric_link_bandwidth
                if not switches:  # switches not described: all of the GPU's links to one NVSwitch
                    nvlinks.append(m.NvlinkConnection(gpu.id, "nvswitch", gpu.fabric_links,
                                                      None if rate is None else gpu.fabric_links * rate))
                for switch in (s for s in switches if s.serves(gpu.id)):
                    nvlinks.append(m.NvlinkConnection(gpu.id, switch.id, switch.links_per_gpu,
                                                      None if rate is None else switch.links_per_gpu * rate))
        else:
            topology = spec.nvlink.topology
            by_slot = {g.slot: g for g in gpus if g.slot is not None}
            excluded = {(min(a, b), max(a, b)) for a, b in spec.nvlink.exclude}
            for (a, b), count in _pattern(topology, by_slot, spec.nvlink.links_per_pair).items():
                if (a, b) not in excluded:
                    connect(by_slot[a], by_slot[b], count)
    nvlinks.sort(key=lambda c: (gpu_by_id[c.a].index, gpu_by_id[c.b].index if c.b in gpu_by_id else -1))
    cpu_nvlinks = tuple(_cpu_nvlink(entry, link.gpu, link.socket, link.links, gpu_by_id)
                        for entry, link in enumerate(spec.nvlink.cpu_links if spec.nvlink is not None else ()))

    backend = None
    if spec.backend is not None:
        backend_spec = spec.backend
        gpudirect = None if backend_spec.gpudirect == "detect" else backend_spec.gpudirect
        backend = m.Backend(backend_spec.transport, backend_spec.nic_per_gpu, gpudirect, backend_spec.rail_optimized,
                            backend_spec.gid_index, backend_spec.traffic_class, backend_spec.service_level, backend_spec.ib_hca)

    source_map = DocumentSourceMap(doc, expanded, entity_paths, inherited)
    location = source_map.at

    entity_at = {path: entity for entity, path in entity_paths.items()}

    def named(path: tuple[str | int, ...]) -> str:
        """`("sockets", 0, "memory")` -> `cpu0.memory`: entries by id, the rest as written."""
        if path[:2] in entity_at:
            return ".".join([entity_at[path[:2]], *map(str, path[2:])])
        return dotted(path)

    assumptions: list[m.Assumption] = []
    for path, note in expanded.provenance.items():
        where = location(path)
        # a repeat block's note is written once: report it once, under its first expansion
        if note.assumed and all((a.location, a.assumed) != (where, note.assumed) for a in assumptions):
            assumptions.append(m.Assumption(named(path), note.assumed, note.source, where))
    seen_parts: set[str] = set()
    for section in ("sockets", "pcie", "gpus", "nics"):
        for entry in getattr(spec, section):
            if entry.part in seen_parts or not entry.part or entry.part == UNKNOWN:
                continue
            seen_parts.add(entry.part)
            part = parts[entry.id]
            if part.assumed:
                assumptions.append(m.Assumption(f"parts.{entry.part}", part.assumed, part.source,
                                                location(entity_paths[entry.id] + ("part",))))

    return m.Platform(
        name=spec.name, title=spec.title or spec.name, file=doc.file, sockets=tuple(sockets),
        cpu_links=_cpu_links(spec, domains),
        cpu_link_bandwidth=spec.cpu_interconnect.bandwidth if spec.cpu_interconnect else None,
        cpu_interconnect=spec.cpu_interconnect.kind if spec.cpu_interconnect else None,
        bridges=bridges, gpus=tuple(gpus), nics=tuple(nics), ssds=tuple(ssds), baseboard=baseboard,
        nvlink_topology=topology, nvlinks=tuple(nvlinks), cpu_nvlinks=cpu_nvlinks, fabric_symmetric=symmetric, backend=backend,
        declares=m.Declares(spec.declares.sockets, spec.declares.gpus, spec.declares.memory),
        sources=dict(spec.sources),
        rule_settings={key: m.RuleSetting(value.severity, value.reason, location(("rules", key)))
                       for key, value in spec.rules.items()},
        assumptions=tuple(assumptions), source_map=source_map, environment=dict(spec.environment))


def _cpu_nvlink(entry: int, gpu_id: str, socket: str, links: int, gpu_by_id: dict[str, m.Gpu]) -> m.CpuNvlink:
    """One `nvlink.cpu_links` entry: its bandwidth is the links at the GPU part's per-link rate."""
    rate = gpu_by_id[gpu_id].fabric_link_bandwidth
    return m.CpuNvlink(gpu_id, socket, links, None if rate is None else links * rate, entry)


def _nvswitch_generation(wiring: str, gpus: list[m.Gpu]) -> int | None:
    """An NVSwitch board's generation where the file does not state it: its GPUs' (HGX H100's
    NVLink4 GPUs sit on third-generation switches)."""
    return m.nvswitch_generation_of_gpus(gpus) if wiring == "nvswitch" else None


def _cpu_links(spec: NodeSpec, domains: list[_Domain]) -> tuple[tuple[str, str], ...]:
    """Socket-to-socket links as pairs of model sockets (NUMA nodes): a socket with several
    NUMA nodes is reached at its first (lowest-numbered) one."""
    if spec.cpu_interconnect is None:
        return ()
    entry: dict[str, str] = {}
    for d in sorted(domains, key=lambda d: d.numa_node):
        entry.setdefault(d.package.id, d.id)
        entry.setdefault(d.id, d.id)
    ids = sorted(s.id for s in spec.sockets)
    if spec.cpu_interconnect.links == "fully-connected":
        pairs = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]]
    else:
        pairs = list(spec.cpu_interconnect.links)
    links = {(min(entry[a], entry[b]), max(entry[a], entry[b])) for a, b in pairs if entry[a] != entry[b]}
    return tuple(sorted(links))
