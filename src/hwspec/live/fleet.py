"""A fleet's node reports merged into one (`hwspec fleet-report`).

Each node checks itself (`hwspec diff SPEC --live --format json`, run by Slurm, `srun` or a
DaemonSet) and writes a node report, version 1:

    {"hwspec_report": 1, "node": "gpu0042", "spec": "...", "platform": "...",
     "status": "clean" | "drift" | "unchecked", "exit_code": 0 | 1 | 2,
     "findings": [{"code": "D105", "severity": "error", "device": "gpu3" | null, "message": "...",
                   "file": "...", "line": 70, "col": 11, "hint": "..." | null}]}

`Fleet` reads such reports one file at a time (a file may hold several, one after another, as
JSON Lines or concatenated) and keeps only tallies: the nodes of each platform by status, and
the findings grouped by platform, code and device with the nodes that have them, printed as a
Slurm hostlist. Memory is the node names (with a digest and status each) and the groups, never a
whole report once it is read, and does not grow with a report's size: texts are cut
(`MAX_TEXT_KEPT`, `MAX_NAME_KEPT`), distinct messages counted as digests up to
`MAX_MESSAGES_COUNTED`, groups kept up to `MAX_GROUPS`. Time is linear in the bytes read. A report that cannot be read (E601) or is not a
version-1 node report (E602) is a located diagnostic, counted, and leaves the tallies alone;
unknown keys are ignored.

With a cluster's NVLink domains (`DomainPlan`, `--cluster`), each checked node's clique (the
report's `fabric`) is kept too, and `cliques()` compares them with the domains
(`hwspec.live.cliques`): disagreements make the exit status 1.

A report with an `acceptance` list (`hwspec diff PLATFORM RESULT... --format json`: benchmark
runs compared with the platform) is an acceptance report, never a node report: its `node` is
only where `diff` ran, not what its runs measured, so it is counted apart (`AcceptanceReports`:
by status, findings by code), is no E603 beside the node's own report, and its runs go to
`RunTally` (`hwspec.live.runs` checks the records, `hwspec.live.culprits` names what is slow in
every run it joined: A105). For runs, memory is the host names, a fixed-size tally for each
node, NIC and leaf still slow in every run it joined, and a 16-byte digest per run; never a
record once its report is read.

Which report speaks for a node is decided by where it came from, not by what it says: the
documented collection is one file per node, named for it (`srun --output=reports/%N.json`, the
DaemonSet's `/reports/$NODE_NAME.json`), so a node report counts only from the file of its node
(`NODE.json`, `node_of_file`). One in another node's file is an E604 error, not counted. A file
of several nodes' reports (`kubectl logs` of the DaemonSet's pods) is read only when the
operator names it with `add_collected` (`--collected FILE`): each of its reports speaks for the
node it names. An acceptance report speaks for its runs, not for a node, and counts from any file.

Invariants: every node is counted once, from its first report read: a later one that says the
same (a 16-byte digest of what the fleet report uses) is an E603 warning, one that says
something else an E605 error (exit 1), neither counted; every run is counted once the same way
(same run, collective, hosts and devices: a second record of it that differs is an E605). Every
text from a report that reaches the output is shown `visible` (one line), and a node or host
name is a host name (letters, digits, `.`, `-`, `_`), so a hostlist cannot be forged.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hwspec import jsonbound
from hwspec.diagnostics import Code, Diagnostic, Severity, display_path, os_reason
from hwspec.hostlist import compress
from hwspec.live.cliques import Clique, CliqueCheck, DomainPlan, compare
from hwspec.live.culprits import Judgement, LeafPlan, RunTally
from hwspec.live.reportjson import HOST_NAME, HOST_NAME_RULE, ReportError, kind_of, optional, required
from hwspec.live.runs import Records, parse_acceptance
from hwspec.text import visible

REPORT_VERSION = 1
MAX_REPORT_BYTES = 16 * 2**20
"""A node report larger than this is refused (E601): thousands of findings are far below it."""
MAX_PROBLEMS_KEPT = 1000
"""Diagnostics about reports kept for printing; the rest are only counted."""
MAX_TEXT_KEPT = 1000
"""A text kept from a report (a message, a spec path, where in the spec) is cut to this many
characters, a name (a platform, code or device) to `MAX_NAME_KEPT`: what is kept of a report
does not grow with its size."""
MAX_NAME_KEPT = 256
MAX_MESSAGES_COUNTED = 100
"""Distinct messages counted per finding group (as 8-byte digests); past it, "or more"."""
MAX_GROUPS = 10_000
"""Finding groups kept (node reports' and acceptance reports' codes each); a finding of a
further group is only counted (`findings_not_grouped`)."""
STATUS_EXIT = {"clean": 0, "drift": 1, "unchecked": 2}
"""A node report's status and the exit code `hwspec diff` gives with it."""
SEVERITIES = ("info", "warning", "error")
_GLOB_CHARACTERS = re.compile(r"[*?\[]")
_DECODER = json.JSONDecoder()
_BLANK = re.compile(r"[ \t\n\r]*")

EXIT_CLEAN, EXIT_ATTENTION, EXIT_NOTHING_READ = 0, 1, 2


