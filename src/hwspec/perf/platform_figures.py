"""Per-GPU platform figures an estimate reads, for a node or a cluster, in one flat record.

`figures(topology)` reads the resolved `Topology`/`ClusterTopology` and the roofline documents
(`hwspec.perf.roofline.roofline`, `hwspec.perf.cluster_roofline.cluster_roofline`); it computes nothing
those do not already know except picking the slowest GPU of each kind and the collective bounds
of the right scope (intra-node for a node, hierarchical for a cluster). Units: bytes, bytes/s
per direction, FLOP/s, as everywhere in hwspec.

These queries belong on the topology objects; they live here until they move there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hwspec.model.node import known
from hwspec.perf import roofline as rf
from hwspec.topology import ClusterTopology, Topology, topology_of


@dataclass(frozen=True, slots=True)
class Figures:
    """The numbers of one platform that a workload estimate and a comparison read.

    Every per-GPU figure is the slowest GPU's (heterogeneous nodes are bounded by their
    slowest member). A tier a platform lacks has capacity 0 and bandwidth 0."""

    name: str
    title: str
    file: str
    kind: str                       # "node" or "cluster"
    gpus: int                       # ranks in the job (all GPUs)
    gpus_per_node: int
    nodes: int
    sockets_per_node: int
    gpu_model: str
    peak_flop_per_s: dict[str, float]        # dense peak per GPU, by dtype
    hbm_capacity: float
    hbm_bandwidth: float
    ddr_capacity: float                      # the GPU's share of its NUMA node's DDR
    ddr_bandwidth: float
    ssd_capacity: float                      # the GPU's share of the node's SSDs
    ssd_bandwidth: float
    pcie_host_bandwidth: float               # GPU alone on its host path
    pcie_host_shared_bandwidth: float        # every GPU transferring at once
    nvlink_bandwidth: float
    nic_bandwidth: float                     # per-GPU scale-out NIC share
    injection_bandwidth: float               # per-GPU injection (NIC, capped by bisection share)
    ingestion_bandwidth: float               # per-GPU share of the ingestion/frontend NICs
    transport: str                           # inter-node transport of collectives
    gpudirect: bool                          # every GPU's scale-out NICs move its data by GPUDirect RDMA
    collectives_scope: str                   # "intra-node" or "hierarchical"
    algbw: dict[str, float] = field(default_factory=dict)   # collective -> algbw bound, bytes/s
    busbw: dict[str, float] = field(default_factory=dict)   # collective -> busbw bound, bytes/s
    ingestion_on_collective_nics: bool = False  # some GPU's collectives leave by an ingestion/frontend NIC
    fabric_kinds: tuple[str, ...] = ()       # the GPUs' fabric kinds (parts' fabric.kind), sorted; unknown left out
    intra_algbw: dict[str, float] = field(default_factory=dict)  # collective -> the node's intra-node algbw bound
    # collective -> seconds per byte of its hierarchical "intra" and "inter" phases (cluster only; the
    # algbw bound is 1 / the slower): cluster_roofline.phase_seconds_per_byte
    collective_phases: dict[str, dict[str, float]] = field(default_factory=dict)
    host_memory_capacity: float = 0.0        # a node's host DDR, all sockets (an APU's memory counted as HBM: 0)
    host_memory_bandwidth: float = 0.0       # the same sockets' DDR bandwidth, summed
    compute_capability: int = 0              # the GPUs' least CUDA compute capability x10 (NCCL's minCompCap); 0 unknown
    # NVLink domains that span several nodes (NVL72 racks), which NCCL counts as one node each, their trays
    # joined by NVLink (multi-node NVLink); None: none, every node its own (`nccl_nodes`)
    nvlink_units: int | None = None

    @property
    def nccl_nodes(self) -> int:
        """The nodes as NCCL counts them: `nvlink_units` where NVLink domains span nodes, else `nodes`."""
        return min(self.nvlink_units, self.nodes) if self.nvlink_units is not None else self.nodes


def _tier(doc: dict[str, Any], name: str, key: str = "bandwidth_bytes_per_s") -> float:
    values = [group["tiers"][name] for group in doc["gpu_groups"]]
    if not values or any(v is None for v in values):
        return 0.0
    return float(min(v.get(key, 0) or 0 for v in values))


def _peaks(doc: dict[str, Any]) -> dict[str, float]:
    groups = doc["gpu_groups"]
    dtypes = set.intersection(*(set(g["compute"]) for g in groups)) if groups else set()
    return {d: min(g["compute"][d]["dense_flop_per_s"] for g in groups) for d in sorted(dtypes)}


def _node_scale_out(topology: Topology) -> tuple[str, bool]:
    """Transport of the NICs the GPUs' inter-node traffic uses, and whether all of them are GPUDirect."""
    platform = topology.platform
    pairs = [(n, g.id) for g in platform.gpus for n in topology.scale_out_nics(g.id)]
    transport = ",".join(sorted({platform.nic_by_id[n].transport for n, _ in pairs})) or "none"
    gpudirect = bool(pairs) and all(topology.gpudirect(n, gpu_id) for n, gpu_id in pairs)
    return transport, gpudirect


