"""What a run of nccl-tests, rccl-tests or nvbandwidth should show on a platform, size by size.

An `Expected` figure is nccl-tests' busbw (bytes/s; nvbandwidth: the copy's rate) of one
test at one size over one `Span`, with the band a healthy machine falls in:

* `busbw`: S / t x the busbw factor, t the time of NCCL's choice under
  `hwspec.acceptance.algorithms` (every link at its cited achieved rate, NCCL's latencies);
* `high`: the same with every link at its datasheet rate and no latency: a measurement above it
  says the platform file understates the machine;
* `low`: `busbw` x (1 - the band's width, `BAND`), where the figure is *judged*: only where NCCL's
  latency is at most `LATENCY_SHARE` of the time, so that a latency several times NCCL's own
  estimate (which is a model, not a measurement) still costs less than the band. Below
  `low` a judged figure is drift; an unjudged one is shown, never drift.

A figure that needs a rate no measurement gives (`spans.Link.efficiency` None) is *unchecked*:
`busbw` None and `note` saying which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hwspec.acceptance import algorithms as alg
from hwspec.acceptance import names
from hwspec.acceptance.spans import Link, Span, constant, gbps
from hwspec.model.cluster import Cluster
from hwspec.model.node import Gpu, NumaNode, Platform
from hwspec.perf import calibration as cal
from hwspec.topology import ClusterTopology, Topology

SIZES = tuple(2**k for k in range(3, 35))
"""nccl-tests sizes the figures cover: 8 B to 16 GiB, doubling (`-b 8 -e 16G -f 2`)."""

LATENCY_SHARE = 0.005
"""A figure is judged where NCCL's modelled latency is at most this share of the call's time:
then even twenty times that latency costs at most 10%, within the band. Measured runs reach
their plateau later than NCCL's latencies say (8 x H100 NVLS: "256M is too small to reach peak
bandwidth", nccl-tests#212; two H100 nodes: 450 GB/s at 1 GiB, 477 at 8 GiB), and fleets judge
the largest sizes only (Azure's health check: 16 GiB; GCP's: the mean of 2 to 8 GiB); the factor
20 is hwspec's margin, not a measurement. With nccl-tests' -e 16G the sizes judged are the
largest few."""

BANDS = {"Hopper": "acceptance_band_hopper", "Blackwell": "acceptance_band_blackwell", "Ampere": "acceptance_band_ampere"}
"""The calibration constant of the band's width below an expected collective figure, by GPU
generation (`calibration.architecture`): a fleet's own pass line below its own published figure."""


def band(compute_capability: int) -> tuple[float | None, str]:
    """The band's relative width below a collective figure on GPUs of `compute_capability` x10,
    and its source; None where no fleet threshold for the generation is known (AMD, older
    NVIDIA): figures are then shown, never judged."""
    arch = cal.architecture(compute_capability)
    name = BANDS.get(arch.name) if arch is not cal.UNKNOWN_ARCHITECTURE else None
    if name is None:
        return None, f"no fleet threshold of this GPU generation is known (compute capability {compute_capability / 10:g})"
    return constant(name)


def copy_band(peer: bool) -> tuple[float, str]:
    """The band below an nvbandwidth copy figure: host copies' or GPU-to-GPU copies'."""
    return constant("acceptance_band_peer_copy" if peer else "acceptance_band_copy")


@dataclass(frozen=True, slots=True)
class Expected:
    """One figure: `test` (a collective in nccl-tests' name, or an nvbandwidth testcase) at
    `bytes` (None for a copy) over `nodes` x `gpus_per_node` ranks; `busbw`, `low`, `high` in
    bytes/s (None: unchecked, `note` says why); what runs it; the link at its limit; whether it
    is judged; and for a copy, the `pair` it is between (`host` or a GPU id each)."""

    test: str
    tool: str
    nodes: int
    gpus_per_node: int
    bytes: int | None
    busbw: float | None
    low: float | None
    high: float | None
    algorithm: str
    protocol: str
    limit: Link | None
    judged: bool
    note: str
    band_source: str
    pair: tuple[str, str] | None = None

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node


