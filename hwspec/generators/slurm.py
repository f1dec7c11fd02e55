"""Cluster generators for schedulers and launchers: hostfile, hosts.tsv, Slurm gres.conf and
topology.conf. Per-node lines appear only in files that are inherently per node (hostfile,
hosts.tsv); everything else uses Slurm hostlist expressions, so its size does not grow with
the node count."""

from __future__ import annotations

from hwspec.cluster import Cluster
from hwspec.generate import SAFE_VALUE, GenContext, Limit, env_value, generator, refuse
from hwspec.generators.launch import cpu_ranges
from hwspec.hostlist import compress


def _cores(platform, gpu) -> str:
    """Slurm's Cores= for a GPU: the first-thread CPU ids of the GPU's NUMA node, as ranges."""
    socket = platform.socket_by_id[gpu.socket]
    first_threads = sorted(socket.cpus)[: socket.cores]
    return cpu_ranges(tuple(first_threads))


def gpu_links(platform, gpu) -> str:
    """Slurm's Links= for a GPU: NVLink count to GPU 0, 1, ... by index, -1 for itself."""
    counts = {other.id: 0 for other in platform.gpus}
    for connection in platform.nvlinks:
        if gpu.id in (connection.a, connection.b):
            peer = connection.b if connection.a == gpu.id else connection.a
            if peer in counts:
                counts[peer] += connection.links
    return ",".join("-1" if other.id == gpu.id else str(counts[other.id]) for other in platform.gpus)


def hostfile_limits(cluster: Cluster) -> list[Limit]:
    """What keeps hostfile and hosts.tsv from being written: a host name or address with a
    character a hostfile line (`host slots=N`) cannot carry. The first offender per group.
    HW805 reports the host names (a DNS label is stricter); HW903 the addresses (an IPv6
    address may carry any text as its zone)."""
    limits = []
    for index, group in enumerate(cluster.groups):
        for field, names in (("hostname", group.hostnames), ("address", group.addresses or ())):
            bad = next((name for name in names if not SAFE_VALUE.fullmatch(name) or not name), None)
            if bad is not None:
                limits.append(Limit(f"nodes[{index}]: {field} {bad!r} cannot be written to a hostfile: only letters, "
                                    "digits and _./:,=@%+^- are allowed", ("nodes", index, field),
                                    "an IPv6 zone is an interface name, e.g. %eth0" if field == "address" else None,
                                    reported_by="HW805" if field == "hostname" else ""))
    return limits


@generator("hostfile", kinds=("cluster",))
def hostfile(ctx: GenContext) -> dict[str, str]:
    """`hostfile` (one `host slots=N` line per node, MPI/DeepSpeed style) and `hosts.tsv`
    (hostname, address, node platform, GPUs), in cluster node order."""
    cluster: Cluster = ctx.platform
    refuse(cluster, "hostfile", hostfile_limits(cluster))
    lines, rows = [], []
    for group in cluster.groups:
        slots = group.gpus_per_node
        addresses = group.addresses or ("-",) * group.count
        for host, address in zip(group.hostnames, addresses):
            lines.append(f"{env_value(host)} slots={slots}\n")
            rows.append(f"{host}\t{env_value(address)}\t{group.platform.name}\t{slots}\n")
    return {
        "hostfile": ctx.header("hash") + "".join(lines),
        "hosts.tsv": ctx.header("hash") + "hostname\taddress\tnode_platform\tgpus\n" + "".join(rows),
    }


@generator("slurm", kinds=("cluster",))
def slurm(ctx: GenContext) -> dict[str, str]:
    """`slurm/gres.conf` (GPUs with Cores= from NUMA affinity and Links= from NVLink counts,
    one line per GPU per node platform) and `slurm/topology.conf` (topology/tree)."""
    cluster: Cluster = ctx.platform
    groups = []
    for group in cluster.groups:
        platform = group.platform
        gpus = [{"index": g.index, "type": g.part, "cores": _cores(platform, g), "links": gpu_links(platform, g)}
                for g in platform.gpus]
        groups.append({"nodes": compress(group.hostnames), "platform": platform.name, "gpus": gpus})
    return {
        "slurm/gres.conf": ctx.render("slurm/gres.conf.j2", "hash", groups=groups),
        "slurm/topology.conf": ctx.render("slurm/topology.conf.j2", "hash", switches=_switches(cluster)),
    }


def _switches(cluster: Cluster) -> list[dict]:
    """topology/tree switches. Slurm's tree gives each node one leaf: a rail-optimized fabric
    is described by pods (the nodes sharing a leaf index on every rail), and the spine tier,
    when there is one, as a single top switch over the leaves (or pods)."""
    fabric = cluster.fabric
    hostnames = cluster.hostnames
    if fabric is None:
        return [{"name": "switch0", "nodes": compress(hostnames), "comment": "no backend fabric declared: one switch"}]
    if fabric.topology == "rail-optimized":
        pods: dict[range, str] = {}
        for leaf in fabric.leaves:
            pods.setdefault(leaf.nodes, f"pod{len(pods)}")
        leaves = [{"name": name, "nodes": compress(hostnames[i] for i in nodes),
                   "comment": f"nodes whose NIC i is on leaf {name[3:]} of rail i"} for nodes, name in pods.items()]
    else:
        leaves = [{"name": leaf.id, "nodes": compress(hostnames[i] for i in leaf.nodes), "comment": None}
                  for leaf in fabric.leaves]
    if len(leaves) > 1:
        leaves.append({"name": "spine", "switches": compress(leaf["name"] for leaf in leaves),
                       "comment": f"the spine tier ({fabric.spine_count} switches) as one top switch"})
    return leaves