def _collectives_on_host_nics(topology: Topology) -> bool:
    """Whether some GPU's inter-node collectives leave by an ingestion/frontend NIC (a node
    without backend NICs of its own, like Zion): ingestion and collectives then share it."""
    platform = topology.platform
    return any(platform.nic_by_id[n].role in ("ingestion", "frontend") for g in platform.gpus for n in topology.scale_out_nics(g.id))


def _min_nodes(docs: list[dict[str, Any]], fn: Callable[[dict[str, Any]], float]) -> float:
    return min(fn(d) for d in docs)


def check_known(topology: Topology | ClusterTopology) -> None:
    """Raise HwspecError (E403, located at the entry) when a node platform of `topology` has
    unknown figures: an estimate is never computed from a figure nobody gave."""
    from hwspec.diagnostics import Code, Diagnostic, HwspecError, Severity

    platforms = topology.platform.node_platforms if isinstance(topology, ClusterTopology) else [topology.platform]
    problems = []
    for platform in platforms:
        numa_nodes = {s.id for s in platform.sockets}
        for line in platform.unknown_figures:
            entry = line.split(":", 1)[0]
            where = platform.locate(entry, "memory" if entry in numa_nodes else "part")
            problems.append(Diagnostic(where.file, where.line, where.col, Severity.ERROR, Code.UNKNOWN_FIGURES,
                                       f"cannot estimate with unknown figures: {line}",
                                       "name the part or give the figure (hwspec validate lists every unknown, HW603)"))
    if problems:
        raise HwspecError(problems)


