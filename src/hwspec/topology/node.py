"""The resolved topology of a node: the model plus every derived connectivity fact, computed once.

`Topology(platform)` is what rules (`ctx.topology`), generators (`ctx.topology`), the roofline
and site rules read. It answers the questions that need a walk of the PCIe tree or of the
GPU fabric: the path between two devices and NCCL's name for it (PIX, PXB, P2C, PHB, SYS, NVL),
the lowest bridge two devices share, a device's socket and NUMA node, NVLink islands, the NIC
of a GPU and its share of scale-out bandwidth, a GPU's link to host memory (NVLink-C2C or
PCIe), the CPUs of a NUMA node. These facts have no
other home: code that needs one asks the topology, never walks `upstream` itself.

Invariants: the topology never changes after it is built (queries are cached); every walk is
cycle-safe (a PCIe cycle, which rule HW101 reports, ends a walk instead of looping); bandwidths
are bytes/s per direction.

Queries name the platform's entries (sockets, bridges, GPUs, NICs, SSDs) by id, both ways: an
argument that names an entry is its id, as the file writes it, and an answer that names entries
gives their ids (`nics_of("gpu0") == ("nic0",)`, `socket_of("nic0") == "cpu0"`). An id is what
`ctx.finding(at=...)` points at and what a report prints; the entry behind it is the model's
(`platform.by_id[id]`, or `gpu_by_id`, `nic_by_id`, `socket_by_id`, `bridge_by_id`). What is
not an entry is answered as a value: connections (`NvlinkConnection`, `CpuNvlink`), `HostLink`,
path types, counts and bandwidths.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from hwspec.diagnostics import Location
from hwspec.model.cluster import Cluster
from hwspec.model.node import CpuNvlink, Nic, NumaNode, NvlinkConnection, Platform, RuleSetting, climb

if TYPE_CHECKING:  # networkx is imported only by the code that asks for the graph
    import networkx as nx

PathType = Literal["NVL", "PIX", "PXB", "P2C", "PHB", "SYS"]
PATH_TYPES: tuple[PathType, ...] = ("NVL", "PIX", "PXB", "P2C", "PHB", "SYS")
"""NCCL's path types from nearest to farthest (src/graph/topo.h): NVL over NVLink, PIX through
at most one PCIe bridge, PXB through several bridges without the CPU, P2C from a GPU over its
NVLink-C2C to its CPU and down that CPU's PCIe to a NIC (NCCL 2.26+; GPUDirect RDMA allowed over
it by default since 2.27), PHB through the CPU's host bridge, SYS across the socket interconnect."""

RDMA_TRANSPORTS = ("rocev2", "infiniband")

GPUDIRECT_PATHS: tuple[PathType, ...] = ("PIX", "PXB", "P2C")
"""GPU-to-NIC path types over which GPUDirect RDMA runs at the NIC's speed: a shared PCIe switch or
root port, or the GPU's NVLink-C2C to the CPU whose root port holds the NIC (`Topology.gpudirect_path`)."""


@dataclass(frozen=True, slots=True)
class HostLink:
    """A GPU's way to host memory (`Topology.host_link`): `kind` "c2c", "nvlink" (NVLinks to a
    POWER8/POWER9 CPU) or "pcie", `link` as people read it ("Gen5 x16", "NVLink-C2C 5 x 45 GB/s"), `bandwidth` with the GPU alone and
    `shared_bandwidth` with every GPU transferring at once (bytes/s per direction), `hops` links
    to the socket, `shared_by` the most GPUs on one of those links."""

    kind: Literal["c2c", "nvlink", "pcie"]
    link: str
    bandwidth: float
    shared_bandwidth: float
    hops: int
    shared_by: int


Model = TypeVar("Model", Platform, Cluster)
"""The resolved model a topology is built on: a node `Platform` or a `Cluster`."""


class ResolvedView(Generic[Model]):
    """What the node and the cluster topology share: the resolved model (`platform`) and where
    its entries are written."""

    kind: str
    """"node" or "cluster"."""

    def __init__(self, platform: Model):
        self.platform: Model = platform

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.platform.name!r})"

    @property
    def name(self) -> str:
        """The model's name (its output directory under generated/)."""
        return self.platform.name

    @property
    def file(self) -> str:
        """The model's file, as given."""
        return self.platform.file

    @property
    def rule_settings(self) -> Mapping[str, RuleSetting]:
        """The file's `rules:` settings by rule id or name."""
        return self.platform.rule_settings

    def locate(self, entity: str | None = None, *fields: str | int) -> Location:
        """Where `entity` (and optionally one of its fields) is written; see `Platform.locate`."""
        return self.platform.locate(entity, *fields)


