"""Calibration of the expected estimate: achieved fractions of datasheet rates, and latencies.

Every constant is a component measurement with its source: published nccl-tests and
microbenchmark results, NVIDIA's documentation; NCCL's own cost model is `hwspec.perf.nccl_tuning`. None is fitted to an
end-to-end training result (those are for validation, docs/estimates.md). `CALIBRATION` is the
one table; the functions below pick from it. Efficiencies are in (0, 1], latencies in seconds.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Constant:
    value: float
    unit: str       # "fraction" (achieved / datasheet rate) or "seconds"
    measured: str   # what was measured
    source: str


CALIBRATION: dict[str, Constant] = {
    "hbm_efficiency": Constant(
        0.89, "fraction", "STREAM-style copy on an A800 80GB PCIe (HBM2e, the A100's memory system): 1727 of 1935 GB/s",
        "github.com/mli/transformers-benchmarks/issues/4"),
    "gemm_efficiency": Constant(
        0.69, "fraction", "fp16 torch.matmul n=8192 on an A800 80GB PCIe: 215 of 312 TFLOPS (n=2048: 193, 0.62)",
        "github.com/mli/transformers-benchmarks/issues/4"),
    "hbm_efficiency_hopper": Constant(
        0.90, "fraction", "Hopper (HBM3): OpenCL-Benchmark coalesced read on a GH200's H100 96GB: 3614.6 of 4000 GB/s "
        "(coalesced write 3704.8)", "github.com/mredenti/PowerCapping configuration/OpenCL_benchmark.md"),
    "gemm_efficiency_hopper": Constant(
        0.744, "fraction", "Hopper: fp16 torch.matmul 8192 x 8192 on an H100 80GB HBM3 (torch 2.7, cu128): 736.2 of 989 "
        "TFLOPS (the Ampere constant's method and size)", "github.com/zzc0721/torch-performance-test-data/issues/79"),
    "hbm_efficiency_blackwell": Constant(
        0.84, "fraction", "Blackwell (HBM3e): cub::DeviceTransform 'add' (two reads, one write; STREAM's Add) of "
        "2^28 fp16 elements on a B200: 6.721 of 8 TB/s (nvbench's BWUtil 87.60% is against the 7.67 TB/s its "
        "driver reports, a 7680-bit bus: pytorch/ao#4002); 'relu' (one read, one write) 6.553 TB/s, 0.82",
        "github.com/NVIDIA/cccl/pull/7391 (NVIDIA's CUB maintainers, nvbench on a B200)"),
    "gemm_efficiency_blackwell": Constant(
        0.631, "fraction", "Blackwell: bf16 torch.matmul 8192 x 8192 on a B200 (torchao's bench_matmul.py): "
        "1.42 of 2.25 PFLOPS (n = 4096: 1.41, 0.627)",
        "github.com/pytorch/ao/pull/2427"),
    "pcie_efficiency": Constant(
        0.76, "fraction", "host-GPU copies: 12 of 15.75 GB/s on PCIe Gen3 x16 (V100), 25 of 31.5 GB/s on Gen4 x16 (A100)",
        "github.com/ZaidQureshi/bam/issues/54 (BaM, measured peaks)"),
    "nvlink_efficiency": Constant(
        0.82, "fraction", "nccl-tests busbw over NVLink4 with NCCL_ALGO=Ring: ~370 of 450 GB/s (~20% protocol overhead)",
        "github.com/NVIDIA/nccl-tests/issues/212 (NCCL maintainer's answer)"),
    "nvlink_efficiency_a100": Constant(
        0.69, "fraction", "nccl-tests all_reduce busbw over NVLink3 (300 GB/s per GPU): ~200 GB/s on 8 x A100 SXM4 "
        "(#149, 0.67); 208 GB/s on a 2-GPU NV12 pair (#178, 0.69)",
        "github.com/NVIDIA/nccl-tests/issues/149, /issues/178"),
    "nvlink_efficiency_blackwell": Constant(
        0.755, "fraction", "nccl-tests all_reduce busbw over NVLink5 (900 GB/s per GPU) with the Ring algorithm, "
        "in place, NCCL 2.25.1: 679.61 GB/s at 8 GB on the 4 GB200 GPUs of one Azure ND GB200 v6 host "
        "(assumed: 8 B200s on one HGX board reach the same ring busbw)",
        "github.com/Azure/AI-benchmarking-guide Azure_Results/ND_GB200_v6_results.md"),
    "rdma_efficiency": Constant(
        0.96, "fraction", "nccl-tests all_reduce busbw over 4 x HDR 200G per 8 A100s: 96 of 100 GB/s, the peak of "
        "a size sweep (its large sizes; the sweep's average, 0.85, includes the small sizes whose time is latency, "
        "which NCCL's cost model adds separately)",
        "github.com/NVIDIA/nccl-tests/issues/119"),
    "tcp_efficiency": Constant(
        0.60, "fraction", "nccl-tests over TCP sockets: no more than ~60% of wire speed even at large sizes",
        "github.com/NVIDIA/nccl/issues/209"),
    "nvls_efficiency_hopper": Constant(
        0.611, "fraction", "NVLS (NVLink SHARP) AllReduce on 8 x H100 SXM: algbw ~275 of 450 GB/s per GPU per direction "
        "(busbw ~480); measured algbw 258-273 GB/s at 5-8 GPUs (the rate per GPU, not growing with the GPUs)",
        "github.com/NVIDIA/nccl-tests/issues/212 (NCCL maintainer, 2024-05-06); github.com/NVIDIA/nccl/issues/1455"),
    "nvls_efficiency_blackwell": Constant(
        0.527, "fraction", "NVLS AllReduce on 8 x B200, NCCL 2.27.1: busbw '830+' GB/s, algbw 474 of 900 GB/s (no raw "
        "output or size given: the only 8-GPU Blackwell NVLS figure found; its ratio to Hopper's, 0.86, is NCCL's own "
        "nvlsEfficiency ratio 0.74/0.85 in src/graph/tuning.cc of 2.28.7)", "github.com/NVIDIA/nccl/issues/1807"),
    "xgmi_efficiency": Constant(
        0.75, "fraction", "AMD MI300X (gfx942) xGMI: 48 of 64 GB/s per link per direction after protocol and error "
        "correction overheads, the rate RCCL's topology gives each link (AMD's RCCL maintainer)",
        "github.com/ROCm/rccl/issues/1210"),
    "pcie_copy_efficiency": Constant(
        0.83, "fraction", "copy-engine (cudaMemcpy, pinned) host-GPU copies: 26.2 of 31.5 GB/s on PCIe Gen4 x16 "
        "(A100-PCIE, bandwidthTest), 12.4-13.1 of 15.75 on Gen3 x16, 25.94-26.19 on Gen4 (nvbandwidth's README "
        "example), 52.77 of 63.0 on Gen5 x16 (H100, nvbandwidth)", "github.com/jdh4/della-gpu-A100 README; "
        "github.com/NVIDIA/nvbandwidth README (5d364368); github.com/NVIDIA/nvbandwidth/issues/24"),
    "c2c_copy_efficiency": Constant(
        0.77, "fraction", "NVLink-C2C host-GPU copy engine copy on a GH200 480GB (nvbandwidth v0.5): 346 of 450 GB/s "
        "per direction", "github.com/NVIDIA/nvbandwidth/issues/23"),
    "copy_efficiency_nvlink4": Constant(
        0.84, "fraction", "GPU-to-GPU copies over NVLink4 on an HGX H100: 380 of 450 GB/s unidirectional "
        "(p2pBandwidthLatencyTest)", "github.com/NVIDIA/nccl/issues/1264"),
    "copy_efficiency_nvlink5": Constant(
        0.86, "fraction", "GPU-to-GPU copies over NVLink5 on a GB200: nvbandwidth's peer copy ~770 of 900 GB/s",
        "github.com/Azure/AI-benchmarking-guide/issues/7"),
    "acceptance_band_hopper": Constant(
        0.102, "fraction", "a fleet's pass line below its expected figure on Hopper: Azure's node health check fails an "
        "ND H200 v5 VM below 431 GB/s all_reduce busbw at 16G, where Azure's published figure is 479.98 (the wider of "
        "its Hopper pairs; ND H100 v5: 460 of 478.87, 3.9%)",
        "github.com/Azure/azurehpc-health-checks conf/nd96isr_h200_v5.conf (13fa400b); "
        "github.com/Azure/AI-benchmarking-guide Azure_Results/ND_H200_v5_results.md"),
    "acceptance_band_blackwell": Constant(
        0.364, "fraction", "Blackwell: Azure's node health check fails an ND GB200 v6 VM (4 GPUs) below 432 GB/s "
        "all_reduce busbw at 16G, where Azure's published figure is 679.61",
        "github.com/Azure/azurehpc-health-checks conf/nd128isr_ndr_gb200_v6.conf (215c6445); "
        "github.com/Azure/AI-benchmarking-guide Azure_Results/ND_GB200_v6_results.md"),
    "acceptance_band_ampere": Constant(
        0.015, "fraction", "Ampere: Azure's node health check fails an ND A100 v4 VM below 228 GB/s all_reduce busbw at "
        "16G (best of 10 runs), where Azure's published figure is 231.58",
        "github.com/Azure/azurehpc-health-checks conf/nd96amsr_a100_v4.conf (2a20aecf); "
        "github.com/Azure/AI-benchmarking-guide Azure_Results/ND_A100_v4_results.md"),
    "acceptance_band_copy": Constant(
        0.077, "fraction", "host-device copies: Azure's node health check fails an ND H100 v5 or H200 v5 VM whose "
        "nvbandwidth host_to_device or device_to_host copy is below 48 GB/s, where Azure's published figure is 52",
        "github.com/Azure/azurehpc-health-checks customTests/azure_gpu_bandwidth.nhc, conf/nd96isr_h100_v5.conf; "
        "github.com/Azure/AI-benchmarking-guide Azure_Results/ND_H100_v5_results.md"),
    "acceptance_band_peer_copy": Constant(
        0.50, "fraction", "GPU-to-GPU copies: Azure's node health check fails an ND H100 v5 VM whose nvbandwidth "
        "device_to_device_memcpy_read_ce is below 335 GB/s, where Azure's published figure is 672 (a lost half of the "
        "NVLink paths, not a slow one)",
        "github.com/Azure/azurehpc-health-checks conf/nd96isr_h100_v5.conf; "
        "github.com/Azure/AI-benchmarking-guide Azure_Results/ND_H100_v5_results.md"),
    "kernel_launch_overhead": Constant(
        0.9e-6, "seconds", "GPU time per kernel beyond its execution when launches are queued asynchronously: "
        "3.8 us per kernel for a 2.9 us kernel", "NVIDIA Technical Blog, 'Getting Started with CUDA Graphs' (2019)"),
    "sort_bytes_per_key": Constant(
        1555e9 / (29.4e9 / 1.5), "bytes", "HBM time of one 32-bit key in a GPU radix sort, as bytes at the datasheet HBM "
        "rate: CUB's LSD radix sort of 256M random 32-bit keys on an A100 runs 1.5x slower than Onesweep's 29.4 "
        "GKey/s, 19.6 GKey/s; at the A100 40GB's 1555 GB/s, 79.3 bytes per key (assumed: the 40 GB A100; on the "
        "80 GB part, 2039 GB/s, it would be 104 bytes)",
        "Adinets and Merrill, 'Onesweep: A Faster Least Significant Digit Radix Sort for GPUs', arXiv 2206.01784 (2022)"),
    "allreduce_bucket_bytes": Constant(
        25 * 2**20, "bytes", "PyTorch DistributedDataParallel's default gradient bucket (bucket_cap_mb=25): "
        "one AllReduce per bucket", "pytorch.org/docs DistributedDataParallel"),
}
"""The calibration table: docs/estimates.md prints it with its sources."""

RDMA_TRANSPORTS = ("infiniband", "rocev2", "roce", "efa")


def value(name: str) -> float:
    return CALIBRATION[name].value


@dataclass(frozen=True)
class Architecture:
    """One GPU generation's calibration: the `CALIBRATION` names of its measured HBM, dense GEMM
    and NVLink efficiencies (each measured on a GPU of that generation unless `assumed` says
    otherwise), the least compute capability x10 that has it, and the NVLink its GPUs carry."""
    name: str
    least_sm: int
    hbm: str
    gemm: str
    nvlink: str
    fabric: str
    assumed: str = ""


ARCHITECTURES = (
    Architecture("Blackwell", 100, "hbm_efficiency_blackwell", "gemm_efficiency_blackwell",
                 "nvlink_efficiency_blackwell", "nvlink5"),
    Architecture("Hopper", 90, "hbm_efficiency_hopper", "gemm_efficiency_hopper", "nvlink_efficiency", "nvlink4"),
    Architecture("Ampere", 80, "hbm_efficiency", "gemm_efficiency", "nvlink_efficiency_a100", "nvlink3"),
)
"""The GPU generations hwspec has measurements of, newest first, keyed by the parts catalogue's
`sm` (the GPU part's CUDA compute capability x10: 80/86/89 Ampere and Ada, 90 Hopper, 100/103
Blackwell)."""

UNKNOWN_ARCHITECTURE = dataclasses.replace(
    ARCHITECTURES[-1], name="unknown", least_sm=0,
    assumed="assumed: no measurement of this GPU's generation (compute capability below 8.0, e.g. Volta, or "
            "none known: AMD and unknown parts) was read; it takes Ampere's, the oldest generation measured")
"""What a GPU of no measured generation takes: Ampere's constants, with the assumption stated."""


