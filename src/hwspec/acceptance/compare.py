"""Benchmark runs read back (`hwspec.acceptance.results`) against what their platform should
deliver (`hwspec.acceptance.expected`): every size compared, and findings.

A collective run's ranks map to hosts and GPUs through its `# Using devices` lines; where
the output has none, the caller says how many nodes and GPUs per node it ran on. On a cluster
platform the hosts are looked up among the cluster's nodes, so that the run's span (one leaf,
across the spine, one rail, an NVLink domain) follows from where they sit.

Findings stand at the platform line of the part whose link limits the figure, and name the
result file's line: A101 (below the band at a judged size; drift), A102 (above the datasheet
bound), A103 (wrong results; drift), A104 (a run or size that cannot be compared). Invariant:
a check whose runs gave no judged size is never clean (`Outcome.status` 2).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from hwspec.acceptance import expected as ex
from hwspec.acceptance.algorithms import COLLECTIVES
from hwspec.acceptance.results import CollectiveRun, CopyRun, Run
from hwspec.acceptance.spans import Span, cluster_span, gbps, node_span
from hwspec.diagnostics import Code, Diagnostic, Location, Severity
from hwspec.text import visible
from hwspec.topology import ClusterTopology, Topology

EXIT_CLEAN, EXIT_DRIFT, EXIT_UNCHECKED = 0, 1, 2

ABOVE_MARGIN = 1.02
"""A measurement counts as above the datasheet bound only beyond this factor: nccl-tests prints
two decimals and times a whole loop, so a figure at the bound may print a little over it."""


@dataclass(frozen=True, slots=True)
class Compared:
    """One size of a collective run, or one cell of a copy, against its figure. `measured` in
    bytes/s; `verdict` `within`, `below`, `above`, `unjudged` (shown, never drift) or
    `unchecked` (no figure)."""

    where: Location
    test: str
    bytes: int | None
    nodes: int
    gpus_per_node: int
    hosts: tuple[str, ...]
    pair: tuple[str, str] | None
    measured: float
    figure: ex.Expected
    verdict: str
    run: Location
    """Where the run starts: the sizes of one run share it."""
    devices: tuple[int, ...] = ()
    """The GPU device numbers the run's ranks used on their hosts (`# Using devices`), sorted."""

    def record(self) -> dict[str, Any]:
        """The size as `hwspec diff --format json` writes it (GB/s, 1e9 bytes/s)."""
        f = self.figure
        return {"file": self.where.file, "line": self.where.line, "run": f"{self.run.file}:{self.run.line}",
                "collective": self.test, "bytes": self.bytes,
                "nodes": self.nodes, "gpus_per_node": self.gpus_per_node, "hosts": list(self.hosts),
                "devices": list(self.devices),
                **({"pair": list(self.pair)} if self.pair else {}),
                "measured_busbw_gbps": round(self.measured / 1e9, 3), "expected_busbw_gbps": ex.gb(f.busbw),
                "low_busbw_gbps": ex.gb(f.low), "high_busbw_gbps": ex.gb(f.high),
                "algorithm": f.algorithm or None, "protocol": f.protocol or None,
                "limit": None if f.limit is None else f.limit.tier, "judged": f.judged, "verdict": self.verdict}


@dataclass
class Outcome:
    """What a check found: every size compared and the findings."""

    compared: list[Compared] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def status(self) -> int:
        """1 when a finding is drift, else 2 when no size was judged (nothing could be checked), else 0."""
        if any(d.severity == Severity.ERROR and isinstance(d.code, Code) and d.code.is_drift for d in self.diagnostics):
            return EXIT_DRIFT
        if not any(c.verdict in ("within", "below", "above") and c.figure.judged for c in self.compared):
            return EXIT_UNCHECKED
        return EXIT_CLEAN


def verdict(figure: ex.Expected, measured: float) -> str:
    if figure.busbw is None:
        return "unchecked"
    if figure.high is not None and measured > figure.high * ABOVE_MARGIN:
        return "above"
    if not figure.judged:
        return "unjudged"
    return "below" if figure.low is not None and measured < figure.low else "within"


def check(topology: Topology | ClusterTopology, runs: list[Run], nodes: int | None = None, gpus_per_node: int | None = None,
          collective: str | None = None) -> Outcome:
    """Compare every run with the figures of `topology` (a node `Topology` or a `ClusterTopology`).
    `nodes` and `gpus_per_node` say what a run spans, and `collective` which collective it is,
    where its output does not."""
    outcome = Outcome()
    for run in runs:
        if isinstance(run, CollectiveRun):
            if run.collective is None and collective is not None:
                run = dataclasses.replace(run, collective=collective, why_unknown=None)
            _check_collective(topology, run, nodes, gpus_per_node, outcome)
        else:
            _check_copies(topology, run, outcome)
    return outcome


