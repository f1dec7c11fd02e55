"""The algorithms NCCL and RCCL may run a collective with over a `Span`, and the time of one
call of S bytes under each.

Each candidate's bandwidth is physical: per byte of S, the seconds every phase of the algorithm
keeps its busiest link busy, at that link's achieved rate (`spans.Link.achieved`); NCCL
pipelines the phases, so the slowest phase bounds (the formulas of
`hwspec.perf.cluster_roofline`, with N units of G GPUs, n = N G ranks, B_i the link inside a
unit, B_o the one leaving it, B_v the in-switch reduction rate):

  Ring           AllReduce, AllGather, ReduceScatter: busbw = min(B_i, G B_o)
  Tree           AllReduce across units: t/S = max(2(G-1)/(G B_i), 2(N-1)/(N G B_o))
  NVLS           AllReduce in one unit whose switches reduce: algbw = B_v G/(G+1)
  NVLSTree       AllReduce across such units: t/S = max((G+1)/(G B_v), 2(N-1)/(N G B_o))
  CollNetDirect  AllReduce across units whose backend switches reduce (SHARP): t/S = max(2(G-1)/(G B_i), 1/(G B_o))
  NVLS+SHARP     both: t/S = max((G+1)/(G B_v), 1/(G B_o))
  AlltoAll       grouped sends: t/S = max((n-G)/(n B_o), (G-1)/(n B_i))
  SendRecv       each rank to the next: algbw = min(B_i, B_o) (B_o where the ring of ranks leaves a unit)

Protocols and latencies are NCCL's own model (`hwspec.perf.nccl_tuning`, the release a run
names): a protocol's share of the Simple bandwidth and its caps, the latency of an
(algorithm, protocol), Tree's correction by size. The candidate and protocol of least time is
what the figure expects: NCCL's tuner picks the least time under its model, and this is that
model with the links' measured rates in place of its defaults. RCCL runs Ring and Tree only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from hwspec.acceptance.spans import Link, Span
from hwspec.perf import nccl_tuning as nt

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv")
"""The collectives the acceptance figures cover, in nccl-tests' names (`all_reduce_perf`, ...)."""

NVLS_FROM = (2, 17)
"""NCCL releases from 2.17 run NVLS (NVLink SHARP) AllReduce; NVLSTree from 2.18."""
NVLS_TREE_FROM = (2, 18)


@dataclass(frozen=True, slots=True)
class Phase:
    """Seconds per byte of S one phase keeps `link` busy."""

    seconds_per_byte: float
    link: Link


@dataclass(frozen=True, slots=True)
class Candidate:
    """An algorithm NCCL may run: its name in NCCL_ALGO's spelling, the phases of its Simple-protocol
    transfer (the slowest bounds), and its bound with every link at its datasheet rate."""

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
class Timing:
    """One call: its seconds, what ran it, the share of it that is latency, and the link at its limit."""

    seconds: float
    algorithm: str
    protocol: str
    latency_seconds: float
    limit: Link
    bound_seconds: float
    """The least time any algorithm NCCL may pick takes with every link at its datasheet rate and no latency."""


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
    if not all(p.isdigit() and len(p) <= 4 for p in parts[:3]) or len(parts) < 2:
        return None
    return tuple(int(p) for p in parts[:3])


def release_for(version: str | None) -> nt.Release:
    """The tuning tables hwspec holds nearest to a run's NCCL `version`: 2.7.5's before 2.12,
    2.20.3's from 2.12 on and when the run does not say (assumed: the latencies and protocol
    caps between releases hwspec holds are those of the one before)."""
    parsed = version_tuple(version)
    return nt.NCCL_2_7 if parsed is not None and parsed < (2, 12) else nt.NCCL_2_20


def _per_byte(link: Link, share: float) -> Phase | None:
    """A phase moving `share` bytes per byte of S over `link` at its achieved rate; None when the
    rate is unknown."""
    rate = link.achieved
    if rate is None or rate <= 0:
        return None
    return Phase(share / rate, link)