def architecture(compute_capability: int) -> Architecture:
    """The generation whose efficiencies a GPU of `compute_capability` x10 takes (`ARCHITECTURES`);
    below 80 and unknown (0) `UNKNOWN_ARCHITECTURE`."""
    return next((a for a in ARCHITECTURES if compute_capability >= a.least_sm), UNKNOWN_ARCHITECTURE)


def hbm_efficiency(compute_capability: int) -> float:
    """Achieved HBM fraction (a bandwidth kernel's rate over the datasheet rate; each generation's
    kernel is its constant's `measured`) for the GPU's generation."""
    return value(architecture(compute_capability).hbm)


def gemm_efficiency(compute_capability: int) -> float:
    """Achieved dense GEMM fraction (torch.matmul at n = 8192 over the dense peak) for the GPU's generation."""
    return value(architecture(compute_capability).gemm)


def nvlink_efficiency(fabric_kinds: Iterable[str]) -> float:
    """Achieved nccl-tests busbw over the GPUs' fabric / line rate, the worst of `fabric_kinds`
    (the parts' `fabric.kind`): each NVLink generation its own architecture's measurement (NVLink3
    A100, NVLink4 H100, NVLink5 GB200), xGMI AMD's measured link rate (`xgmi_efficiency`).
    assumed: every other kind (NVLink2, unknown) takes NVLink4's, the nearest measured (no
    published nccl-tests busbw over them was read)."""
    by_fabric = {a.fabric: a.nvlink for a in ARCHITECTURES} | {"xgmi": "xgmi_efficiency"}
    kinds = set(fabric_kinds) or {"nvlink4"}
    return min(value(by_fabric.get(kind, by_fabric["nvlink4"])) for kind in kinds)


