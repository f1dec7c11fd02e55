"""Cluster rules: the backend fabric as wired, names and sizes. Run once per cluster file;
the node platforms' own rules run once per node platform, not once per node."""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import chain

from hwspec.formats.limits import (
    HOST_NAME,
    HOST_NAME_LINES,
    HOST_NAME_SYNTAX,
    IPV4_LINES,
    all_lines,
    host_name_fault,
    is_ip_address,
    k8s_name,
)
from hwspec.model.cluster import NodeGroup
from hwspec.rules import ClusterContext, Finding, rule
from hwspec.text import visible
from hwspec.topology import topology_of
from hwspec.topology.node import served_field

from ._common import POLICY_DOC, gbit, number, refused_names, unknown_nccl_names


def _tbit(rate: float) -> str:
    return f"{number(rate * 8 / 1e12)} Tb/s"


@rule("HW801", "rail-alignment", "error", scope="cluster",
      hint="cable NIC i of every node to rail i, or declare the fabric not rail-optimized")
def rail_alignment(ctx: ClusterContext) -> Iterator[Finding]:
    """On a rail-optimized fabric, local rank i of every node uses NIC i, the NIC on rail i.

    Rails are wired by NIC index: NIC i of every node goes to the leaves of rail i. NCCL is
    told to keep rings on one NIC index (NCCL_CROSS_NIC=0); if a node type pairs GPU i with
    another NIC, or has a different number of NICs, its traffic for rank i lands on another
    rail and crosses the spine (or finds no path at all on a rail-only fabric)."""
    cluster = ctx.platform
    fabric = cluster.fabric
    if fabric is None or fabric.topology != "rail-optimized":
        return
    for index, group in enumerate(cluster.groups):
        platform, topology = group.platform, topology_of(group.platform)
        nics = topology.collective_nics
        if len(nics) != fabric.nics_per_node:
            yield ctx.finding(f"nodes[{index}] ({platform.name}) has {len(nics)} backend NICs, but the fabric has "
                              f"{fabric.nics_per_node} rails", at=("nodes", index, "platform"),
                              hint="every node of a rail-optimized cluster needs one NIC per rail")
            continue
        rail_of = {nic_id: position for position, nic_id in enumerate(nics)}
        for gpu in platform.gpus:
            rails = _rails_of_rank(gpu.index, len(platform.gpus), len(nics))
            wrong = next((n for n in topology.nics_of(gpu.id) if rail_of.get(n) not in rails), None)
            if wrong is not None:
                expected = f"rail {rails[0]}" if len(rails) == 1 else f"rails {rails[0]}-{rails[-1]}"
                yield ctx.finding(
                    f"{platform.name}: local rank {gpu.index} ({gpu.id}) uses {wrong}, which is on rail "
                    f"{rail_of[wrong]}, not {expected}", at=platform.locate(*served_field(platform, platform.nic_by_id[wrong], gpu.id)),
                    hint="pair GPU i with the i-th backend NIC by bus id, or use a Clos topology" if len(nics) == len(platform.gpus)
                    else "pair GPU i with the i-th group of backend NICs by bus id (GPUs with several NICs, or sharing "
                         "them), or use a Clos topology")


def _rails_of_rank(rank: int, gpus: int, rails: int) -> list[int]:
    """The rails local rank `rank` of `gpus` reaches when the node's `rails` NICs are dealt out
    in bus order: rank i's slice [i/gpus, (i+1)/gpus) of the NICs, rail r's [r/rails, (r+1)/rails);
    one rail each with one NIC per GPU, a block with several, a shared rail with fewer."""
    return [r for r in range(rails) if r * gpus < (rank + 1) * rails and rank * rails < (r + 1) * gpus]


@rule("HW802", "switch-ports", "error", scope="cluster",
      hint="lower hosts per leaf or uplinks, or use switches with more ports")
def switch_ports(ctx: ClusterContext) -> Iterator[Finding]:
    """No switch has more cables than ports: leaf hosts + uplinks, and the spine tier's uplinks.

    A design that needs more ports than a switch has cannot be cabled; the derived wiring
    would silently describe a fabric that does not exist."""
    fabric = ctx.platform.fabric
    if fabric is None:
        return
    overfull = [leaf for leaf in fabric.leaves if leaf.down_ports + leaf.uplinks > leaf.ports]
    if overfull:
        leaf = max(overfull, key=lambda l: l.down_ports + l.uplinks)
        yield ctx.finding(f"{len(overfull)} leaf switch(es) need more ports than they have: {leaf.id} carries "
                          f"{leaf.down_ports} NIC ports + {leaf.uplinks} uplinks on {leaf.ports} ports",
                          at=("backend", "leaf", "ports"),
                          hint="raise leaf ports, lower uplinks, or use more leaves (rail-optimized or clos)")
    if fabric.spine_count and fabric.spine_ports_used > fabric.spine_count * fabric.spine_ports:
        yield ctx.finding(f"the spine tier needs {fabric.spine_ports_used} ports, but {fabric.spine_count} spines x "
                          f"{fabric.spine_ports} ports = {fabric.spine_count * fabric.spine_ports}",
                          at=("backend", "spine"))


