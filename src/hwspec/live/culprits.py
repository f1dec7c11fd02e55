"""Which node, NIC or leaf is slow in every acceptance run it joins (A105, `hwspec fleet-report`).

A fleet's acceptance plan runs nccl-tests over many groupings of its nodes (each node alone,
pairs within a leaf, pairs across the spine, one run per rail, each NVLink domain), so that
every node, NIC and leaf takes part in several runs with different partners. `RunTally` counts
the runs (`hwspec.live.runs.Run`, read from the reports' `acceptance` records) and keeps, for
each subject, whether every run it joined so far was slow:

* a node: every run naming its host;
* a NIC (GPU i and NIC i of a host, "rail i"): every run of one GPU per node, all on device i,
  over two hosts or more;
* a leaf (with the cluster's `LeafPlan`, `--cluster`): every run over the network naming a host
  under it: a run of two hosts or more, unless they share an NVLink domain and every judged
  size was limited by NVLink (the run never left the domain).

Only runs with a judged size count (`slow` or `within`); a run that names no host counts in the
tallies but points at no one. `judge()` names a subject (A105, drift) when every one of its runs
was slow, it joined two runs or more, and they do not come down to one other party: a node or
NIC had two partners or more (other hosts of its runs), no one node of a leaf joined all of the
leaf's runs. Nothing is named when no run at all was within its band (the fault is what every
run shares). A named leaf's nodes and NICs, and a named NIC's node, are not named again: the
narrower finding explains them. The subjects slow in every run they joined that are not named
(one run, one partner: a pair run alone cannot tell which of its two nodes is slow) are listed
as such.

Memory: the host names of the judged runs, the NICs that joined single-GPU runs, and for each
subject still slow in every run a fixed-size tally (runs, up to `MAX_PARTNERS_KEPT` partners,
its first slow run; for a leaf, the nodes common to all its runs); a subject with a run within
its band keeps only its name. Plus two 16-byte digests per run (which run it is: its label,
collective, hosts and devices; and what it said), so that a run read twice is counted once, and
one read again with other results is told apart (a conflict, `add` says where the first was
read). Never a whole record; time is linear in the runs' hosts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from hwspec.diagnostics import Code, Diagnostic, Severity
from hwspec.hostlist import compress
from hwspec.live.cliques import short
from hwspec.live.runs import OUTCOMES, Run

MAX_PARTNERS_KEPT = 3
"""Partners kept per subject: two tell a subject from its partners; the third is shown."""


@dataclass(frozen=True)
class LeafPlan:
    """The cluster's leaf groups (`ClusterTopology.leaf_groups`: a leaf, or a pod of rail
    leaves): `names[i]` holds the hosts `members[i]` (short form); from the cluster `file`.
    `domains` are the hosts of each multi-node NVLink domain (none without `nvlink_domain:`)."""

    file: str
    names: tuple[str, ...]
    members: tuple[tuple[str, ...], ...]
    domains: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class Example:
    """A slow run as a finding names it: its label and collective, and the result file and line
    of its first size below the band."""

    label: str
    collective: str
    file: str
    line: int


class Suspect:
    """A node or NIC slow in every run it joined so far: how many runs, up to MAX_PARTNERS_KEPT
    of its partners (in the order met), whether there were more, and its first slow run."""

    __slots__ = ("first", "more", "partners", "runs")

    def __init__(self, first: Example) -> None:
        self.runs = 0
        self.partners: tuple[str, ...] = ()
        self.more = False
        self.first = first

    def joined(self, hosts: Sequence[str], me: str) -> None:
        """One more slow run, over `hosts` (`me` among them)."""
        self.runs += 1
        for other in hosts[:MAX_PARTNERS_KEPT + 1]:  # enough to find a new partner among the first ones
            if other != me and other not in self.partners:
                if len(self.partners) == MAX_PARTNERS_KEPT:
                    self.more = True
                    break
                self.partners += (other,)
        if len(hosts) - 1 > MAX_PARTNERS_KEPT:
            self.more = True


class LeafSuspect:
    """A leaf whose every network run so far was slow: how many, the nodes of it that joined all
    of them, and its first slow run."""

    __slots__ = ("common", "first", "runs")

    def __init__(self, first: Example, hosts: Sequence[str]) -> None:
        self.runs = 0
        self.common = frozenset(hosts)
        self.first = first

    def joined(self, hosts: Sequence[str]) -> None:
        self.runs += 1
        if self.common:
            self.common = self.common.intersection(hosts)


@dataclass(frozen=True)
class Culprit:
    """A subject named by A105: `kind` node, nic or leaf; `subject` as the finding names it;
    `hosts` the node (or the leaf's nodes); `device` the NIC's device number."""

    kind: str
    subject: str
    hosts: tuple[str, ...]
    device: int | None
    runs: int
    partners: tuple[str, ...]
    more_partners: bool
    first: Example
    diagnostic: Diagnostic


@dataclass(frozen=True)
class Judgement:
    """What the runs add up to: the `culprits` (leaves, then NICs, then nodes); the subjects slow
    in every run they joined but not named (`unnamed_*`; NICs as (host, device)); `pair_alone`
    when such a node joined one run with one partner; `everything_slow` when no judged run was
    within its band (nothing can be named); the hosts the cluster does not list."""

    culprits: tuple[Culprit, ...]
    unnamed_nodes: tuple[str, ...]
    unnamed_nics: tuple[tuple[str, int], ...]
    unnamed_leaves: tuple[str, ...]
    pair_alone: bool
    everything_slow: bool
    not_in_cluster: tuple[str, ...]


K = TypeVar("K")


def _digest(values: list[object]) -> bytes:
    return hashlib.blake2b(json.dumps(values).encode(), digest_size=16).digest()


class RunTally:
    """Acceptance runs read so far, tallied by outcome and by node, NIC and leaf (module docstring)."""

    def __init__(self, leaves: LeafPlan | None = None) -> None:
        self.leaves = leaves
        self._leaf_of = {host: i for i, hosts in enumerate(leaves.members) for host in hosts} if leaves else {}
        self._domain_of = {host: d for d, hosts in enumerate(leaves.domains) for host in hosts} if leaves else {}
        self.outcomes = dict.fromkeys(OUTCOMES, 0)
        self.duplicates = 0
        self.conflicts = 0
        self.without_hosts = 0
        self.nodes: dict[str, Suspect | None] = {}
        self.nics: dict[tuple[str, int], Suspect | None] = {}
        self.leaf_suspects: dict[int, LeafSuspect | None] = {}
        self._seen: dict[bytes, tuple[bytes, str]] = {}  # run -> (digest of all it said, where it was read)
        self._judgement: Judgement | None = None

    @property
    def read(self) -> int:
        return sum(self.outcomes.values())

    def add(self, run: Run, source: str = "") -> str | None:
        """Count `run`, read from `source`, unless a run with its label, collective, hosts and
        devices was counted already: then None when that one said the same (a duplicate), else
        where it was read (a conflict: the first one read stays counted)."""
        key = _digest([run.label, run.collective, run.hosts, run.devices])
        said = _digest([run.gpus_per_node, run.outcome, run.over_nvlink, run.below])
        first = self._seen.get(key)
        if first is not None:
            if first[0] == said:
                self.duplicates += 1
                return None
            self.conflicts += 1
            return first[1]
        self._seen[key] = (said, source)
        self._count(run)
        return None

    def _count(self, run: Run) -> None:
        """Count a run read for the first time, by outcome and by node, NIC and leaf."""
        self._judgement = None
        self.outcomes[run.outcome] += 1
        if run.outcome == "unchecked":
            return
        if not run.hosts:
            self.without_hosts += 1
            return
        example = Example(run.label, run.collective, *run.below) if run.below is not None else None
        for host in run.hosts:
            _count(self.nodes, host, example, run.hosts, host)
        if run.gpus_per_node == 1 and len(run.devices) == 1 and len(run.hosts) > 1:
            for host in run.hosts:
                _count(self.nics, (host, run.devices[0]), example, run.hosts, host)
        if self.leaves is not None and len(run.hosts) > 1 and not (run.over_nvlink and self._one_domain(run.hosts)):
            self._count_leaves(run.hosts, example)

    def _one_domain(self, hosts: tuple[str, ...]) -> bool:
        """Whether `hosts` are all in one NVLink domain of the cluster."""
        domains = {self._domain_of.get(short(host), -1 - i) for i, host in enumerate(hosts)}  # a host in none: a domain of its own
        return len(domains) == 1

    def _count_leaves(self, hosts: tuple[str, ...], example: Example | None) -> None:
        by_leaf: dict[int, list[str]] = {}
        for host in hosts:
            leaf = self._leaf_of.get(short(host))
            if leaf is not None:
                by_leaf.setdefault(leaf, []).append(short(host))
        for leaf, members in by_leaf.items():
            if example is None:
                self.leaf_suspects[leaf] = None
                continue
            if leaf not in self.leaf_suspects:
                self.leaf_suspects[leaf] = LeafSuspect(example, members)
            suspect = self.leaf_suspects[leaf]
            if suspect is not None:
                suspect.joined(members)

    # ------------------------------------------------------------------ judging

    def judge(self) -> Judgement:
        """The culprits and the unnamed subjects (module docstring), in a fixed order."""
        if self._judgement is None:
            self._judgement = self._judge()
        return self._judgement

    def _judge(self) -> Judgement:
        everything_slow = self.outcomes["within"] == 0
        nodes = sorted((host, s) for host, s in self.nodes.items() if s is not None)
        nics = sorted((key, s) for key, s in self.nics.items() if s is not None)
        leaves = sorted((leaf, s) for leaf, s in self.leaf_suspects.items() if s is not None)
        named_leaves = {leaf: s for leaf, s in leaves if not everything_slow and s.runs >= 2 and not s.common}
        under_leaf = {host for leaf in named_leaves for host in self._members(leaf)}
        named_nics = {key: s for key, s in nics if not everything_slow and _told_apart(s) and short(key[0]) not in under_leaf}
        explained = under_leaf | {short(host) for host, _ in named_nics}  # nodes a narrower culprit names
        named_nodes = {host: s for host, s in nodes if not everything_slow and _told_apart(s) and short(host) not in explained}
        culprits = ([self._leaf_culprit(leaf, s) for leaf, s in named_leaves.items()]
                    + [_nic_culprit(host, device, s) for (host, device), s in named_nics.items()]
                    + [_node_culprit(host, s) for host, s in named_nodes.items()])
        unnamed_nodes = [(host, s) for host, s in nodes if host not in named_nodes and short(host) not in explained]
        suspected = {host for host, _ in nodes}  # a node slow in every run covers its NICs' runs
        unnamed_nics = [key for key, _ in nics
                        if key not in named_nics and key[0] not in suspected and short(key[0]) not in under_leaf]
        unnamed_leaves = [self._name(leaf) for leaf, _ in leaves if leaf not in named_leaves]
        return Judgement(
            tuple(culprits), tuple(host for host, _ in unnamed_nodes), tuple(unnamed_nics), tuple(unnamed_leaves),
            pair_alone=any(s.runs == 1 and len(s.partners) == 1 and not s.more for _, s in unnamed_nodes),
            everything_slow=everything_slow and self.outcomes["slow"] > 0,
            not_in_cluster=tuple(host for host in self.nodes if self.leaves is not None and short(host) not in self._leaf_of))

    def _name(self, leaf: int) -> str:
        assert self.leaves is not None
        return self.leaves.names[leaf]

    def _members(self, leaf: int) -> tuple[str, ...]:
        assert self.leaves is not None
        return self.leaves.members[leaf]

    def _leaf_culprit(self, leaf: int, suspect: LeafSuspect) -> Culprit:
        assert self.leaves is not None
        name, hosts = self.leaves.names[leaf], self.leaves.members[leaf]
        message = (f"leaf {name} of {self.leaves.file} ({compress(hosts)}): each of the {suspect.runs} network runs "
                   f"that joined its nodes was below its band, and no one node joined them all; {_first(suspect.first)}")
        hint = "look at the leaf switch, its uplinks and its cables ('ibdiagnet'), before its nodes"
        return Culprit("leaf", f"leaf {name}", hosts, None, suspect.runs, (), False, suspect.first,
                       _diagnostic(suspect.first, message, hint))


def _count(table: dict[K, Suspect | None], key: K, example: Example | None, hosts: tuple[str, ...], me: str) -> None:
    """One more run of subject `key` (`me` among `hosts`): slow (`example` its first size below
    the band) or within (None: the subject is cleared for good, only its name is kept)."""
    if example is None:
        table[key] = None
        return
    if key not in table:
        table[key] = Suspect(example)
    suspect = table[key]
    if suspect is not None:
        suspect.joined(hosts, me)


def _told_apart(suspect: Suspect) -> bool:
    """Two runs or more, with two partners or more: not the fault of one partner."""
    return suspect.runs >= 2 and len(suspect.partners) >= 2


def _partners(suspect: Suspect) -> str:
    return ", ".join(suspect.partners) + (" and others" if suspect.more else "")


def _first(example: Example) -> str:
    return f"first: {example.collective} at {example.label}"


def _diagnostic(example: Example, message: str, hint: str) -> Diagnostic:
    """A105 at the result file and line of the subject's first size below the band."""
    return Diagnostic(example.file, example.line, 1, Severity.ERROR, Code.SLOW_IN_EVERY_RUN, message, hint,
                      Code.SLOW_IN_EVERY_RUN.printed_name)


def _node_culprit(host: str, suspect: Suspect) -> Culprit:
    message = (f"node {host}: below its band in each of the {suspect.runs} acceptance runs it joined, with partners "
               f"{_partners(suspect)}; {_first(suspect.first)}")
    hint = f"look at {host} itself: 'hwspec diff --live' on it, and the suspects its runs' A101 findings name"
    return Culprit("node", f"node {host}", (host,), None, suspect.runs, suspect.partners, suspect.more, suspect.first,
                   _diagnostic(suspect.first, message, hint))


def _nic_culprit(host: str, device: int, suspect: Suspect) -> Culprit:
    subject = nic_name(host, device)
    message = (f"{subject}: below its band in each of the {suspect.runs} one-GPU-per-node runs it joined, with partners "
               f"{_partners(suspect)}; {_first(suspect.first)}")
    hint = (f"look at GPU {device} and NIC {device} of {host}: their PCIe links (D105), the port's speed and state "
            "(D110, D112), GPUDirect RDMA (D109), the cable")
    return Culprit("nic", subject, (host,), device, suspect.runs, suspect.partners, suspect.more, suspect.first,
                   _diagnostic(suspect.first, message, hint))


def nic_name(host: str, device: int) -> str:
    """`gpu003 device 3 (rail 3)`: GPU `device` of `host` and its NIC."""
    return f"{host} device {device} (rail {device})"