def _unchecked(outcome: Outcome, file: str, line: int, message: str, hint: str | None = None) -> None:
    outcome.diagnostics.append(Diagnostic(file, line, 1, Severity.WARNING, Code.RUN_UNCHECKED, message, hint,
                                          Code.RUN_UNCHECKED.printed_name))


# ------------------------------------------------------------------ collectives


def run_shape(run: CollectiveRun, nodes: int | None, gpus_per_node: int | None) -> tuple[tuple[str, ...], int, int] | str:
    """The run's hosts (in rank order; empty when the output does not list them all), nodes and
    ranks per node, or why they are not known. `nodes` and `gpus_per_node` (the command line)
    say it where the output does not: no `# Using devices` lines, or lines cut by their author
    (ranks missing between them)."""
    ranks = [d.rank for d in run.devices]
    whole = bool(ranks) and sorted(ranks) == list(range(len(ranks)))
    if whole:
        hosts: dict[str, int] = {}
        for device in sorted(run.devices, key=lambda d: d.rank):
            hosts[device.host] = hosts.get(device.host, 0) + 1
        counts = set(hosts.values())
        if len(counts) != 1:
            shown = ", ".join(f"{visible(h)}: {c}" for h, c in list(hosts.items())[:4])
            return f"its hosts run different numbers of ranks ({shown}): hwspec compares runs with as many ranks on every node"
        if nodes is None or nodes == len(hosts):
            return tuple(hosts), len(hosts), counts.pop()
        return f"its '# Using devices' lines name {len(hosts)} host(s), not the {nodes} --nodes says"
    listed = f"its '# Using devices' lines are cut (ranks {', '.join(map(str, ranks[:4]))}{', ...' if len(ranks) > 4 else ''})" \
        if ranks else "the output does not list its ranks ('# Using devices' lines)"
    if nodes is None:
        return f"{listed}: give --nodes (and --gpus-per-node where not every GPU ran a rank)"
    total = max(ranks) + 1 if ranks else None
    per_node = gpus_per_node
    if per_node is None and total is not None and total % nodes == 0:
        per_node = total // nodes
    if per_node is None and nodes == 1 and run.threads is not None and run.gpus_per_thread is not None:
        per_node = run.threads * run.gpus_per_thread
    if per_node is None:
        return f"{listed}: give --gpus-per-node"
    return (), nodes, per_node


def span_of(topology: Topology | ClusterTopology, hosts: tuple[str, ...], nodes: int, per_node: int, mnnvl: bool = True,
            assume_first: bool = False) -> tuple[Span, str] | str:
    """The span of a run over `hosts` (or `nodes` nodes where it names none) of `per_node`
    ranks each (`mnnvl` False: the run set NCCL_MNNVL_ENABLE=0), and a note when it is taken as
    a cluster's first nodes; or why there is none. On a cluster, hosts that are not its nodes are
    compared as its first nodes only with `assume_first` (the user's --nodes)."""
    if isinstance(topology, Topology):
        gpus = len(topology.platform.gpus)
        if per_node > gpus:
            return f"{per_node} ranks per node, but {topology.platform.name} has {gpus} GPUs"
        return node_span(topology, nodes, per_node), ""
    cluster = topology.platform
    if nodes > cluster.node_count:
        return f"{nodes} nodes, but {cluster.name} has {cluster.node_count}"
    gpus = min(g.gpus_per_node for g in cluster.groups)
    if per_node > gpus:
        return f"{per_node} ranks per node, but the nodes of {cluster.name} have {gpus} GPUs"
    index = {name: i for i, name in enumerate(cluster.hostnames)}
    missing = next((h for h in hosts if h not in index), None)
    note = ""
    if missing is not None:
        if not assume_first:
            return (f"host {visible(missing)} is not a node of {cluster.name} (give --nodes {nodes} to compare the run as "
                    f"the cluster's first {nodes} nodes)")
        note = f"host {visible(missing)} is not a node of {cluster.name}: compared as its first {nodes} nodes"
    found = tuple(index[h] for h in hosts) if hosts and missing is None else range(nodes)
    if not hosts:
        note = f"the output names no hosts: compared as the first {nodes} nodes of {cluster.name}"
    return cluster_span(topology, found, per_node, mnnvl), note


def every_gpu(topology: Topology | ClusterTopology) -> int:
    """GPUs per node of a node platform, or of a cluster's smallest nodes: a run's ranks per node
    where neither its output nor the command line says."""
    if isinstance(topology, Topology):
        return len(topology.platform.gpus)
    return int(min(g.gpus_per_node for g in topology.platform.groups))