def _bound(phases: list[tuple[Link, float]]) -> float:
    return max(share / link.bandwidth for link, share in phases if link.bandwidth > 0)


def _candidate(algorithm: str, phases: list[tuple[Link, float]]) -> Candidate | Untimed | None:
    """A candidate whose phases move `share` bytes per byte of S over each link; `Untimed` when a
    link's achieved rate is unknown (a figure NCCL may reach with it is then unchecked); None
    when nothing moves."""
    phases = [(link, share) for link, share in phases if share > 0]
    if not phases:
        return None
    unknown = next((link for link, _ in phases if link.achieved is None or link.achieved <= 0), None)
    if unknown is not None:
        return Untimed(algorithm, f"{unknown.what}: {unknown.efficiency_source}")
    made = tuple(Phase(share / (link.achieved or 1.0), link) for link, share in phases)
    return Candidate(algorithm, made, _bound(phases))


@dataclass(frozen=True, slots=True)
class Untimed:
    """An algorithm NCCL may run whose time is not known: `why` names the link without a cited rate."""

    algorithm: str
    why: str


def candidates(span: Span, collective: str, version: str | None = None) -> list[Candidate | Untimed]:
    """The algorithms NCCL (RCCL) may run `collective` with over `span` (none for a single rank)."""
    n, g = span.ranks, span.unit_gpus
    if n < 2:
        return []
    intra, out = span.intra, span.out
    made: list[Candidate | Untimed | None] = []
    if collective == "sendrecv":
        made.append(_candidate("Ring", [(link, 1.0) for link in (intra, out) if link is not None]))
    elif collective == "alltoall":
        phases = [(out, (n - g) / n)] if out is not None else []
        phases += [(intra, (g - 1) / n)] if intra is not None else []
        made.append(_candidate("Ring", phases))
    else:
        ring = [(intra, busbw_factor(collective, n))] if intra is not None else []
        if out is not None:
            ring.append((out, busbw_factor(collective, n) / g))
        made.append(_candidate("Ring", ring))
        if collective == "all_reduce":
            made.extend(_reductions(span, version))
    return [c for c in made if c is not None]


def _reductions(span: Span, version: str | None) -> list[Candidate | Untimed | None]:
    """AllReduce's hierarchical and in-network candidates over `span`."""
    g, units = span.unit_gpus, span.units
    intra, out, nvls = span.intra, span.out, span.nvls
    parsed = version_tuple(version)
    nccl = span.library == "nccl"
    made: list[Candidate | Untimed | None] = []
    intra_phase = [(intra, 2 * (g - 1) / g)] if intra is not None else []
    tree_out: list[tuple[Link, float]] = []
    if out is not None:
        tree_out = [(out, 2 * (units - 1) / (units * g))]
        made.append(_candidate("Tree", intra_phase + tree_out))
        if span.sharp and nccl:
            made.append(_candidate("CollNetDirect", intra_phase + [(out, 1 / g)]))
    if nvls is None or not nccl or (parsed is not None and parsed < NVLS_FROM):
        return made
    nvls_phase = [(nvls, (g + 1) / g)]
    if out is None:
        made.append(_candidate("NVLS", nvls_phase))
    elif parsed is None or parsed >= NVLS_TREE_FROM:
        made.append(_candidate("NVLSTree", nvls_phase + tree_out))
        if span.sharp and out is not None:
            made.append(_candidate("NVLS", nvls_phase + [(out, 1 / g)]))
    return made


def comm(span: Span) -> nt.Comm:
    """The communicator NCCL's tuning model sees: every rank, its units as nodes."""
    nvlink = span.intra is not None and span.intra.tier in ("nvlink", "nvswitch")
    return nt.Comm(ranks=span.ranks, nodes=span.units, compute_capability=span.compute_capability, nvlink=nvlink,
                   gpudirect=span.gpudirect)


