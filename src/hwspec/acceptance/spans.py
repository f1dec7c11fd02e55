"""What a benchmark run crosses: the links between its ranks, per GPU, each with its bound, its
achieved fraction, what sets it and where the platform file says so.

A run of nccl-tests spans `nodes` nodes with `gpus_per_node` ranks each. NCCL sees the ranks
of one NVLink domain that spans several nodes (a GB200 NVL72 rack) as one node: its collectives
cross between those trays over NVLink. So a `Span` counts *units* (nodes, or such domains) and
names the per-GPU link inside a unit (`intra`) and the one leaving it (`out`), plus the
in-switch reduction rate (`nvls`) where the unit's switches reduce.

Bandwidths are bytes/s per direction per GPU, as the platform states them (datasheet rates);
`Link.efficiency` is the achieved fraction a cited component measurement gives
(`hwspec.perf.calibration`), None where no measurement of that kind of link is known: a figure
that needs it is then unchecked, never a number.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from hwspec.diagnostics import Location
from hwspec.formats.nccl_tree import collective_library
from hwspec.model.node import Gpu, Nic, Platform
from hwspec.perf import calibration as cal
from hwspec.perf import roofline as rf
from hwspec.topology.cluster import ClusterTopology
from hwspec.topology.node import Topology, node_topology

TIERS = ("nvlink", "nvswitch", "xgmi", "pcie", "c2c", "nic", "network", "host memory")
"""The tiers a figure can be limited by, as findings name them."""

SUSPECTS = {
    "nvlink": ("an NVLink down or trained at fewer links ('nvidia-smi nvlink -s', hwspec diff --live: D106)",
               "GPU clocks or power capped ('nvidia-smi -q -d PERFORMANCE')"),
    "nvswitch": ("an NVLink down or trained at fewer links ('nvidia-smi nvlink -s', hwspec diff --live: D106)",
                 "the NVSwitch fabric manager or NVLink domain not up (D113)",
                 "GPU clocks or power capped ('nvidia-smi -q -d PERFORMANCE')"),
    "xgmi": ("an xGMI link down ('amd-smi topology', 'rocm-smi --showtopo')", "GPU clocks or power capped"),
    "pcie": ("a PCIe link trained below its generation or width ('lspci -vv' LnkSta, hwspec diff --live: D105)",
             "PCIe ACS sending peer traffic through the root complex", "the IOMMU in translated mode"),
    "c2c": ("NVLink-C2C not at full rate ('nvidia-smi c2c -s')", "the CPU's memory placement (NUMA binding)"),
    "nic": ("GPUDirect RDMA not active (nvidia-peermem or dma-buf; hwspec diff --live: D109)",
            "PCIe ACS on the switch that holds the GPU and its NIC", "a NIC's PCIe link (D105) or port speed ('ibstat', D110, D112)",
            "NCCL_IB_HCA naming other NICs than the spec's"),
    "network": ("congestion on the leaf uplinks or the spine", "adaptive routing or SHARP off", "a flapping or slow cable ('ibdiagnet')"),
    "host memory": ("DIMMs missing or at a lower speed ('dmidecode -t memory')", "the process bound to another NUMA node"),
}
"""The first things to look at when a figure limited by a tier falls short, as findings name them."""


@dataclass(frozen=True, slots=True)
class Link:
    """One tier a run's traffic crosses, per GPU.

    `bandwidth` is bytes/s per direction as the platform states it; `efficiency` the achieved
    fraction of it (a cited measurement, `efficiency_source` says which), None where none is
    known; `what` says the link as people read it; `where` is the platform line of the part or
    entry that sets it, and `entry` that place by name (`gpu0.part`, `backend`): what a
    generated file says, which does not move when the file's lists are reordered."""

    tier: str
    bandwidth: float
    efficiency: float | None
    efficiency_source: str
    what: str
    where: Location
    entry: str = ""

    @property
    def achieved(self) -> float | None:
        """Bytes/s per direction the link reaches (`bandwidth` x `efficiency`), None when unknown."""
        return None if self.efficiency is None else self.bandwidth * self.efficiency

    @property
    def suspects(self) -> tuple[str, ...]:
        return SUSPECTS[self.tier]


