"""Roofline numbers for a node platform, and the views consumers read.

Pure functions of the resolved `Topology` (no I/O): `roofline(topology)` builds the document
written as `roofline.json` and printed by `hwspec roofline`. Its views live beside it, one job
each: `hwspec.perf.torchrec` and `hwspec.perf.calculon` convert it for TorchRec's planner and for
Calculon, `hwspec.perf.roofline_report` formats it for people (with the number formats and
tables of `hwspec.perf.tables`).

Conventions. Every number is canonical SI and per direction: bytes, bytes/s, operations/s.
Units are carried by key suffixes (`_bytes`, `_bytes_per_s`, `_flop_per_s`,
`_flop_per_byte`); a key with a suffix holds a number in that unit, or a mapping (tier or
dtype -> number) in that unit. Keys without a suffix are counts, names or notes. Peaks are
datasheet peaks (no efficiency factor). Conversions to other units happen only in the
consumer views, at the edge.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

from hwspec.model.node import Gpu, Nic, Platform, known
from hwspec.text import visible
from hwspec.topology.node import Topology

SCHEMA_VERSION = 1

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
"""The intra-node collectives bounded, in nccl-tests' names (all_reduce_perf, ...)."""

TIERS = ("hbm", "host_ddr", "ssd", "nvlink", "pcie_host", "pcie_host_shared", "backend_nic", "ingestion_share")
"""Per-GPU tiers, in display order: memory tiers first, then links."""

UNITS = {
    "_bytes": "bytes",
    "_bytes_per_s": "bytes per second, per direction (SI: 1 GB/s = 1e9 bytes/s)",
    "_flop_per_s": "operations per second (floating point; integer operations for int8)",
    "_flop_per_byte": "operations per byte (arithmetic intensity)",
    "convention": ("a key ending in one of these suffixes holds a number in that unit, or a mapping "
                   "(tier or dtype -> number) in that unit; keys without a suffix are counts, names or notes"),
}

COLLECTIVE_METHOD = (
    "nccl-tests conventions (doc/PERFORMANCE.md): busbw = algbw x factor, factor 2(n-1)/n for "
    "AllReduce and (n-1)/n for AllGather, ReduceScatter and AlltoAll, n = GPUs in the node, "
    "GB = 1e9 bytes. Upper bound on busbw: the smallest per-GPU NVLink bandwidth (the sum of the "
    "GPU's NVLink connections, per direction) when NVLink connects every GPU, else the smallest "
    "GPU PCIe link (the faster of the two when both apply); algbw = busbw / factor (a ring). AllReduce "
    "on NVSwitches with NVLink SHARP (the baseboard's nvswitch_generation >= 3): NCCL's NVLS reduces in "
    "the switch, each GPU sends and receives S(1 + 1/n), algbw = NVLink x n/(n+1), busbw = algbw x factor. The bounds "
    "ignore protocol overhead and contention on shared PCIe uplinks and CPU links; AlltoAll "
    "traffic between GPUs without a direct NVLink connection is relayed or goes over PCIe, so "
    "AlltoAll falls further short of its bound when such pairs exist."
)

TIER_NOTES = {
    "hbm": "the GPU's HBM",
    "host_ddr": "the GPU's NUMA node's DDR divided among the GPUs on that node; reaching it from the GPU also crosses pcie_host",
    "ssd": "the node's SSDs divided among all GPUs",
    "nvlink": "the sum of the GPU's NVLink connections",
    "pcie_host": ("the GPU's link to its socket, with the GPU alone on it: its NVLink-C2C links when it has them, "
                  "else the narrowest PCIe link on its path to its socket"),
    "pcie_host_shared": ("the same when every GPU transfers at once: a GPU's NVLink-C2C links are its own; "
                         "each PCIe link is divided by the GPUs below it"),
    "backend_nic": ("the backend NICs serving the GPU, each divided among the GPUs it serves, summed; without one, the "
                    "node's backend (or else host) NICs divided among the GPUs"),
    "ingestion_share": "the node's ingestion/frontend NICs divided among the GPUs",
}


