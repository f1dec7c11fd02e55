"""The algorithms NCCL and RCCL may run a collective with over a `Span`, and the time of one
call of S bytes under each.

A candidate's transfer is a set of phases, NCCL pipelines them, so the slowest bounds: per byte
of S, each phase moves a share of S over one link, at the link's achieved rate
(`spans.Link.achieved`) for the expected figure and at its datasheet rate for the bound. With N
units (nodes, or NVLink domains spanning nodes) of G GPUs, n = N G ranks, B_i the per-GPU link
inside a unit, B_o the one leaving it and B_v the in-switch reduction rate (NVLS):

  Ring           AllReduce, AllGather, ReduceScatter: busbw = min(B_i, G B_o)
  Tree           AllReduce across units: t/S = max(2(G-1)/(G B_i), k/(G B_o))
  NVLS           AllReduce in one unit whose switches reduce: algbw = B_v
  NVLSTree       AllReduce across such units: t/S = max(1/B_v, k/(G B_o))
  CollNetDirect  AllReduce across units whose backend switches reduce (SHARP): t/S = max(2(G-1)/(G B_i), 1/(G B_o))
  NVLS (SHARP)   both reduce: t/S = max(1/B_v, 1/(G B_o))
  AlltoAll       grouped sends: t/S = max((n-G)/(n B_p), (G-1)/(n B_i))
  SendRecv       each rank to the next: algbw = min(B_i, B_p) (B_p where the ring of ranks leaves a unit)

where B_p is one NIC's share: a GPU's point-to-point sends go out by one NIC ("Alltoall cannot
aggregate the bandwidth of multiple NICs", nccl-tests#267, NCCL's maintainer).

k is a tree's network traffic per byte of a GPU's share, NCCL's own account of it (tuning.cc,
2.25-2.28: the inter-node bandwidth of a tree is doubled on two nodes): 1 on two units, 2 on
more; its bound is the hierarchical ring's 2(N-1)/N. NVLS is measured as a rate per GPU (B_v =
the NVLink bandwidth x `nvls_efficiency_*`: the measured algbw does not grow with G); its bound is
the switch's traffic, algbw = NVLink x G/(G+1).

Protocols and latencies are NCCL's own model (`hwspec.perf.nccl_tuning`, the release a run
names; NVLS and CollNet latencies from 2.28.7): a protocol's share of the Simple bandwidth and
its caps, the latency of an (algorithm, protocol), Tree's correction by size. The candidate and
protocol of least time is what the figure expects: NCCL's tuner picks the least time under its
model, and this is that model with the links' measured rates in place of its defaults.

Which algorithms NCCL may run (tuning.cc, 2.28.7): NVLS from 2.17 where the NVSwitches reduce;
NVLSTree from 2.18, across units only; CollNet (SHARP) and NVLS across units only with
NCCL_COLLNET_ENABLE=1, CollNetDirect only on NVSwitch systems. AllGather and ReduceScatter run as
Ring (NCCL's NVLS AllGather on 8 H100s measures the ring's 360 GB/s: nccl-tests#326). RCCL runs
Ring and Tree only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from hwspec.acceptance.names import COLLECTIVES as COLLECTIVES  # the collectives the figures cover
from hwspec.acceptance.spans import Link, Span
from hwspec.perf import nccl_tuning as nt

NVLS_FROM = (2, 17)
"""NCCL releases from 2.17 run NVLS (NVLink SHARP) AllReduce; NVLSTree from 2.18."""
NVLS_TREE_FROM = (2, 18)

NCCL_2_28_LATENCY_US = {
    "NVLS": {"intra": 25.0, "inter": 18.0},
    "NVLSTree": {"intra": 25.0, "inter": 14.0},
    "CollNetDirect": {"intra": 3.7, "inter": 31.0},
}
"""NCCL 2.28.7's Simple-protocol latencies, us (src/graph/tuning.cc at ae7aed19: base 0, NVLink
hw latency 25 for NVLS and NVLSTree, 3.7 for CollNetDirect; network 18, 14 and 31)."""


@dataclass(frozen=True, slots=True)
class Phase:
    """Seconds per byte of S one phase keeps `link` busy at its achieved rate."""

    seconds_per_byte: float
    link: Link


@dataclass(frozen=True, slots=True)
class Candidate:
    """An algorithm NCCL may run: its name in NCCL_ALGO's spelling, the phases of its
    Simple-protocol transfer (the slowest bounds), and its bound with every link at its
    datasheet rate."""

    algorithm: str
    phases: tuple[Phase, ...]
    bound_seconds_per_byte: float

    @property
    def limit(self) -> Link:
        return max(self.phases, key=lambda p: p.seconds_per_byte).link

    @property
    def seconds_per_byte(self) -> float:
        return max(p.seconds_per_byte for p in self.phases)


@dataclass(frozen=True, slots=True)
class Untimed:
    """An algorithm NCCL may run whose time is not known: `why` names the link without a cited rate."""

    algorithm: str
    why: str


@dataclass(frozen=True, slots=True)
class Timing:
    """One call: its seconds, what ran it, the share of it that is latency, and the link at its limit."""

    seconds: float
    algorithm: str
    protocol: str
    latency_seconds: float
    limit: Link
    bound_seconds: float
    """The least time any algorithm NCCL may pick takes with every link at its datasheet rate and no latency."""


@dataclass(frozen=True, slots=True)
class Share:
    """A phase: `share` bytes per byte of S over `link` at its achieved rate, `bound` bytes at
    its datasheet rate (the physical traffic, which a measured per-GPU rate may not show)."""

    link: Link
    share: float
    bound: float


def busbw_factor(collective: str, ranks: int) -> float:
    """nccl-tests' busbw / algbw: 2(n-1)/n AllReduce, (n-1)/n AllGather, ReduceScatter, AlltoAll, 1 SendRecv."""
    if ranks < 2 or collective == "sendrecv":
        return 1.0
    return 2 * (ranks - 1) / ranks if collective == "all_reduce" else (ranks - 1) / ranks


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """`2.28.7` -> (2, 28, 7); None for no version or one that does not read so."""
    if not version:
        return None
    parts = version.split("+")[0].split(".")
    if len(parts) < 2 or not all(p.isdigit() and len(p) <= 4 for p in parts[:3]):
        return None
    return tuple(int(p) for p in parts[:3])