def tool_of(span: Span) -> str:
    return "rccl-tests" if span.library == "rccl" else "nccl-tests"


def allowed(setting: str | None, names: tuple[str, ...]) -> tuple[str, ...]:
    """The names NCCL_ALGO / NCCL_PROTO lets NCCL pick (`Ring,Tree`, or `^NVLS` to exclude;
    case as NCCL reads it, any); all of `names` when unset."""
    if not setting:
        return names
    text = setting.strip()
    exclude = text.startswith("^")
    listed = {part.strip().lower() for part in text.lstrip("^").split(",") if part.strip()}
    return tuple(n for n in names if (n.lower() in listed) != exclude)


ALGORITHM_NAMES = ("Ring", "Tree", "NVLS", "NVLSTree", "CollNetDirect", "CollNetChain", "PAT")


def collective_figures(span: Span, collective: str, sizes: tuple[int, ...] = SIZES, version: str | None = None,
                       env: dict[str, str] | None = None) -> list[Expected]:
    """The figures of `collective` over `span` at each of `sizes`, for a run of NCCL `version`
    with `env` (NCCL_ALGO and NCCL_PROTO limit NCCL's choice)."""
    env = env or {}
    width, band_source = band(span.compute_capability)
    algorithms = allowed(env.get("NCCL_ALGO"), ALGORITHM_NAMES)
    protocols = allowed(env.get("NCCL_PROTO"), ("LL", "LL128", "Simple"))
    made = [c for c in alg.candidates(span, collective, version, env) if c.algorithm in algorithms]
    found = [c for c in made if isinstance(c, alg.Candidate)]
    untimed = [c for c in made if isinstance(c, alg.Untimed)]
    why = (f"NCCL may run {untimed[0].algorithm} here, and {untimed[0].why}" if untimed else
           "one rank: nothing crosses a link" if span.ranks < 2 else
           f"NCCL_ALGO={env.get('NCCL_ALGO')} leaves no algorithm that runs {collective}")
    factor = alg.busbw_factor(collective, span.ranks)
    made_options = alg.options(span, collective, found, version, protocols) if found and not untimed else []
    bound = alg.least_bound(made_options) if made_options else None
    figures = []
    for nbytes in sizes:
        timing = alg.fastest(made_options, nbytes, bound) if made_options else None
        if timing is None:
            note = why if untimed or not found else f"NCCL_PROTO={env.get('NCCL_PROTO')} leaves no protocol that runs {collective}"
            figures.append(Expected(collective, tool_of(span), span.nodes, span.gpus_per_node, nbytes, None, None, None,
                                    "", "", None, False, f"unchecked: {note}", band_source))
            continue
        busbw = nbytes / timing.seconds * factor
        high = nbytes / timing.bound_seconds * factor if timing.bound_seconds > 0 else None
        latency_bound = timing.latency_seconds > LATENCY_SHARE * timing.seconds
        judged = width is not None and not latency_bound
        note = ("" if judged else
                f"not judged: latency is {timing.latency_seconds / timing.seconds:.0%} of the time at this size (NCCL's model)"
                if latency_bound else f"not judged: {band_source}")
        figures.append(Expected(collective, tool_of(span), span.nodes, span.gpus_per_node, nbytes, busbw,
                                busbw * (1 - width) if judged and width is not None else None, high,
                                timing.algorithm, timing.protocol, timing.limit, judged, note, band_source))
    return figures


