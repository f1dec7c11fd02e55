"""Cluster generators for schedulers and launchers: hostfile, hosts.tsv, and Slurm's
slurm.conf fragment, gres.conf and topology.conf. Per-node lines appear only in files that are
inherently per node (hostfile, hosts.tsv); everything else uses Slurm hostlist expressions, so
its size does not grow with the node count (the slurm.conf fragment falls back to one line per
node only when host names and addresses do not compress in the same order).

Slurm's own definitions (slurm.conf(5), gres.conf(5) of Slurm 22.05 and later): `Cores=` in
gres.conf are logical core indices (core 0 is the first core of the first socket), not CPU
ids; the node line's `Gres=gpu:TYPE:N` must name the same types as gres.conf, or slurmd ignores
the typed GPUs ("Ignoring extra GRES"); RealMemory is in megabytes (MiB)."""

from __future__ import annotations

from itertools import repeat
from typing import TYPE_CHECKING

from hwspec.cpulist import format_cpu_list as cpu_ranges
from hwspec.formats.limits import host_limits
from hwspec.generate.engine import ClusterGenContext, generator, refuse
from hwspec.topology.hostlist import compress, compress_in_order

if TYPE_CHECKING:
    from hwspec.model.cluster import Cluster, NodeGroup
    from hwspec.model.node import Gpu, NumaNode, Platform
    from hwspec.topology.cluster import ClusterTopology

REAL_MEMORY_RESERVE = 0.03
"""Share of installed DDR that the slurm.conf fragment leaves out of RealMemory: firmware and
the kernel keep about 2-3 % of it, so /proc/meminfo's MemTotal (what slurmd measures) is below
the installed size, and slurmctld drains a node whose measured memory is below RealMemory."""


def slurm_sockets(platform: Platform) -> list[NumaNode]:
    """Sockets in Slurm's (hwloc's logical) order: by their lowest CPU id."""
    return sorted(platform.sockets, key=lambda s: (min(s.cpus) if s.cpus else 0, s.numa_node, s.id))


def slurm_cores(platform: Platform, gpu: Gpu) -> str:
    """Slurm's Cores= for a GPU: the logical core indices of its socket (core 0 is the first
    core of the first socket, numbered across sockets in Slurm's order), as ranges. Empty when
    the GPU has no socket, or when the core count of its socket or of one before it is unknown."""
    if gpu.socket is None:
        return ""
    first = 0
    for socket in slurm_sockets(platform):
        if socket.cores is None:
            return ""
        if socket.id == gpu.socket:
            return cpu_ranges(tuple(range(first, first + socket.cores)))
        first += socket.cores
    raise AssertionError(f"{gpu.id}: socket {gpu.socket} is not on the platform")