def figures(topology: Topology | ClusterTopology) -> Figures:
    """The `Figures` of a node (`Topology`) or cluster (`ClusterTopology`). Raises HwspecError
    (E403) when a figure is unknown (`check_known`)."""
    check_known(topology)
    if isinstance(topology, ClusterTopology):
        from hwspec.perf.cluster_roofline import cluster_roofline_and_phases

        cluster = topology.platform
        node_topologies = [topology_of(p) for p in cluster.node_platforms]
        cdoc, phases = cluster_roofline_and_phases(topology)
        collectives = cdoc["collectives"] or {}
        network = cdoc["network"]
        gpus, nodes = cluster.world_size, cluster.node_count
        per_node = min(g.gpus_per_node for g in cluster.groups)
        transport = cluster.fabric.transport if cluster.fabric is not None else _node_scale_out(node_topologies[0])[0]
        injection = network["per_gpu_injection_bytes_per_s"]
        nic = network["per_gpu_nic_bytes_per_s"]
        scope = "hierarchical"
    else:
        node_topologies = [topology]
        doc = rf.roofline(topology)
        collectives = doc["intra_node_collectives"] or {}
        gpus = per_node = len(topology.platform.gpus)
        nodes = 1
        transport = _node_scale_out(topology)[0]
        injection = nic = _tier(doc, "backend_nic")
        scope = "intra-node"
        network = None
        phases = {}
    docs = [rf.roofline(t) for t in node_topologies]
    if network is not None and "ingestion_per_gpu_bytes_per_s" in network:
        ingestion = network["ingestion_per_gpu_bytes_per_s"]  # the cluster's frontend says how much is for ingestion
    else:
        ingestion = min(_tier(d, "ingestion_share") for d in docs)
    peaks: dict[str, float] = {}
    for d in docs:
        for dtype, value in _peaks(d).items():
            peaks[dtype] = min(peaks.get(dtype, value), value)
    common = set.intersection(*(set(_peaks(d)) for d in docs))
    first = docs[0]["gpu_groups"][0] if docs[0]["gpu_groups"] else {"model_name": "none"}
    return Figures(
        name=topology.name, title=topology.platform.title, file=topology.file, kind=topology.kind,
        gpus=gpus, gpus_per_node=per_node, nodes=nodes,
        sockets_per_node=min(len(t.platform.sockets) for t in node_topologies),
        gpu_model=first["model_name"],
        peak_flop_per_s={k: v for k, v in sorted(peaks.items()) if k in common},
        hbm_capacity=_min_nodes(docs, lambda d: _tier(d, "hbm", "capacity_bytes")),
        hbm_bandwidth=_min_nodes(docs, lambda d: _tier(d, "hbm")),
        ddr_capacity=_min_nodes(docs, lambda d: _tier(d, "host_ddr", "capacity_bytes")),
        ddr_bandwidth=_min_nodes(docs, lambda d: _tier(d, "host_ddr")),
        ssd_capacity=_min_nodes(docs, lambda d: _tier(d, "ssd", "capacity_bytes")),
        ssd_bandwidth=_min_nodes(docs, lambda d: _tier(d, "ssd")),
        pcie_host_bandwidth=_min_nodes(docs, lambda d: _tier(d, "pcie_host")),
        pcie_host_shared_bandwidth=_min_nodes(docs, lambda d: _tier(d, "pcie_host_shared")),
        nvlink_bandwidth=_min_nodes(docs, lambda d: _tier(d, "nvlink")),
        nic_bandwidth=float(nic or 0.0), injection_bandwidth=float(injection or 0.0), ingestion_bandwidth=float(ingestion or 0.0),
        transport=transport,
        gpudirect=all(_node_scale_out(t)[1] for t in node_topologies),
        collectives_scope=scope,
        algbw={name: collectives[name]["algbw_bytes_per_s"] for name in rf.COLLECTIVES if name in collectives},
        busbw={name: collectives[name]["busbw_bytes_per_s"] for name in rf.COLLECTIVES if name in collectives},
        ingestion_on_collective_nics=any(_collectives_on_host_nics(t) for t in node_topologies),
        fabric_kinds=tuple(sorted({g.fabric_kind for t in node_topologies for g in t.platform.gpus if g.fabric_kind})),
        intra_algbw=_intra_algbw(docs),
        collective_phases=phases,
        host_memory_capacity=float(min(known(t.platform.memory_capacity) for t in node_topologies)),  # check_known above
        host_memory_bandwidth=float(min(known(t.platform.memory_bandwidth) for t in node_topologies)),
        compute_capability=min((g.sm or 0 for t in node_topologies for g in t.platform.gpus), default=0),
        nvlink_units=_nvlink_units(topology),
    )


def _nvlink_units(topology: Topology | ClusterTopology) -> int | None:
    """A cluster's NVLink domains where they span nodes (`Figures.nvlink_units`), else None."""
    domains = topology.platform.nvlink_domains if isinstance(topology, ClusterTopology) else None
    return domains.count if domains is not None and domains.size > 1 else None


def _intra_algbw(docs: list[dict[str, Any]]) -> dict[str, float]:
    """Each collective's intra-node algbw bound, the slowest node's (a node the roofline gives no
    bound for, a lone GPU, leaves the collective out)."""
    bounds = [d["intra_node_collectives"] or {} for d in docs]
    return {name: min(b[name]["algbw_bytes_per_s"] for b in bounds)
            for name in rf.COLLECTIVES if bounds and all(name in b for b in bounds)}
