"""NCCL's own cost model (`src/graph/tuning.cc`), whole, for the releases hwspec models.

NCCL predicts each collective call's time under every (algorithm, protocol) it may run and
takes the least (`ncclTopoGetAlgoTime`: latency + bytes / bandwidth). Its bandwidths start from
the ring graph's bus bandwidth (nChannels x per-channel link bandwidth) and pass through a
release's refinements: protocol fractions, per-algorithm caps (Tree's `maxTreeBw` in 2.7,
per-channel caps per GPU generation in 2.20, sm80's 235 GB/s), LL128's 7/9 within a node, the
bus-to-algorithm ratio, the Tree correction factors by size, the Ring plateau latency factor.
This module reproduces that arithmetic for one call; hwspec supplies the ring's bus bandwidth
(its achieved algbw, `hwspec.perf.estimate.achievable`, x nsteps / nranks) and the topology
facts (`Comm`). Units: bandwidths in GB/s (1e9 bytes/s) and latencies in microseconds as
tuning.cc writes them; `call_seconds` returns seconds.

Releases (`RELEASES`), each read from NVIDIA/nccl at the commit named:

  2.7.5   commit 01afd20a (makefiles/version.mk 2.7.5): the paper's era (ZionEX, 2020-21)
  2.20.3  commit b6475625 (makefiles/version.mk 2.20.3): the MLPerf v3.0-v5.0 era (NGC 23.04
          ships 2.17, NGC 24.04 2.21; 2.20.3 is the release between them stored in the index read)

What tuning.cc reads that hwspec does not know is assumed, each with its effect:
  - nChannels: `MAX_CHANNELS` (32, NCCL's MAXCHANNELS, src/include/device.h), the most a
    communicator opens, so per-channel caps are never tighter than NCCL's;
  - the tree graph runs at the ring graph's bandwidth (both are searched over the same links);
    the tree pattern is balanced (no x0.85 for NCCL_TOPO_PATTERN_TREE, all NIC traffic through
    one GPU, which the platforms here do not have);
  - the CPU vendor of a multi-node job is Intel (2.20: network overhead 1 us, x3 for Simple;
    AMD would be 2 us) and `latencyInter` is 0 (no net plugin latency);
  - LL128 is enabled where NCCL enables it by default: GPUs of one supported compute capability
    joined by NVLink, and on several nodes NICs the GPUs reach by GPUDirect RDMA (PXB);
  - NVLS, CollNet and PAT are not modelled (hwspec's bounds already say where NVLS applies).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

MAX_CHANNELS = 32
"""NCCL's MAXCHANNELS (src/include/device.h): channels a communicator may open; `Comm.channels`
defaults to it (module docstring: an assumption, the loosest per-channel caps)."""

ALGORITHMS = ("Tree", "Ring")
PROTOCOLS = ("LL", "LL128", "Simple")
"""NCCL's algorithm and protocol indices, in tuning.cc's order."""

REDUCING = ("all_reduce",)
"""Collectives Tree runs (NCCL: AllReduce only); the others are Ring only."""

NCCL_FUNCTION = {"all_gather": "AllGather", "reduce_scatter": "ReduceScatter", "all_reduce": "AllReduce"}


@dataclass(frozen=True)
class Comm:
    """The communicator facts tuning.cc reads: ranks, nodes, the GPUs' compute capability x10
    (minCompCap; 0 unknown), whether the intra-node graph is NVLink, whether the NICs are reached
    by GPUDirect RDMA, and nChannels."""

    ranks: int
    nodes: int
    compute_capability: int
    nvlink: bool
    gpudirect: bool = True
    channels: int = MAX_CHANNELS

    @property
    def ppn(self) -> float:
        return self.ranks / self.nodes


@dataclass(frozen=True)
class Release:
    """One NCCL release's tables (tuning.cc), latencies in us, bandwidths in GB/s:
    `base_lat[(algorithm, protocol)]`, `hw_lat[hw][(algorithm, protocol)]` (hw: nvlink, pci,
    net), `tree_correction[protocol]` (by log2(bytes / 64)), and its bandwidth refinements
    (`refine`: the ring's bus bandwidth -> the (algorithm, protocol)'s, before the bus-to-algorithm
    ratio)."""

    version: str
    commit: str
    base_lat: Mapping[tuple[str, str], float]
    hw_lat: Mapping[str, Mapping[tuple[str, str], float]]
    tree_correction: Mapping[str, tuple[float, ...]]
    refine: Callable[[Comm, str, str, str, float], float]
    inter_steps: Callable[[str, int], int]
    plateau: Callable[[Comm, float], float]
    net_overhead: float
    ll128: Callable[[Comm], bool]
    ll_intra_factor: float = 1.0
    """x the intra-node LL step on several nodes (2.7.5: 1.8; gone by 2.20.3)."""

    @property
    def source(self) -> str:
        return f"NVIDIA/nccl src/graph/tuning.cc, NCCL {self.version} (commit {self.commit})"


def _table(tree: tuple[float, float, float], ring: tuple[float, float, float]) -> dict[tuple[str, str], float]:
    return {**{("Tree", p): v for p, v in zip(PROTOCOLS, tree)}, **{("Ring", p): v for p, v in zip(PROTOCOLS, ring)}}


# ---------------------------------------------------------------- NCCL 2.7.5 (commit 01afd20a)

LL128_MAX_BW_PER_CH_2_7 = {"AllGather": 18.3, "ReduceScatter": 15.2, "AllReduce": 16.7}
"""2.7.5 ll128MaxBwPerCh, GB/s per channel (Broadcast 18.8 and Reduce 12.0 unused here)."""

SM80_BUS_BW_CAP_2_7 = 235.0
"""2.7.5: `if (compCap80) busBw = std::min(busBw, 235.0f)`, every algorithm and protocol."""


def max_tree_bw_2_7(comm: Comm, protocol: str) -> float:
    """2.7.5 `maxTreeBw`: on more than 2 nodes 105 GB/s (sm80 LL128) or 80, else 130 or 110."""
    ll128_80 = comm.compute_capability == 80 and protocol == "LL128"
    if comm.nodes > 2:
        return 105.0 if ll128_80 else 80.0
    return 130.0 if ll128_80 else 110.0


def _refine_2_7(comm: Comm, collective: str, algorithm: str, protocol: str, bus: float) -> float:
    function = NCCL_FUNCTION.get(collective, "AllGather")
    if comm.compute_capability == 80:
        bus = min(bus, SM80_BUS_BW_CAP_2_7)
    if algorithm == "Ring" and protocol == "LL":
        bus *= 1 / 4 if comm.nodes > 1 or collective == "all_reduce" else 1 / 3
    if algorithm == "Ring" and protocol == "LL128":
        bus = min(bus * (0.7 if comm.ppn < 2 else 0.92), LL128_MAX_BW_PER_CH_2_7[function] * comm.channels)
    if algorithm == "Tree":
        bus = min(bus * 0.9, max_tree_bw_2_7(comm, protocol))
    if algorithm == "Tree" and protocol == "LL":
        bus *= 1 / 3.8
    if algorithm == "Tree" and protocol == "LL128":
        bus = min(bus * (7 / 9 if comm.nodes == 1 else 0.915),
                  LL128_MAX_BW_PER_CH_2_7[function] * comm.channels * 7 / 9)
    return bus


NCCL_2_7 = Release(
    version="2.7.5", commit="01afd20a",
    base_lat=_table((4.4, 4.4, 0.0), (3.6, 10.0, 8.4)),
    hw_lat={"nvlink": _table((0.52, 1.2, 28.0), (0.47, 1.9, 3.4)),
            "pci": _table((1.0, 1.9, 28.0), (1.0, 2.5, 5.7)),
            "net": _table((5.0, 8.5, 50.0), (2.7, 4.0, 9.6))},
    tree_correction={
        "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0),
        "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0),
        "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9)},
    refine=_refine_2_7,
    inter_steps=lambda collective, nodes: 2 * (nodes - 1) if collective == "all_reduce" else nodes - 1,
    # `nBytes >= nRanks/16.0*65536`: x1.9
    plateau=lambda comm, nbytes: 1.9 if nbytes >= comm.ranks / 16 * 65536 else 1.0,
    net_overhead=0.0,
    # LL128 by default only on Volta or Ampere (min == max) over NVLink, NICs at most PXB away
    ll128=lambda comm: comm.nvlink and comm.compute_capability in (70, 80) and (comm.nodes == 1 or comm.gpudirect),
    ll_intra_factor=1.8,
)


# ---------------------------------------------------------------- NCCL 2.20.3 (commit b6475625)

def _generation(comm: Comm) -> int:
    """2.20.3 compCapIndex: 0 Volta, 1 Ampere (>= 80), 2 Hopper (>= 90, Blackwell included)."""
    cc = comm.compute_capability
    return 2 if cc >= 90 else 1 if cc >= 80 else 0


def _nodes_index(comm: Comm) -> int:
    """2.20.3 index2: 0 for one node, 1 for two, 2 for more."""
    return comm.nodes - 1 if comm.nodes <= 2 else 2


LL_MAX_BWS_2_20 = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (87.7, 22.5, 19.0))
"""2.20.3 llMaxBws[index1][index2], GB/s: one node by GPU generation, several by CPU vendor
(row 0 Intel, which hwspec assumes; row 1 AMD)."""
PER_CH_MAX_RING_LL128_BWS_2_20 = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7))
PER_CH_MAX_TREE_LL128_BWS_2_20 = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0))
PER_CH_MAX_TREE_BWS_2_20 = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0))
"""2.20.3 per-channel caps, GB/s, [Volta, Ampere, Hopper][1 node, 2 nodes, more]."""


def ll_max_bw_2_20(comm: Comm) -> float:
    """2.20.3 llMaxBw: one node by GPU generation, several nodes Intel's row (assumed)."""
    return LL_MAX_BWS_2_20[_generation(comm) if comm.nodes == 1 else 0][_nodes_index(comm)]


