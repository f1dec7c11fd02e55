"""The acceptance plan of a cluster: rounds of benchmark runs, where the runs of one round share
no link, so each measures its own links at full speed and all of a round runs at once.

Round kinds, in the order they run (`AcceptancePlan.sets`):

- **node** (1 round): every node alone, all its GPUs. A run stays inside its node (NVLink, PCIe,
  host memory), so runs on different nodes share nothing.
- **domain** (1 round, clusters whose `nvlink_domain` spans nodes): each NVLink domain whole.
  A run uses its own domain's NVLink switch trays only (the cluster's nccl.conf sets
  NCCL_MNNVL_ENABLE=1, so NCCL fails rather than falls back to the network); domains are
  disjoint.
- **leaf-pair** (0-3 rounds): pairs of nodes under one leaf group (`ClusterTopology.leaf_groups`:
  a leaf, or a rail-optimized pod), in the ring order of the group's nodes 0..n-1: round A pairs
  (2k, 2k+1), round B (2k+1, 2k+2) and, for an even n >= 4, (n-1, 0); round C (n-1, 0) for an
  odd n >= 3. Every node of a group of n >= 3 gets two different partners. A pair's traffic
  goes through its leaves only; every NIC port is its own node's and leaves do not block (as the
  fabric model has it), so pairs share no port.
- **rail** (one round per rail, rail-optimized fabrics): for rail i, GPU i's NIC (collective
  NIC i) of every node of a pod, one rank per node: a run is the pod's leaf of rail i and
  nothing else, and the pods' rail-i leaves are different switches.
- **spine-pair** (S rounds, fabrics with a spine tier and several leaf groups): each node paired
  with a node under another leaf group. A node's traffic leaves its group through its leaves'
  uplinks, so a round takes at most m nodes of any group, m = max(1, floor(U x s_up / (p x s_nic)))
  where U is a leaf's uplinks, s_up their speed, s_nic a NIC's speed and p the NIC ports a
  node has on one leaf (1 on a rail leaf, the node's NICs on a Clos leaf): m cross-spine nodes
  fill a leaf's uplinks and no more. The spine switches have a port per uplink and do not block.
  Round r takes slots [r w, (r + 1) w) of every group (`_spine_window`) and pairs node j with
  node j + T // 2 of their T in node order (an odd last node joins the last pair): no group gives
  more than w and the others give at least as many, so partners are always under different groups.

No node is in two runs of one round. Network runs of a cluster with multi-node NVLink domains set
NCCL_MNNVL_ENABLE=0, or NCCL would carry them over NVLink and leave the network untested.

**Rounds**: R = 1 + D + P + K + S, independent of the node count N:

- D = 1 with NVLink domains of 2 nodes or more, else 0;
- P = [some group has >= 2 nodes] + [some group has >= 3] + [some group has an odd count >= 3];
- K = the rails (collective NICs per node) of a rail-optimized fabric that have a run: a pod of
  >= 2 nodes whose NIC i a rank can select by name (an IB verbs device, or a TCP interface);
- S = ceil(n / w), w = min(m, n, N - n), n the largest leaf group's node count, with a spine
  tier and >= 2 leaf groups, else 0. A leaf group holds at most a leaf's down ports, so S is
  bounded by the switch, not by N (for full leaves, S = ceil(oversubscription)).

Run sets are described compactly: a `RunSet` is the runs of one round that differ only in their
nodes, held as ranges of node indices, so a 65,536-node plan is 13 run sets.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Literal

from hwspec.formats.limits import GenerationError
from hwspec.formats.nccl_tree import collective_library, net_name
from hwspec.formats.transports import facts
from hwspec.model.cluster import Cluster, Fabric
from hwspec.model.node import Nic, Platform
from hwspec.topology.cluster import ClusterTopology

Scope = Literal["node", "domain", "leaf-pair", "rail", "spine-pair"]
Layout = Literal["consecutive", "halves"]

GIB = 1 << 30
MAX_MESSAGE_BYTES = 16 * GIB
"""The largest nccl-tests message size the runs sweep to (`-e`), where the GPUs hold it."""
NCCL_TESTS = ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf", "sendrecv_perf")
"""The nccl-tests (and rccl-tests) programs every run runs, in order."""
NVBANDWIDTH_TESTS = ("host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce")
"""The nvbandwidth test cases (`-t`) a node run of an NVIDIA node runs, in order."""


def max_message_bytes(platforms: Iterable[Platform]) -> int:
    """`-e` of the nccl-tests runs on these node platforms, bytes: MAX_MESSAGE_BYTES, or less
    where a GPU's HBM cannot hold the buffers. nccl-tests allocates a send, a receive and (with
    its default `-c 1`) an expected buffer of the largest size, and keeps 1 GiB for the rest:
    above (HBM - 1 GiB) / 3 it lowers `-e` itself ("Reducing maxBytes"), so the runs of a
    platform would not compare. The size is the largest power of two (so that `-b 8 -f 2` ends
    on it) at most min(MAX_MESSAGE_BYTES, (HBM - 1 GiB) / 3), over the smallest HBM of the GPUs;
    MAX_MESSAGE_BYTES when no HBM is known (nccl-tests then lowers it itself, and says so)."""
    known = [g.hbm_capacity for p in platforms for g in p.gpus if g.hbm_capacity is not None]
    if not known:
        return MAX_MESSAGE_BYTES
    fits = (min(known) - GIB) // 3
    if fits < 8:
        return 8
    return min(MAX_MESSAGE_BYTES, 1 << (fits.bit_length() - 1))


def size_text(size: int) -> str:
    """nccl-tests' size syntax: `16G`, `512M`, `64K` or a byte count."""
    for suffix, unit in (("G", GIB), ("M", 1 << 20), ("K", 1 << 10)):
        if size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