def size_text(nbytes: int) -> str:
    """A size as people read it, in the largest binary unit it is a whole number of: 8 B,
    64 KiB, 9 GiB (nccl-tests' own option syntax is `hwspec.acceptance.plan.size_text`)."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


def describe(figure: Expected) -> str:
    """One figure as a finding quotes it: `390-470 GB/s (8 x 400 Gb/s NICs ..., NVLSTree)`."""
    if figure.busbw is None:
        return figure.note
    shown = f"{gbps(figure.low)[:-5]}-{gbps(figure.busbw)}" if figure.low is not None else f"{gbps(figure.busbw)}"
    return f"{shown} ({figure.limit.what if figure.limit else ''}, {figure.algorithm}/{figure.protocol})"


def figure_record(figure: Expected) -> dict[str, Any]:
    """A figure's `COLUMNS` as expected.json and `hwspec expect --format json` write them: GB/s
    (1e9 bytes/s)."""
    return {
        "bytes": figure.bytes,
        "expected_busbw_gbps": gb(figure.busbw),
        "low_busbw_gbps": gb(figure.low),
        "high_busbw_gbps": gb(figure.high),
        "algorithm": figure.algorithm or None,
        "protocol": figure.protocol or None,
        "judged": figure.judged,
    }


def limit_record(link: Link | None) -> dict[str, Any] | None:
    """A limiting link as documents write it: its place by entry name (`nic0.part`), never by
    line, so that a document does not change when the platform file's lists are reordered."""
    if link is None:
        return None
    from hwspec.text import visible

    return {"tier": link.tier, "what": link.what, "file": visible(link.where.file), "entry": link.entry,
            "efficiency": link.efficiency, "efficiency_source": link.efficiency_source, "suspects": list(link.suspects)}


def gb(value: float | None) -> float | None:
    """bytes/s as GB/s (1e9 bytes/s) to 4 significant digits, as nccl-tests prints them; None stays None."""
    return None if value is None else float(f"{value / 1e9:.4g}")


# ------------------------------------------------------------------ nvbandwidth's copies


COPY_TESTS = dict(zip(names.COPY_TESTS, (("host", "gpu"), ("gpu", "host"), ("gpu", "gpu"), ("gpu", "gpu"))))
"""The nvbandwidth testcases hwspec has figures for (`names.COPY_TESTS`), and what each copies
between: copy-engine copies of one GPU (or one GPU pair) at a time, the rest idle."""

COPY_EFFICIENCY = {"pcie": "pcie_copy_efficiency", "c2c": "c2c_copy_efficiency",
                   "nvlink4": "copy_efficiency_nvlink4", "nvlink5": "copy_efficiency_nvlink5"}
"""The calibration constant of a copy engine's achieved fraction over each kind of link; a kind
without one (NVLink to a POWER CPU, xGMI) is unchecked."""


def copy_efficiency(kind: str) -> tuple[float | None, str]:
    name = COPY_EFFICIENCY.get(kind)
    if name is None or name not in cal.CALIBRATION:
        return None, f"no cited measurement of copies over {kind}"
    return constant(name)


def host_copy_link(topology: Topology, gpu: Gpu) -> Link | None:
    """A GPU's link to host memory as nvbandwidth's host copies cross it (`Topology.host_link`,
    the GPU alone), or its NUMA node's memory where that is slower; None where unknown."""
    platform = topology.platform
    host = topology.host_link(gpu.id)
    if host is None:
        return None
    kind = host.kind if host.kind != "nvlink" else "nvlink to its CPU"
    efficiency, source = copy_efficiency(kind)
    path = topology.host_path(gpu.id) or (gpu.id,)

    def uplink(item: str) -> float:  # a host path holds the GPU and bridges, never its socket
        entry = platform.by_id[item]
        physical = None if isinstance(entry, NumaNode) else entry.physical
        return physical.bandwidth if physical is not None else float("inf")

    narrowest = min(path, key=uplink)
    where, entry = (platform.locate(gpu.id, "c2c"), f"{gpu.id}.c2c") if host.kind == "c2c" else (platform.locate(narrowest), narrowest)
    link = Link("c2c" if host.kind == "c2c" else "nvlink" if host.kind == "nvlink" else "pcie", host.bandwidth, efficiency,
                source, f"{host.link} to the GPU's socket, {gbps(host.bandwidth)}", where, entry)
    socket_id = topology.socket_of(gpu.id)
    socket = platform.socket_by_id[socket_id] if socket_id is not None else None
    memory = socket.memory_bandwidth if socket is not None else None
    if socket is not None and memory is not None and memory < host.bandwidth:
        return Link("host memory", memory, efficiency, source, f"the memory of the GPU's socket {socket.id}, {gbps(memory)}",
                    platform.locate(socket.id, "memory"), f"{socket.id}.memory")
    return link