@dataclass(frozen=True, slots=True)
class Span:
    """What a run of `nodes` x `gpus_per_node` ranks crosses.

    `units` are the nodes, or the NVLink domains spanning several nodes that hold them (NCCL's
    nodes); `unit_gpus` the ranks in one. `intra` is the per-GPU link inside a unit (None for
    a single rank), `out` the per-GPU link leaving one (None within one unit), `nvls` the
    in-switch reduction rate (None where the unit's switches do not reduce), `out_p2p` the link
    leaving a unit for point-to-point traffic (one NIC per GPU: NCCL's AlltoAll and SendRecv do
    not spread a GPU's sends over several NICs, nccl-tests#267), `sharp` whether the
    backend switches reduce (CollNet). `kind` says what the run is: `node`, `nodes` (N nodes of a
    node platform on a non-blocking fabric of its backend NICs), `leaf`, `spine`, `rail` or
    `domain`."""

    kind: str
    nodes: int
    gpus_per_node: int
    units: int
    unit_gpus: int
    intra: Link | None
    out: Link | None
    out_p2p: Link | None
    nvls: Link | None
    sharp: bool
    library: str
    compute_capability: int
    gpudirect: bool

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node


# ------------------------------------------------------------------ efficiencies


MEASURED_FABRICS = {a.fabric: a for a in cal.ARCHITECTURES}
"""NVLink generations with a cited nccl-tests measurement (`calibration.ARCHITECTURES`)."""


XGMI_MEASURED = ("gfx94",)
"""gfx targets whose xGMI links the cited measurement covers (`xgmi_efficiency`: MI300X, gfx942;
MI300A and MI325X share it). Other generations' links (MI250X's gfx90a, MI355X's gfx950) run at
other rates: unchecked."""


def fabric_efficiency(gpu: Gpu) -> tuple[float | None, str]:
    """Achieved busbw fraction of the GPU's fabric (its part's `fabric.kind`) and its source: each
    NVLink generation's measured ring busbw, xGMI's measured link rate on the gfx targets it was
    measured on; None for a fabric no measurement covers (NVLink2, other xGMI, unknown)."""
    kind = gpu.fabric_kind
    if kind == "xgmi":
        if gpu.gcn is not None and gpu.gcn.startswith(XGMI_MEASURED):
            return constant("xgmi_efficiency")
        return None, f"no cited measurement of xGMI on {gpu.gcn or 'an unknown gfx target'} (xgmi_efficiency is gfx942's)"
    arch = MEASURED_FABRICS.get(kind or "")
    if arch is None:
        return None, f"no cited nccl-tests measurement over {kind or 'an unknown fabric'}"
    return constant(arch.nvlink)


def nvls_efficiency(compute_capability: int) -> tuple[float | None, str]:
    """NVLS AllReduce's measured algbw as a fraction of the GPU's NVLink bandwidth for the GPUs'
    generation; None where no measurement of that generation is known."""
    name = {"Hopper": "nvls_efficiency_hopper", "Blackwell": "nvls_efficiency_blackwell"}.get(
        cal.architecture(compute_capability).name)
    if name is None or name not in cal.CALIBRATION:
        return None, f"no cited NVLS measurement for compute capability {compute_capability / 10:g}"
    return constant(name)


MEASURED_TRANSPORTS = {"infiniband": "rdma_efficiency", "rocev2": "rdma_efficiency", "tcp": "tcp_efficiency"}
"""Transports whose achieved busbw per NIC a cited nccl-tests measurement gives: InfiniBand and
RoCE (48 of 50 GB/s per 400G ConnectX-7, 24 of 25 per 200G: `rdma_efficiency`) and plain TCP
sockets (`tcp_efficiency`). EFA, GPUDirect-TCPX(O) and Slingshot have none: their figures are
unchecked."""


def network_efficiency(transport: str) -> tuple[float | None, str]:
    """Achieved busbw fraction of a NIC's line rate for `transport` (`MEASURED_TRANSPORTS`), and its
    source; None for a transport no measurement covers."""
    name = MEASURED_TRANSPORTS.get(transport.strip().lower())
    if name is None:
        return None, f"no cited nccl-tests measurement over {transport}"
    return constant(name)


def constant(name: str) -> tuple[float, str]:
    """A calibration constant's value and `what was measured (source)`."""
    c = cal.CALIBRATION[name]
    return c.value, f"{name} {c.value:g}: {c.measured} ({c.source})"


# ------------------------------------------------------------------ links of a node


def gbps(bandwidth: float) -> str:
    """bytes/s as people write a link's rate: GB/s, 1e9 bytes."""
    return f"{bandwidth / 1e9:.4g} GB/s"