def release_for(version: str | None) -> nt.Release:
    """The tuning tables hwspec holds nearest to a run's NCCL `version`: 2.7.5's before 2.12,
    2.20.3's from 2.12 on and when the run does not say (assumed: the latencies and protocol
    caps between releases hwspec holds are those of the one before)."""
    parsed = version_tuple(version)
    return nt.NCCL_2_7 if parsed is not None and parsed < (2, 12) else nt.NCCL_2_20


def _phases(algorithm: str, shares: list[Share]) -> Candidate | Untimed | None:
    """A candidate from its phases; `Untimed` when a link's achieved rate is unknown (a figure
    NCCL may reach with it is then unchecked); None when nothing moves."""
    shares = [s for s in shares if s.share > 0]
    if not shares:
        return None
    unknown = next((s.link for s in shares if s.link.achieved is None or s.link.achieved <= 0), None)
    if unknown is not None:
        return Untimed(algorithm, f"{unknown.what}: {unknown.efficiency_source}")
    phases = tuple(Phase(s.share / (s.link.achieved or 1.0), s.link) for s in shares)
    bound = max(s.bound / s.link.bandwidth for s in shares if s.link.bandwidth > 0)
    return Candidate(algorithm, phases, bound)


def _plain(link: Link, share: float) -> Share:
    return Share(link, share, share)


def collnet_enabled(env: Mapping[str, str]) -> bool:
    """NCCL runs CollNet (and NVLS across nodes) only when told to: NCCL_COLLNET_ENABLE=1."""
    return env.get("NCCL_COLLNET_ENABLE", "").strip() == "1"