View = TypeVar("View", bound="ResolvedView[Any]")

_HELD = "_hwspec_topology"
"""The key under which a model's instance dict holds its topology (`held`)."""


def held(model: object, build: Callable[[Any], View]) -> View:
    """`model`'s topology, `build(model)` on the first call and the same object after: kept in the
    model's own instance dict (as `functools.cached_property` keeps its values on a frozen
    dataclass), so it lives as long as the model and is never shared with an equal model.
    `hwspec.topology.topology_of` is the public way; this is for the layer's own modules."""
    cache = vars(model)
    view: View | None = cache.get(_HELD)
    if view is None:
        view = cache[_HELD] = build(model)
    return view


def served_field(platform: Platform, nic: Nic, gpu_id: str | None = None) -> tuple[str, *tuple[str | int, ...]]:
    """Where a NIC names the GPUs it serves, for `Platform.locate`: its `gpus` list (at
    `gpu_id`'s entry when given and listed), or its `gpu`."""
    if platform.locate(nic.id, "gpus") == platform.locate(nic.id):
        return (nic.id, "gpu")
    return (nic.id, "gpus", nic.gpus.index(gpu_id)) if gpu_id in nic.gpus else (nic.id, "gpus")


class Topology(ResolvedView[Platform]):
    """The resolved node: `platform` (the model) plus its derived, cached topology queries."""

    kind = "node"
    platform: Platform
    """The node's resolved model (`hwspec.model.node.Platform`): its entries by id are
    `platform.by_id`, `gpu_by_id`, `nic_by_id`, `socket_by_id`, `bridge_by_id`."""

    @cached_property
    def graph(self) -> nx.Graph[str]:
        """The networkx view (`hwspec.topology.graph.build_graph`), built on first use only. No hwspec
        code needs it for a fact; it is there for drawing and for site rules that want networkx."""
        from hwspec.topology.graph import build_graph

        return build_graph(self.platform)

    # -------------------------------------------------------------- the PCIe tree

    @cached_property
    def children(self) -> dict[str, tuple[str, ...]]:
        """PCIe parent id -> ids of the bridges and devices directly below it, sorted by bus id
        (those whose bus id is unknown last, by id)."""
        below: dict[str, list[tuple[bool, str, str]]] = {}
        p = self.platform
        for item in p.pcie_items:
            below.setdefault(item.upstream, []).append((item.bus is None, item.bus or "", item.id))
        return {parent: tuple(i for _, _, i in sorted(kids)) for parent, kids in below.items()}

    def parent(self, item_id: str) -> str | None:
        """The id `item_id` hangs off (a bridge or socket), None for a socket or unknown id."""
        item = self.platform.by_id.get(item_id)
        return None if item is None or isinstance(item, NumaNode) else item.upstream

    def chain(self, item_id: str) -> list[str]:
        """`item_id` and the ids above it up to its socket; a cycle ends with the repeated id
        (`['sw0', 'sw1', 'sw0']`), a dangling upstream with the unknown id."""
        return climb(item_id, self.parent, self.platform.socket_by_id)

    def bridges_above(self, item_id: str) -> tuple[str, ...]:
        """The PCIe bridges above `item_id`, nearest first (no socket; stops at a cycle)."""
        return self._bridges_above[item_id] if item_id in self._bridges_above else self._walk_bridges(item_id)

    @cached_property
    def _bridges_above(self) -> dict[str, tuple[str, ...]]:
        p = self.platform
        return {item.id: self._walk_bridges(item.id) for item in p.pcie_items}

    def _walk_bridges(self, item_id: str) -> tuple[str, ...]:
        bridges = self.platform.bridge_by_id
        above = (i for i in self.chain(item_id)[1:] if i != item_id and i in bridges)
        return tuple(dict.fromkeys(above))

    def below(self, parent: str) -> frozenset[str]:
        """Every id below `parent` in the PCIe tree (cycle-safe)."""
        found: set[str] = set()
        todo = list(self.children.get(parent, ()))
        while todo:
            child = todo.pop()
            if child not in found:
                found.add(child)
                todo.extend(self.children.get(child, ()))
        return frozenset(found)

    def socket_of(self, item_id: str) -> str | None:
        """The socket `item_id` reaches through the PCIe tree (itself for a socket), or None."""
        p = self.platform
        if item_id in p.socket_by_id:
            return item_id
        socket = getattr(p.by_id.get(item_id), "socket", None)
        return socket if isinstance(socket, str) and socket in p.socket_by_id else None

    def memory_shared_with(self, gpu_id: str) -> str | None:
        """The socket (NUMA node) whose memory is `gpu_id`'s HBM (an APU: MI300A, `memory: {shared_with: gpu}`),
        None for a GPU whose HBM is its own. The one place that says a GPU and CPU cores share a
        pool: the roofline, TorchRec, Calculon and the estimate then count that pool once, as HBM.
        (A GPU reaching a CPU's separate memory coherently over NVLink-C2C, GH200, is not this:
        there the CPU's memory is a second pool, `host_link` says how the GPU reaches it.)"""
        return self._memory_shared_with.get(gpu_id)

    @cached_property
    def _memory_shared_with(self) -> dict[str, str]:
        shared: dict[str, str] = {}
        for socket in self.platform.sockets:  # by NUMA node: the first of several claims wins (HW106 reports the others)
            if socket.memory_shared_with is not None:
                shared.setdefault(socket.memory_shared_with, socket.id)
        return shared

    def numa_node(self, item_id: str) -> int | None:
        """The NUMA node of a socket or device (None when it reaches no socket)."""
        socket = self.socket_of(item_id)
        return self.platform.socket_by_id[socket].numa_node if socket is not None else None

    def common_bridge(self, a: str, b: str) -> str | None:
        """The lowest PCIe switch or root port above both `a` and `b`, or None (they meet at a
        CPU, or not at all)."""
        above_b = set(self.bridges_above(b))
        return next((bridge for bridge in self.bridges_above(a) if bridge in above_b), None)

    def pcie_path(self, a: str, b: str) -> tuple[str, ...] | None:
        """The ids on the PCIe path from `a` to `b`, both included: up to their lowest common
        bridge (or shared socket) and down again; across sockets the path runs socket to
        socket. None when either end reaches no socket and they share no bridge."""
        if a == b:
            return (a,)
        up_a, up_b = self.chain(a), self.chain(b)
        common = self.common_bridge(a, b)
        if common is None:
            sa, sb = self.socket_of(a), self.socket_of(b)
            if sa is None or sb is None:
                return None
            if sa == sb:
                common = sa
            else:
                return tuple(up_a) + tuple(reversed(up_b))
        return tuple(up_a[:up_a.index(common) + 1]) + tuple(reversed(up_b[:up_b.index(common)]))

    def pcie_path_type(self, a: str, b: str) -> PathType:
        """NCCL's name for the PCIe distance between two devices: PIX (at most one bridge
        between them), PXB (several bridges, not the CPU), PHB (through their CPU), SYS (across
        sockets, or no PCIe path)."""
        common = self.common_bridge(a, b)
        if common is not None:
            between = self.pcie_path(a, b)
            return "PIX" if between is not None and len(between) <= 3 else "PXB"
        sa, sb = self.socket_of(a), self.socket_of(b)
        return "PHB" if sa is not None and sa == sb else "SYS"

    def path_type(self, a: str, b: str) -> PathType:
        """NCCL's path type between two devices: NVL for two GPUs with a direct NVLink
        connection (or both on an NVSwitch); P2C for a GPU and a NIC on the socket the GPU's
        NVLink-C2C goes to, when PCIe alone would go through that CPU (PHB); else `pcie_path_type`."""
        if frozenset((a, b)) in self._direct_nvlink:
            return "NVL"
        pcie = self.pcie_path_type(a, b)
        if pcie in ("PHB", "SYS") and self._over_c2c(a, b):
            return "P2C"
        return pcie

    def _over_c2c(self, a: str, b: str) -> bool:
        """One of `a`, `b` is a GPU with NVLink-C2C to the socket the other (a NIC) reaches."""
        p = self.platform
        for gpu_id, other in ((a, b), (b, a)):
            gpu, nic = p.gpu_by_id.get(gpu_id), p.by_id.get(other)
            if gpu is not None and gpu.c2c_socket is not None and isinstance(nic, Nic):
                return self.socket_of(nic.id) == gpu.c2c_socket
        return False

    def gpudirect_path(self, gpu_id: str, nic_id: str) -> bool:
        """Whether GPU and NIC are close enough for GPUDirect RDMA at the NIC's speed: their
        `path_type` is one of `GPUDIRECT_PATHS` (PIX, PXB, or P2C over the GPU's NVLink-C2C), or the
        GPU is an APU whose HBM is the memory of the socket the NIC hangs off (`memory_shared_with`):
        the NIC writes that socket's memory, which is the GPU's (NCCL/RCCL call the path PHB)."""
        if self.path_type(gpu_id, nic_id) in GPUDIRECT_PATHS:
            return True
        shared, nic_socket = self.memory_shared_with(gpu_id), self.socket_of(nic_id)
        if shared is None or nic_socket is None:
            return False
        sockets = self.platform.socket_by_id
        return sockets[shared].package == sockets[nic_socket].package

    def c2c_socket(self, gpu_id: str) -> str | None:
        """The socket a GPU is attached to over NVLink-C2C, or None (no C2C)."""
        gpu = self.platform.gpu_by_id.get(gpu_id)
        socket = gpu.c2c_socket if gpu is not None else None
        return socket if socket is not None and socket in self.platform.socket_by_id else None

    def host_path(self, item_id: str) -> tuple[str, ...] | None:
        """`item_id` and the bridges up to (not including) its socket, the items whose
        upstream links its host traffic crosses; None when it reaches no socket."""
        ids = self.chain(item_id)
        if ids[-1] not in self.platform.socket_by_id:
            return None
        return tuple(ids[:-1])

    def host_link(self, gpu_id: str) -> HostLink | None:
        """How a GPU reaches host memory: over its NVLink-C2C when it has one, else over its
        NVLinks to its CPU (POWER8/POWER9; both are its own links, shared with no other GPU),
        else the narrowest PCIe link of its host path, alone and with
        every GPU transferring at once (each link divided by the GPUs whose host path crosses it).
        None when the GPU reaches no socket, or a link on the way (or of its NVLinks to its CPU) is unknown, or when host memory is
        the GPU's own HBM (an APU, `memory_shared_with`): nothing is transferred, whatever PCIe
        presence the OS shows. Bandwidths are bytes/s per direction."""
        gpu = self.platform.gpu_by_id[gpu_id]
        if self.memory_shared_with(gpu_id) is not None:
            return None
        if gpu.c2c_socket is not None and gpu.c2c_bandwidth > 0:
            return HostLink("c2c", f"NVLink-C2C {gpu.c2c_links} x {gpu.c2c_link_bandwidth / 1e9:g} GB/s",
                            gpu.c2c_bandwidth, gpu.c2c_bandwidth, 1, 1)
        to_cpu = self.cpu_nvlink_bandwidth(gpu_id)
        if to_cpu is None:
            return None  # NVLinks to its CPU of an unknown part: their bandwidth is unknown
        if to_cpu:
            count = sum(c.links for c in self.own_cpu_nvlinks(gpu_id))
            return HostLink("nvlink", f"NVLink {count} x {to_cpu / count / 1e9:g} GB/s", to_cpu, to_cpu, 1, 1)
        path = self.host_path(gpu_id)
        if path is None:
            return None
        written = [self.platform.by_id[item].physical for item in path]  # type: ignore[union-attr]
        links = [link for link in written if link is not None]
        if len(links) < len(written):
            return None
        narrowest = min(links, key=lambda link: link.bandwidth)
        crossing = self.gpus_crossing
        shared = min(link.bandwidth / crossing[item] for item, link in zip(path, links))
        return HostLink("pcie", str(narrowest), narrowest.bandwidth, shared, len(path), max(crossing[item] for item in path))

    @cached_property
    def gpus_crossing(self) -> dict[str, int]:
        """Item id -> number of GPUs whose host path crosses that item's upstream link."""
        counts: dict[str, int] = {}
        for gpu in self.platform.gpus:
            for item in self.host_path(gpu.id) or ():
                counts[item] = counts.get(item, 0) + 1
        return counts

    # -------------------------------------------------------------- NUMA nodes and CPUs

    def cpus(self, numa_node: int) -> tuple[int, ...]:
        """The logical CPUs of a NUMA node (empty for an unknown node)."""
        return next((s.cpus for s in self.platform.sockets if s.numa_node == numa_node), ())

    def physical_cores(self, socket_id: str) -> int:
        """Physical cores in a NUMA node's CPU list: its logical CPUs over the part's threads per
        core (a VM's 24 vCPUs on a 2-thread part are 12 cores)."""
        socket = self.platform.socket_by_id[socket_id]
        return len(socket.cpus) // max(1, socket.threads_per_core or 1)

    def cores_per_rank(self, socket_id: str) -> int:
        """Physical cores each rank bound to this NUMA node gets: its CPU list's cores divided by
        the GPUs (local ranks) on it; all of them when it has no GPU. May be 0 (HW504 warns)."""
        return self.physical_cores(socket_id) // max(1, len(self.gpus_on(socket_id)))

    def gpus_on(self, socket_id: str) -> tuple[str, ...]:
        """The GPUs whose PCIe tree leads to `socket_id`, by bus id."""
        return self._gpus_on.get(socket_id, ())

    @cached_property
    def _gpus_on(self) -> dict[str, tuple[str, ...]]:
        on: dict[str, list[str]] = {}
        for gpu in self.platform.gpus:
            if gpu.socket is not None:
                on.setdefault(gpu.socket, []).append(gpu.id)
        return {socket: tuple(gpus) for socket, gpus in on.items()}

    # -------------------------------------------------------------- the GPU fabric

    @cached_property
    def gpu_pairs(self) -> dict[tuple[str, str], NvlinkConnection]:
        """Logical GPU-to-GPU connections by (a, b), a pair listed twice kept once (the larger);
        self-links and NVSwitch connections are left out (HW303 reports the first kind)."""
        p = self.platform
        pairs: dict[tuple[str, str], NvlinkConnection] = {}
        for c in p.nvlinks:
            if c.a == c.b or c.b not in p.gpu_by_id:
                continue
            key = (c.a, c.b)
            if key not in pairs or c.links > pairs[key].links:
                pairs[key] = c
        return pairs

    def gpu_fabric(self, gpu_id: str) -> list[NvlinkConnection]:
        """The logical connections of one GPU: its GPU pairs and its NVSwitch connections."""
        p = self.platform
        mine = [c for pair, c in self.gpu_pairs.items() if gpu_id in pair]
        return mine + [c for c in p.nvlinks if c.a == gpu_id and c.b not in p.gpu_by_id and c.b != c.a]

    def cpu_nvlinks(self, gpu_id: str) -> list[CpuNvlink]:
        """A GPU's NVLinks to a CPU (`nvlink.cpu_links`, POWER8/POWER9), in file order; not part of
        `gpu_fabric`, `nvlink_bandwidth` or `nvlink_links`, which are the GPU-to-GPU fabric."""
        return [c for c in self.platform.cpu_nvlinks if c.gpu == gpu_id]

    def own_cpu_nvlinks(self, gpu_id: str) -> list[CpuNvlink]:
        """A GPU's NVLinks to the socket its PCIe presence reaches, the only ones NCCL joins to a
        CPU (one written to another socket is HW506's)."""
        gpu = self.platform.gpu_by_id.get(gpu_id)
        return [c for c in self.cpu_nvlinks(gpu_id) if gpu is not None and c.socket == gpu.socket]

    def cpu_nvlink_bandwidth(self, gpu_id: str) -> float | None:
        """Bytes/s per direction of a GPU's NVLinks to its CPU (`own_cpu_nvlinks`): 0.0 without
        any, None where a link's bandwidth is unknown (an unknown part)."""
        links = self.own_cpu_nvlinks(gpu_id)
        if any(c.bandwidth is None for c in links):
            return None
        return sum(c.bandwidth or 0.0 for c in links)

    def nvlink_bandwidth(self, gpu_id: str) -> float:
        """Sum of a GPU's logical fabric bandwidth as written (every connection naming it),
        bytes/s per direction; connections of unknown bandwidth (an unknown part) count nothing:
        consumers of figures check `Platform.unknown_figures` first."""
        return sum(c.bandwidth or 0.0 for c in self.platform.nvlinks if gpu_id in (c.a, c.b))

    def nvlink_links(self, gpu_id: str) -> int:
        """Fabric links of one GPU as written (every connection naming it)."""
        return sum(c.links for c in self.platform.nvlinks if gpu_id in (c.a, c.b))

    @cached_property
    def _direct_nvlink(self) -> frozenset[frozenset[str]]:
        """GPU pairs one NVLink hop apart: a direct connection, or both on an NVSwitch."""
        p = self.platform
        direct = {frozenset((c.a, c.b)) for c in p.nvlinks if c.b in p.gpu_by_id and c.a != c.b and c.links}
        switched = sorted({c.a for c in p.nvlinks if c.b not in p.gpu_by_id and c.links})
        direct |= {frozenset((a, b)) for i, a in enumerate(switched) for b in switched[i + 1:]}
        return frozenset(direct)

    @property
    def direct_nvlink_pairs(self) -> int:
        """GPU pairs joined by a direct NVLink connection (every attached pair on an NVSwitch)."""
        return len(self._direct_nvlink)

    @cached_property
    def nvlink_islands(self) -> tuple[tuple[str, ...], ...]:
        """The GPUs grouped by NVLink reachability (each island by GPU index, islands by their
        first GPU); a GPU without NVLink is an island of its own."""
        p = self.platform
        root = {g.id: g.id for g in p.gpus}

        def find(x: str) -> str:
            while root[x] != x:
                root[x] = root[root[x]]
                x = root[x]
            return x

        for pair in self._direct_nvlink:
            a, b = sorted(pair)
            if a in root and b in root:
                root[find(a)] = find(b)
        islands: dict[str, list[str]] = {}
        for gpu in p.gpus:
            islands.setdefault(find(gpu.id), []).append(gpu.id)
        return tuple(sorted((tuple(i) for i in islands.values()), key=lambda i: p.gpu_by_id[i[0]].index))

    @property
    def nvlink_connected(self) -> bool:
        """NVLink joins every GPU of the node (false without GPUs)."""
        return bool(self.platform.gpus) and len(self.nvlink_islands) == 1

    # -------------------------------------------------------------- NICs

    def nics_of(self, gpu_id: str) -> tuple[str, ...]:
        """The backend NICs that name GPU `gpu_id` among the GPUs they serve, by bus id (the
        order NCCL numbers them in; never the order the file lists them, so no generated file
        depends on it); empty when none does."""
        return self._nics_by_gpu.get(gpu_id, ())

    def gpus_of(self, nic_id: str) -> tuple[str, ...]:
        """The GPUs backend NIC `nic_id` serves, as written (empty for a NIC that names none,
        and for a host NIC)."""
        nic = self.platform.nic_by_id.get(nic_id)
        return nic.gpus if nic is not None and nic.role == "backend" else ()

    @cached_property
    def _nics_by_gpu(self) -> dict[str, tuple[str, ...]]:
        mapping: dict[str, list[str]] = {}
        for nic in self.platform.backend_nics:  # by bus id
            for gpu_id in nic.gpus:
                mapping.setdefault(gpu_id, []).append(nic.id)
        return {gpu_id: tuple(nics) for gpu_id, nics in mapping.items()}

    @cached_property
    def collective_nics(self) -> tuple[str, ...]:
        """The NICs that carry inter-node collectives, by bus id: the backend NICs, or, on a
        platform without any (Zion), the host NICs running the backend transport (the entries
        are `Platform.collective_nics`: cluster resolution needs them, below this layer)."""
        return tuple(n.id for n in self.platform.collective_nics)

    def scale_out_nics(self, gpu_id: str) -> tuple[str, ...]:
        """The collective NICs a GPU's inter-node traffic uses: the NICs that serve it
        (`nics_of`); without any, the collective NICs that serve no GPU, or else all collective
        NICs (shared)."""
        return self._scale_out[0].get(gpu_id, ())

    def scale_out_users(self, nic_id: str) -> int:
        """How many GPUs send their inter-node traffic through NIC `nic_id`."""
        return self._scale_out[1].get(nic_id, 0)

    def scale_out_share(self, gpu_id: str) -> float:
        """A GPU's share of scale-out bandwidth when every GPU sends at once, bytes/s per
        direction: each of its NICs' speed divided among the GPUs that use that NIC, summed
        over the GPU's NICs. A GPU with four 100 Gb/s NICs of its own gets 50 GB/s; two GPUs
        on one NIC get half of it each. NICs of unknown speed count nothing (consumers of
        figures check `Platform.unknown_figures`)."""
        users, nics = self._scale_out[1], self.platform.nic_by_id
        return sum((nics[n].speed or 0.0) / users[n] for n in self.scale_out_nics(gpu_id))

    @cached_property
    def _scale_out(self) -> tuple[dict[str, tuple[str, ...]], dict[str, int]]:
        p = self.platform
        collective = self.collective_nics
        unpaired = tuple(n.id for n in p.collective_nics if not any(g in p.gpu_by_id for g in n.gpus))
        fallback = unpaired or collective
        uses: dict[str, tuple[str, ...]] = {}
        users: dict[str, int] = {}
        for gpu in p.gpus:
            mine = tuple(n for n in self.nics_of(gpu.id) if n in collective) or fallback
            uses[gpu.id] = mine
            for n in mine:
                users[n] = users.get(n, 0) + 1
        return uses, users

    def gpudirect(self, nic_id: str, gpu_id: str) -> bool:
        """Whether NIC `nic_id` moves GPU `gpu_id`'s data by GPUDirect RDMA: a backend NIC that
        serves that GPU, with GPUDirect supported by its part and declared (or detected) for the
        backend."""
        nic, backend = self.platform.nic_by_id.get(nic_id), self.platform.backend
        return bool(nic is not None and nic.role == "backend" and gpu_id in nic.gpus and nic.gpudirect
                    and backend is not None and backend.gpudirect)

    def gpudirect_any(self, nic_id: str) -> bool:
        """Whether NIC `nic_id` moves the data of at least one of its GPUs by GPUDirect RDMA."""
        return any(self.gpudirect(nic_id, g) for g in self.gpus_of(nic_id))

    def turn_point(self, nic_id: str, gpu_id: str) -> str | None:
        """Where NIC `nic_id`'s traffic for GPU `gpu_id` turns: the bridge NIC and GPU share
        under GPUDirect RDMA, else the NIC's socket (None when it reaches none)."""
        if self.gpudirect(nic_id, gpu_id):
            shared = self.common_bridge(nic_id, gpu_id)
            if shared is not None:
                return shared
        return self.socket_of(nic_id)

    def nic_path(self, nic_id: str, gpu_id: str | None = None) -> tuple[str, ...]:
        """The items whose upstream link NIC `nic_id`'s traffic to GPU `gpu_id` crosses: the NIC
        itself, then each bridge above it below its turn point. Without `gpu_id`, the longest
        such path over the GPUs the NIC serves: every link any of its traffic crosses."""
        if gpu_id is None:
            nic = self.platform.nic_by_id[nic_id]
            paths = [self.nic_path(nic_id, g) for g in nic.gpus] or [self._path_below(nic_id, self.socket_of(nic_id))]
            return max(paths, key=len)
        return self._path_below(nic_id, self.turn_point(nic_id, gpu_id))

    def _path_below(self, nic_id: str, stop: str | None) -> tuple[str, ...]:
        path = [nic_id]
        for bridge_id in self.bridges_above(nic_id):
            if bridge_id == stop:
                break
            path.append(bridge_id)
        return tuple(path)

    def gdr_path_type(self) -> PathType | None:
        """The farthest GPU-to-NIC distance (PCIe, or P2C over NVLink-C2C) on the node under GPUDirect
        RDMA, judged per pair: each GPU to every GPUDirect-capable backend NIC that serves it, or,
        for a GPU no capable NIC serves, to its nearest capable NIC; None without such NICs."""
        p = self.platform
        capable = [n.id for n in p.backend_nics if n.transport != "tcp" and n.rdma and n.gpudirect]
        if not capable or not p.gpus:
            return None
        worst = 0
        for gpu in p.gpus:
            own = [n for n in self.nics_of(gpu.id) if n in capable]
            distances = [PATH_TYPES.index(self.path_type(gpu.id, nic)) for nic in own or capable]
            worst = max(worst, max(distances) if own else min(distances))
        return PATH_TYPES[worst]


def node_topology(platform: Platform) -> Topology:
    """The node platform's `Topology`, built once per platform (`hwspec.topology.topology_of`)."""
    return held(platform, Topology)