def fabric_tier(platform: Platform, gpu: Gpu) -> str:
    """`xgmi` for AMD's fabric, `nvswitch` for GPUs that meet at NVSwitches, else `nvlink`."""
    if gpu.fabric_kind == "xgmi":
        return "xgmi"
    return "nvswitch" if platform.nvlink_topology == "nvswitch" else "nvlink"


def intra_link(topology: Topology, gpus: tuple[Gpu, ...]) -> Link | None:
    """The per-GPU link among `gpus` of one node: their GPU fabric (the slowest GPU's) when it
    joins them all, else their PCIe links (the narrowest); None for fewer than two GPUs."""
    if len(gpus) < 2:
        return None
    platform = topology.platform
    if topology.nvlink_connected and all(topology.nvlink_bandwidth(g.id) > 0 for g in gpus):
        slowest = min(gpus, key=lambda g: topology.nvlink_bandwidth(g.id))
        bandwidth = topology.nvlink_bandwidth(slowest.id)
        efficiency, source = fabric_efficiency(slowest)
        what = (f"{topology.nvlink_links(slowest.id)} {slowest.fabric_kind or 'fabric'} links of {slowest.id} "
                f"({slowest.part}), {gbps(bandwidth)}")
        return Link(fabric_tier(platform, slowest), bandwidth, efficiency, source, what, platform.locate(slowest.id, "part"),
                    f"{slowest.id}.part")
    linked = [g for g in gpus if g.physical is not None]
    if len(linked) < len(gpus):
        return None
    slowest = min(linked, key=lambda g: g.physical.bandwidth if g.physical else 0.0)
    assert slowest.physical is not None
    efficiency, source = constant("pcie_efficiency")
    source += " (assumed for collectives between GPUs over PCIe: no nccl-tests measurement over PCIe is cited)"
    return Link("pcie", slowest.physical.bandwidth, efficiency, source,
                f"{slowest.id}'s PCIe {slowest.physical}, {gbps(slowest.physical.bandwidth)}", platform.locate(slowest.id, "pcie"),
                f"{slowest.id}.pcie")


def nic_link(topology: Topology, gpus: tuple[Gpu, ...], aggregate: bool = True) -> Link | None:
    """The per-GPU scale-out link when `gpus` (of one node) all send at once: each NIC's speed
    divided among those of `gpus` that use it, summed over a GPU's NICs (`aggregate`; else its
    best single NIC's share: point-to-point traffic, AlltoAll and SendRecv, goes out by one NIC
    per GPU), the smallest GPU's (`Topology.scale_out_nics`); None without collective NICs."""
    by_id = topology.platform.nic_by_id
    users: dict[str, int] = {}
    for gpu in gpus:
        for nic_id in topology.scale_out_nics(gpu.id):
            users[nic_id] = users.get(nic_id, 0) + 1
    if not users:
        return None

    def used(gpu: Gpu) -> list[Nic]:
        return [by_id[n] for n in topology.scale_out_nics(gpu.id)]

    def shares(gpu: Gpu) -> list[float]:
        return [(n.speed or 0.0) / users[n.id] for n in used(gpu)]

    def share(gpu: Gpu) -> float:
        return sum(shares(gpu)) if aggregate else max(shares(gpu))

    slowest = min(gpus, key=share)
    nics = used(slowest) if aggregate else [max(used(slowest), key=lambda n: (n.speed or 0.0) / users[n.id])]
    first: Nic = nics[0]
    transport = first.transport
    efficiency, source = network_efficiency(transport)
    shared = max(users[n.id] for n in nics)
    what = (f"{len(nics)} x {(first.speed or 0.0) * 8 / 1e9:g} Gb/s {transport} NIC{'s' if len(nics) > 1 else ''} "
            f"({first.part}) for {slowest.id}" + (f", each shared by {shared} GPUs" if shared > 1 else "")
            + ("" if aggregate or len(used(slowest)) == 1 else ", one at a time (point-to-point)")
            + f": {gbps(share(slowest))}")
    return Link("nic", share(slowest), efficiency, source, what, topology.platform.locate(first.id, "part"), f"{first.id}.part")