@dataclass(frozen=True, slots=True)
class RunSet:
    """Runs of one round that differ only in their nodes: one line of plan.tsv.

    `spans` are the nodes (cluster node indices), ascending and disjoint; the runs are cut from
    them by `layout`: "consecutive" takes `size` nodes at a time; "halves" pairs the node at
    position j with the one at position j + T // 2 (T nodes; an odd last node joins the last
    pair). Every run has `ranks_per_node` ranks on each node, on GPUs `gpus` (indices by bus id),
    using the collective NICs `nics` (names; empty: no network), with `env` set for every rank
    over the node's generated environment, and runs `tests` ("nccl", "nvbandwidth")."""

    round: int
    """Index of the round, from 0."""
    scope: Scope
    label: str
    """The results directory of the round's runs (`r03-leaf-pair`); each run writes into
    `<label>/<its first node's host name>/`."""
    spans: tuple[range, ...]
    size: int
    """Nodes per run (a "halves" run: 2, or 3 for the odd last node)."""
    layout: Layout
    ranks_per_node: int
    gpus: tuple[int, ...]
    nics: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    tests: tuple[str, ...]

    @property
    def node_count(self) -> int:
        """Nodes in all of the set's runs."""
        return sum(len(span) for span in self.spans)

    @property
    def run_count(self) -> int:
        """Runs in the set."""
        return self.node_count // self.size

    def nodes(self) -> list[int]:
        """The node indices, ascending."""
        return [node for span in self.spans for node in span]

    def runs(self) -> Iterator[tuple[int, ...]]:
        """Each run's nodes, ascending."""
        nodes = self.nodes()
        if self.layout == "consecutive":
            for start in range(0, len(nodes) - self.size + 1, self.size):
                yield tuple(nodes[start:start + self.size])
            return
        half = len(nodes) // 2
        for j in range(half):
            extra = (nodes[-1],) if len(nodes) % 2 and j == half - 1 else ()
            yield tuple(sorted((nodes[j], nodes[j + half], *extra)))