# ------------------------------------------------------------------ collective bounds


def busbw_factor(collective: str, n: int) -> float:
    """nccl-tests' busbw/algbw factor for `n` ranks: 2(n-1)/n for all_reduce, (n-1)/n otherwise."""
    if collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {collective!r}; expected one of {', '.join(COLLECTIVES)}")
    if n < 1:
        raise ValueError(f"a collective needs at least one rank, got n={n}")
    return (2 * (n - 1) / n) if collective == "all_reduce" else ((n - 1) / n)


ALGORITHMS = {"all_reduce": "Ring", "all_gather": "Ring", "reduce_scatter": "Ring", "all_to_all": "point-to-point"}
"""The algorithm each collective's plain bound is for, in NCCL_ALGO's spelling (AlltoAll is
point-to-point sends, no NCCL algorithm); in-network reduction replaces Ring for AllReduce."""


def nvls_all_reduce_algbw(n: int, link: float) -> float:
    """AllReduce algbw bound with in-switch reduction (NVLink SHARP) for `n` GPUs of per-GPU
    NVLink bandwidth `link` (bytes/s per direction): NCCL's NVLS reduce-scatters with
    multimem loads the switch reduces (each GPU sends its whole buffer S into the switch and
    receives its reduced S/n) and all-gathers with multimem stores the switch multicasts
    (each GPU sends S/n and receives S), so each direction carries S (1 + 1/n):
    algbw = link x n / (n + 1)."""
    return link * n / (n + 1)


def collective_bounds(n: int, nvlink: Sequence[float], pcie: Sequence[float], nvlink_connected: bool,
                      nvlink_sharp: bool = False) -> dict[str, Any] | None:
    """Intra-node busbw/algbw upper bounds for `n` GPUs, each with the algorithm that gives it.

    `nvlink` and `pcie` are the per-GPU bandwidths (bytes/s per direction); `nvlink_connected`
    says whether NVLink joins every GPU; `nvlink_sharp` whether the NVSwitches reduce in the
    fabric (NVLS: AllReduce only, the one collective in-switch reduction lightens). None when
    there is nothing to bound (n < 2). Raising any input bandwidth never lowers a bound."""
    if n < 2:
        return None
    over_nvlink = min(nvlink) if nvlink_connected and len(nvlink) == n else 0.0
    over_pcie = min(pcie) if len(pcie) == n else 0.0
    busbw = max(over_nvlink, over_pcie)
    via = None if busbw <= 0 else ("nvlink" if over_nvlink >= over_pcie else "pcie")
    result: dict[str, Any] = {"n_gpus": n, "via": via, "busbw_bound_bytes_per_s": busbw, "method": COLLECTIVE_METHOD}
    for name in COLLECTIVES:
        factor = busbw_factor(name, n)
        algbw, algorithm = busbw / factor, ALGORITHMS[name]
        if name == "all_reduce" and nvlink_sharp and via == "nvlink" and nvls_all_reduce_algbw(n, over_nvlink) > algbw:
            algbw, algorithm = nvls_all_reduce_algbw(n, over_nvlink), "NVLS"
        result[name] = {"busbw_factor": factor, "busbw_bytes_per_s": algbw * factor, "algbw_bytes_per_s": algbw,
                        "algorithm": algorithm}
    return result


def nvlink_sharp(topology: Topology) -> bool:
    """The node's GPUs meet at NVSwitches that reduce in the fabric (the baseboard states a
    generation with NVLink SHARP): never guessed from the GPU model."""
    board = topology.platform.baseboard
    return topology.platform.nvlink_topology == "nvswitch" and board is not None and board.nvlink_sharp


# ------------------------------------------------------------------ per-GPU figures