def nvls_link(topology: Topology, intra: Link | None, compute_capability: int) -> Link | None:
    """The NVLS rate over `intra` where the node's NVSwitches reduce (`roofline.nvlink_sharp`) and
    its library is NCCL; None elsewhere."""
    if intra is None or intra.tier != "nvswitch" or not rf.nvlink_sharp(topology) or collective_library(topology.platform) != "nccl":
        return None
    efficiency, source = nvls_efficiency(compute_capability)
    board = topology.platform.baseboard
    if board is not None:
        where, entry = topology.platform.locate("baseboard", "nvswitch_generation"), "baseboard.nvswitch_generation"
    else:
        where, entry = intra.where, intra.entry
    return Link(intra.tier, intra.bandwidth, efficiency, source, f"NVLink SHARP in the NVSwitches, {intra.what}", where, entry)


def compute_capability(platforms: tuple[Platform, ...]) -> int:
    """The GPUs' least compute capability x10 (NCCL's minCompCap), 0 unknown."""
    return min((g.sm or 0 for p in platforms for g in p.gpus), default=0)


def node_span(topology: Topology, nodes: int = 1, gpus_per_node: int | None = None) -> Span:
    """A run on `nodes` nodes of the node platform `topology` (several: on a non-blocking fabric of
    its backend NICs), with `gpus_per_node` ranks each (default all, the first ones by index)."""
    platform = topology.platform
    count = len(platform.gpus) if gpus_per_node is None else gpus_per_node
    if not 1 <= count <= len(platform.gpus):
        raise ValueError(f"{platform.name} has {len(platform.gpus)} GPUs, not {count}")
    gpus = platform.gpus[:count]
    intra = intra_link(topology, gpus)
    sm = compute_capability((platform,))
    out = nic_link(topology, gpus) if nodes > 1 else None
    p2p = nic_link(topology, gpus, aggregate=False) if nodes > 1 else None
    return Span(kind="node" if nodes == 1 else "nodes", nodes=nodes, gpus_per_node=count, units=nodes, unit_gpus=count,
                intra=intra, out=out, out_p2p=p2p, nvls=nvls_link(topology, intra, sm) if count > 1 else None, sharp=False,
                library=collective_library(platform), compute_capability=sm,
                gpudirect=all(topology.gpudirect(n, g.id) for g in gpus for n in topology.scale_out_nics(g.id)))


# ------------------------------------------------------------------ links of a cluster


def cluster_span(topology: ClusterTopology, nodes: Sequence[int], gpus_per_node: int | None = None,
                 mnnvl: bool = True) -> Span:
    """A run on cluster nodes `nodes` (indices, distinct), `gpus_per_node` ranks each (default
    all). Nodes of one multi-node NVLink domain count as one unit joined by the domain's NVLink
    (NCCL's multi-node NVLink; `mnnvl` False as with NCCL_MNNVL_ENABLE=0: every node its own);
    a run whose units sit under several leaf groups has its NIC share capped by the leaves'
    uplinks it shares (`uplink_cap`). Linear in the nodes at most (a `range` of them: in the
    node groups and leaves)."""
    cluster = topology.platform
    if not nodes:
        raise ValueError("a run spans at least one node")
    ordered = nodes if isinstance(nodes, range) else sorted(nodes)
    platforms = _platforms_of(topology, ordered)
    node = node_topology(_platform_of(topology, nodes[0]))
    per_node = len(node.platform.gpus) if gpus_per_node is None else gpus_per_node
    gpus = node.platform.gpus[:per_node]
    sm = compute_capability(platforms)
    domains = cluster.nvlink_domains if mnnvl else None
    if domains is None or domains.size <= 1:
        units = len(nodes)
    elif isinstance(ordered, range) and ordered.step == 1:
        units = domains.domain_of(ordered[-1]) - domains.domain_of(ordered[0]) + 1
    else:
        units = len({domains.domain_of(i) for i in nodes})
    unit_gpus = len(nodes) * per_node // units
    intra = intra_link(node, gpus)
    nvls = nvls_link(node, intra, sm) if per_node > 1 else None
    kind = "node" if len(nodes) == 1 else "nodes"
    if domains is not None and domains.size > 1 and unit_gpus > per_node:
        intra, nvls = domain_links(topology, intra, nvls, sm)
        kind = "domain"
    out = nic_link(node, gpus) if units > 1 else None
    p2p = nic_link(node, gpus, aggregate=False) if units > 1 else None
    if out is not None and p2p is not None:
        out, crossing = uplink_cap(topology, ordered, gpus, out)
        p2p, _ = uplink_cap(topology, ordered, gpus, p2p)
        kind = "spine" if crossing else ("rail" if per_node == 1 else "leaf")
    fabric = cluster.fabric
    return Span(kind=kind, nodes=len(nodes), gpus_per_node=per_node, units=units, unit_gpus=unit_gpus, intra=intra,
                out=out, out_p2p=p2p, nvls=nvls, sharp=bool(fabric is not None and fabric.sharp and units > 1),
                library=collective_library(platforms[0]), compute_capability=sm,
                gpudirect=all(node.gpudirect(n, g.id) for g in gpus for n in node.scale_out_nics(g.id)))