def peer_copy_link(topology: Topology, a: Gpu, b: Gpu) -> Link | None:
    """The link a copy between GPUs `a` and `b` crosses: their NVLink (through the switches, or
    their direct links), else their PCIe links (the narrower); None where unknown."""
    platform = topology.platform
    pair = topology.gpu_pairs.get((a.id, b.id)) or topology.gpu_pairs.get((b.id, a.id))
    if platform.nvlink_topology == "nvswitch" and topology.nvlink_bandwidth(a.id) > 0 and topology.nvlink_bandwidth(b.id) > 0:
        bandwidth = min(topology.nvlink_bandwidth(a.id), topology.nvlink_bandwidth(b.id))
        what = f"{topology.nvlink_links(a.id)} {a.fabric_kind or 'fabric'} links through the NVSwitches, {gbps(bandwidth)}"
    elif pair is not None and pair.bandwidth:
        bandwidth, what = pair.bandwidth, f"{pair.links} {a.fabric_kind or 'fabric'} link(s) between the pair, {gbps(pair.bandwidth)}"
    else:
        links = [g.physical for g in (a, b)]
        if any(link is None for link in links):
            return None
        bandwidth = min(link.bandwidth for link in links if link is not None)
        efficiency, source = copy_efficiency("pcie")
        return Link("pcie", bandwidth, efficiency, source, f"PCIe between the pair, {gbps(bandwidth)}",
                    platform.locate(a.id, "pcie"), f"{a.id}.pcie")
    efficiency, source = copy_efficiency(a.fabric_kind or "unknown")
    return Link(fabric_tier_of(platform, a), bandwidth, efficiency, source, what, platform.locate(a.id, "part"), f"{a.id}.part")


def fabric_tier_of(platform: Platform, gpu: Gpu) -> str:
    from hwspec.acceptance.spans import fabric_tier

    return fabric_tier(platform, gpu)


def copy_figure(test: str, link: Link | None, pair: tuple[str, str], why: str = "") -> Expected:
    """The figure of one copy over `link` (None: unknown, with `why`)."""
    width, band_source = copy_band("host" not in pair)
    if link is None or link.achieved is None:
        note = f"unchecked: {why or (link.efficiency_source if link is not None else 'the link is not known')}"
        return Expected(test, "nvbandwidth", 1, 1, None, None, None, None, "copy engine", "", link, False, note, band_source, pair)
    rate = link.achieved
    judged = width is not None
    return Expected(test, "nvbandwidth", 1, 1, None, rate, rate * (1 - width) if width is not None else None, link.bandwidth,
                    "copy engine", "", link, judged, "" if judged else f"not judged: {band_source}", band_source, pair)


def copy_figures(topology: Topology, test: str) -> list[Expected]:
    """The figures of nvbandwidth `test` (`COPY_TESTS`) on a node: one per GPU for a host copy
    (by GPU index, as nvbandwidth numbers them), one per ordered GPU pair for a peer copy (a
    pair's link is the same both ways: found once)."""
    gpus = topology.platform.gpus
    source, target = COPY_TESTS[test]
    if source == "gpu" and target == "gpu":
        links = {frozenset((a.id, b.id)): peer_copy_link(topology, a, b) for i, a in enumerate(gpus) for b in gpus[i + 1:]}
        return [copy_figure(test, links[frozenset((a.id, b.id))], (a.id, b.id)) for a in gpus for b in gpus if a is not b]
    return [copy_figure(test, host_copy_link(topology, g), ("host", g.id) if source == "host" else (g.id, "host")) for g in gpus]