UNIFIED_TIER_NOTES = {
    "hbm": ("the GPU's HBM; on an APU (MI300A) it is also the memory of the CPU cores of its NUMA node "
            "(shared_with_cpu_cores; node.unified_memory says which): one pool, counted here only"),
    "host_ddr": ("the GPU's NUMA node's DDR divided among the GPUs on that node; on an APU the node's memory is the GPU's "
                 "own HBM (same_memory_as: hbm), so this tier adds 0 bytes, not a second pool"),
    "pcie_host": ("the GPU's link to its socket, with the GPU alone on it (its NVLink-C2C links when it has them, else the "
                  "narrowest PCIe link on its path to its socket); none on an APU: host memory is the GPU's HBM, "
                  "nothing is transferred"),
    "pcie_host_shared": ("the same when every GPU transfers at once (each PCIe link divided by the GPUs below it); "
                         "none on an APU"),
}
"""The notes of the memory tiers on a node where a GPU shares its HBM with CPU cores (`Topology.memory_shared_with`)."""


CPU_NVLINK_TIER_NOTES = {
    "pcie_host": ("the GPU's link to its socket, with the GPU alone on it: its NVLinks to its CPU (POWER8/POWER9, "
                  "nvlink.cpu_links) or its NVLink-C2C links when it has them, else the narrowest PCIe link on its "
                  "path to its socket"),
    "pcie_host_shared": ("the same when every GPU transfers at once: a GPU's NVLinks to its CPU and its NVLink-C2C "
                         "links are its own; each PCIe link is divided by the GPUs below it"),
}
"""The host-link notes of a node where a GPU has NVLinks to its CPU (`Platform.cpu_nvlinks`)."""


def has_unified_memory(topology: Topology) -> bool:
    return any(topology.memory_shared_with(g.id) is not None for g in topology.platform.gpus)


def _tier_note(topology: Topology, name: str) -> str:
    """`TIER_NOTES[name]`; for `backend_nic` on a node where a GPU has several NICs or shares
    one with another GPU, the note that says the share is summed; for the memory tiers of a
    node with APUs, the notes that say the memory is shared (`UNIFIED_TIER_NOTES`); for the host
    link of a node whose GPUs have NVLinks to their CPU, the notes that say so (`CPU_NVLINK_TIER_NOTES`)."""
    platform = topology.platform
    if name in UNIFIED_TIER_NOTES and has_unified_memory(topology):
        return UNIFIED_TIER_NOTES[name]
    if name in CPU_NVLINK_TIER_NOTES and platform.cpu_nvlinks:
        return CPU_NVLINK_TIER_NOTES[name]
    if name == "backend_nic" and (any(len(n.gpus) > 1 for n in platform.backend_nics)
                                  or any(len(topology.nics_of(g.id)) > 1 for g in platform.gpus)):
        return ("the GPU's share of the backend NICs that serve it: each NIC's speed divided among the GPUs using it, "
                "summed over the GPU's NICs; without any, the node's backend (or else host) NICs divided among the GPUs")
    return TIER_NOTES[name]


def _tier(bandwidth: float | None, **extra: Any) -> dict[str, Any] | None:
    if bandwidth is None or bandwidth <= 0:
        return None
    return {"bandwidth_bytes_per_s": bandwidth, **extra}


