"""The roofline document as TorchRec's planner reads it: `torchrec_topology`, the kwargs of
`torchrec.distributed.planner.types.Topology` for one node, with their units and derivation.
Bandwidths are per direction, in bytes per millisecond (TorchRec's unit)."""

from __future__ import annotations

from typing import Any

from hwspec.model.node import known
from hwspec.perf.roofline import has_unified_memory, roofline, slowest
from hwspec.topology.node import Topology

_BYTES_PER_MS = 1000.0  # bytes/s -> bytes/ms


def torchrec_topology(topology: Topology, doc: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """`{"_units", "_usage", "_derivation", "topology_kwargs"}` for one node; None without GPUs.
    Heterogeneous GPUs take the smallest figure of each kind (TorchRec has one per rank)."""
    platform = topology.platform
    doc = doc or roofline(topology)
    if not platform.gpus or platform.unknown_figures:
        return None
    n = len(platform.gpus)
    hbm_cap = min(known(g.hbm_capacity) for g in platform.gpus)
    ddr = [group["tiers"]["host_ddr"] for group in doc["gpu_groups"]]
    ddr_cap = min(t["capacity_bytes"] for t in ddr) if all(ddr) else 0
    ddr_bw = min(t["bandwidth_bytes_per_s"] for t in ddr) if all(ddr) else None
    collectives = doc["intra_node_collectives"]
    intra = collectives["busbw_bound_bytes_per_s"] if collectives else None
    kwargs: dict[str, Any] = {"world_size": n, "local_world_size": n, "compute_device": "cuda",
                              "hbm_cap": hbm_cap, "ddr_cap": ddr_cap,
                              "hbm_mem_bw": min(known(g.hbm_bandwidth) for g in platform.gpus) / _BYTES_PER_MS}
    # Leave out what the platform cannot say: TorchRec then uses its defaults.
    for key, value in (("ddr_mem_bw", ddr_bw), ("hbm_to_ddr_mem_bw", slowest(doc, "pcie_host")),
                       ("intra_host_bw", intra), ("inter_host_bw", slowest(doc, "backend_nic"))):
        if value:
            kwargs[key] = value / _BYTES_PER_MS
    derivation = {
        "world_size": "GPUs in this node; for a job over N nodes set world_size = N x local_world_size",
        "local_world_size": "GPUs in this node",
        "compute_device": "GPU platform",
        "hbm_cap": "HBM capacity per GPU, bytes",
        "ddr_cap": ("0: the CPU memory is the GPU's own HBM (an APU: one pool, in hbm_cap), no second pool"
                    if ddr_cap == 0 and has_unified_memory(topology)
                    else "host DDR per rank, bytes: the GPU's NUMA node's DDR divided among its GPUs"),
        "hbm_mem_bw": "HBM bandwidth per GPU",
        "ddr_mem_bw": "host DDR bandwidth per rank (NUMA node's bandwidth divided among its GPUs)",
        "hbm_to_ddr_mem_bw": ("the GPU's host link, GPU alone on it ("
                              + ("its NVLinks to its CPU or its NVLink-C2C links" if platform.cpu_nvlinks else "its NVLink-C2C links")
                              + " when it has them, else the narrowest PCIe link to its socket); "
                              "roofline.json tier pcie_host_shared gives the figure when all GPUs transfer at once"),
        "intra_host_bw": "per-GPU intra-node bandwidth: the intra-node collective busbw bound (NVLink, else PCIe)",
        "inter_host_bw": "per-GPU scale-out bandwidth: " + _scale_out_note(topology),
    }
    return {"_units": "hbm_cap and ddr_cap: bytes; every *_bw: bytes per millisecond (bytes/s / 1000, SI bytes), per direction",
            "_usage": "Topology(**json.load(open(path))['topology_kwargs']) from torchrec.distributed.planner.types "
                      "(TorchRec >= 1.1.0 for hbm_to_ddr_mem_bw)",
            "_derivation": {key: derivation[key] for key in kwargs},
            "topology_kwargs": kwargs}


def _scale_out_note(topology: Topology) -> str:
    gpus = topology.platform.gpus
    if not any(topology.nics_of(g.id) for g in gpus):
        return "the node's NICs divided among the GPUs (no per-GPU NIC)"
    alone = all(topology.scale_out_users(n) == 1 and n in topology.nics_of(g.id)
                for g in gpus for n in topology.scale_out_nics(g.id))
    if alone and all(len(topology.scale_out_nics(g.id)) == 1 for g in gpus):
        return "the GPU's own backend NIC"
    if alone:
        return "the sum of the GPU's own backend NICs"
    return "the smallest GPU share of the collective NICs, each NIC divided among the GPUs using it"