def node_hardware(platform: Platform) -> dict[str, int | str]:
    """The slurm.conf node line's hardware fields for a node platform: Sockets,
    CoresPerSocket, ThreadsPerCore (the smallest on the node: Slurm takes one value per node),
    RealMemory (MiB, installed DDR less REAL_MEMORY_RESERVE) and Gres (`gpu:TYPE:N` per GPU
    part); a field the platform cannot say is left to Slurm's default (RealMemory, when a
    socket's memory capacity is unknown: `real_memory_unknown`)."""
    sockets = platform.sockets  # NUMA nodes; a physical socket may hold several (platform.packages)
    parts: dict[str, int] = {}
    for gpu in platform.gpus:
        parts[gpu.part] = parts.get(gpu.part, 0) + 1
    installed = platform.memory_capacity
    memory_mib = int(installed // 2**20 * (1 - REAL_MEMORY_RESERVE)) if installed is not None else 0
    fields: dict[str, int | str] = {}
    known_cores = [(s.package, s.cores) for s in sockets if s.cores is not None]
    threads = [s.threads_per_core for s in sockets if s.threads_per_core is not None]
    if sockets and len(known_cores) == len(threads) == len(sockets):  # else Slurm counts them itself
        cores: dict[str, int] = {}
        for package, count in known_cores:
            cores[package] = cores.get(package, 0) + count
        fields.update(Sockets=len(cores), CoresPerSocket=min(cores.values()), ThreadsPerCore=min(threads))
    if memory_mib > 0:
        fields["RealMemory"] = memory_mib
    if parts:
        fields["Gres"] = ",".join(f"gpu:{part}:{count}" for part, count in sorted(parts.items()))
    return fields


def real_memory_unknown(platform: Platform) -> bool:
    """Whether the node line leaves RealMemory out because a socket's memory capacity is unknown
    (HW603). Slurm's default is then 1 MiB: slurmd registers the memory it measures and the node
    is never drained for LowRealMemory, but with memory as a consumable resource
    (SelectTypeParameters=CR_*_Memory) no job asking for --mem fits until the admin sets it
    (from `slurmd -C`, or by giving the capacity in the platform). A guess could drain every node."""
    return platform.memory_capacity is None


def node_lines(topology: ClusterTopology, group: NodeGroup) -> list[tuple[str, str | None]]:
    """(NodeName, NodeAddr) pairs for a group: one hostlist pair when both lists compress to
    expressions that expand back in the same order (Slurm pairs them by position), else one
    pair per node."""
    if group.addresses is None:
        return [(topology.hostlist(group.nodes), None)]
    names = topology.hosts_in_order(group.nodes)
    addrs = compress_in_order(group.addresses)
    if names is not None and addrs is not None:
        return [(names, addrs)]
    return list(zip(group.hostnames, group.addresses))


def gpu_links(platform: Platform, gpu: Gpu) -> str:
    """Slurm's Links= for a GPU: NVLink count to GPU 0, 1, ... by index, -1 for itself."""
    counts = {other.id: 0 for other in platform.gpus}
    for connection in platform.nvlinks:
        if gpu.id in (connection.a, connection.b):
            peer = connection.b if connection.a == gpu.id else connection.a
            if peer in counts:
                counts[peer] += connection.links
    return ",".join("-1" if other.id == gpu.id else str(counts[other.id]) for other in platform.gpus)


@generator("hostfile", scope="cluster")
def hostfile(ctx: ClusterGenContext) -> dict[str, str]:
    """`hostfile` (one `host slots=N` line per node, MPI/DeepSpeed style) and `hosts.tsv`
    (hostname, address, node platform, GPUs), in cluster node order."""
    cluster: Cluster = ctx.platform
    refuse(cluster, "hostfile", host_limits(cluster))
    lines: list[str] = []
    rows: list[str] = []
    for group in cluster.groups:  # every name a host name, every address SAFE_VALUE text: host_limits refused the rest
        slots = group.gpus_per_node
        addresses = group.addresses or ("-",) * group.count
        lines.append(f" slots={slots}\n".join(group.hostnames) + f" slots={slots}\n" if group.hostnames else "")
        rows.extend(map("{}\t{}\t{}".format, group.hostnames, addresses, repeat(f"{group.platform.name}\t{slots}\n")))
    return {
        "hostfile": ctx.header("hash") + "".join(lines),
        "hosts.tsv": ctx.header("hash") + "hostname\taddress\tnode_platform\tgpus\n" + "".join(rows),
    }


def gpu_device_file(gpu: Gpu) -> str:
    """The device file Slurm confines a GPU by: /dev/nvidiaN for NVIDIA; for AMD the DRM render
    node /dev/dri/renderD(128+N), N being the GPU's index by bus id (amdgpu creates render nodes
    in PCI probe order, i.e. bus order; `ls -l /dev/dri/by-path` shows the mapping)."""
    if gpu.vendor == "amd":
        return f"/dev/dri/renderD{128 + gpu.index}"
    return f"/dev/nvidia{gpu.index}"


@generator("slurm", scope="cluster")
def slurm(ctx: ClusterGenContext) -> dict[str, str]:
    """`slurm/slurm.conf` (a fragment to `Include`: GresTypes, TopologyPlugin, one node line
    per node group with sockets, cores, threads, memory and typed GPUs, and a partition),
    `slurm/gres.conf` (GPUs with Cores= from NUMA affinity and Links= from NVLink counts, one
    line per GPU per node group) and `slurm/topology.conf` (topology/tree)."""
    cluster: Cluster = ctx.platform
    refuse(cluster, "slurm", host_limits(cluster))
    groups = []
    for group in cluster.groups:
        platform = group.platform
        gpus = [{"index": g.index, "type": g.part, "cores": slurm_cores(platform, g), "links": gpu_links(platform, g),
                 "file": gpu_device_file(g)} for g in platform.gpus]
        groups.append({"nodes": ctx.topology.hostlist(group.nodes), "platform": platform.name, "gpus": gpus,
                       "lines": node_lines(ctx.topology, group), "hardware": node_hardware(platform),
                       "real_memory_unknown": real_memory_unknown(platform)})
    return {
        "slurm/slurm.conf": ctx.render("slurm/slurm.conf.j2", "hash", groups=groups, cluster=cluster,
                                       all_nodes=ctx.topology.hostlist(), reserve=REAL_MEMORY_RESERVE),
        "slurm/gres.conf": ctx.render("slurm/gres.conf.j2", "hash", groups=groups),
        "slurm/topology.conf": ctx.render("slurm/topology.conf.j2", "hash", switches=tree_switches(ctx.topology)),
    }


def tree_switches(topology: ClusterTopology) -> list[dict[str, str | None]]:
    """topology/tree switches. Slurm's tree gives each node one leaf: each leaf group
    (`ClusterTopology.leaf_groups`: a rail-optimized fabric's pods, the nodes sharing a leaf
    index on every rail), and the spine tier, when there is one, as a single top switch over
    them."""
    fabric = topology.platform.fabric
    if fabric is None:
        return [{"name": "switch0", "nodes": topology.hostlist(), "comment": "no backend fabric declared: one switch"}]
    rails = fabric.topology == "rail-optimized"
    leaves = [{"name": name, "nodes": topology.hostlist(nodes),
               "comment": f"nodes whose NIC i is on leaf {name[3:]} of rail i" if rails else None}
              for name, nodes in topology.leaf_groups]
    if len(leaves) > 1:
        leaves.append({"name": "spine", "switches": compress(name for name, _ in topology.leaf_groups),
                       "comment": f"the spine tier ({fabric.spine_count} switch{'es' if fabric.spine_count != 1 else ''}) "
                                  "as one top switch"})
    return leaves