# ------------------------------------------------------------------ a platform's figures, as a document


SCHEMA_VERSION = 1

METHOD = (
    "busbw as nccl-tests defines it (doc/PERFORMANCE.md; GB = 1e9 bytes): for each size, the time of the "
    "(algorithm, protocol) of least time under NCCL's tuning model with every link at its cited achieved rate "
    "(expected_busbw_gbps), and with every link at its datasheet rate and no latency (high_busbw_gbps). A size "
    "is judged where NCCL's latency is at most 0.5% of the time; there a measurement below low_busbw_gbps (the "
    "band) is drift. nvbandwidth copies: one GPU (or GPU pair) at a time over its link at the copy engine's "
    "cited rate. A figure whose link has no cited rate is null (unchecked)."
)


def scopes(topology: Topology | ClusterTopology) -> list[tuple[str, Span]]:
    """The spans a platform's acceptance figures cover: a node alone, and two of them on a
    non-blocking fabric of its backend NICs (all GPUs, and one GPU each); for a cluster, the
    runs of its plan's rounds (`hwspec.acceptance.plan`, by its scope names): a pair within a
    leaf group (`leaf-pair`), a pair across the spine (`spine-pair`), one rail, one NVLink domain
    whole (`domain`), and the whole cluster, where it has them. Spans of one rank are left out."""
    from hwspec.acceptance.spans import cluster_span, node_span

    found: list[tuple[str, Span]] = []
    if isinstance(topology, Topology):
        found.append(("node", node_span(topology)))
        if topology.collective_nics:
            found += [("2 nodes", node_span(topology, 2)), ("2 nodes, 1 GPU each", node_span(topology, 2, 1))]
        return [(name, span) for name, span in found if span.ranks > 1]
    cluster = topology.platform
    groups = [nodes for _, nodes in topology.leaf_groups]
    if groups and len(groups[0]) >= 2:
        found.append(("leaf-pair", cluster_span(topology, (groups[0].start, groups[0].start + 1))))
    if len(groups) >= 2:
        found.append(("spine-pair", cluster_span(topology, (groups[0].start, groups[1].start))))
    if cluster.fabric is not None and cluster.fabric.topology == "rail-optimized" and groups and len(groups[0]) >= 2:
        # a rail is its NICs' test: in an NVLink domain spanning nodes, with NCCL_MNNVL_ENABLE=0
        found.append(("rail", cluster_span(topology, groups[0], 1, mnnvl=False)))
    domains = cluster.nvlink_domains
    if domains is not None and domains.size > 1:
        found.append(("domain", cluster_span(topology, domains.nodes(0))))
    if not groups and cluster.node_count >= 2:
        found.append(("2 nodes", cluster_span(topology, (0, 1))))
    found.append(("cluster", cluster_span(topology, range(cluster.node_count))))
    return [(name, span) for name, span in found if span.ranks > 1]


class Links:
    """Each distinct link a document's figures are limited by, written once (`table()`) and named
    by its key where a figure refers to it (`ref`): a node's 56 GPU pairs share a few links."""

    def __init__(self) -> None:
        self._keys: dict[Link, str] = {}

    def ref(self, link: Link | None) -> str | None:
        if link is None:
            return None
        return self._keys.setdefault(link, f"link{len(self._keys)}")

    def table(self) -> dict[str, dict[str, Any]]:
        return {key: record for link, key in self._keys.items() if (record := limit_record(link)) is not None}


COLUMNS = ("bytes", "expected_busbw_gbps", "low_busbw_gbps", "high_busbw_gbps", "algorithm", "protocol", "judged")
"""A run's figures in expected.json, one list per column, one entry per size."""