def candidates(span: Span, collective: str, version: str | None = None,
               env: Mapping[str, str] | None = None) -> list[Candidate | Untimed]:
    """The algorithms NCCL (RCCL) may run `collective` with over `span` (none for a single rank),
    with the run's NCCL settings `env`."""
    n, g = span.ranks, span.unit_gpus
    if n < 2:
        return []
    intra, out, p2p = span.intra, span.out, span.out_p2p
    made: list[Candidate | Untimed | None] = []
    if collective == "sendrecv":
        made.append(_phases("Ring", [_plain(link, 1.0) for link in (intra, p2p) if link is not None]))
    elif collective == "alltoall":
        shares = [_plain(p2p, (n - g) / n)] if p2p is not None else []
        shares += [_plain(intra, (g - 1) / n)] if intra is not None else []
        made.append(_phases("Ring", shares))
    else:
        factor = busbw_factor(collective, n)
        ring = [_plain(intra, factor)] if intra is not None else []
        if out is not None:
            ring.append(_plain(out, factor / g))
        made.append(_phases("Ring", ring))
        if collective == "all_reduce":
            made.extend(_reductions(span, version, env or {}))
    return [c for c in made if c is not None]


def _reductions(span: Span, version: str | None, env: Mapping[str, str]) -> list[Candidate | Untimed | None]:
    """AllReduce's hierarchical and in-network candidates over `span`."""
    g, units = span.unit_gpus, span.units
    intra, out, nvls = span.intra, span.out, span.nvls
    parsed = version_tuple(version)
    nccl = span.library == "nccl"
    collnet = nccl and span.sharp and collnet_enabled(env)
    made: list[Candidate | Untimed | None] = []
    intra_phase = [_plain(intra, 2 * (g - 1) / g)] if intra is not None else []
    tree_out: list[Share] = []
    if out is not None:
        tree_out = [Share(out, (1 if units <= 2 else 2) / g, 2 * (units - 1) / (units * g))]
        made.append(_phases("Tree", intra_phase + tree_out))
        if collnet and intra is not None and intra.tier == "nvswitch":
            made.append(_phases("CollNetDirect", intra_phase + [_plain(out, 1 / g)]))
    if nvls is None or not nccl or (parsed is not None and parsed < NVLS_FROM):
        return made
    nvls_phase = [Share(nvls, 1.0, (g + 1) / g)]
    if out is None:
        made.append(_phases("NVLS", nvls_phase))
    else:
        if parsed is None or parsed >= NVLS_TREE_FROM:
            made.append(_phases("NVLSTree", nvls_phase + tree_out))
        if collnet:
            made.append(_phases("NVLS", nvls_phase + [_plain(out, 1 / g)]))
    return made


def comm(span: Span) -> nt.Comm:
    """The communicator NCCL's tuning model sees: every rank, its units as nodes."""
    nvlink = span.intra is not None and span.intra.tier in ("nvlink", "nvswitch")
    return nt.Comm(ranks=span.ranks, nodes=span.units, compute_capability=span.compute_capability, nvlink=nvlink,
                   gpudirect=span.gpudirect)


@dataclass(frozen=True, slots=True)
class Option:
    """A (candidate, protocol) NCCL may run a collective with: its latency (seconds), its
    seconds per byte at the protocol's share of the candidate's achieved rate, and Tree's
    correction by size where it applies (NCCL's model). What varies with the size is only the
    bytes and Tree's correction, so options are made once per collective and span."""

    candidate: Candidate
    protocol: str
    latency_seconds: float
    seconds_per_byte: float
    tree_correction: tuple[float, ...] | None
    limit: Link
    """The candidate's link at its limit (`Candidate.limit`), found once, not per size."""

    def seconds(self, nbytes: int) -> float:
        per_byte = self.seconds_per_byte
        if self.tree_correction is not None:
            size = nt.log2i(nbytes >> 6)
            if size < len(self.tree_correction):
                per_byte /= self.tree_correction[size]
        return self.latency_seconds + nbytes * per_byte