@dataclass(frozen=True, slots=True)
class SpineRounds:
    """How many cross-spine rounds a fabric needs: `largest` nodes in the largest leaf group
    (n), `others` nodes outside it (N - n), `per_group` cross-spine nodes a leaf group's uplinks
    carry at once (m), `width` = min(m, n, N - n) (w), `rounds` = ceil(n / w)."""

    largest: int
    others: int
    per_group: int
    width: int

    @property
    def rounds(self) -> int:
        return -(-self.largest // self.width)


@dataclass(frozen=True, slots=True)
class RoundCounts:
    """The rounds of each kind (the module's formula): node, domain (D), leaf-pair (P), rail (K),
    spine-pair (S)."""

    node: int
    domain: int
    leaf: int
    rail: int
    spine: int

    @property
    def total(self) -> int:
        return self.node + self.domain + self.leaf + self.rail + self.spine


@dataclass(frozen=True, slots=True)
class AcceptancePlan:
    """A cluster's acceptance runs: `sets` in round order (a round may have several), the round
    counts the formula gives, the cross-spine figures when there is a spine round, and the
    message size of every nccl-tests run (`max_bytes`)."""

    sets: tuple[RunSet, ...]
    counts: RoundCounts
    spine: SpineRounds | None
    max_bytes: int

    @property
    def rounds(self) -> int:
        return 1 + max((s.round for s in self.sets), default=-1)


def spans_of(nodes: Iterable[int]) -> tuple[range, ...]:
    """Ascending distinct node indices as maximal ranges."""
    spans: list[range] = []
    start = stop = -1
    for node in nodes:
        if node != stop:
            if stop > start:
                spans.append(range(start, stop))
            start = node
        stop = node + 1
    if stop > start:
        spans.append(range(start, stop))
    return tuple(spans)


def _joined(spans: Iterable[range]) -> tuple[range, ...]:
    """Ascending disjoint ranges with touching ones joined."""
    out: list[range] = []
    for span in spans:
        if not span:
            continue
        if out and out[-1].stop == span.start:
            out[-1] = range(out[-1].start, span.stop)
        else:
            out.append(span)
    return tuple(out)


def uniform_gpus(cluster: Cluster) -> int:
    """GPUs per node, the same on every node (runs take a rank count per node); refused otherwise."""
    counts = {group.gpus_per_node for group in cluster.groups}
    if len(counts) != 1:
        raise GenerationError(f"{cluster.file}: the acceptance runs need the same number of GPUs on every node; "
                              f"node platforms have {sorted(counts)}")
    return counts.pop()


def spine_rounds(topology: ClusterTopology) -> SpineRounds | None:
    """The cross-spine figures, or None when no traffic crosses a spine (no spine tier, or one
    leaf group)."""
    fabric = topology.platform.fabric
    groups = topology.leaf_groups
    if fabric is None or not fabric.spine_count or len(groups) < 2:
        return None
    largest = max(len(nodes) for _, nodes in groups)
    others = topology.platform.node_count - largest
    per_group = min(_uplink_nodes(fabric, leaf.uplinks, leaf.rail) for leaf in fabric.leaves)
    return SpineRounds(largest, others, per_group, min(per_group, largest, others))


def _uplink_nodes(fabric: Fabric, uplinks: int, rail: int | None) -> int:
    """Nodes whose traffic a leaf's uplinks carry at full speed at once (at least 1)."""
    ports = 1 if rail is not None else fabric.nics_per_node
    return max(1, math.floor(uplinks * fabric.uplink_speed / (ports * fabric.nic_speed) + 1e-9))


def round_counts(topology: ClusterTopology, spine: SpineRounds | None) -> RoundCounts:
    """The formula's round counts for a cluster (the module's docstring), from the fabric alone;
    `spine` is its `spine_rounds`."""
    cluster = topology.platform
    domains = cluster.nvlink_domains
    sizes = [len(nodes) for _, nodes in topology.leaf_groups]
    leaf = (any(n >= 2 for n in sizes) + any(n >= 3 for n in sizes) + any(n >= 3 and n % 2 for n in sizes))
    fabric = cluster.fabric
    rails = 0
    if fabric is not None and fabric.topology == "rail-optimized" and any(n >= 2 for n in sizes):
        paired = [g for g in cluster.groups if _pod_share(topology, g.nodes) >= 2]  # found once, not once per rail
        rails = sum(any(_rail_selectable(g.platform, rail) for g in paired) for rail in range(fabric.nics_per_node))
    return RoundCounts(node=1, domain=int(domains is not None and domains.size >= 2 and cluster.node_count >= 2),
                       leaf=leaf, rail=rails, spine=spine.rounds if spine else 0)


def plan(topology: ClusterTopology) -> AcceptancePlan:
    """The acceptance plan of a cluster (the module's docstring). Raises GenerationError for a
    cluster whose node platforms differ in GPU count, or have none."""
    cluster = topology.platform
    gpus = uniform_gpus(cluster)
    if not gpus:
        raise GenerationError(f"{cluster.file}: the nodes have no GPUs to run acceptance tests on")
    every = tuple(range(gpus))
    nics = _nic_names(cluster)
    network = network_env(cluster)

    def run_set(scope: Scope, label: str, spans: Iterable[range], size: int = 2, layout: Layout = "consecutive",
                ranks: int = gpus, on: tuple[int, ...] = every, used: tuple[str, ...] = nics,
                env: tuple[tuple[str, str], ...] = network, tests: tuple[str, ...] = ("nccl",)) -> RunSet:
        return RunSet(-1, scope, label, _joined(spans), size, layout, ranks, on, used, env, tests)

    rounds: list[list[RunSet]] = [[]]
    for group in cluster.groups:  # one set per run of node groups with the same tests
        tests = ("nccl", "nvbandwidth") if collective_library(group.platform) == "nccl" else ("nccl",)
        node = rounds[0]
        if node and node[-1].tests == tests:
            node[-1] = replace(node[-1], spans=_joined((*node[-1].spans, group.nodes)))
        else:
            node.append(run_set("node", "node", (group.nodes,), size=1, used=(), env=(), tests=tests))
    domains = cluster.nvlink_domains
    if domains is not None and domains.size >= 2:
        sizes = sorted({len(domains.nodes(d)) for d in range(domains.count)} - {1}, reverse=True)
        rounds.append([run_set("domain", "domain", (domains.nodes(d) for d in range(domains.count)
                                                    if len(domains.nodes(d)) == size), size=size, used=(), env=())
                       for size in sizes])
    groups = [nodes for _, nodes in topology.leaf_groups if len(nodes) >= 2]

    def wrap_pairs(odd: bool) -> list[range]:  # (n-1, 0) of each group of n >= 3 (even: n >= 4) nodes
        return [end for g in groups if len(g) >= 3 + (not odd) and len(g) % 2 == odd for end in (g[:1], g[-1:])]

    rounds.append([run_set("leaf-pair", "leaf-pair-a", (g[:len(g) // 2 * 2] for g in groups))])
    rounds.append([run_set("leaf-pair", "leaf-pair-b", (g[1:1 + (len(g) - 1) // 2 * 2] for g in groups)),
                   run_set("leaf-pair", "leaf-pair-b", wrap_pairs(odd=False))])
    rounds.append([run_set("leaf-pair", "leaf-pair-c", wrap_pairs(odd=True))])
    fabric = cluster.fabric
    if fabric is not None and fabric.topology == "rail-optimized":
        for rail in range(fabric.nics_per_node):
            rounds.append([run_set("rail", f"rail{rail}", spans, size=size, ranks=1, on=(gpu,), used=(name,), env=env)
                           for (size, env, name, gpu), spans in _rail_runs(topology, rail, network).items()])
    spine = spine_rounds(topology)
    if spine is not None:
        rounds.extend([run_set("spine-pair", f"spine-pair-{window}", _spine_window(topology, spine, window),
                               layout="halves")] for window in range(spine.rounds))
    sets: list[RunSet] = []
    for found in rounds:
        found = [s for s in found if s.run_count]
        index = len({s.round for s in sets})
        sets.extend(replace(s, round=index, label=f"r{index:02d}-{s.label}") for s in found)
    return AcceptancePlan(tuple(sets), round_counts(topology, spine), spine, max_message_bytes(cluster.node_platforms))


def network_env(cluster: Cluster) -> tuple[tuple[str, str], ...]:
    """What network runs set: NCCL_MNNVL_ENABLE=0 where NVLink domains span nodes (NCCL would
    carry a run inside a domain over NVLink, and leave the network untested), else nothing."""
    domains = cluster.nvlink_domains
    return (("NCCL_MNNVL_ENABLE", "0"),) if domains is not None and domains.size > 1 else ()


def _nic_names(cluster: Cluster) -> tuple[str, ...]:
    """The collective NICs' names when every node platform names the same ones, else ("all",)."""
    names = {tuple(net_name(n) or n.id for n in p.collective_nics) for p in cluster.node_platforms}
    return names.pop() if len(names) == 1 else ("all",)


def rail_nic(platform: Platform, rail: int) -> Nic | None:
    """Collective NIC `rail` (by bus id), the one on leaf `rail` of its pod; None without it."""
    nics = platform.collective_nics
    return nics[rail] if rail < len(nics) else None


def rail_gpu(platform: Platform, nic: Nic, rail: int) -> int:
    """The GPU a rail run uses: the lowest-indexed GPU `nic` serves, else GPU `rail` (modulo the GPUs)."""
    served = [platform.gpu_by_id[g].index for g in nic.gpus if g in platform.gpu_by_id]
    return min(served) if served else rail % len(platform.gpus)


def rail_env(platform: Platform, nic: Nic, gpu: int) -> tuple[tuple[str, str], ...] | None:
    """What confines a rank to GPU `gpu` and NIC `nic`: the device list (CUDA_VISIBLE_DEVICES, or
    HIP_VISIBLE_DEVICES on AMD), LOCAL_RANK (bind.sh binds the rank to that GPU's NUMA node), and
    the NIC by exact name (NCCL_IB_HCA for IB verbs, NCCL_SOCKET_IFNAME for TCP); None when the
    NIC has no name that selects it (a net plugin, or a NIC the platform does not name)."""
    net = facts(nic.transport)
    if net.ib_verbs and nic.device:
        select = ("NCCL_IB_HCA", f"={nic.device}:{platform.rdma_port(nic)}")
    elif net.net == "Socket" and nic.interface:
        select = ("NCCL_SOCKET_IFNAME", f"={nic.interface}")
    else:
        return None
    visible = "HIP_VISIBLE_DEVICES" if collective_library(platform) == "rccl" else "CUDA_VISIBLE_DEVICES"
    return ((visible, str(gpu)), ("LOCAL_RANK", str(gpu)), select)


RailKey = tuple[int, tuple[tuple[str, str], ...], str, int]
"""A rail run's nodes per run, env, NIC name and GPU: what its plan.tsv line shares."""


def _rail_runs(topology: ClusterTopology, rail: int, network: tuple[tuple[str, str], ...]) -> dict[RailKey, list[range]]:
    """The runs of rail `rail`: one per pod and node group (whose platform names the NIC), of
    2 nodes or more, by what they share, in node order. A node platform whose NIC `rail` has no
    name a rank can select it by (`rail_env`) has no rail run."""
    pods = topology.leaf_groups
    runs: dict[RailKey, list[range]] = {}
    for group in topology.platform.groups:
        nic = rail_nic(group.platform, rail)
        env = rail_env(group.platform, nic, rail_gpu(group.platform, nic, rail)) if nic is not None and group.count else None
        if nic is None or env is None:
            continue
        shared = ((*env, *network), net_name(nic) or nic.id, rail_gpu(group.platform, nic, rail))
        start, stop = group.nodes.start, group.nodes.stop
        for _, pod in pods[topology.leaf_group_of(start):topology.leaf_group_of(stop - 1) + 1]:  # the group's pods
            nodes = range(max(pod.start, start), min(pod.stop, stop))
            if len(nodes) >= 2:
                runs.setdefault((len(nodes), *shared), []).append(nodes)
    return runs


def _rail_selectable(platform: Platform, rail: int) -> bool:
    """Whether a rank can be confined to NIC `rail` of `platform` (`rail_env`)."""
    nic = rail_nic(platform, rail)
    return nic is not None and rail_env(platform, nic, 0) is not None


def _pod_share(topology: ClusterTopology, nodes: range) -> int:
    """The most nodes of `nodes` in one pod (leaf group)."""
    if not nodes:
        return 0
    first, last = topology.leaf_group_of(nodes.start), topology.leaf_group_of(nodes.stop - 1)
    return max(len(range(max(pod.start, nodes.start), min(pod.stop, nodes.stop)))
               for _, pod in topology.leaf_groups[first:last + 1])


def _spine_window(topology: ClusterTopology, spine: SpineRounds, window: int) -> list[range]:
    """Round `window`'s cross-spine nodes: slots [window x w, (window + 1) x w) of every leaf
    group, a slot s of a group of g nodes being its node s mod g (a group smaller than the
    largest takes its nodes again). Each group gives at most w nodes, and the groups other than
    any one give at least as many as it, so pairing position j with j + T // 2 of the ascending
    list always pairs nodes of two groups."""
    slots = range(window * spine.width, min(spine.largest, (window + 1) * spine.width))
    spans: list[range] = []
    for _, nodes in topology.leaf_groups:
        if slots.stop <= len(nodes):
            spans.append(nodes[slots.start:slots.stop])
        else:
            picked = sorted({s % len(nodes) for s in slots})
            spans.extend(nodes[span.start:span.stop] for span in spans_of(picked))
    return spans
