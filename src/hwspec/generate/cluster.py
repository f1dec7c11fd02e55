"""Cluster generators: the node files of each node platform (once, not per node) rendered in
the cluster's context, and the cluster's launch files: `nccl.conf`, `cluster.env`,
`node-launch.sh` and the Slurm batch script `train.sbatch`.

Install location on the machines: `<install root>/<cluster>/` (`hwspec generate
--install-root`, default /etc/hwspec; HWSPEC_DIR relocates it at run time), with node files in
`nodes/<node platform>/`. A node finds its own platform in hosts.tsv by HWSPEC_NODE, Slurm's
node name or its short hostname.
"""

from __future__ import annotations

from hwspec import hostlist
from hwspec.formats.environment import environment_limits
from hwspec.formats.limits import cluster_limits
from hwspec.formats.nccl_env import is_nccl
from hwspec.generate.engine import ClusterGenContext, Plan, generator, refuse
from hwspec.generate.launch import Setting, merge_environment, nccl_conf_text
from hwspec.model.cluster import Cluster, Leaf
from hwspec.text import xml_escape as escape
from hwspec.topology import ClusterTopology, topology_of


def rail_optimized(cluster: Cluster) -> bool | None:
    """The cluster's rail layout, or None without a declared backend fabric."""
    return None if cluster.fabric is None else cluster.fabric.topology == "rail-optimized"


@generator("cluster-nodes", scope="cluster")
def cluster_nodes(ctx: ClusterGenContext) -> Plan:
    """`nodes/<platform>/...`: every node generator's files for each distinct node platform,
    installed under HWSPEC_DIR/nodes/<platform>, with NCCL_CROSS_NIC from the cluster's rails."""
    cluster: Cluster = ctx.platform
    plan: Plan = {}
    seen: set[str] = set()
    for group in cluster.groups:
        node = group.platform
        if node.name in seen:
            continue
        seen.add(node.name)
        files = ctx.render_node(topology_of(node), install_dir=f"{ctx.install_dir}/nodes/{node.name}",
                                rail_optimized=rail_optimized(cluster), source=node.file)
        plan.update({f"nodes/{node.name}/{path}": text for path, text in files.items()})
    return plan


@generator("cluster-launch", scope="cluster")
def cluster_launch(ctx: ClusterGenContext) -> Plan:
    """nccl.conf (cluster-wide NCCL settings), cluster.env (torchrun rendezvous),
    node-launch.sh (one per node: picks the node's platform files, runs torchrun) and
    train.sbatch (Slurm: one node-launch.sh per node via srun)."""
    cluster: Cluster = ctx.platform
    refuse(cluster, "cluster.env, node-launch.sh and train.sbatch", cluster_limits(cluster))
    (gpus_per_node,) = {g.gpus_per_node for g in cluster.groups}
    rails = rail_optimized(cluster)
    cluster_settings = []
    if cluster.fabric is not None:
        cluster_settings.append(Setting("NCCL_CROSS_NIC", "0" if rails else "1",
                                        f"the backend is {cluster.fabric.topology}: "
                                        + ("keep each ring/tree on one rail" if rails else "rings may cross NICs")))
    from hwspec.generate.domains import domain_env, mnnvl_settings

    cluster_settings += mnnvl_settings(cluster)
    env = [
        Setting("PET_NNODES", str(cluster.node_count), "torchrun --nnodes (train.sbatch uses the allocation's size)"),
        Setting("PET_NPROC_PER_NODE", str(gpus_per_node), "torchrun --nproc-per-node: one rank per GPU"),
        Setting("PET_RDZV_BACKEND", cluster.rendezvous_backend, "torchrun --rdzv-backend"),
        Setting("HWSPEC_RDZV_PORT", str(cluster.rendezvous_port), "port of the rendezvous on the first node"),
    ]  # not HWSPEC_DIR: the scripts default it and must keep a value the user exported
    env += domain_env(cluster)
    refuse(cluster, "cluster.env and nccl.conf", environment_limits(cluster, ctx.policy))
    nccl_extra = {k: v for k, v in cluster.environment.items() if is_nccl(k)}
    cluster_settings = merge_environment(cluster_settings, nccl_extra, "the cluster's")
    env = merge_environment(env, {k: v for k, v in cluster.environment.items() if not is_nccl(k)}, "the cluster's")
    env += [s for s in cluster_settings if s.name in nccl_extra]
    cpus = min(sum(len(s.cpus) for s in g.platform.sockets) for g in cluster.groups)
    return {
        "nccl.conf": nccl_conf_text(ctx.render("cluster/nccl.conf.j2", "hash", settings=cluster_settings), cluster.file),
        "cluster.env": ctx.render("cluster/cluster.env.j2", "hash", settings=env),
        "node-launch.sh": ctx.render("cluster/node-launch.sh.j2", None, header=ctx.header("hash"),
                                     install_dir=ctx.install_dir),
        "train.sbatch": ctx.render("cluster/train.sbatch.j2", None, header=ctx.header("hash"), cluster=cluster,
                                   gpus_per_node=gpus_per_node, cpus_per_node=cpus, install_dir=ctx.install_dir),
    }