def _check_collective(topology: Topology | ClusterTopology, run: CollectiveRun, nodes: int | None, gpus_per_node: int | None,
                      outcome: Outcome) -> None:
    if run.collective is None:
        _unchecked(outcome, run.file, run.line, f"which collective this run is: {run.why_unknown or 'not said'}",
                   "give --test COLLECTIVE, or keep nccl-tests' '# Collective test starting' line or the command line with the output")
        return
    if run.collective not in COLLECTIVES:
        _unchecked(outcome, run.file, run.line, f"hwspec has no figures for {run.collective}: only {', '.join(COLLECTIVES)}")
        return
    library = "rccl" if run.tool == "rccl-tests" else "nccl"
    shape = run_shape(run, nodes, gpus_per_node if gpus_per_node is not None or nodes is None else every_gpu(topology))
    if isinstance(shape, str):
        _unchecked(outcome, run.file, run.line, f"{run.collective}: {shape}")
        return
    hosts, run_nodes, per_node = shape
    spanned = span_of(topology, hosts, run_nodes, per_node, run.env.get("NCCL_MNNVL_ENABLE") != "0", nodes is not None)
    if isinstance(spanned, str):
        _unchecked(outcome, run.file, run.line, f"{run.collective} over {run_nodes} node(s) x {per_node}: {spanned}")
        return
    span, note = spanned
    if note:
        _unchecked(outcome, run.file, run.line, f"{run.collective}: {note}")
    if span.library != library:
        _unchecked(outcome, run.file, run.line, f"a {run.tool} run, but {topology.platform.name} runs {span.library.upper()}")
        return
    rows = [r for r in run.rows if r.busbw_gbps is not None]
    env = {**ex.platform_environment(topology), **run.env}
    figures = ex.collective_figures(span, run.collective, tuple(r.bytes for r in rows), run.version, env)
    devices = tuple(sorted({d.device for d in run.devices}))
    compared = [Compared(Location(run.file, r.line, r.col), run.collective, r.bytes, span.nodes, span.gpus_per_node, hosts,
                         None, (r.busbw_gbps or 0.0) * 1e9, f, verdict(f, (r.busbw_gbps or 0.0) * 1e9),
                         Location(run.file, run.line), devices)
                for r, f in zip(rows, figures)]
    outcome.compared.extend(compared)
    _findings(topology, run, span, compared, outcome)


def _scope(span: Span, hosts: tuple[str, ...]) -> str:
    """How a finding names a run: `all_reduce over 2 nodes (a, b) x 8 GPUs`."""
    shown = f" ({', '.join(visible(h) for h in hosts[:4])}{', ...' if len(hosts) > 4 else ''})" if hosts else ""
    if span.nodes == 1:
        return f"on one node{shown} x {span.gpus_per_node} GPUs"
    return f"over {span.nodes} nodes{shown} x {span.gpus_per_node} GPU{'s' if span.gpus_per_node > 1 else ''}"


def _findings(topology: Topology | ClusterTopology, run: CollectiveRun, span: Span, compared: list[Compared], outcome: Outcome) -> None:
    scope = f"{run.collective} {_scope(span, compared[0].hosts if compared else ())}"
    wrong = next((r for r in run.rows if r.wrong), None)
    if wrong is not None:
        outcome.diagnostics.append(Diagnostic(
            topology.file, 1, 1, Severity.ERROR, Code.WRONG_RESULTS,
            f"{scope} counted {wrong.wrong} wrong result(s) at {ex.size_text(wrong.bytes)} ({run.file}:{wrong.line})",
            "the collective corrupted data: look at the GPUs' memory (ECC, Xid errors in dmesg) and the links it crossed",
            Code.WRONG_RESULTS.printed_name, ((Location(run.file, wrong.line, wrong.col), "counted here"),)))
    below = [c for c in compared if c.verdict == "below"]
    judged = [c for c in compared if c.figure.judged]
    if below:
        worst = min(below, key=lambda c: c.measured / (c.figure.busbw or 1.0))
        largest = max(below, key=lambda c: c.bytes or 0)
        shown = largest if largest.bytes == max(c.bytes or 0 for c in judged) else worst
        outcome.diagnostics.append(_low(topology, scope, shown, len(below), len(judged)))
    above = [c for c in compared if c.verdict == "above"]
    if above:
        c = max(above, key=lambda c: c.bytes or 0)
        limit = c.figure.limit
        where = limit.where if limit is not None else Location(topology.file, 1, 1)
        outcome.diagnostics.append(Diagnostic(
            where.file, where.line, where.col, Severity.WARNING, Code.ABOVE_BOUND,
            f"{scope} reached {gbps(c.measured)} at {ex.size_text(c.bytes or 0)}, above the {gbps(c.figure.high or 0.0)} its "
            f"links carry at their datasheet rates ({limit.what if limit else 'no link'}; {c.where.file}:{c.where.line})",
            "the platform file understates the machine (NICs, links), or the run is not what it says",
            Code.ABOVE_BOUND.printed_name, ((c.where, "measured here"),)))
    if compared and not judged:
        notes = [c.figure.note for c in compared if c.figure.note]
        latency = bool(notes) and all(n.startswith("not judged: latency") for n in notes)
        _unchecked(outcome, run.file, run.line, f"{scope}: no size is judged ({notes[-1] if notes else 'no figure'})",
                   "run up to 16 GiB (-e 16G): the bandwidth-bound sizes are judged" if latency else None)
    elif not compared:
        _unchecked(outcome, run.file, run.line, f"{scope}: no row with a busbw to compare")