GEMM_BY_SIZE = {
    "Ampere": (312e12, ((128, 0.343e12), (512, 31.456e12), (2048, 192.54e12), (8192, 215.333e12)),
               "fp16 torch.matmul n x n x n on an A800 80GB PCIe (github.com/mli/transformers-benchmarks/issues/4)"),
    "Hopper": (989e12, ((1024, 179.13e12), (2048, 645.12e12), (4096, 760.04e12), (8192, 736.19e12)),
               "fp16 torch.matmul n x n x n on an H100 80GB HBM3, torch 2.7 (github.com/zzc0721/torch-performance-test-data/issues/79)"),
    "Blackwell": (2250e12, ((1024, 423e12), (2048, 1130e12), (4096, 1410e12), (8192, 1420e12)),
                  "bf16 torch.matmul n x n x n on a B200, torchao's bench_matmul.py (github.com/pytorch/ao/pull/2427)"),
}
"""Measured GEMM rates by size per generation: (datasheet dense peak, ((n, FLOP/s), ...), source).
`gemm_efficiency_at` interpolates them by a GEMM's FLOPs; their n = 8192 points are the
`gemm_efficiency` constants. assumed: Blackwell's fp16 runs as its bf16 (the same tensor-core
rate on the datasheet)."""


def gemm_efficiency_at(compute_capability: int, flops: float) -> float:
    """Achieved fraction of the dense peak for one GEMM of `flops` (2 m n k) on the GPU's
    generation: the measured square GEMMs' efficiencies (`GEMM_BY_SIZE`) interpolated linearly in
    log2(FLOPs) between the sizes measured, the smallest's below them and the n = 8192 one above
    (the generation's `gemm_efficiency`). Unknown generations take Ampere's
    (`UNKNOWN_ARCHITECTURE`). assumed: a rectangular GEMM runs as a square one of the same FLOPs,
    and every compute dtype as fp16 does."""
    arch = architecture(compute_capability)
    peak, points, _ = GEMM_BY_SIZE[arch.name if arch.name in GEMM_BY_SIZE else "Ampere"]
    curve = [(math.log2(2.0 * n**3), rate / peak) for n, rate in points]
    if flops <= 0:
        return curve[0][1]
    x = math.log2(flops)
    if x <= curve[0][0]:
        return curve[0][1]
    for (x0, e0), (x1, e1) in zip(curve, curve[1:]):
        if x <= x1:
            return e0 + (e1 - e0) * (x - x0) / (x1 - x0)
    return curve[-1][1]


def network_efficiency(transport: str) -> float:
    """Achieved busbw / NIC line rate for an inter-node transport (a comma list takes the worst)."""
    names = [t.strip().lower() for t in transport.split(",") if t.strip()] or ["tcp"]
    return min(value("rdma_efficiency") if t in RDMA_TRANSPORTS else value("tcp_efficiency") for t in names)


def markdown_table() -> str:
    """The calibration table as markdown (docs/estimates.md embeds it)."""
    rows = ["| constant | value | measured | source |", "|---|---|---|---|"]
    for name, c in CALIBRATION.items():
        shown = (f"{c.value * 1e6:g} us" if c.unit == "seconds" else f"{c.value / 2**20:g} MiB" if name.endswith("_bucket_bytes")
                 else f"{c.value:.1f} B" if c.unit == "bytes" else f"{c.value:g}")
        rows.append(f"| `{name}` | {shown} | {c.measured} | {c.source} |")
    return "\n".join(rows) + "\n"