def _gpu_tiers(topology: Topology, gpu: Gpu) -> dict[str, dict[str, Any] | None]:
    platform = topology.platform
    n_gpus = len(platform.gpus)
    tiers: dict[str, dict[str, Any] | None] = {}
    hbm: dict[str, Any] = {"capacity_bytes": gpu.hbm_capacity, "bandwidth_bytes_per_s": gpu.hbm_bandwidth}
    sockets = platform.socket_by_id
    shared = topology.memory_shared_with(gpu.id)
    if shared is not None:  # which NUMA node: the group's numa_nodes, the node's unified_memory
        hbm["shared_with_cpu_cores"] = sockets[shared].cores
    tiers["hbm"] = hbm

    socket_id = topology.socket_of(gpu.id)
    socket = sockets[socket_id] if socket_id is not None else None
    if socket is not None and socket.memory_shared_with is not None:
        # The NUMA node's memory is an HBM (this GPU's, or, as HW106 reports, another's), counted as HBM.
        tiers["host_ddr"] = {"capacity_bytes": 0, "bandwidth_bytes_per_s": 0.0, "same_memory_as": "hbm"}
    elif socket is not None and (socket.memory_capacity is None or socket.memory_bandwidth is None):
        tiers["host_ddr"] = None  # unknown memory: the document's `unknown` names it
    elif socket is not None:
        sharing = len(topology.gpus_on(socket.id))
        capacity, bandwidth = known(socket.memory_capacity), known(socket.memory_bandwidth)
        tiers["host_ddr"] = {"capacity_bytes": capacity // sharing,
                             "bandwidth_bytes_per_s": bandwidth / sharing,
                             "shared_by_gpus": sharing,
                             "numa_node_capacity_bytes": capacity,
                             "numa_node_bandwidth_bytes_per_s": bandwidth}
    else:
        tiers["host_ddr"] = None

    if platform.ssds:
        tiers["ssd"] = {"capacity_bytes": sum(s.capacity for s in platform.ssds) // n_gpus,
                        "bandwidth_bytes_per_s": math.fsum(s.bandwidth for s in platform.ssds) / n_gpus,
                        "ssds": len(platform.ssds), "shared_by_gpus": n_gpus}
    else:
        tiers["ssd"] = None

    tiers["nvlink"] = _tier(topology.nvlink_bandwidth(gpu.id), links=topology.nvlink_links(gpu.id),
                            fabric=gpu.fabric_kind)

    host = topology.host_link(gpu.id)
    if host is None:
        tiers["pcie_host"] = tiers["pcie_host_shared"] = None
    else:
        tiers["pcie_host"] = _tier(host.bandwidth, link=host.link, hops=host.hops)
        tiers["pcie_host_shared"] = _tier(host.shared_bandwidth, shared_by_gpus=host.shared_by)

    tiers["backend_nic"] = _scale_out_tier(topology, gpu)
    host_nics = platform.host_nics
    tiers["ingestion_share"] = (_tier(math.fsum(known(n.speed) for n in host_nics) / n_gpus, nics=len(host_nics), shared_by_gpus=n_gpus)
                                if host_nics else None)
    return tiers


def _scale_out_tier(topology: Topology, gpu: Gpu) -> dict[str, Any] | None:
    """The GPU's share of the collective NICs (`Topology.scale_out_share`)."""
    by_id = topology.platform.nic_by_id
    nics = [by_id[n] for n in topology.scale_out_nics(gpu.id)]
    if not nics:
        return None
    sharing = max(topology.scale_out_users(n.id) for n in nics)
    share = topology.scale_out_share(gpu.id)
    own = [by_id[n] for n in topology.nics_of(gpu.id) if by_id[n] in nics]
    if len(own) == len(nics) == 1 and own[0].gpus == (gpu.id,):
        via = "backend NIC of its own" if sharing == 1 else "backend NIC of its own, shared with the GPUs no NIC serves"
        return _tier(share, transport=own[0].transport, shared_by_gpus=sharing, via=via)
    if len(own) == len(nics):
        if len(nics) == 1:
            via = f"backend NIC shared by {sharing} GPUs"
        elif sharing == 1:
            via = f"{len(nics)} backend NICs of its own, summed"
        else:
            via = f"{len(nics)} backend NICs serving it, each divided among the GPUs using it (up to {sharing}), summed"
        return _tier(share, transport=_transport(nics), shared_by_gpus=sharing, nics=len(nics), via=via)
    n_gpus = len(topology.platform.gpus)
    kind = "backend NICs" if all(n.role == "backend" for n in nics) else "host (ingestion/frontend) NICs"
    who = "all GPUs" if sharing == n_gpus else "the GPUs no backend NIC serves"
    return _tier(share, transport=_transport(nics), shared_by_gpus=sharing, nics=len(nics), via=f"{kind} shared by {who}")


def _transport(nics: Iterable[Nic]) -> str:
    kinds = sorted({n.transport for n in nics})
    return ",".join(kinds)