def _refine_2_20(comm: Comm, collective: str, algorithm: str, protocol: str, bus: float) -> float:
    gen, nodes, channels = _generation(comm), _nodes_index(comm), comm.channels
    if algorithm == "Ring" and protocol == "LL":
        bus = min(ll_max_bw_2_20(comm), bus * (1 / 4 if comm.nodes > 1 or collective == "all_reduce" else 1 / 3))
    if algorithm == "Ring" and protocol == "LL128":
        bus = min(bus * (0.7 if comm.ppn < 2 else 0.92), channels * PER_CH_MAX_RING_LL128_BWS_2_20[gen][nodes])
    if algorithm == "Tree":
        bus = min(bus * 0.92, channels * PER_CH_MAX_TREE_BWS_2_20[gen][nodes])
    if algorithm == "Tree" and protocol == "LL":
        bus = min(bus / 3.8, ll_max_bw_2_20(comm))
    if algorithm == "Tree" and protocol == "LL128":
        bus = min(bus * (7 / 9 if comm.nodes == 1 else 120 / 128), channels * PER_CH_MAX_TREE_LL128_BWS_2_20[gen][nodes])
    return bus


NCCL_2_20 = Release(
    version="2.20.3", commit="b6475625",
    base_lat=_table((6.8, 14.0, 0.0), (6.6, 14.0, 8.4)),
    hw_lat={"nvlink": _table((0.6, 1.25, 28.0), (0.6, 1.9, 3.4)),
            "pci": _table((1.0, 1.9, 28.0), (1.0, 2.5, 5.7)),
            "net": _table((5.0, 8.5, 28.0), (2.7, 4.0, 14.0))},
    tree_correction={
        "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0),
        "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0),
        "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9)},
    refine=_refine_2_20,
    inter_steps=lambda collective, nodes: (2 * nodes if nodes > 1 else 0) if collective == "all_reduce" else nodes - 1,
    # nBytes / (nChannels x nRanks) >= 64: x1.4 from sm80 on (x1.9 before)
    plateau=lambda comm, nbytes: ((1.4 if comm.compute_capability >= 80 else 1.9)
                                  if nbytes / (comm.channels * comm.ranks) >= 64 else 1.0),
    net_overhead=1.0,
    # LL128 by default on sm70/80/90 (min == max) over NVLink, NICs at most PXB (sm90: PXN) away
    ll128=lambda comm: comm.nvlink and comm.compute_capability in (70, 80, 90) and (comm.nodes == 1 or comm.gpudirect),
)

RELEASES = {r.version: r for r in (NCCL_2_7, NCCL_2_20)}
"""The releases a workload may name (`nccl:`, 2.20.3 when it names none)."""


# ---------------------------------------------------------------- the model


def ring_steps(collective: str, ranks: int) -> int:
    """tuning.cc nsteps: 2(n-1) for AllReduce, n-1 for AllGather and ReduceScatter."""
    return 2 * (ranks - 1) if collective == "all_reduce" else ranks - 1


def enabled(release: Release, comm: Comm, collective: str, algorithm: str, protocol: str) -> bool:
    """Whether NCCL runs `collective` with (algorithm, protocol) by default: Tree for AllReduce
    only, LL128 only where the release enables it (`Release.ll128`)."""
    if algorithm == "Tree" and collective not in REDUCING:
        return False
    return protocol != "LL128" or release.ll128(comm)


def bus_bandwidth(release: Release, comm: Comm, collective: str, algorithm: str, protocol: str, ring_bus: float) -> float:
    """The (algorithm, protocol)'s bus bandwidth, GB/s, from the ring graph's `ring_bus`
    (nChannels x bandwidth per channel) through the release's refinements."""
    return release.refine(comm, collective, algorithm, protocol, ring_bus)


def algorithm_bandwidth(release: Release, comm: Comm, collective: str, algorithm: str, protocol: str,
                        ring_bus: float) -> float:
    """NCCL's `bandwidths[coll][a][p]`, GB/s: the bus bandwidth x ratio (Ring nranks / nsteps,
    Tree 0.5)."""
    ratio = comm.ranks / ring_steps(collective, comm.ranks) if algorithm == "Ring" else 0.5
    return bus_bandwidth(release, comm, collective, algorithm, protocol, ring_bus) * ratio


def latency(release: Release, comm: Comm, collective: str, algorithm: str, protocol: str) -> float:
    """NCCL's `latencies[coll][a][p]`, us: base + Ring (nsteps - inter) x intra-node step +
    inter x network step (2.20: an intra step is at least the network overhead across nodes),
    Tree 2 ((n/N - 1) x intra step + log2(N) x network step)."""
    key = (algorithm, protocol)
    intra_hw = "nvlink" if comm.nvlink else "pci"
    intra, inter = release.hw_lat[intra_hw][key], release.hw_lat["net"][key]
    if comm.nodes > 1 and protocol == "LL":
        intra *= release.ll_intra_factor
    base = release.base_lat[key]
    if algorithm == "Ring":
        nsteps, inter_steps = ring_steps(collective, comm.ranks), release.inter_steps(collective, comm.nodes)
        if comm.nodes == 1:
            return base + nsteps * intra
        overhead = release.net_overhead * (3 if protocol == "Simple" else 1)
        return base + (nsteps - inter_steps) * max(intra, overhead) + inter_steps * inter
    return base + 2 * ((comm.ranks // comm.nodes - 1) * intra + log2i(comm.nodes) * inter)


def log2i(n: int) -> int:
    """NCCL's log2i: floor(log2(n)), 0 for n <= 1."""
    return max(int(n).bit_length() - 1, 0)


def call_seconds(release: Release, comm: Comm, collective: str, algorithm: str, protocol: str, nbytes: float,
                 ring_bus: float) -> float | None:
    """ncclTopoGetAlgoTime for one call of `nbytes`, seconds; None where NCCL would not run it
    (disabled, or no bandwidth). Tree's bandwidth x its correction factor by size; Ring/Simple
    AllReduce across nodes x the plateau factor on its latency."""
    if not enabled(release, comm, collective, algorithm, protocol):
        return None
    bw = algorithm_bandwidth(release, comm, collective, algorithm, protocol, ring_bus)
    if bw <= 0:
        return None
    lat = latency(release, comm, collective, algorithm, protocol)
    size = log2i(int(nbytes) >> 6)
    factors = release.tree_correction[protocol]
    if algorithm == "Tree" and size < len(factors):
        bw *= factors[size]
    if algorithm == "Ring" and protocol == "Simple" and comm.nodes > 1 and collective == "all_reduce":
        lat *= release.plateau(comm, nbytes)
    return (lat + nbytes / (1000 * bw)) * 1e-6


def choose(release: Release, comm: Comm, collective: str, nbytes: float, ring_bus: float) -> tuple[float, str]:
    """NCCL's choice for one call: the (algorithm, protocol) of least `call_seconds`, and its
    time in seconds; ties go to NCCL's loop order (Tree before Ring, LL before Simple)."""
    best: tuple[float, str] | None = None
    for algorithm in ALGORITHMS:
        for protocol in PROTOCOLS:
            seconds = call_seconds(release, comm, collective, algorithm, protocol, nbytes, ring_bus)
            if seconds is not None and (best is None or seconds < best[0]):
                best = (seconds, f"{algorithm}/{protocol}")
    if best is None:  # nothing enabled: NCCL falls back to Ring's bandwidth (ringbdw)
        return nbytes / (1000 * max(ring_bus, 1e-30)) * 1e-6, "Ring/Simple"
    return best


def markdown_table(release: Release) -> str:
    """The release's latencies as markdown (docs/estimates.md embeds them)."""
    rows = ["| algorithm/protocol | base | NVLink step | PCIe step | network step |", "|---|---|---|---|---|"]
    for algorithm in ("Ring", "Tree"):
        for protocol in ("Simple", "LL128", "LL"):
            key = (algorithm, protocol)
            rows.append(f"| {algorithm}/{protocol} | {release.base_lat[key]:g} | {release.hw_lat['nvlink'][key]:g} | "
                        f"{release.hw_lat['pci'][key]:g} | {release.hw_lat['net'][key]:g} |")
    return "\n".join(rows) + "\n"