def run_record(scope: str, span: Span, collective: str, figures: list[Expected], links: Links) -> dict[str, Any]:
    """One span's figures of one collective, as expected.json lists them: the span, the link
    limiting its largest size (a key of the document's `links`), and a list per column."""
    judged = [f.bytes for f in figures if f.judged and f.bytes is not None]
    last = figures[-1] if figures else None
    rows = [figure_record(f) for f in figures]
    return {"scope": scope, "tool": tool_of(span), "test": collective, "nodes": span.nodes,
            "gpus_per_node": span.gpus_per_node, "span": span.kind,
            "judged_from_bytes": min(judged) if judged else None,
            "limit": links.ref(last.limit if last else None),
            **({"note": last.note} if last is not None and last.busbw is None else {}),
            **{column: [row[column] for row in rows] for column in COLUMNS}}


def copy_record(test: str, figures: list[Expected], links: Links) -> dict[str, Any]:
    """One nvbandwidth test's figures: one entry per GPU (or GPU pair), its link a key of `links`."""
    return {"tool": "nvbandwidth", "test": test,
            "figures": [{"from": f.pair[0] if f.pair else None, "to": f.pair[1] if f.pair else None,
                        "expected_gbps": gb(f.busbw), "low_gbps": gb(f.low), "high_gbps": gb(f.high),
                        "limit": links.ref(f.limit), **({"note": f.note} if f.busbw is None else {})}
                       for f in figures]}


Run = tuple[str, Span, str, list[Expected]]
"""A span's figures of one collective: (scope, span, collective, figures)."""


def document_of(topology: Topology | ClusterTopology, runs: list[Run], copies: list[tuple[str, list[Expected]]]) -> dict[str, Any]:
    """The document of `runs` and `copies` on `topology`: what expected.json and `hwspec expect
    --format json` write."""
    from hwspec.text import visible

    links = Links()
    records = [run_record(scope, span, c, figures, links) for scope, span, c, figures in runs]
    copied = [copy_record(test, figures, links) for test, figures in copies]
    bands = {band(span.compute_capability) for _, span, _, _ in runs}
    return {
        "schema_version": SCHEMA_VERSION,
        "platform": {"name": topology.name, "title": topology.platform.title, "file": visible(topology.file),
                     "kind": topology.kind},
        "units": "GB/s = 1e9 bytes/s; busbw as nccl-tests prints it; bytes as nccl-tests' size column",
        "method": METHOD,
        "judged_latency_share": LATENCY_SHARE,
        "bands": [{"width": width, "source": source} for width, source in sorted(bands, key=str)],
        "runs": records,
        **({"copies": copied} if copied else {}),
        "links": links.table(),
    }


def document(topology: Topology | ClusterTopology) -> dict[str, Any]:
    """The expected figures of a node or cluster platform (`generated/<name>/acceptance/expected.json`,
    `hwspec expect --format json`): every scope's collectives at every size, and a node's copies."""
    env = platform_environment(topology)
    runs: list[Run] = [(scope, span, c, collective_figures(span, c, env=env)) for scope, span in scopes(topology)
                       for c in alg.COLLECTIVES]
    copies = ([(test, copy_figures(topology, test)) for test in COPY_TESTS]
              if isinstance(topology, Topology) and tool_of_platform(topology) == "nccl-tests" else [])
    return document_of(topology, runs, copies)


def platform_environment(topology: Topology | ClusterTopology) -> dict[str, str]:
    """The NCCL settings a platform's generated configs give every run (its `environment:`, a
    cluster's over its first node platform's): NCCL_COLLNET_ENABLE=1 there turns SHARP on."""
    platform = topology.platform
    nodes = platform.node_platforms if isinstance(platform, Cluster) else ()
    merged = {**(dict(nodes[0].environment) if nodes else {}), **dict(platform.environment)}
    return {k: v for k, v in merged.items() if k.startswith(("NCCL_", "RCCL_"))}


def tool_of_platform(topology: Topology) -> str:
    """The benchmark a node runs: rccl-tests on AMD GPUs, else nccl-tests."""
    from hwspec.formats.nccl_tree import collective_library

    return "rccl-tests" if collective_library(topology.platform) == "rccl" else "nccl-tests"