@generator("cluster-roofline", scope="cluster")
def cluster_roofline_json(ctx: ClusterGenContext) -> Plan:
    """roofline.json (aggregates, injection, bisection, hierarchical collective bounds) and
    torchrec-topology.json (Topology kwargs and TopologyFactory configs with world_size and
    local_world_size)."""
    from hwspec.generate.roofline import dump, torchrec_document
    from hwspec.perf.cluster_roofline import cluster_roofline, cluster_torchrec

    doc = cluster_roofline(ctx.topology)
    plan = {"roofline.json": dump({"_generated": ctx.header_lines(), **doc})}
    torchrec = cluster_torchrec(ctx.topology, doc)
    if torchrec is not None:
        plan["torchrec-topology.json"] = dump({"_generated": ctx.header_lines(), **torchrec_document(torchrec)})
    return plan


DRAW_NODES_UP_TO = 32
"""Clusters with more nodes are drawn as a summary: node groups and switch tiers, not host blocks."""
HOST_STYLE = 'shape=box, style=filled, fillcolor="#dbe9f6"'
LEAF_STYLE = 'shape=box, style="rounded,filled", fillcolor="#f6e3c8"'


def _domain_caption(topology: ClusterTopology) -> str:
    """One line about an NVLink domain: nodes, GPUs, switch trays, per-GPU NVLink bandwidth."""
    domains = topology.platform.nvlink_domains
    assert domains is not None  # drawn only for a cluster that declares its domains
    return (f"{domains.size} nodes, {topology.domain_gpus} GPUs, {domains.switch_trays} NVLink switch trays, "
            f"{topology.domain_gpu_bandwidth / 1e9:g} GB/s per GPU")


def host_blocks(topology: ClusterTopology) -> list[range]:
    """The cluster's nodes cut into consecutive blocks that share a node group, a leaf group
    (`leaf_groups`: a leaf, or a pod of rail leaves) and an NVLink domain: each block is one box
    of the diagram, its hosts a hostlist, wired to the same switches."""
    cluster = topology.platform
    cuts = {0, cluster.node_count} | {g.nodes.start for g in cluster.groups} | {n.start for _, n in topology.leaf_groups}
    if cluster.nvlink_domains is not None:
        cuts |= {cluster.nvlink_domains.nodes(d).start for d in range(cluster.nvlink_domains.count)}
    stops = sorted(c for c in cuts if 0 <= c <= cluster.node_count)
    return [range(a, b) for a, b in zip(stops, stops[1:]) if b > a]


def _block_label(topology: ClusterTopology, block: range) -> list[str]:
    group = next(g for g in topology.platform.groups if block.start in g.nodes)
    return [topology.hostlist(block), f"{len(block)} x {group.platform.name}, {group.gpus_per_node} GPUs each"]


def _leaf_lines(group: list[Leaf]) -> list[str]:
    """The label of a box of leaves serving the same hosts: one leaf (its rail), or a pod's rail
    leaves (a hostlist when their ids compress, else the first and last)."""
    if len(group) == 1:
        return [group[0].id] + ([f"rail {group[0].rail}"] if group[0].rail is not None else [])
    ids = hostlist.compress([leaf.id for leaf in group])
    shown = ids if "," not in ids else f"{group[0].id} ... {group[-1].id}"
    return [shown, f"{len(group)} leaves, one per rail"]


def _links_table(rows: list[tuple[str, str]]) -> str:
    """An HTML-like table node of what the edges carry (the edges themselves are unlabelled)."""
    cells = "".join(f'<tr><td align="left">{escape(a)}</td><td align="left">{escape(b)}</td></tr>' for a, b in rows)
    return ('  "_legend_links" [shape=plaintext, label=<<table border="0" cellborder="1" cellspacing="0" cellpadding="3">'
            f'<tr><td colspan="2"><b>links</b></td></tr>{cells}</table>>];')