def option(span: Span, collective: str, candidate: Candidate, protocol: str, release: nt.Release,
           c: nt.Comm) -> Option | None:
    """`candidate` under `protocol` on the communicator `c` of `span`: NCCL's latency and the
    candidate's achieved rate times the protocol's share (NCCL's refinements of the ring's bus
    bandwidth); None where NCCL would not run it."""
    algorithm = candidate.algorithm
    modelled = algorithm if algorithm in nt.ALGORITHMS else None
    nccl_collective = collective if collective in nt.NCCL_FUNCTION else "all_gather"
    if modelled is None and protocol != "Simple":
        return None  # NVLS, NVLSTree and CollNet run Simple only
    if modelled is not None and collective not in ("alltoall", "sendrecv") and not nt.enabled(release, c, nccl_collective, modelled, protocol):
        return None
    seconds_per_byte = candidate.seconds_per_byte
    if protocol != "Simple":
        bus = busbw_factor(collective, c.ranks) / seconds_per_byte / 1e9  # GB/s, as tuning.cc's ring bandwidth
        simple = nt.bus_bandwidth(release, c, nccl_collective, modelled or "Ring", "Simple", bus)
        refined = nt.bus_bandwidth(release, c, nccl_collective, modelled or "Ring", protocol, bus)
        if refined <= 0 or simple <= 0:
            return None
        seconds_per_byte *= simple / refined
    correction = tuple(release.tree_correction[protocol]) if modelled == "Tree" else None
    return Option(candidate, protocol, _latency(span, collective, algorithm, protocol, release, c), seconds_per_byte,
                  correction, candidate.limit)


def options(span: Span, collective: str, found: list[Candidate], version: str | None = None,
            protocols: tuple[str, ...] = ()) -> list[Option]:
    """Every (candidate, protocol) of `found` NCCL may run, limited to `protocols` where a run
    sets NCCL_PROTO, in NCCL's order (candidates as found, protocols LL, LL128, Simple)."""
    release = release_for(version)
    c = comm(span)
    wanted = {p.lower() for p in protocols}
    made = (option(span, collective, candidate, protocol, release, c) for candidate in found for protocol in nt.PROTOCOLS
            if not wanted or protocol.lower() in wanted)
    return [o for o in made if o is not None]


def _latency(span: Span, collective: str, algorithm: str, protocol: str, release: nt.Release, c: nt.Comm) -> float:
    """Seconds of latency of one call (NCCL's model; AlltoAll and SendRecv: one step)."""
    if algorithm in NCCL_2_28_LATENCY_US:
        hw = NCCL_2_28_LATENCY_US[algorithm]
        if algorithm == "NVLS":
            us = hw["intra"] + (hw["inter"] if span.units > 1 else 0.0)
        elif algorithm == "NVLSTree":
            us = hw["intra"] + 2 * nt.log2i(span.units) * hw["inter"]
        else:  # CollNetDirect: 2 (min(1, ppn - 1) intra + (ppn - 1) x 0.4 arity serialization) + inter
            ppn = span.unit_gpus
            us = 2 * (min(1, ppn - 1) * hw["intra"] + (ppn - 1) * 0.4) + hw["inter"]
        return us * 1e-6
    if collective in ("alltoall", "sendrecv"):
        hw_name = "net" if span.units > 1 else "nvlink" if c.nvlink else "pci"
        key = ("Ring", protocol)
        return (release.base_lat[key] + release.hw_lat[hw_name][key]) * 1e-6
    return nt.latency(release, c, collective, algorithm, protocol) * 1e-6


def fastest(made: list[Option], nbytes: int, bound_seconds_per_byte: float | None = None) -> Timing | None:
    """The option of least time for one call of `nbytes` (the first of equal ones, NCCL's
    order); its `bound_seconds` is the least bound of every candidate (`bound_seconds_per_byte`
    where the caller has it). None without options."""
    best: Option | None = None
    least = math.inf
    for o in made:
        seconds = o.seconds(nbytes)
        if seconds < least:
            best, least = o, seconds
    if best is None:
        return None
    bound = bound_seconds_per_byte if bound_seconds_per_byte is not None else least_bound(made)
    return Timing(least, best.candidate.algorithm, best.protocol, best.latency_seconds, best.limit, nbytes * bound)


def least_bound(made: list[Option]) -> float:
    """Seconds per byte of the fastest of `made`'s candidates with every link at its datasheet rate."""
    return min(o.candidate.bound_seconds_per_byte for o in made)