def _platforms_of(topology: ClusterTopology, ordered: Sequence[int]) -> tuple[Platform, ...]:
    """The node platforms of the groups holding any of `ordered` (ascending node indices)."""
    found = []
    for group in topology.platform.groups:
        start = bisect.bisect_left(ordered, group.nodes.start)
        if start < len(ordered) and ordered[start] < group.nodes.stop:
            found.append(group.platform)
    return tuple(found)


def _platform_of(topology: ClusterTopology, node: int) -> Platform:
    for group in topology.platform.groups:
        if node in group.nodes:
            return group.platform
    raise ValueError(f"the cluster has no node {node}")


def domain_links(topology: ClusterTopology, intra: Link | None, nvls: Link | None, sm: int) -> tuple[Link | None, Link | None]:
    """The per-GPU link inside an NVLink domain that spans nodes: the GPU's NVLink into the
    domain's switches, or the node's own fabric where that is slower; NVLS where every node
    platform's switches reduce."""
    cluster = topology.platform
    bandwidth = topology.domain_gpu_bandwidth
    if intra is not None and intra.bandwidth <= bandwidth:
        domain_intra = intra
    else:
        gpu = cluster.node_platforms[0].gpus[0]
        efficiency, source = fabric_efficiency(gpu)
        domain_intra = Link("nvswitch", bandwidth, efficiency, source,
                            f"{gpu.fabric_links} {gpu.fabric_kind} links of each GPU into the NVLink domain's switches, {gbps(bandwidth)}",
                            cluster.locate("nvlink_domain"), "nvlink_domain")
    if nvls is None or not all(rf.nvlink_sharp(node_topology(p)) for p in cluster.node_platforms):
        return domain_intra, None
    efficiency, source = nvls_efficiency(sm)
    return domain_intra, Link("nvswitch", domain_intra.bandwidth, efficiency, source,
                              f"NVLink SHARP in the domain's switches, {domain_intra.what}", domain_intra.where, domain_intra.entry)


def uplink_cap(topology: ClusterTopology, ordered: Sequence[int], gpus: tuple[Gpu, ...], out: Link) -> tuple[Link, bool]:
    """`out` capped by the leaf uplinks a run shares when its nodes (`ordered`, ascending) sit
    under several leaf groups: each leaf's uplink capacity divided among the run's NIC ports
    below it (on a rail-optimized fabric only rail i's leaves carry NIC i), the tightest leaf's,
    as a per-GPU rate (a node's `gpus` share its NICs in use). Returns the link and whether the
    run crosses leaf groups."""
    fabric = topology.platform.fabric
    if fabric is None or not topology.leaf_groups:
        return out, False
    if topology.leaf_group_of(ordered[0]) == topology.leaf_group_of(ordered[-1]):
        return out, False
    node = node_topology(_platform_of(topology, ordered[0]))
    used = len({n for g in gpus for n in node.scale_out_nics(g.id)})
    # a rail-optimized fabric repeats one leaf layout per rail: each layout is counted once
    layouts = {(leaf.nodes, leaf.uplinks, leaf.rail is not None) for leaf in fabric.leaves
               if leaf.rail is None or leaf.rail < used}
    per_port = math.inf
    for nodes, uplinks, rail in layouts:
        below = bisect.bisect_left(ordered, nodes.stop) - bisect.bisect_left(ordered, nodes.start)
        if below:
            ports = below * (1 if rail else used)
            per_port = min(per_port, uplinks * fabric.uplink_speed / ports if fabric.spine_count else 0.0)
    cap = per_port * used / len(gpus)
    if cap >= out.bandwidth:
        return out, True
    return Link("network", cap, out.efficiency, out.efficiency_source,
                f"the leaves' uplinks shared by the run's GPUs: {gbps(cap)} per GPU (below {out.what})",
                topology.platform.locate("backend"), "backend"), True
