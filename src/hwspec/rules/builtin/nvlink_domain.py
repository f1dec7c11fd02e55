"""NVLink domain rules: domains larger than a node (GB200 NVL72 racks) as the cluster declares
them in `nvlink_domain`. Run once per cluster; nothing here walks every node."""

from __future__ import annotations

from collections.abc import Iterator

from hwspec.rules import ClusterContext, Finding, rule


@rule("HW821", "nvlink-domain-size", "error", scope="cluster",
      hint="make the node count a multiple of the domain size, or the domain size a divisor of it")
def nvlink_domain_size(ctx: ClusterContext) -> Iterator[Finding]:
    """The domain size divides the node count: every NVLink domain is complete.

    Slurm's block topology, Kubernetes' topology levels and TorchRec's pod_size all assume
    equal domains; a partial last domain gets jobs that ask for a full block, a full rack or a
    full pod placed where there is none."""
    cluster = ctx.platform
    domains = cluster.nvlink_domains
    if domains is None:
        return
    nodes = cluster.node_count
    if nodes % domains.size:
        yield ctx.finding(f"{nodes} nodes in NVLink domains of {domains.size}: the last domain ({domains.names[-1]}) "
                          f"has {nodes % domains.size} node(s)", at=("nvlink_domain", "nodes"),
                          hint=f"use a multiple of {domains.size} nodes, or turn the rule off with a reason for a partial rack")


@rule("HW822", "nvlink-domain-switch-ports", "error", scope="cluster",
      hint="give the domain the NVLink switch trays its GPUs' NVLinks need")
def nvlink_domain_switch_ports(ctx: ClusterContext) -> Iterator[Finding]:
    """A domain's NVLink switch trays have a port for every NVLink of its GPUs.

    In a GB200 NVL72 rack, 72 GPUs x 18 NVLink5 links = 1,296 links end on 9 switch trays of
    144 ports. With fewer ports, some GPU links are not cabled and the domain's all-to-all
    NVLink bandwidth (and NCCL's NVLS/MNNVL algorithms' assumption of it) does not hold."""
    cluster = ctx.platform
    domains = cluster.nvlink_domains
    if domains is None:
        return
    links_per_node = [sum(g.fabric_links for g in group.platform.gpus) for group in cluster.groups]
    worst, g = 0, 0
    for d in range(domains.count):  # domains and groups both in node order: one merged walk
        nodes = domains.nodes(d)
        links = 0
        while g < len(cluster.groups) and cluster.groups[g].nodes.stop <= nodes.start:
            g += 1
        k = g
        while k < len(cluster.groups) and cluster.groups[k].nodes.start < nodes.stop:
            span = cluster.groups[k].nodes
            links += len(range(max(nodes.start, span.start), min(nodes.stop, span.stop))) * links_per_node[k]
            k += 1
        worst = max(worst, links)
    if worst > domains.switch_port_budget:
        yield ctx.finding(f"a domain's GPUs have {worst} NVLinks, but {domains.switch_trays} switch trays x "
                          f"{domains.switch_ports} ports = {domains.switch_port_budget}", at=("nvlink_domain", "switch_ports"),
                          hint="add switch trays, or make domains smaller")


@rule("HW823", "nvlink-domain-gpus", "error", scope="cluster",
      hint="put nodes whose GPUs are wired to NVLink switches in the domain, or drop the domain")
def nvlink_domain_gpus(ctx: ClusterContext) -> Iterator[Finding]:
    """The nodes of a multi-node NVLink domain have NVLink GPUs wired to NVLink switches.

    A domain spanning nodes exists only if each GPU's NVLinks leave the node through NVLink
    switches (`nvlink: {topology: nvswitch}`); GPUs without NVLink, or with their links used
    for direct GPU-to-GPU wiring inside the node, cannot reach another node's GPUs."""
    cluster = ctx.platform
    domains = cluster.nvlink_domains
    if domains is None or domains.size == 1:
        return
    for index, group in enumerate(cluster.groups):
        platform = group.platform
        gpu = next((g for g in platform.gpus if g.fabric_kind is not None  # an unknown part: HW603 reports it
                    and (not g.fabric_kind.startswith("nvlink") or g.fabric_links < 1)), None)
        if not platform.gpus:
            yield ctx.finding(f"nodes[{index}] ({platform.name}) has no GPUs, but is in an NVLink domain",
                              at=("nodes", index, "platform"))
        elif gpu is not None:
            yield ctx.finding(f"nodes[{index}] ({platform.name}): {gpu.id} ({gpu.part}) has no NVLink "
                              f"({gpu.fabric_kind}, {gpu.fabric_links} links), but is in an NVLink domain",
                              at=("nodes", index, "platform"))
        elif platform.nvlink_topology != "nvswitch":
            yield ctx.finding(f"nodes[{index}] ({platform.name}) wires its NVLinks {platform.nvlink_topology or 'not at all'}, "
                              f"not to NVLink switches: its GPUs cannot reach other nodes over NVLink",
                              at=("nodes", index, "platform"), hint="declare nvlink: {topology: nvswitch} on the node platform")


@rule("HW824", "nvlink-domain-one-platform", "error", scope="cluster",
      hint="build each NVLink domain from nodes of one platform")
def nvlink_domain_one_platform(ctx: ClusterContext) -> Iterator[Finding]:
    """All nodes of an NVLink domain are of one node platform.

    An NVL72 rack holds one kind of compute tray; a domain mixing node platforms mixes GPU
    parts, GPU counts or NVLink budgets inside one MNNVL clique, which NCCL does not balance."""
    cluster = ctx.platform
    domains = cluster.nvlink_domains
    if domains is None:
        return
    for index, group in enumerate(cluster.groups[:-1]):
        boundary = group.nodes.stop
        nxt = cluster.groups[index + 1]
        if boundary % domains.size and nxt.platform.file != group.platform.file:
            d = domains.domain_of(boundary)
            yield ctx.finding(f"domain {domains.names[d]} holds nodes of {group.platform.name} (nodes[{index}]) and "
                              f"{nxt.platform.name} (nodes[{index + 1}])", at=("nodes", index + 1, "count"),
                              hint=f"make each node group a multiple of {domains.size} nodes")


@rule("HW825", "nvlink-domain-in-leaf", "warning", scope="cluster",
      hint="place each NVLink domain's nodes under one leaf")
def nvlink_domain_in_leaf(ctx: ClusterContext) -> Iterator[Finding]:
    """Each NVLink domain sits under one leaf switch (one pod of a rail-optimized fabric).

    Kubernetes topology levels must nest: with the domain below the leaf level, a job kept in
    one domain is also kept on one leaf. A domain split across leaves cannot be placed in that
    hierarchy, so the generated Kubernetes Topology then leaves out the leaf level."""
    cluster = ctx.platform
    split = ctx.topology.domains_split_by_leaves
    if split:
        domains = cluster.nvlink_domains
        assert domains is not None  # a cluster without domains has none split
        first = split[0]
        groups = ctx.topology.leaf_groups
        nodes = domains.nodes(first)
        names = sorted({groups[ctx.topology.leaf_group_of(n)][0] for n in (nodes.start, nodes.stop - 1)})
        yield ctx.finding(f"{len(split)} NVLink domain(s) span more than one leaf group, e.g. {domains.names[first]} "
                          f"on {' and '.join(names)}: the Kubernetes Topology leaves out the leaf level",
                          at=("backend", "leaf", "ports"),
                          hint=f"give leaves a multiple of {domains.size} nodes (ports - uplinks, divided by NICs per node on a Clos fabric)")