def _compute(gpu: Gpu, tiers: dict[str, dict[str, Any] | None]) -> dict[str, dict[str, Any]]:
    """Peak per dtype (dense, and sparse = 2 x dense where 2:4 sparsity applies) and ridge points
    (peak / tier bandwidth) against every tier that has a bandwidth (a zero one has no ridge)."""
    compute: dict[str, dict[str, Any]] = {}
    bandwidths = {name: tier["bandwidth_bytes_per_s"] for name, tier in tiers.items()
                  if tier is not None and tier["bandwidth_bytes_per_s"] > 0}
    for dtype, dense in sorted(known(gpu.compute).items()):
        entry: dict[str, Any] = {"dense_flop_per_s": dense,
                                 "dense_ridge_flop_per_byte": {t: dense / bw for t, bw in bandwidths.items()}}
        if dtype in gpu.sparse:
            sparse = 2 * dense
            entry["sparse_flop_per_s"] = sparse
            entry["sparse_ridge_flop_per_byte"] = {t: sparse / bw for t, bw in bandwidths.items()}
        compute[dtype] = entry
    return compute


def per_gpu(topology: Topology) -> dict[str, dict[str, Any]]:
    """GPU id -> {"part", "model_name", "compute", "tiers"} for every GPU (by index)."""
    result = {}
    for gpu in topology.platform.gpus:
        tiers = _gpu_tiers(topology, gpu)
        result[gpu.id] = {"part": gpu.part, "model_name": gpu.model_name, "compute": _compute(gpu, tiers), "tiers": tiers}
    return result