NVLS_LATENCY_US = 25.0
"""Latency of an NVLS or NVLSTree call, us, where NCCL's model of the release has none:
assumed: Ring/Simple's latency over NVLink plus the switch's reduction round trip is not
measured; NCCL's tables in the releases hwspec holds have no NVLS row."""


def timing(span: Span, collective: str, nbytes: int, candidate: Candidate, protocol: str,
           release: nt.Release) -> Timing | None:
    """One call of `nbytes` under `candidate` and `protocol`: NCCL's latency plus the bytes at
    the candidate's achieved rate times the protocol's share (NCCL's refinements of the ring's
    bus bandwidth); None where NCCL would not run it."""
    c = comm(span)
    algorithm = candidate.algorithm
    modelled = algorithm if algorithm in nt.ALGORITHMS else None
    nccl_collective = collective if collective in nt.NCCL_FUNCTION else "all_gather"
    if modelled is not None and collective not in ("alltoall", "sendrecv") and not nt.enabled(release, c, nccl_collective, modelled, protocol):
        return None
    if modelled is None and protocol != "Simple":
        return None  # NVLS and CollNet run Simple
    seconds_per_byte = candidate.seconds_per_byte
    if protocol != "Simple":
        bus = busbw_factor(collective, c.ranks) / seconds_per_byte / 1e9  # GB/s, as tuning.cc's ring bandwidth
        simple = nt.bus_bandwidth(release, c, nccl_collective, modelled or "Ring", "Simple", bus)
        refined = nt.bus_bandwidth(release, c, nccl_collective, modelled or "Ring", protocol, bus)
        if refined <= 0 or simple <= 0:
            return None
        seconds_per_byte *= simple / refined
    if modelled == "Tree":
        factors = release.tree_correction[protocol]
        size = nt.log2i(nbytes >> 6)
        if size < len(factors):
            seconds_per_byte /= factors[size]
    latency = _latency(span, collective, algorithm, protocol, release)
    transfer = nbytes * seconds_per_byte
    return Timing(latency + transfer, algorithm, protocol, latency, candidate.limit,
                  nbytes * candidate.bound_seconds_per_byte)


def _latency(span: Span, collective: str, algorithm: str, protocol: str, release: nt.Release) -> float:
    """Seconds of latency of one call (NCCL's model; AlltoAll and SendRecv: one step)."""
    c = comm(span)
    if algorithm not in nt.ALGORITHMS:
        return NVLS_LATENCY_US * 1e-6
    if collective in ("alltoall", "sendrecv"):
        hw = "net" if span.units > 1 else "nvlink" if c.nvlink else "pci"
        key = ("Ring", protocol)
        return (release.base_lat[key] + release.hw_lat[hw][key]) * 1e-6
    return nt.latency(release, c, collective, algorithm, protocol) * 1e-6


def fastest(span: Span, collective: str, nbytes: int, found: list[Candidate], version: str | None = None,
            algorithms: tuple[str, ...] = (), protocols: tuple[str, ...] = ()) -> Timing | None:
    """The (candidate, protocol) of least time for one call of `nbytes`, limited to `algorithms`
    and `protocols` where a run sets NCCL_ALGO / NCCL_PROTO; None when none is left."""
    release = release_for(version)
    best: Timing | None = None
    wanted_algorithms = {a.lower() for a in algorithms}
    wanted_protocols = {p.lower() for p in protocols}
    allowed = [c for c in found if not wanted_algorithms or c.algorithm.lower() in wanted_algorithms]
    for candidate in allowed:
        for protocol in nt.PROTOCOLS:
            if wanted_protocols and protocol.lower() not in wanted_protocols:
                continue
            t = timing(span, collective, nbytes, candidate, protocol, release)
            if t is not None and math.isfinite(t.seconds) and (best is None or t.seconds < best.seconds):
                best = t
    if best is None:
        return None
    return dataclasses.replace(best, bound_seconds=nbytes * min(c.bound_seconds_per_byte for c in allowed))