@dataclass(frozen=True)
class NodeReport:
    """The parts of one node report a fleet report uses (`digest`: all of them)."""

    node: str
    spec: str
    platform: str | None
    status: str
    findings: tuple[Finding, ...]
    fabric: Clique | None = None
    """The NVLink clique all the node's GPUs are in (the report's `fabric`), or None: in none."""
    fabric_known: bool = False
    """Whether the report says (`fabric` an object): a null `fabric` (not asked, GPUs that
    disagree) is left out of the comparison with the cluster's domains."""

    def digest(self) -> bytes:
        """16 bytes that differ between two reports that say different things to a fleet report."""
        return hashlib.blake2b(repr(self).encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass(frozen=True)
class Seen:
    """Where a node's counted report was read (`file`, line and column), its status and digest."""

    file: str
    at: tuple[int, int]
    status: str
    digest: bytes


@dataclass(frozen=True)
class Finding:
    """One finding of a node report; `where` is `file:line:col` of the spec, or "" when not given."""

    code: str
    severity: str
    device: str | None
    message: str
    where: str


@dataclass
class PlatformTally:
    """The nodes of one platform (name and spec path as the reports give them), by status, in
    reading order."""

    platform: str | None
    spec: str
    nodes: dict[str, list[str]] = field(default_factory=lambda: {status: [] for status in STATUS_EXIT})

    @property
    def total(self) -> int:
        return sum(map(len, self.nodes.values()))


@dataclass
class FindingGroup:
    """The nodes of one platform with a finding of one code on one device; the first message
    seen (and where in the spec), and the digests of its distinct messages (at most
    MAX_MESSAGES_COUNTED: `more_messages` says there were more)."""

    platform: str | None
    spec: str
    code: str
    device: str | None
    severity: str
    message: str
    where: str
    nodes: list[str] = field(default_factory=list)
    messages: set[bytes] = field(default_factory=set)
    more_messages: bool = False

    def add(self, node: str, finding: Finding) -> None:
        if not self.nodes or self.nodes[-1] != node:  # a node with two findings of one kind counts once
            self.nodes.append(node)
        digest = hashlib.blake2b(finding.message.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        if len(self.messages) < MAX_MESSAGES_COUNTED:
            self.messages.add(digest)
        elif digest not in self.messages:
            self.more_messages = True
        if SEVERITIES.index(finding.severity) > SEVERITIES.index(self.severity):
            self.severity = finding.severity


@dataclass
class CodeTally:
    """The findings of one code in acceptance reports: how many, in how many reports, the most
    severe severity, and the first one's message and place in the spec."""

    code: str
    severity: str
    message: str
    where: str
    findings: int = 0
    reports: int = 0


class AcceptanceReports:
    """The acceptance reports read: how many by status, their findings by code, and how many of
    their records (and the runs they belong to) were refused."""

    def __init__(self) -> None:
        self.statuses = dict.fromkeys(STATUS_EXIT, 0)
        self.codes: dict[str, CodeTally] = {}
        self.findings_not_grouped = 0  # findings of a code past MAX_GROUPS codes
        self.records_refused = 0
        self.runs_refused = 0

    @property
    def read(self) -> int:
        return sum(self.statuses.values())

    def add(self, report: NodeReport, records: Records) -> None:
        self.statuses[report.status] += 1
        self.records_refused += records.records_refused
        self.runs_refused += records.runs_refused
        for finding in report.findings:
            tally = self.codes.get(finding.code)
            if tally is None:
                if len(self.codes) == MAX_GROUPS:
                    self.findings_not_grouped += 1
                    continue
                tally = self.codes[finding.code] = CodeTally(finding.code, finding.severity, finding.message, finding.where)
            tally.findings += 1
            if SEVERITIES.index(finding.severity) > SEVERITIES.index(tally.severity):
                tally.severity = finding.severity
        for code in {finding.code for finding in report.findings} & self.codes.keys():
            self.codes[code].reports += 1

    def sorted_codes(self) -> list[CodeTally]:
        """Most findings first, then by code."""
        return sorted(self.codes.values(), key=lambda t: (-t.findings, t.code))


class Fleet:
    """Node reports read so far, tallied. `add_paths` reads files, directories (their `*.json`
    files, by name) and glob patterns; `exit_code` and `summary()` say what they add up to."""

    def __init__(self, domains: DomainPlan | None = None, leaves: LeafPlan | None = None) -> None:
        self.domains = domains
        self.runs = RunTally(leaves)
        self.acceptance = AcceptanceReports()
        self.fabrics: dict[str, Clique | None] = {}  # checked node -> its clique, kept only with `domains`
        self._cliques: CliqueCheck | None = None
        self.platforms: dict[tuple[str | None, str], PlatformTally] = {}
        self.groups: dict[tuple[str | None, str, str, str | None], FindingGroup] = {}
        self.seen: dict[str, Seen] = {}  # node -> where its counted report came from, and what it said
        self.reports_read = 0
        self.reports_refused = 0
        self.duplicates = 0
        self.findings_not_grouped = 0  # findings of a group past MAX_GROUPS groups
        self.misplaced = 0  # node reports in another node's file: E604
        self.conflicts = 0  # second reports of a node that say something else: E605
        self.problems: list[Diagnostic] = []
        self.problems_dropped = 0

    # ------------------------------------------------------------------ reading

    def add_paths(self, paths: Iterable[str | os.PathLike[str]]) -> None:
        """The reports of files, directories (their `*.json` files) and glob patterns, each file
        the file of one node (`node_of_file`)."""
        for path in paths:
            for file in self._files(os.fspath(path)):
                self.add_file(file)

    def add_collected(self, files: Iterable[str | os.PathLike[str]]) -> None:
        """The reports of files of several nodes' reports that the operator collected and
        vouches for (`--collected`): each report speaks for the node it names."""
        for file in files:
            self.add_file(os.fspath(file), collected=True)

    def _files(self, path: str) -> Iterator[str]:
        """The report files `path` stands for; an E601 (and none) when it names nothing."""
        if os.path.isdir(path):
            try:
                names = sorted(entry.name for entry in os.scandir(path) if entry.name.endswith(".json"))
            except OSError as exc:
                self._refused(path, Code.NODE_REPORT_UNREADABLE, f"cannot list the directory: {os_reason(exc)}")
                return
            if not names:
                self._refused(path, Code.NODE_REPORT_UNREADABLE, "the directory holds no *.json report")
            yield from (os.path.join(path, name) for name in names)
        elif not os.path.lexists(path) and _GLOB_CHARACTERS.search(path):
            matches = sorted(glob.glob(path))
            if not matches:
                self._refused(path, Code.NODE_REPORT_UNREADABLE, "the pattern matches no file")
            yield from matches
        else:
            yield path

    def add_file(self, file: str, collected: bool = False) -> None:
        """Every report in `file`, the file of one node unless `collected`; an E601 when it cannot be read."""
        try:
            raw = read_bounded(file, MAX_REPORT_BYTES)
        except ValueError as exc:
            self._refused(file, Code.NODE_REPORT_UNREADABLE, str(exc))
            return
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            prefix = raw[:exc.start].decode("utf-8")
            self._refused(file, Code.NODE_REPORT_UNREADABLE, f"not UTF-8 (byte 0x{raw[exc.start]:02x})",
                          _Lines(prefix).at(len(prefix)))
            return
        self.add_text(text, file, collected)

    def add_text(self, text: str, file: str, collected: bool = False) -> None:
        """Every report in `text` (JSON objects one after another), as read from `file`: the
        file of one node (its node reports count only when they are that node's: E604), or,
        when `collected`, a file whose reports each speak for the node they name."""
        speaks_for = None if collected else node_of_file(file)
        lines = _Lines(text)
        position = _skip_blank(text, 0)
        if position == len(text):
            self._refused(file, Code.NODE_REPORT_UNREADABLE, "the file is empty", (1, 1))
            return
        # Numbers and nesting are bounded before json converts them: one scan of the file finds
        # none (the common case), else each document is checked on its own, so that one past a
        # bound is refused and the others still count (each scan covers its document only).
        checked_whole = _past_bound(text, position) is None
        while position < len(text):
            try:
                document, end = _DECODER.raw_decode(text, position)
            except (json.JSONDecodeError, ValueError, RecursionError) as exc:
                bound = None if checked_whole else _past_bound(text, position)
                if isinstance(exc, json.JSONDecodeError) and (bound is None or exc.pos < bound.offset):
                    self._refused(file, Code.NODE_REPORT_UNREADABLE, f"not JSON: {exc.msg}", (exc.lineno, exc.colno))
                    return  # the rest of the file cannot be split into documents
                message, offset = (bound.message, bound.offset) if bound is not None else ("nested too deeply", position)
                self._refused(file, Code.NODE_REPORT_UNREADABLE, f"not JSON this reader accepts: {message}", lines.at(offset))
                after = jsonbound.value_end(text, position)  # stepped over by its brackets, nothing converted
                if after is None:
                    return
                position = _skip_blank(text, after)
                continue
            bound = None if checked_whole else _past_bound(text, position, end)
            if bound is not None:
                self._refused(file, Code.NODE_REPORT_UNREADABLE, f"not JSON this reader accepts: {bound.message}",
                              lines.at(bound.offset))
                position = _skip_blank(text, end)
                continue
            try:
                report = parse_report(document)
                records = parse_acceptance(document) if document.get("acceptance") is not None else None
            except ReportError as exc:
                self._refused(file, Code.NOT_A_NODE_REPORT, exc.message, lines.at(locate(text, position, exc.path)))
            else:
                at = lines.at(position)
                if records is not None:
                    self.add_acceptance(report, records, file, at)
                    if records.error is not None:
                        self._record_refused(file, records, lines.at(locate(text, position, records.error.path)))
                elif speaks_for is None or report.node == speaks_for:
                    self.add_report(report, file, at)
                else:
                    self._misplaced(report, file, at)
            position = _skip_blank(text, end)

    def add_report(self, report: NodeReport, file: str, at: tuple[int, int] = (1, 1)) -> None:
        """Count `report` as its node's, read from `file` (at line and column `at`), unless its
        node was counted already: then an E603 warning when it says the same, else an E605 error."""
        first = self.seen.get(report.node)
        if first is not None:
            self._second_report(report, file, at, first)
            return
        self.seen[report.node] = Seen(file, at, report.status, report.digest())
        self.reports_read += 1
        key = (report.platform, report.spec)
        tally = self.platforms.get(key)
        if tally is None:
            tally = self.platforms[key] = PlatformTally(report.platform, report.spec)
        tally.nodes[report.status].append(report.node)
        if self.domains is not None and report.status != "unchecked" and report.fabric_known:
            self.fabrics[report.node] = report.fabric
            self._cliques = None
        for finding in report.findings:
            group_key = (report.platform, report.spec, finding.code, finding.device)
            group = self.groups.get(group_key)
            if group is None:
                if len(self.groups) == MAX_GROUPS:
                    self.findings_not_grouped += 1
                    continue
                group = self.groups[group_key] = FindingGroup(report.platform, report.spec, finding.code, finding.device,
                                                              finding.severity, finding.message, finding.where)
            group.add(report.node, finding)

    def add_acceptance(self, report: NodeReport, records: Records, file: str = "", at: tuple[int, int] = (1, 1)) -> None:
        """Count an acceptance report (one with `acceptance` records), read from `file` at `at`,
        and its runs: never a node report, since its `node` is only where `hwspec diff` ran, not
        what its runs measured. A run counted already that these records tell otherwise is an E605."""
        self.acceptance.add(report, records)
        for run in records.runs:
            earlier = self.runs.add(run, file)
            if earlier is not None:
                self._problem(file, at, Severity.ERROR, Code.REPORTS_DISAGREE,
                              f"run {run.label} ({run.collective} over {len(run.hosts)} host(s)) is {run.outcome} here but "
                              f"was read otherwise in {visible(display_path(earlier))}: reports of one run disagree; "
                              "this one is not counted")

    def _second_report(self, report: NodeReport, file: str, at: tuple[int, int], first: Seen) -> None:
        """Another report of a node counted already: E603 (a warning) when it says the same, else E605."""
        if report.digest() == first.digest:
            self.duplicates += 1
            self._problem(file, at, Severity.WARNING, Code.NODE_REPORTED_TWICE,
                          f"node {report.node} was reported in {visible(display_path(first.file))} already: "
                          "this report is not counted")
            return
        self.conflicts += 1
        where = f"{visible(display_path(first.file))}:{first.at[0]}"
        says = (f"is {report.status} here but {first.status} in {where}" if report.status != first.status else
                f"is {report.status} here and in {where}, with other findings")
        self._problem(file, at, Severity.ERROR, Code.REPORTS_DISAGREE,
                      f"node {report.node} {says}: reports of one node disagree; this one is not counted")

    def _misplaced(self, report: NodeReport, file: str, at: tuple[int, int]) -> None:
        """A node report in another node's file (E604): not counted."""
        self.misplaced += 1
        self._problem(file, at, Severity.ERROR, Code.REPORT_OF_ANOTHER_NODE,
                      f"node {report.node}'s report in {visible(os.path.basename(file))}, which is not {report.node}.json: "
                      "not counted (a node's report counts only from its own file; give a file of several nodes' "
                      "reports with --collected)")

    def _record_refused(self, file: str, records: Records, at: tuple[int, int]) -> None:
        """An E602 at the first acceptance record of a report that failed its checks (the others
        are only counted: locating each would read the report again)."""
        assert records.error is not None
        more = records.records_refused - 1
        self._problem(file, at, Severity.ERROR, Code.NOT_A_NODE_REPORT, records.error.message
                      + (f" (and {more} more record(s) of this report refused)" if more else ""))

    def _refused(self, file: str, code: Code, message: str, at: tuple[int, int] = (0, 0)) -> None:
        """A report (or a path) that cannot be counted: an error at `at` (0, 0: the whole file)."""
        self.reports_refused += 1
        self._problem(file, at, Severity.ERROR, code, message)

    def _problem(self, file: str, at: tuple[int, int], severity: Severity, code: Code, message: str) -> None:
        """A diagnostic about `file` (as given; shown as `display_path` shows it), kept while
        fewer than MAX_PROBLEMS_KEPT are, else only counted."""
        if len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(Diagnostic(display_path(file), *at, severity, code, message))
        else:
            self.problems_dropped += 1

    # ------------------------------------------------------------------ what it adds up to

    def cliques(self) -> CliqueCheck | None:
        """The nodes' cliques against the cluster's NVLink domains (None without them)."""
        if self.domains is None:
            return None
        if self._cliques is None:
            self._cliques = compare(self.domains, self.fabrics, list(self.seen))
        return self._cliques

    def count(self, status: str) -> int:
        return sum(len(tally.nodes[status]) for tally in self.platforms.values())

    @property
    def exit_code(self) -> int:
        """2 when no report could be read; 1 when a node drifted or could not be checked, a
        report could not be read (E601/E602), a node report was in another node's file (E604),
        two reports of a node or a run disagree (E605) or the nodes' NVLink cliques disagree
        with the cluster's domains (D114), or an acceptance report is not clean, a run was slow
        (A105 included) or an acceptance record was refused; 0 when every node read is clean
        and every acceptance run read within its band."""
        if not self.reports_read and not self.acceptance.read:
            return EXIT_NOTHING_READ
        cliques = self.cliques()
        if (self.count("drift") or self.count("unchecked") or self.reports_refused or self.misplaced or self.conflicts
                or (cliques and cliques.findings) or self.acceptance_needs_attention):
            return EXIT_ATTENTION
        return EXIT_CLEAN

    @property
    def acceptance_needs_attention(self) -> bool:
        """An acceptance report not clean, a run slow (A105 needs one) or an acceptance record refused."""
        reports = self.acceptance
        return bool(reports.statuses["drift"] or reports.statuses["unchecked"] or self.runs.outcomes["slow"]
                    or reports.records_refused or self.runs.conflicts)

    def sorted_platforms(self) -> list[PlatformTally]:
        """By platform name, then spec."""
        return sorted(self.platforms.values(), key=lambda t: (t.platform or "", t.spec))

    def sorted_groups(self) -> list[FindingGroup]:
        """Most nodes first; then by code, platform, spec and device."""
        return sorted(self.groups.values(), key=lambda g: (-len(g.nodes), g.code, g.platform or "", g.spec, g.device or ""))

    def summary(self) -> dict[str, Any]:
        """The fleet report as a JSON document (`--format json`)."""
        return {
            "hwspec_fleet_report": 1,
            "exit_code": self.exit_code,
            "reports": {"counted": self.reports_read, "refused": self.reports_refused, "duplicates": self.duplicates,
                        "from_another_nodes_file": self.misplaced, "disagreeing": self.conflicts},
            "nodes": {"total": self.reports_read, **{status: self.count(status) for status in STATUS_EXIT}},
            "platforms": [{"platform": t.platform, "spec": t.spec, "nodes": t.total,
                           **{status: len(t.nodes[status]) for status in STATUS_EXIT},
                           "hostlist": compress(node for nodes in t.nodes.values() for node in nodes),
                           "drift_hostlist": compress(t.nodes["drift"]),
                           "unchecked_hostlist": compress(t.nodes["unchecked"])}
                          for t in self.sorted_platforms()],
            "findings": [{"code": g.code, "severity": g.severity, "device": g.device, "platform": g.platform,
                          "spec": g.spec, "nodes": len(g.nodes), "hostlist": compress(g.nodes),
                          "message": g.message, "where": g.where or None, "distinct_messages": len(g.messages),
                          "more_messages": g.more_messages}
                         for g in self.sorted_groups()],
            "findings_not_grouped": self.findings_not_grouped,
            "problems": [{"file": d.file, "line": d.line, "column": d.col, "severity": d.severity.label,
                          "code": d.code, "message": d.message} for d in self.problems],
            "problems_not_listed": self.problems_dropped,
            **({"cluster": self._cluster_summary()} if self.domains is not None else {}),
            **({"acceptance": self._acceptance_summary()} if self.acceptance.read else {}),
        }

    def _acceptance_summary(self) -> dict[str, Any]:
        """The `acceptance` key of the JSON report (only when acceptance reports were read)."""
        reports, runs, judgement = self.acceptance, self.runs, self.runs.judge()
        leaves = runs.leaves
        return {
            "reports": {"counted": reports.read, **reports.statuses, "records_refused": reports.records_refused,
                        "runs_refused": reports.runs_refused},
            "runs": {"read": runs.read, **runs.outcomes, "read_twice": runs.duplicates, "disagreeing": runs.conflicts,
                     "without_hosts": runs.without_hosts},
            "findings": [{"code": t.code, "severity": t.severity, "findings": t.findings, "reports": t.reports,
                          "message": t.message, "where": t.where or None} for t in reports.sorted_codes()],
            "findings_not_grouped": reports.findings_not_grouped,
            "slow_in_every_run": [{"code": c.diagnostic.code, "severity": c.diagnostic.severity.label, "kind": c.kind,
                                   "subject": c.subject, "hostlist": compress(c.hosts), "device": c.device, "runs": c.runs,
                                   "partners": list(c.partners), "more_partners": c.more_partners, "first_run": c.first.label,
                                   "collective": c.first.collective, "file": c.diagnostic.file, "line": c.diagnostic.line,
                                   "column": c.diagnostic.col, "message": c.diagnostic.message, "hint": c.diagnostic.hint}
                                  for c in judgement.culprits],
            "not_named": {"nodes": {"count": len(judgement.unnamed_nodes), "hostlist": compress(judgement.unnamed_nodes)},
                          "nics": [{"device": device, "count": len(hosts), "hostlist": compress(hosts)}
                                   for device, hosts in _by_device(judgement.unnamed_nics)],
                          "leaves": list(judgement.unnamed_leaves), "pair_alone": judgement.pair_alone},
            "everything_slow": judgement.everything_slow,
            "leaves": None if leaves is None else {
                "file": leaves.file, "leaf_groups": len(leaves.names),
                "not_in_cluster": {"count": len(judgement.not_in_cluster), "hostlist": compress(judgement.not_in_cluster)}},
        }

    def _cluster_summary(self) -> dict[str, Any]:
        """The `cluster` key of the JSON report (`--cluster` only)."""
        assert self.domains is not None
        check = self.cliques()
        assert check is not None
        return {"file": self.domains.file, "nvlink_domains": len(self.domains.names),
                "nodes": sum(map(len, self.domains.members)),
                "missing": {"nodes": len(check.missing), "hostlist": compress(check.missing)},
                "not_in_cluster": {"nodes": len(check.unknown), "hostlist": compress(check.unknown)},
                "findings": [{"code": d.code, "severity": d.severity.label, "file": d.file, "line": d.line, "column": d.col,
                              "message": d.message, **detail} for d, detail in zip(check.findings, check.cliques)]}


# ---------------------------------------------------------------------- one report


def node_of_file(file: str) -> str:
    """The node a report file speaks for: its name less `.json` (`srun --output=reports/%N.json`,
    the DaemonSet's `$NODE_NAME.json`), the whole name when it has no such suffix."""
    name = os.path.basename(file)
    return name[:-len(".json")] if name.endswith(".json") else name



def _past_bound(text: str, start: int, end: int | None = None) -> jsonbound.BoundError | None:
    """The first number or nesting in `text[start:end]` past `hwspec.jsonbound`'s bounds, or None."""
    try:
        jsonbound.check(text, start, end)
    except jsonbound.BoundError as exc:
        return exc
    return None


def parse_report(document: Any) -> NodeReport:
    """`document` (parsed JSON) as a version-1 node report; ReportError says what is wrong and where."""
    if not isinstance(document, dict):
        raise ReportError((), f"a node report is a JSON object, not {kind_of(document)}")
    version = required(document, "hwspec_report", int)
    if version != REPORT_VERSION:
        newer = " (newer than this hwspec reads: upgrade it)" if version > REPORT_VERSION else ""
        raise ReportError(("hwspec_report",), f"hwspec_report is {version}, this hwspec reads version {REPORT_VERSION}{newer}")
    node = required(document, "node", str)
    if not HOST_NAME.fullmatch(node):
        raise ReportError(("node",), f"node {visible(node)!r} is not a host name ({HOST_NAME_RULE})")
    status = required(document, "status", str)
    if status not in STATUS_EXIT:
        raise ReportError(("status",), f"status {visible(status)!r} is not one of: {', '.join(STATUS_EXIT)}")
    exit_code = required(document, "exit_code", int)
    if exit_code != STATUS_EXIT[status]:
        raise ReportError(("exit_code",), f"exit_code {exit_code} disagrees with status {status} "
                                          f"(exit code {STATUS_EXIT[status]})")
    findings = required(document, "findings", list)
    return NodeReport(node, kept(visible(required(document, "spec", str))), kept(optional(document, (), "platform"), MAX_NAME_KEPT),
                      status, tuple(_finding(item, index) for index, item in enumerate(findings)), *_fabric(document))


def kept(text: str | None, limit: int = MAX_TEXT_KEPT) -> Any:
    """`text` (already `visible`) as the fleet report keeps it: its first `limit` characters,
    and how long it was when it is longer."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def _fabric(document: dict[str, Any]) -> tuple[Clique | None, bool]:
    """The report's `fabric` (an extra key) as ((cluster UUID, clique id) or None for no NVLink
    domain, whether it is known): absent or null is not known; an object whose `cluster_uuid` is
    null is known to be in no domain."""
    fabric = optional(document, (), "fabric", dict)
    if fabric is None:
        return None, False
    uuid = optional(fabric, ("fabric",), "cluster_uuid", str)
    if uuid is None:
        return None, True
    return (kept(uuid, MAX_NAME_KEPT), optional(fabric, ("fabric",), "clique_id", int)), True


def _finding(item: Any, index: int) -> Finding:
    path: tuple[str | int, ...] = ("findings", index)
    if not isinstance(item, dict):
        raise ReportError(path, f"findings[{index}] is {kind_of(item)}, not an object")
    severity = required(item, "severity", str, path)
    if severity not in SEVERITIES:
        raise ReportError((*path, "severity"), f"findings[{index}].severity {visible(severity)!r} is not one of: "
                                               + ", ".join(SEVERITIES))
    file = kept(optional(item, path, "file"))
    line, col = (optional(item, path, key, int) for key in ("line", "col"))
    where = f"{file}:{line or 0}:{col or 0}" if file else ""
    return Finding(kept(visible(required(item, "code", str, path)), MAX_NAME_KEPT), severity,
                   kept(optional(item, path, "device"), MAX_NAME_KEPT), kept(visible(required(item, "message", str, path))), where)


# ---------------------------------------------------------------------- where in the text


def locate(text: str, start: int, path: tuple[str | int, ...]) -> int:
    """The index in `text` of the value at `path` inside the JSON value starting at `start`
    (keys of objects, indices of arrays; the last of duplicate keys, as `json` keeps it). As far
    as the path goes: a missing key is located at its object. Used only to place an error, so
    it walks the text again rather than slowing down reading."""
    position = start
    for step in path:
        found = _child(text, position, step)
        if found is None:
            break
        position = found
    return position


def _child(text: str, position: int, step: str | int) -> int | None:
    """The index of the value `step` names inside the object or array at `position`, or None."""
    opening = text[position]
    if opening not in "{[" or isinstance(step, str) != (opening == "{"):
        return None
    found = None
    index = 0
    position = _skip_blank(text, position + 1)
    while position < len(text) and text[position] not in "}]":
        if opening == "{":
            key, position = json.decoder.scanstring(text, position + 1)  # type: ignore[attr-defined]
            position = _skip_blank(text, position) + 1  # past ':'
            position = _skip_blank(text, position)
            if key == step:
                found = position
        elif index == step:
            return position
        _, position = _DECODER.raw_decode(text, position)
        index += 1
        position = _skip_blank(text, position)
        if position < len(text) and text[position] == ",":
            position = _skip_blank(text, position + 1)
    return found


def _skip_blank(text: str, position: int) -> int:
    """The index of the first character at or after `position` that is not JSON whitespace."""
    blank = _BLANK.match(text, position)  # always matches, the empty string at least
    return blank.end() if blank else position


class _Lines:
    """1-based line and column of ever later indices of one text (JSON's line break: \\n),
    counted from where the last one was: linear in the text, however many are asked for."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.line, self.line_start, self.counted = 1, 0, 0

    def at(self, index: int) -> tuple[int, int]:
        breaks = self.text.count("\n", self.counted, index)
        if breaks:
            self.line += breaks
            self.line_start = self.text.rfind("\n", self.counted, index) + 1
        self.counted = index
        return self.line, index - self.line_start + 1


# ---------------------------------------------------------------------- reading a file


def read_bounded(path: str, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; ValueError says why not.

    A FIFO, socket, device or directory is refused before it is opened (opening or reading one
    may block, never end or act on a device) and again on the open descriptor, which is opened
    non-blocking; a file larger than `limit` is refused by its size before it is read."""
    if "\x00" in path:
        raise ValueError("cannot read: the path holds a NUL character")
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ValueError("cannot read: not a regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ValueError("cannot read: not a regular file")
            if info.st_size > limit:
                raise ValueError(f"larger than the {limit // 2**20} MiB limit for a node report")
            chunks = [os.read(fd, info.st_size + 1)]
            while chunks[-1] and sum(map(len, chunks)) <= limit:  # a file that grew while read
                chunks.append(os.read(fd, limit + 1))
        finally:
            os.close(fd)
    except OSError as exc:
        raise ValueError(f"cannot read: {os_reason(exc)}") from None
    raw = b"".join(chunks)
    if len(raw) > limit:
        raise ValueError(f"larger than the {limit // 2**20} MiB limit for a node report")
    return raw


# ---------------------------------------------------------------------- printing

FORMATS = ("text", "json", "markdown")


def render(fleet: Fleet, fmt: str) -> str:
    """The fleet report in `fmt` (one of FORMATS)."""
    if fmt == "json":
        return json.dumps(fleet.summary(), indent=2, sort_keys=True) + "\n"
    if fmt == "markdown":
        return _markdown(fleet)
    if fmt == "text":
        return _text(fleet)
    raise ValueError(f"unknown format {fmt!r}")


def _headline(fleet: Fleet) -> str:
    counts = ", ".join(f"{fleet.count(status)} {status}" for status in STATUS_EXIT)
    line = f"{fleet.reports_read} node(s): {counts}"
    extra = [f"{fleet.reports_refused} report(s) not read"] if fleet.reports_refused else []
    extra += [f"{fleet.duplicates} duplicate(s) not counted"] if fleet.duplicates else []
    extra += [f"{fleet.misplaced} report(s) in another node's file not counted"] if fleet.misplaced else []
    extra += [f"{fleet.conflicts} disagreeing report(s) not counted"] if fleet.conflicts else []
    cliques = fleet.cliques()
    extra += [f"{len(cliques.findings)} NVLink clique finding(s)"] if cliques and cliques.findings else []
    extra += [f"{fleet.acceptance.read} acceptance report(s)"] if fleet.acceptance.read else []
    culprits = fleet.runs.judge().culprits if fleet.acceptance.read else ()
    extra += [f"{len(culprits)} slow-in-every-run finding(s)"] if culprits else []
    return line + (f" ({', '.join(extra)})" if extra else "")


def _platform_name(tally: PlatformTally | FindingGroup) -> str:
    return tally.platform if tally.platform is not None else "(no platform)"


def _not_grouped(findings: int) -> str:
    return f"{findings} finding(s) not grouped: the first {MAX_GROUPS} groups are listed"


def _messages(group: FindingGroup) -> str:
    others = len(group.messages) - 1
    more = " or more" if group.more_messages else ""
    return group.message + (f" (and {others}{more} other message(s))" if others else "")


def _text(fleet: Fleet) -> str:
    lines = [f"hwspec fleet report: {_headline(fleet)}"]
    if fleet.platforms:
        lines += ["", "platforms:"]
    for tally in fleet.sorted_platforms():
        counts = ", ".join(f"{len(tally.nodes[status])} {status}" for status in STATUS_EXIT)
        lines.append(f"  {_platform_name(tally)} ({tally.spec}): {tally.total} node(s): {counts}")
        lines += [f"    {status}: {compress(tally.nodes[status])}" for status in ("drift", "unchecked") if tally.nodes[status]]
    groups = fleet.sorted_groups()
    if groups:
        lines += ["", "findings (by code and device; most nodes first):"]
    for group in groups:
        lines.append(f"  {group.code} {group.severity}: {_platform_name(group)} {group.device or '(no device)'} "
                     f"on {len(group.nodes)} node(s): {compress(group.nodes)}")
        lines.append(f"    {group.where + ': ' if group.where else ''}{_messages(group)}")
    if fleet.findings_not_grouped:
        lines.append(f"  {_not_grouped(fleet.findings_not_grouped)}")
    if fleet.domains is not None:
        lines += ["", _domains_headline(fleet) + ":"]
        lines += [f"  {line}" for line in _domains_lines(fleet)]
    elif fleet.runs.leaves is not None:
        lines += ["", _no_domains_line(fleet)]
    if fleet.acceptance.read:
        lines += ["", f"acceptance runs: {_acceptance_headline(fleet)}"]
        lines += ["  " * (level + 1) + line for level, line in _acceptance_lines(fleet)]
    return "\n".join(lines) + "\n"


def _acceptance_headline(fleet: Fleet) -> str:
    runs, reports = fleet.runs, fleet.acceptance
    outcomes = ", ".join(f"{count} {outcome}" for outcome, count in runs.outcomes.items())
    statuses = ", ".join(f"{count} {status}" for status, count in reports.statuses.items())
    return f"{runs.read} run(s): {outcomes}; from {reports.read} report(s): {statuses}"


def _acceptance_lines(fleet: Fleet) -> list[tuple[int, str]]:
    """The acceptance section below its headline, as (indent level, line): what was not counted,
    the reports' findings by code, the A105 findings, the subjects slow in every run but not
    named, and the cluster's leaf groups."""
    runs, reports, judgement = fleet.runs, fleet.acceptance, fleet.runs.judge()
    lines: list[tuple[int, str]] = []
    if runs.duplicates:
        lines.append((0, f"{runs.duplicates} run(s) read twice: counted once"))
    if runs.conflicts:
        lines.append((0, f"{runs.conflicts} run(s) read again with other results (E605): counted as first read"))
    if runs.without_hosts:
        lines.append((0, f"{runs.without_hosts} run(s) name no host: counted, not attributed to a node"))
    if reports.records_refused:
        lines.append((0, f"{reports.records_refused} record(s) refused (E602): {reports.runs_refused} run(s) not counted"))
    for tally in reports.sorted_codes():
        lines.append((0, f"{tally.code} {tally.severity}: {tally.findings} finding(s) in {tally.reports} report(s)"))
        lines.append((1, f"{tally.where + ': ' if tally.where else ''}{tally.message}"))
    if reports.findings_not_grouped:
        lines.append((0, _not_grouped(reports.findings_not_grouped)))
    for culprit in judgement.culprits:
        first, *hint = culprit.diagnostic.format().split("\n")
        lines += [(0, first), *((1, line.strip()) for line in hint)]
    lines += [(0, line) for line in _unnamed_lines(judgement)]
    if runs.outcomes["slow"] and not judgement.culprits and not judgement.unnamed_nodes and not judgement.unnamed_nics \
            and not judgement.unnamed_leaves:
        lines.append((0, "no node, NIC or leaf was slow in every run it joined"))
    if runs.leaves is not None:
        missing = judgement.not_in_cluster
        lines.append((0, f"leaf groups of {runs.leaves.file}: {len(runs.leaves.names)}"
                         + (f"; hosts of the runs it does not list: {len(missing)}: {compress(missing)}" if missing else "")))
    return lines


def _unnamed_lines(judgement: Judgement) -> list[str]:
    """The subjects slow in every run they joined that A105 does not name, and why."""
    why = "slow in every run they joined, not named (too few runs or partners)"
    lines = []
    if judgement.unnamed_nodes:
        lines.append(f"{why}: {len(judgement.unnamed_nodes)} node(s): {compress(judgement.unnamed_nodes)}"
                     + ("; a pair run alone cannot tell which of its two nodes is slow" if judgement.pair_alone else ""))
    if judgement.unnamed_nics:
        nics = "; ".join(f"device {device} (rail {device}) of {compress(hosts)}" for device, hosts in _by_device(judgement.unnamed_nics))
        lines.append(f"{why}: {len(judgement.unnamed_nics)} NIC(s): {nics}")
    if judgement.unnamed_leaves:
        lines.append(f"slow in every run they joined, not named (one run, or one node in all of them): "
                     f"{len(judgement.unnamed_leaves)} leaf group(s): {', '.join(judgement.unnamed_leaves)}")
    if judgement.everything_slow:
        lines.append("every judged run was below its band: no one node, NIC or leaf can be named (look at what the runs "
                     "share: the platform's figures, the software, the spine)")
    return lines


def _by_device(nics: tuple[tuple[str, int], ...]) -> list[tuple[int, list[str]]]:
    """NICs as (device, its hosts), by device."""
    hosts: dict[int, list[str]] = {}
    for host, device in nics:
        hosts.setdefault(device, []).append(host)
    return sorted(hosts.items())


def _domains_headline(fleet: Fleet) -> str:
    plan = fleet.domains
    assert plan is not None
    return f"NVLink domains of {plan.file}: {len(plan.names)} domain(s), {sum(map(len, plan.members))} node(s)"


def _no_domains_line(fleet: Fleet) -> str:
    """`--cluster` with a cluster that declares no NVLink domain (its leaves are still used)."""
    assert fleet.runs.leaves is not None
    return f"NVLink domains of {fleet.runs.leaves.file}: none declared: the nodes' NVLink cliques are not compared"


def _domains_lines(fleet: Fleet) -> list[str]:
    """The cluster's nodes without a report, the reported nodes it does not list, and the D114 findings."""
    check = fleet.cliques()
    assert check is not None
    lines = [f"without a report: {len(check.missing)} node(s)" + (f": {compress(check.missing)}" if check.missing else "")]
    if check.unknown:
        lines.append(f"not in the cluster: {len(check.unknown)} node(s): {compress(check.unknown)}")
    lines += [d.format() for d in check.findings] or ["no node's NVLink clique disagrees with the cluster's NVLink domains"]
    return lines


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|~&])")
"""What makes inline Markdown (emphasis, code, links, HTML, entities, table cells) anywhere in a line."""
_MARKDOWN_LEADING = re.compile(r"^([#+\-=>]|\d+(?=[.)]))")
"""What makes a block (heading, list, quote) at the start of a line: `#`, `-`, `1.`."""


def _md(text: str) -> str:
    """`text` (already `visible`: one line) as literal Markdown text, in a table cell or a list item."""
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", text)
    return _MARKDOWN_LEADING.sub(lambda m: m.group() + "\\" if m.group().isdigit() else "\\" + m.group(), text)


def _markdown(fleet: Fleet) -> str:
    lines = ["# hwspec fleet report", "", _md(_headline(fleet)) + "."]
    if fleet.platforms:
        lines += ["", "## Platforms", "", "| platform | spec | nodes | clean | drift | unchecked | drifted nodes | unchecked nodes |",
                  "|---|---|---:|---:|---:|---:|---|---|"]
    for tally in fleet.sorted_platforms():
        drift, unchecked = (f"`{compress(tally.nodes[s])}`" if tally.nodes[s] else "" for s in ("drift", "unchecked"))
        counts = " | ".join(str(len(tally.nodes[status])) for status in STATUS_EXIT)
        lines.append(f"| {_md(_platform_name(tally))} | {_md(tally.spec)} | {tally.total} | {counts} | {drift} | {unchecked} |")
    groups = fleet.sorted_groups()
    if groups:
        lines += ["", "## Findings", "", "| code | severity | platform | device | nodes | hostlist | where | message |",
                  "|---|---|---|---|---:|---|---|---|"]
    for group in groups:
        lines.append(f"| {_md(group.code)} | {group.severity} | {_md(_platform_name(group))} | {_md(group.device or '')} "
                     f"| {len(group.nodes)} | `{compress(group.nodes)}` | {_md(group.where)} | {_md(_messages(group))} |")
    if fleet.findings_not_grouped:
        lines += ["", _md(_not_grouped(fleet.findings_not_grouped)) + "."]
    if fleet.domains is not None:
        lines += ["", "## NVLink domains", "", _md(_domains_headline(fleet)) + ".", ""]
        lines += [f"- {_md(line)}" for line in _domains_lines(fleet)]
    elif fleet.runs.leaves is not None:
        lines += ["", "## NVLink domains", "", _md(_no_domains_line(fleet)) + "."]
    if fleet.acceptance.read:
        lines += ["", "## Acceptance runs", "", _md(_acceptance_headline(fleet)) + ".", ""]
        lines += ["  " * level + f"- {_md(line)}" for level, line in _acceptance_lines(fleet)]
    if fleet.problems:
        lines += ["", "## Reports not counted", ""]
        lines += [f"- {_md(d.format())}" for d in fleet.problems]
        if fleet.problems_dropped:
            lines.append(f"- and {fleet.problems_dropped} more")
    return "\n".join(lines) + "\n"