def _groups(topology: Topology, figures: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """GPUs with identical figures grouped (in GPU index order), with the NUMA nodes they sit on."""
    groups: list[dict[str, Any]] = []
    for gpu in topology.platform.gpus:
        entry = figures[gpu.id]
        for group in groups:
            if all(group[key] == entry[key] for key in entry):
                break
        else:
            group = {"gpus": [], "numa_nodes": [], **entry}
            groups.append(group)
        group["gpus"].append(gpu.id)
        if gpu.numa_node is not None and gpu.numa_node not in group["numa_nodes"]:
            group["numa_nodes"].append(gpu.numa_node)
    return groups


# ------------------------------------------------------------------ the document


def roofline(topology: Topology) -> dict[str, Any]:
    """The roofline document of a node's `topology` (without the `_generated` provenance entry).

    Computed once per topology (roofline.json, TorchRec, Calculon and the cluster roofline all
    read it): callers must not change the document."""
    cached = _DOCUMENTS.get(topology)
    if cached is None:
        cached = _DOCUMENTS[topology] = _document(topology)
    return cached


_DOCUMENTS: weakref.WeakKeyDictionary[Topology, dict[str, Any]] = weakref.WeakKeyDictionary()
"""The roofline document of each live topology: it lives as long as its topology does."""


def _document(topology: Topology) -> dict[str, Any]:
    platform = topology.platform
    if platform.unknown_figures and not host_memory_only(platform):
        return _unknown_document(topology)
    figures = per_gpu(topology)
    n = len(platform.gpus)
    nvlink = [topology.nvlink_bandwidth(g.id) for g in platform.gpus]
    pcie = [known(g.physical).bandwidth for g in platform.gpus]
    bounds = collective_bounds(n, nvlink, pcie, topology.nvlink_connected, nvlink_sharp(topology))
    if bounds is not None:
        pairs = n * (n - 1) // 2
        direct = topology.direct_nvlink_pairs
        bounds["gpu_pairs"] = pairs
        bounds["gpu_pairs_with_direct_nvlink"] = direct
    return {
        **_header(platform),
        **({"unknown": list(platform.unknown_figures)} if platform.unknown_figures else {}),
        "tier_notes": {name: _tier_note(topology, name) for name in TIERS},
        "gpu_groups": _groups(topology, figures),
        "intra_node_collectives": bounds,
        "node": _node(topology),
    }


def _header(platform: Any) -> dict[str, Any]:
    """The keys every roofline document starts with: schema, units, the platform and its assumptions."""
    return {
        "schema_version": SCHEMA_VERSION,
        "units": UNITS,
        "platform": {"name": platform.name, "title": platform.title, "file": visible(platform.file)},
        "assumptions": [{"path": a.path, "assumed": a.assumed, "source": a.source,
                         "file": visible(a.location.file)} for a in sorted(platform.assumptions, key=lambda a: a.path)],
    }


def host_memory_only(platform: Platform) -> bool:
    """Whether every unknown figure of `platform` is a NUMA node's memory (an imported draft's
    `capacity: unknown`/`bandwidth: unknown`): the roofline then still gives every other tier, with
    `host_ddr` null where its memory is unknown and `unknown` naming it; consumers that need
    host memory (TorchRec, Calculon, the estimates) still wait for it."""
    sockets = set(platform.socket_by_id)
    return all(line.split(":", 1)[0] in sockets for line in platform.unknown_figures)


def _unknown_document(topology: Topology) -> dict[str, Any]:
    """The roofline of a platform with unknown figures: every figure null, and `unknown` saying
    which facts are missing (rule HW603 says what to fill in). No figure is made up."""
    platform = topology.platform
    return {
        **_header(platform),
        "unknown": list(platform.unknown_figures),
        "tier_notes": {name: _tier_note(topology, name) for name in TIERS},
        "gpu_groups": None,
        "intra_node_collectives": None,
        "node": None,
    }


def _node(topology: Topology) -> dict[str, Any]:
    platform = topology.platform
    compute: dict[str, dict[str, float]] = {}
    for dtype in sorted({d for g in platform.gpus for d in known(g.compute)}):
        having = [g for g in platform.gpus if dtype in known(g.compute)]
        entry = {"dense_flop_per_s": math.fsum(known(g.compute)[dtype] for g in having)}
        if any(dtype in g.sparse for g in having):
            entry["sparse_flop_per_s"] = math.fsum(known(g.compute)[dtype] * (2 if dtype in g.sparse else 1) for g in having)
        compute[dtype] = entry
    return {
        "gpus": len(platform.gpus),
        "sockets": len(platform.packages),
        "compute": compute,
        "hbm_capacity_bytes": sum(known(g.hbm_capacity) for g in platform.gpus),
        "hbm_bandwidth_bytes_per_s": math.fsum(known(g.hbm_bandwidth) for g in platform.gpus),
        "ddr_capacity_bytes": platform.memory_capacity,
        "ddr_bandwidth_bytes_per_s": platform.memory_bandwidth,
        **_unified_memory(topology),
        "ssd_capacity_bytes": sum(s.capacity for s in platform.ssds),
        "ssd_bandwidth_bytes_per_s": math.fsum(s.bandwidth for s in platform.ssds),
        "nvlink_bandwidth_bytes_per_s": math.fsum(topology.nvlink_bandwidth(g.id) for g in platform.gpus),
        "backend_nic_bandwidth_bytes_per_s": math.fsum(known(n.speed) for n in platform.backend_nics),
        "host_nic_bandwidth_bytes_per_s": math.fsum(known(n.speed) for n in platform.host_nics),
    }


def _unified_memory(topology: Topology) -> dict[str, Any]:
    """`unified_memory` for a node whose GPUs share their HBM with CPU cores (APUs): which sockets'
    memory is which GPU's HBM. Nothing for other nodes. `ddr_*` then counts only memory of its own."""
    shared = {g.id: s for g in topology.platform.gpus if (s := topology.memory_shared_with(g.id)) is not None}
    if not shared:
        return {}
    return {"unified_memory": {"sockets_sharing_gpu_hbm": {socket: gpu for gpu, socket in shared.items()},
                               "note": "hbm_capacity_bytes counts these sockets' memory once; ddr_capacity_bytes "
                                       "counts only the DDR of sockets with memory of their own"}}


def slowest(doc: dict[str, Any], tier: str, key: str = "bandwidth_bytes_per_s") -> float | None:
    """The smallest value of `tier.key` over all GPU groups (None if any GPU lacks the tier)."""
    values = [group["tiers"][tier] for group in doc["gpu_groups"]]
    if not values or any(v is None for v in values):
        return None
    least: float = min(v[key] for v in values)  # a JSON document's number
    return least
