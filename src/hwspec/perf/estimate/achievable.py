"""The rates the expected iteration runs at: `achievable` scales every rate of a platform's
`Figures` by its calibrated achieved fraction (`hwspec.perf.calibration`), the collective
bounds phase by phase (`achieved_algbw`: intra-node at NVLink's or PCIe's efficiency,
`intra_node_efficiency`, inter-node at the network's).
"""

from __future__ import annotations

import dataclasses

from hwspec.perf import calibration as cal
from hwspec.perf.platform_figures import Figures


def achievable(figures: Figures) -> Figures:
    """`figures` with every rate at its calibrated achieved fraction (`hwspec.perf.calibration`):
    HBM and GEMM peaks at their GPU generation's (`cal.hbm_efficiency`, `cal.gemm_efficiency`),
    the PCIe host link, NICs by transport (ingestion over TCP), and the collective algbw bounds
    phase by phase (`achieved_algbw`). Capacities, DDR and SSD (no cited measurement; behind PCIe
    when spilled) are unchanged. Every factor is in (0, 1]."""
    intra = intra_node_efficiency(figures)
    network = cal.network_efficiency(figures.transport)
    pcie, tcp = cal.value("pcie_efficiency"), cal.value("tcp_efficiency")
    return dataclasses.replace(
        figures,
        peak_flop_per_s={k: v * cal.gemm_efficiency(figures.compute_capability) for k, v in figures.peak_flop_per_s.items()},
        hbm_bandwidth=achieved_hbm_bandwidth(figures),
        pcie_host_bandwidth=figures.pcie_host_bandwidth * pcie,
        pcie_host_shared_bandwidth=figures.pcie_host_shared_bandwidth * pcie,
        nic_bandwidth=figures.nic_bandwidth * (tcp if figures.ingestion_on_collective_nics else network),
        injection_bandwidth=figures.injection_bandwidth * network,
        ingestion_bandwidth=figures.ingestion_bandwidth * tcp,
        algbw={k: achieved_algbw(figures, k) for k in figures.algbw},
        intra_algbw={k: v * intra for k, v in figures.intra_algbw.items()},
    )


def achieved_hbm_bandwidth(figures: Figures) -> float:
    """The HBM rate a memory-bound kernel reaches, bytes/s: the datasheet's at the GPU
    generation's calibrated fraction (`cal.hbm_efficiency`)."""
    return figures.hbm_bandwidth * cal.hbm_efficiency(figures.compute_capability)


def intra_node_efficiency(figures: Figures) -> float:
    """Achieved fraction of the intra-node link: NVLink's (`cal.nvlink_efficiency`), else PCIe's."""
    return cal.nvlink_efficiency(figures.fabric_kinds) if figures.nvlink_bandwidth > 0 else cal.value("pcie_efficiency")


def achieved_algbw(figures: Figures, collective: str) -> float:
    """The achieved algbw of `collective`: each hierarchical phase (`Figures.collective_phases`)
    at its own link's efficiency, the intra-node phase at the NVLink (or PCIe) one and the
    inter-node phase at the network's, and the slower phase bounds (NCCL pipelines them):
    1 / max(t_intra / e_intra, t_inter / e_network). On one node the intra-node efficiency; a
    cluster without phases (a Figures built by hand) takes the lower of the two."""
    bound = figures.algbw[collective]
    intra, network = intra_node_efficiency(figures), cal.network_efficiency(figures.transport)
    if figures.nodes <= 1:
        return bound * intra
    phases = figures.collective_phases.get(collective)
    if not phases:
        return bound * min(intra, network)
    seconds_per_byte = max(phases["intra"] / intra, phases["inter"] / network)
    return 1 / seconds_per_byte if seconds_per_byte > 0 else bound
