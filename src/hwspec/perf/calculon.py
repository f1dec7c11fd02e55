"""The roofline document as Calculon reads it: `calculon_system`, a system JSON for one GPU of a
node (datasheet peaks, per-direction bandwidths in Calculon's units), and notes on the choices."""

from __future__ import annotations

from typing import Any

from hwspec.model.node import known
from hwspec.perf.roofline import has_unified_memory, roofline, slowest
from hwspec.topology.node import Topology

CALCULON_DTYPES = {"float8": "fp8", "float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
"""Calculon dtype -> hwspec compute key. Calculon's float32 matrix rate is the IEEE FP32 peak (TF32
tensor cores are opt-in in PyTorch)."""

CALCULON_LATENCY = {"nvlink": 1e-5, "backend": 2e-5}
"""Seconds. Assumed: platform files state no latencies; these are the values of Calculon's own
systems/a100_80g.json example."""

CALCULON_SCALE_OUT_SIZE = 65536
PEAK_EFFICIENCY = [[0, 1.0]]

CALCULON_OPS = {"p2p": [1.0, None], "reduce_scatter": [1.0, -1], "all_gather": [1.0, -1], "all_reduce": [2.0, -1]}
"""Ring conventions, so that `bandwidth` is a busbw (nccl-tests): size' = size x (n-1)/n for
ReduceScatter/AllGather and 2 x size x (n-1)/n for AllReduce."""


def _gb(value: float) -> float:
    return value / 1e9


def calculon_system(topology: Topology, doc: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]] | None:
    """Calculon's system JSON for one GPU of this node (slowest figure of each kind when GPUs
    differ), and notes explaining the choices. None without GPUs or without any Calculon dtype."""
    platform = topology.platform
    doc = doc or roofline(topology)
    if not platform.gpus or platform.unknown_figures:
        return None
    matrix: dict[str, Any] = {}
    vector: dict[str, Any] = {}
    vector_rate = min(known(g.compute).get("fp32", 0.0) for g in platform.gpus)
    for name, key in CALCULON_DTYPES.items():
        if all(key in known(g.compute) for g in platform.gpus):
            matrix[name] = {"tflops": min(known(g.compute)[key] for g in platform.gpus) / 1e12, "gflops_efficiency": PEAK_EFFICIENCY}
            if vector_rate > 0:
                vector[name] = {"tflops": vector_rate / 1e12, "gflops_efficiency": PEAK_EFFICIENCY}
    if not matrix:
        return None
    hbm = min(known(g.hbm_capacity) for g in platform.gpus)
    ddr = [group["tiers"]["host_ddr"] for group in doc["gpu_groups"]]
    mem2_cap = min(t["capacity_bytes"] for t in ddr) if all(ddr) else 0
    mem2_paths = [v for v in (slowest(doc, "host_ddr"), slowest(doc, "pcie_host")) if v]
    mem2_bw = min(mem2_paths) if mem2_paths else 0.0
    collectives = doc["intra_node_collectives"]
    intra = collectives["busbw_bound_bytes_per_s"] if collectives else 0.0
    scale_out = slowest(doc, "backend_nic") or 0.0

    def network(bandwidth: float, size: int, latency: float, filled: bool) -> dict[str, Any]:
        return {"bandwidth": _gb(bandwidth), "efficiency": 1.0, "size": size, "latency": latency,
                "ops": dict(CALCULON_OPS), "must_be_filled": filled, "processor_usage": 0.0}

    system = {
        "matrix": matrix,
        "vector": vector,
        "mem1": {"GiB": hbm / 1024**3, "GBps": _gb(min(known(g.hbm_bandwidth) for g in platform.gpus)), "MB_efficiency": PEAK_EFFICIENCY},
        "mem2": {"GiB": mem2_cap / 1024**3, "GBps": _gb(mem2_bw), "MB_efficiency": PEAK_EFFICIENCY},
        "processing_mode": "roofline",
        "networks": [network(intra, len(platform.gpus), CALCULON_LATENCY["nvlink"], True),
                     network(scale_out, CALCULON_SCALE_OUT_SIZE, CALCULON_LATENCY["backend"], False)],
    }
    via = collectives["via"] if collectives else None
    notes = [
        "Units as Calculon reads them: tflops x1e12 FLOP/s, GiB x1024^3 bytes, GBps and bandwidth x1e9 bytes/s "
        "(per direction, per GPU), latency in seconds.",
        "Peak model: every efficiency table is [[0, 1.0]] (datasheet peak for all sizes), network efficiency 1.0, "
        "processor_usage 0.0; calibrate against measurements before trusting absolute times.",
        "matrix: tensor-core peaks; float32 is the IEEE FP32 peak (TF32 is opt-in). vector: the FP32 CUDA-core peak for "
        "every dtype (platform parts list no non-tensor half-precision rate; conservative).",
        "mem1: HBM. mem2: the GPU's share of its NUMA node's DDR; GBps = min(that share's bandwidth, the GPU's host link: "
        + ("its NVLinks to its CPU or NVLink-C2C when it has them" if topology.platform.cpu_nvlinks else "NVLink-C2C when it has one")
        + ", else PCIe).",
        *(["mem2 is 0: on these APUs the CPU's memory is the GPU's own HBM (mem1), one pool counted once; "
           "there is no second memory to offload to and no host link to cross."] if has_unified_memory(topology) else []),
        f"networks[0]: intra-node tier over {via or 'nothing'}, bandwidth = intra-node collective busbw bound, size = GPUs per node. "
        "networks[1]: scale-out tier, bandwidth = per-GPU backend NIC share, size 65536.",
        "ops use ring conventions ([1.0, -1] for reduce_scatter/all_gather, [2.0, -1] for all_reduce) so bandwidth is an nccl-tests busbw.",
        f"latency: assumed {CALCULON_LATENCY['nvlink']} s (intra-node) and {CALCULON_LATENCY['backend']} s (scale-out), "
        "the values of Calculon's a100 example; platform files state no latencies.",
        "Calculon reads top-level keys by name; _generated and _notes are extra keys for provenance "
        "(delete them with jq 'del(._generated, ._notes)' if a Calculon version rejects them).",
    ]
    return system, notes