@generator("cluster-diagram", scope="cluster")
def cluster_diagram(ctx: ClusterGenContext) -> Plan:
    """cluster.dot: blocks of hosts (`host_blocks`), in NVLink domain frames, wired to their
    leaves (a rail-optimized pod's leaves as one box) and the spines; node groups and switch
    tiers alone for large clusters. Edges are unlabelled: what they carry is in a table."""
    from hwspec.generate.diagram import label, quote

    cluster: Cluster = ctx.platform
    topology = ctx.topology
    fabric = cluster.fabric
    lines = [f"graph {quote(cluster.name)} {{", "  graph [rankdir=BT, fontname=Helvetica, labelloc=t, nodesep=0.15, label="
             + quote(f"{cluster.title}: {cluster.node_count} nodes, {cluster.world_size} GPUs") + "];",
             "  node [fontname=Helvetica, fontsize=10];", "  edge [color=\"#555555\"];"]
    speed = f"{fabric.nic_speed * 8 / 1e9:g} Gb/s" if fabric else ""
    small = cluster.node_count <= DRAW_NODES_UP_TO
    domains = cluster.nvlink_domains
    links: list[tuple[str, str]] = []
    hosts: list[tuple[str, range]] = []  # box id, its nodes
    if small:
        blocks = host_blocks(topology)
        hosts = [(f"hosts{n}", block) for n, block in enumerate(blocks)]
        boxes = {name: f"  {quote(name)} [{HOST_STYLE}, label={label(*_block_label(topology, block))}];" for name, block in hosts}
        if domains is None:
            lines += boxes.values()
        else:
            for d in range(domains.count):
                lines.append(f"  subgraph {quote(f'cluster_{domains.names[d]}')} {{")
                lines.append("    graph [style=\"rounded,filled\", fillcolor=\"#eef6e8\", color=\"#5a8f3c\", label="
                             + label(f"NVLink domain {domains.names[d]}", _domain_caption(topology)) + "];")
                lines += ["  " + boxes[name] for name, block in hosts if block.start in domains.nodes(d)]
                lines.append("  }")
    else:
        for index, group in enumerate(cluster.groups):
            lines.append(f"  {quote(f'group{index}')} [shape=box3d, style=filled, fillcolor=\"#dbe9f6\", label="
                         + label(f"{group.count} x {group.platform.name}", topology.hostlist(group.nodes)) + "];")
        if domains is not None:
            lines.append("  domains [shape=box, style=\"rounded,filled\", fillcolor=\"#eef6e8\", color=\"#5a8f3c\", label="
                         + label(f"{domains.count} NVLink domains", _domain_caption(topology)) + "];")
            for index in range(len(cluster.groups)):
                lines.append(f"  {quote(f'group{index}')} -- domains [class=\"nvlink\", color=\"#5a8f3c\"];")
    if fabric is not None:
        leaves = fabric.leaves
        rails = fabric.topology == "rail-optimized"
        per_host = f"{fabric.nics_per_node} x {speed}" + (", one NIC to each rail's leaf" if rails else "")
        links.append(("host to leaf", per_host))
        leaf_names: dict[str, str] = {}  # leaf id -> the box drawing it
        if small:
            # a rail-optimized pod's leaves (one per rail, the same hosts) are one box
            boxes_of: dict[range, list[Leaf]] = {}
            for leaf in leaves:
                boxes_of.setdefault(leaf.nodes, []).append(leaf)
            for n, (nodes, together) in enumerate(boxes_of.items()):
                name = together[0].id if len(together) == 1 else f"leaves{n}"
                text = label(*_leaf_lines(together))
                lines.append(f"  {quote(name)} [{LEAF_STYLE}, label={text}];")
                for host, block in hosts:
                    if block.start in nodes:
                        lines.append(f'  {quote(host)} -- {quote(name)} [class="fabric"];')
                for leaf in together:
                    leaf_names[leaf.id] = name
        else:
            count = len({leaf.rail for leaf in leaves})
            summary = [f"{len(leaves)} leaf switches"] + ([f"{count} rails x {len(leaves) // count} pods"] if rails else [])
            lines.append(f"  leaves [{LEAF_STYLE}, label={label(*summary)}];")
            for index in range(len(cluster.groups)):
                lines.append(f"  {quote(f'group{index}')} -- leaves [class=\"fabric\"];")
        if fabric.spine_count:
            lines.append("  spines [shape=box, style=\"rounded,filled\", fillcolor=\"#e8d5f0\", label="
                         + label(f"{fabric.spine_count} spine switches", f"{fabric.spine_ports} ports each") + "];")
            targets = list(dict.fromkeys(leaf_names.values())) if small else ["leaves"]
            for target in targets:
                lines.append(f"  {quote(target)} -- spines [class=\"uplink\", color=\"#7a4f9a\"];")
            links.append(("leaf to spines", f"{leaves[0].uplinks} x {fabric.uplink_speed * 8 / 1e9:g} Gb/s per leaf"))
    if domains is not None and not small:  # a small cluster's domain frames say it
        links.append(("NVLink domain", _domain_caption(topology)))
    if links:
        lines.append(_links_table(links))
        anchors = [name for name, _ in hosts] or [f"group{index}" for index in range(len(cluster.groups))]
        lines += [f'  "_legend_links" -- {quote(anchor)} [style="invis"];' for anchor in anchors]
    lines.append("}")
    return {"cluster.dot": ctx.header("slash") + "\n".join(lines) + "\n"}