@rule("HW803", "oversubscription-declared", "error", scope="cluster",
      hint="write the oversubscription the wiring gives (downlink over uplink bandwidth), or change the wiring")
def oversubscription_declared(ctx: ClusterContext) -> Iterator[Finding]:
    """A declared leaf oversubscription equals the ratio of the wiring: downlink over uplink bandwidth.

    Capacity planning and the roofline's inter-node bounds read the declared figure; if the
    wiring says otherwise, one of them is wrong."""
    fabric = ctx.platform.fabric
    if fabric is None or fabric.declared_oversubscription is None:
        return
    actual = fabric.design_oversubscription
    declared = fabric.declared_oversubscription
    if actual is None and declared == 1:
        return  # a single tier is non-blocking: 1:1 is what it is
    if actual is None:
        yield ctx.finding(f"the backend declares {number(declared)}:1 oversubscription, but it has no spine tier "
                          f"(one leaf, or one leaf per rail): nothing is oversubscribed",
                          at=("backend", "oversubscription"))
    elif not math.isclose(actual, declared, rel_tol=0.01):
        leaf = fabric.leaves[0]
        yield ctx.finding(f"the backend declares {number(declared)}:1 oversubscription, but the leaves wire "
                          f"{leaf.ports - leaf.uplinks} x {gbit(fabric.nic_speed)} down and {leaf.uplinks} x "
                          f"{gbit(fabric.uplink_speed)} up: {number(actual)}:1", at=("backend", "oversubscription"))


@rule("HW804", "bisection-minimum", "error", scope="cluster",
      hint="add uplinks or spine switches, or lower the declared bisection minimum")
def bisection_minimum(ctx: ClusterContext) -> Iterator[Finding]:
    """The bisection bandwidth computed from the wiring meets the declared minimum.

    AlltoAll-heavy training (embedding exchange in recommendation models) is bound by
    bisection; a declared minimum is a promise the wiring must keep."""
    fabric = ctx.platform.fabric
    if fabric is None or fabric.declared_min_bisection is None:
        return
    if fabric.bisection < fabric.declared_min_bisection * (1 - 1e-9):
        yield ctx.finding(f"bisection bandwidth is {_tbit(fabric.bisection)} per direction, below the declared "
                          f"minimum of {_tbit(fabric.declared_min_bisection)}", at=("backend", "min_bisection"),
                          hint="add uplinks or spines, or lower the declared minimum")


def _clean_hosts(groups: tuple[NodeGroup, ...]) -> bool:
    """The common case, decided for all nodes at once: every hostname a lower-case RFC 1123 label and every
    address dotted-quad IPv4, none used twice."""
    names = list(chain.from_iterable(group.hostnames for group in groups))
    addresses = list(chain.from_iterable(group.addresses or () for group in groups))
    return (all_lines(HOST_NAME_LINES, names) and len(set(names)) == len(names)
            and all_lines(IPV4_LINES, addresses) and len(set(addresses)) == len(addresses))


@rule("HW805", "host-names", "error", scope="cluster", waivable=False,
      hint="give each node a host name and address of its own; names of lower-case letters, digits and '-' (at most 63)")
def host_names(ctx: ClusterContext) -> Iterator[Finding]:
    """Hostnames are unique lower-case RFC 1123 labels (what Kubernetes takes as a node name),
    and addresses are unique IPv4 or IPv6 addresses.

    Hostfiles, Slurm, Kubernetes and the rendezvous all key on names; a duplicate silently drops
    a node or double-books one, and a name Kubernetes refuses makes label-nodes.sh fail."""
    if _clean_hosts(ctx.platform.groups):
        return
    seen: dict[str, int] = {}
    addresses: dict[str, int] = {}
    node = 0
    for index, group in enumerate(ctx.platform.groups):
        for offset, name in enumerate(group.hostnames):
            if not HOST_NAME.fullmatch(name):
                yield ctx.finding(f"nodes[{index}]: hostname '{visible(name)}' of node {node + offset} is not a host name "
                                  f"Kubernetes accepts: {host_name_fault(name)}", at=("nodes", index, "hostname"),
                                  hint=f"{HOST_NAME_SYNTAX} (RFC 1123)")
                return
            if name in seen:
                yield ctx.finding(f"hostname '{name}' is used by node {seen[name]} and node {node + offset}",
                                  at=("nodes", index, "hostname"), hint="make the pattern depend on i or n")
                return
            seen[name] = node + offset
        for offset, address in enumerate(group.addresses or ()):
            if not is_ip_address(address):
                yield ctx.finding(f"nodes[{index}]: '{visible(address)}' is not an IP address", at=("nodes", index, "address"))
                return
            if address in addresses:
                yield ctx.finding(f"address {address} is used by node {addresses[address]} and node {node + offset}",
                                  at=("nodes", index, "address"))
                return
            addresses[address] = node + offset
        node += group.count