def _low(topology: Topology | ClusterTopology, scope: str, c: Compared, below: int, judged: int) -> Diagnostic:
    """A101 for a run below its band, at the limiting part, naming the size shown, the expected
    figure, what limits it and the first suspects."""
    f = c.figure
    limit = f.limit
    where = limit.where if limit is not None else Location(topology.file, 1, 1)
    suspects = "; ".join(limit.suspects[:3]) if limit is not None else "the links the run crossed"
    return Diagnostic(
        where.file, where.line, where.col, Severity.ERROR, Code.BELOW_BAND,
        f"{scope} reached {gbps(c.measured)} at {ex.size_text(c.bytes or 0)}, expected {ex.describe(f)}; "
        f"{below} of {judged} judged sizes below the band ({c.where.file}:{c.where.line})",
        f"first suspects: {suspects}", Code.BELOW_BAND.printed_name, ((c.where, "measured here"),))


# ------------------------------------------------------------------ copies


def _check_copies(topology: Topology | ClusterTopology, run: CopyRun, outcome: Outcome) -> None:
    if not isinstance(topology, Topology):
        _unchecked(outcome, run.file, run.line, f"nvbandwidth {run.testcase}: compare it with the node platform, not the cluster")
        return
    if run.testcase not in ex.COPY_TESTS:
        _unchecked(outcome, run.file, run.line, f"hwspec has no figures for nvbandwidth's {run.testcase}: only "
                   f"{', '.join(ex.COPY_TESTS)}")
        return
    gpus = topology.platform.gpus
    figures = ex.copy_figures(topology, run.testcase)
    source, target = ex.COPY_TESTS[run.testcase]
    cells = _cells(run, len(gpus), source == "gpu" and target == "gpu")
    if isinstance(cells, str):
        _unchecked(outcome, run.file, run.line, f"nvbandwidth {run.testcase}: {cells}")
        return
    by_pair = {f.pair: f for f in figures}
    for (row, column), value in cells:
        if source == "gpu" and target == "gpu":
            pair = (gpus[row].id, gpus[column].id)
        else:
            gpu = gpus[column]
            pair = ("host", gpu.id) if source == "host" else (gpu.id, "host")
        figure = by_pair[pair]
        outcome.compared.append(Compared(Location(run.file, run.line, 1), run.testcase, None, 1, 1, (), pair, value * 1e9,
                                         figure, verdict(figure, value * 1e9), Location(run.file, run.line)))
    compared = [c for c in outcome.compared if c.run == Location(run.file, run.line)]
    for c in compared:
        if c.verdict == "below":
            outcome.diagnostics.append(_copy_low(c))
    if compared and not any(c.figure.judged for c in compared):
        notes = sorted({c.figure.note for c in compared if c.figure.note})
        _unchecked(outcome, run.file, run.line, f"nvbandwidth {run.testcase}: nothing judged ({notes[-1] if notes else 'no figure'})")


def _cells(run: CopyRun, gpus: int, peers: bool) -> list[tuple[tuple[int, int], float]] | str:
    """The measured cells of a copy matrix as ((row, column), GB/s), or why they do not fit a
    node of `gpus` GPUs."""
    if not run.matrix:
        return "only the SUM line was saved: keep the matrix (run nvbandwidth without '| grep SUM')"
    width = max(len(r) for r in run.matrix)
    if width != gpus or (peers and len(run.matrix) != gpus):
        return f"a matrix of {len(run.matrix)} x {width} for a node of {gpus} GPUs"
    return [((i, j), value) for i, row in enumerate(run.matrix) for j, value in enumerate(row) if value is not None
            and not (peers and i == j)]


def _copy_low(c: Compared) -> Diagnostic:
    f = c.figure
    limit = f.limit
    assert limit is not None and c.pair is not None
    what = " to ".join(c.pair)
    return Diagnostic(
        limit.where.file, limit.where.line, limit.where.col, Severity.ERROR, Code.BELOW_BAND,
        f"nvbandwidth {c.test} {what} reached {gbps(c.measured)}, expected {ex.describe(f)} ({c.where.file}:{c.where.line})",
        f"first suspects: {'; '.join(limit.suspects[:3])}", Code.BELOW_BAND.printed_name, ((c.where, "measured here"),))