@rule("HW806", "world-size", "error", scope="cluster",
      hint="declare world_size as nodes x GPUs per node, or correct the node count")
def world_size(ctx: ClusterContext) -> Iterator[Finding]:
    """The declared world size equals nodes x GPUs per node.

    Launchers, the sharding planner and the batch size all derive from the world size."""
    cluster = ctx.platform
    if cluster.declared_world_size is not None and cluster.declared_world_size != cluster.world_size:
        parts = " + ".join(f"{g.count} x {g.gpus_per_node}" for g in cluster.groups)
        yield ctx.finding(f"world_size is declared as {cluster.declared_world_size}, but the nodes hold {parts} = "
                          f"{cluster.world_size} GPUs", at=("world_size",))


@rule("HW807", "backend-matches-nodes", "error", scope="cluster",
      hint="give the cluster's backend the transport and speed of the nodes' backend NICs")
def backend_matches_nodes(ctx: ClusterContext) -> Iterator[Finding]:
    """The backend network's transport and per-NIC speed match the nodes' backend NICs.

    The fabric is sized from its own speed; NCCL and the roofline use the NICs'. A 200 Gb/s
    NIC on a fabric declared at 100 Gb/s means one of the two is wrong."""
    fabric = ctx.platform.fabric
    if fabric is None:
        return
    for index, group in enumerate(ctx.platform.groups):
        for nic in group.platform.collective_nics:
            if nic.speed != fabric.nic_speed or nic.transport != fabric.transport:
                what = f"{gbit(nic.speed)} {nic.transport}" if nic.speed is not None else f"{nic.transport} of unknown speed"
                yield ctx.finding(f"nodes[{index}] ({group.platform.name}): {nic.id} is {what}, "
                                  f"the backend network is {gbit(fabric.nic_speed)} {fabric.transport}",
                                  at=("backend", "speed"))
                break


@rule("HW808", "clos-connectivity", "error", scope="cluster",
      hint="connect every leaf to every spine, or add the spine tier the leaves need")
def clos_connectivity(ctx: ClusterContext) -> Iterator[Finding]:
    """Every leaf reaches every spine, and leaves that must talk have a spine tier between them.

    In a two-tier Clos a leaf with fewer uplinks than there are spines cannot reach some
    spines, so some leaf pairs share no spine. Leaves without uplinks are islands (only a
    rail-optimized fabric with one leaf per rail may do without, by moving data to the
    right rail over NVLink first)."""
    fabric = ctx.platform.fabric
    if fabric is None or len(fabric.leaves) <= 1:
        return
    rails = {leaf.rail for leaf in fabric.leaves}
    one_leaf_per_rail = fabric.topology == "rail-optimized" and len(fabric.leaves) == len(rails)
    if not fabric.spine_count and not one_leaf_per_rail:
        uplinks = max(leaf.uplinks for leaf in fabric.leaves)
        if uplinks:
            yield ctx.finding(f"{len(fabric.leaves)} leaves have {uplinks} uplinks each, but there is no spine tier "
                              f"for them to reach: nodes on different leaves cannot reach each other",
                              at=("backend", "leaf", "uplinks"), hint="declare the spine tier: spine: {ports: P}")
        else:
            yield ctx.finding(f"{len(fabric.leaves)} leaves have no spine tier between them: nodes on different leaves "
                              f"cannot reach each other", at=("backend", "leaf"), hint="declare leaf uplinks and a spine")
    elif fabric.spine_count:
        short = [leaf for leaf in fabric.leaves if leaf.uplinks < fabric.spine_count]
        if short:
            yield ctx.finding(f"{short[0].id} has {short[0].uplinks} uplinks but there are {fabric.spine_count} spines: "
                              f"it cannot reach every spine", at=("backend", "spine"),
                              hint="give every leaf at least one uplink per spine (use larger spine switches)")
        if len(fabric.leaves) > fabric.spine_ports:
            yield ctx.finding(f"{len(fabric.leaves)} leaves but spines have {fabric.spine_ports} ports: "
                              f"a spine cannot reach every leaf", at=("backend", "spine", "ports"))


@rule("HW809", "rail-declaration", "warning", scope="cluster",
      hint="make the node platform's backend.rail_optimized agree with the cluster's fabric, or leave it out of the node platform")
def rail_declaration(ctx: ClusterContext) -> Iterator[Finding]:
    """A node platform's `backend.rail_optimized`, where it declares one, agrees with the cluster's fabric.

    The node's generated nccl.conf sets NCCL_CROSS_NIC from its own declaration; the cluster's
    nccl.conf overrides it, but a node platform used elsewhere would carry the wrong value."""
    fabric = ctx.platform.fabric
    if fabric is None:
        return
    cluster_rails = fabric.topology == "rail-optimized"
    for group in ctx.platform.groups:
        backend = group.platform.backend
        if backend is not None and backend.rail_optimized is not None and backend.rail_optimized != cluster_rails:
            yield ctx.finding(f"{group.platform.name} declares rail_optimized: {str(backend.rail_optimized).lower()}, "
                              f"but this cluster's backend is {fabric.topology}", at=("backend", "topology"))


@rule("HW810", "uniform-gpus-per-node", "error", scope="cluster", waivable=False,
      hint="group nodes of different GPU counts into clusters of their own")
def uniform_gpus_per_node(ctx: ClusterContext) -> Iterator[Finding]:
    """Every node of the cluster has the same number of GPUs.

    torchrun and the sharding planner assume one local world size for all nodes (torchrun
    supports only a homogeneous LOCAL_WORLD_SIZE); node groups may differ in anything else.
    It cannot be switched off: the cluster's launch and acceptance files could not be written."""
    groups = ctx.platform.groups
    if not groups:
        return
    first = groups[0]
    for index, group in enumerate(groups[1:], start=1):
        if group.gpus_per_node != first.gpus_per_node:
            yield ctx.finding(f"nodes[{index}] ({group.platform.name}) has {group.gpus_per_node} GPUs per node, "
                              f"nodes[0] ({first.platform.name}) has {first.gpus_per_node}",
                              at=("nodes", index, "platform"), hint="split the cluster, or use node platforms with equal GPU counts")


@rule("HW811", "cluster-nccl-variable-known", "warning", scope="cluster",
      hint="check the name against NCCL's environment variables; remove it, or keep it for a newer NCCL")
def cluster_nccl_variable_known(ctx: ClusterContext) -> Iterator[Finding]:
    """Every NCCL_* name under the cluster's `environment:` is a variable NCCL reads.

    NCCL ignores variables it does not know, silently: a misspelt name leaves the setting the
    fabric's vendor documents out of effect on every node.
    """
    yield from unknown_nccl_names(ctx)


@rule("HW812", "cluster-environment-policy", scope="cluster", waivable=False,
      hint="set what loads code or names files in the job's own environment, not in the cluster file")
def cluster_environment_policy(ctx: ClusterContext) -> Iterator[Finding]:
    """Every name under the cluster's `environment:` is a tunable: nothing that loads code, names a file or changes where the job connects.

    cluster.env is sourced by node-launch.sh as root on every node, before torchrun: the same
    policy as HW702 for node platforms, and the same operator grant (`--allow-env NAME`).
    """
    yield from refused_names(ctx)


cluster_environment_policy.__doc__ = (cluster_environment_policy.__doc__ or "").rstrip() + POLICY_DOC


@rule("HW813", "kubernetes-names-distinct", "error", scope="cluster",
      hint="rename node platforms whose Kubernetes names collide")
def kubernetes_names_distinct(ctx: ClusterContext) -> Iterator[Finding]:
    """The cluster's node platforms have distinct names as Kubernetes writes them ('_' as '-', at most 63 characters).

    Each node platform's files name Kubernetes objects after it: its NPD DaemonSet
    (`hwspec-npd-NAME`) and the `topology.hwspec.io/platform` label value that DaemonSet selects nodes
    by. Two platforms whose names become one (`zion_ex` and `zion-ex`) would write two
    DaemonSets of one name and one selector: the second `kubectl apply` replaces the first, and
    one platform's nodes are checked against the other's spec."""
    first: dict[str, tuple[int, str]] = {}
    for index, group in enumerate(ctx.platform.groups):
        name = group.platform.name
        seen = first.setdefault(k8s_name(name), (index, name))
        if seen[1] != name:
            yield ctx.finding(f"nodes[{index}] ({name}) and nodes[{seen[0]}] ({seen[1]}) are both '{k8s_name(name)}' as a "
                              "Kubernetes name: their NPD DaemonSets and platform labels would be one",
                              at=("nodes", index, "platform"),
                              hint="rename one node platform (its `name:`) so that the two differ in more than '_' and '-'")

