"""Scheduler outputs for every cluster, and the NVLink-domain settings of other consumers.

- `slurm/topology.yaml` (Slurm 25.05+, topology.yaml(5)): a `block` topology whose blocks are
  the NVLink domains (`block_sizes`: the domain size and its power-of-two multiples), and a
  `tree` topology of the backend fabric (the same switches as `slurm/topology.conf`).
- `slurm/topology-block.conf` (clusters with NVLink domains; Slurm 23.11-24.11 with
  `TopologyPlugin=topology/block`, topology.conf(5)): the same blocks as `BlockName=` lines.
- `kubernetes/topology.yaml`: a Kueue `Topology` (KUEUE_API) (ordered node-label levels, hostname lowest)
  and a `ResourceFlavor` that uses it; `kubernetes/label-nodes.sh` puts those labels on the
  nodes with `kubectl label`.
- `mnnvl_settings` (cluster nccl.conf) and `domain_env` (cluster.env) for NCCL and TorchRec.

Every name written here is checked: host names and addresses here, whatever ran before
(`host_limits`, HW805's syntax: a name starting with '-' would be an option to kubectl), domain
names at load time (`cluster_resolve.DOMAIN_NAME`), or made safe here (`k8s_name`); YAML is
written by PyYAML.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

import yaml

from hwspec.formats.limits import host_limits, k8s_name
from hwspec.generate.engine import ClusterGenContext, generator, refuse
from hwspec.generate.launch import Setting
from hwspec.model.cluster import Cluster
from hwspec.topology.cluster import ClusterTopology

LABEL_PREFIX = "topology.hwspec.io"
"""Prefix of the node labels only hwspec defines (a DNS subdomain, as Kubernetes label keys need)."""
LABEL_CLUSTER = f"{LABEL_PREFIX}/cluster"
# Facts other tools label too use those tools' keys, so that a cluster labelled by NVIDIA's
# topograph (pkg/topology/topology.go: KeyTopologyAccelerator, KeyFabricTierPrefix, "fabric tier
# zero is closest to the compute node"), and the schedulers reading its labels (Kueue TAS, KAI),
# see the same levels. GPU Feature Discovery's nvidia.com/gpu.clique names a node's NVLink clique
# too, but GFD writes it from NVML (cluster UUID and clique id): hwspec leaves that key to GFD.
LABEL_DOMAIN = "network.topology.nvidia.com/accelerator"
LABEL_LEAF = "network.topology.nvidia.com/tier-0"
LABEL_SPINE = "network.topology.nvidia.com/tier-1"
LABEL_HOSTNAME = "kubernetes.io/hostname"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
"""Kueue's Topology and ResourceFlavor API: v1beta2 is served from Kueue 0.15 and is the storage
version from 0.16, which deprecates v1beta1 ("This version is deprecated. Use v1beta2 instead.");
the fields written here (levels[].nodeLabel, nodeLabels, topologyName) are the same in both."""
KUEUE_MIN_VERSION = "0.15"
SPINE_VALUE = "spine"
TOPOLOGY_BLOCK = "nvlink-domains"
TOPOLOGY_TREE = "fabric"


def block_sizes(domain_size: int, domains: int) -> list[int]:
    """topology.yaml's `block_sizes`: the base block (one domain) and each power-of-two
    multiple that fits in the cluster's domains (Slurm: each size a power of two larger than
    the one before)."""
    sizes = [domain_size]
    while sizes[-1] * 2 <= domain_size * domains:
        sizes.append(sizes[-1] * 2)
    return sizes


def slurm_topologies(topology: ClusterTopology) -> list[dict[str, Any]]:
    """The topology.yaml document: a list of named topologies (first key `topology`)."""
    from hwspec.generate.slurm import tree_switches

    cluster = topology.platform
    result = []
    domains = cluster.nvlink_domains
    if domains is not None:
        result.append({"topology": TOPOLOGY_BLOCK, "cluster_default": True, "block": {
            "block_sizes": block_sizes(domains.size, domains.count),
            "blocks": [{"block": name, "nodes": topology.hostlist(domains.nodes(d))}
                       for d, name in enumerate(domains.names)]}})
    switches = []
    for switch in tree_switches(topology):
        entry = {"switch": switch["name"]}
        if "switches" in switch:
            entry["children"] = switch["switches"]
        else:
            entry["nodes"] = switch["nodes"]
        switches.append(entry)
    result.append({"topology": TOPOLOGY_TREE, "cluster_default": domains is None, "tree": {"switches": switches}})
    return result


def k8s_levels(topology: ClusterTopology) -> list[str]:
    """The Kueue Topology's node labels, coarsest first, hostname last: the spine tier (when
    there is one), the leaf group (when NVLink domains nest in leaf groups, HW825), the NVLink
    domain (when the cluster declares domains), the node."""
    cluster = topology.platform
    levels = []
    if cluster.fabric is not None and cluster.fabric.spine_count:
        levels.append(LABEL_SPINE)
    if topology.leaf_groups and not topology.domains_split_by_leaves:
        levels.append(LABEL_LEAF)
    if cluster.nvlink_domains is not None:
        levels.append(LABEL_DOMAIN)
    levels.append(LABEL_HOSTNAME)
    return levels


def label_runs(topology: ClusterTopology) -> list[tuple[range, dict[str, str]]]:
    """(nodes, {label: value}) for consecutive runs of nodes with the same labels, covering
    every node in cluster order: the cluster label the ResourceFlavor selects, and one label
    per Topology level except the hostname (the kubelet sets that one). Runs end where a leaf
    group or an NVLink domain ends."""
    cluster = topology.platform
    levels = set(k8s_levels(topology))
    domains = cluster.nvlink_domains
    bounds = {0, cluster.node_count}
    if LABEL_LEAF in levels:
        bounds.update(nodes.stop for _, nodes in topology.leaf_groups)
    if domains is not None:
        bounds.update(domains.nodes(d).stop for d in range(domains.count))
    edges = sorted(b for b in bounds if 0 <= b <= cluster.node_count)
    flavor = k8s_name(cluster.name)
    runs = []
    for start, stop in zip(edges, edges[1:]):
        labels = {LABEL_CLUSTER: flavor}
        if LABEL_SPINE in levels:
            labels[LABEL_SPINE] = SPINE_VALUE
        if LABEL_LEAF in levels:
            labels[LABEL_LEAF] = topology.leaf_groups[topology.leaf_group_of(start)][0]
        if domains is not None:
            labels[LABEL_DOMAIN] = domains.names[domains.domain_of(start)]
        runs.append((range(start, stop), labels))
    return runs


LABEL_BATCH = 100
"""Nodes one `kubectl label` call names at most: a call per node would start kubectl (and
authenticate) 65,536 times on a 65,536-node cluster; a bounded batch keeps the command line
short (at most 100 host names of 63 characters)."""


def label_lines(hostnames: Sequence[str], runs: list[tuple[range, dict[str, str]]]) -> list[str]:
    """`label NODE... KEY=VALUE...` lines of label-nodes.sh: one per `LABEL_BATCH` nodes of each run
    (`label_runs`), in node order. kubectl takes the arguments with '=' as labels and the others
    as node names; a host name never has one, nor a leading '-' (`host_limits`, refused first)."""
    lines = []
    for nodes, labels in runs:
        arguments = " ".join(shlex.quote(f"{key}={value}") for key, value in labels.items())
        for start in range(nodes.start, nodes.stop, LABEL_BATCH):
            names = shell_words(hostnames[start:min(start + LABEL_BATCH, nodes.stop)])
            lines.append(f"label {' '.join(names)} {arguments}")
    return lines


_SHELL_UNSAFE = re.compile(r"[^\w@%+=:,./-]", re.ASCII)
"""What `shlex.quote` quotes: a text without these characters is written as it is."""


def shell_words(texts: Sequence[str]) -> Sequence[str]:
    """`shlex.quote` of each text, decided for all of them at once when none needs quoting."""
    if all(texts) and not _SHELL_UNSAFE.search("".join(texts)):
        return texts
    return list(map(shlex.quote, texts))


def mnnvl_settings(cluster: Cluster) -> list[Setting]:
    """NCCL multi-node NVLink settings for the cluster's nccl.conf (no '=' in the comments:
    NCCL before 2.26.2 reads them). Nothing without domains of more than one node.
    NCCL_MNNVL_UUID (2.25.1+) is never written: it forces the fabric's cluster UUID, which
    only the fabric manager knows; NVML reports it per GPU."""
    domains = cluster.nvlink_domains
    if domains is None or domains.size == 1:
        return []
    settings = [Setting("NCCL_MNNVL_ENABLE", "1",
                        f"NVLink domains of {domains.size} nodes: use multi-node NVLink and stop with an error when "
                        "the fabric or the IMEX channels are not ready (2, the default, falls back to the network "
                        "silently); read by NCCL 2.21.5 and later")]
    if domains.clique_id == "rack-serial":
        settings.append(Setting("NCCL_MNNVL_CLIQUE_ID", "-2",
                                "clique id from a hash of the rack chassis serial number, one clique per rack; "
                                "read by NCCL 2.23.4 and later (without it NCCL takes the cliqueId NVML reports)"))
    return settings


def domain_env(cluster: Cluster) -> list[Setting]:
    """cluster.env settings for NVLink domains: TorchRec's TOPOLOGY_DOMAIN_MULTIPLE (nodes per
    domain; torchrec.distributed.comm.get_topology_domain_multiple, the planner's default pod_size)."""
    domains = cluster.nvlink_domains
    if domains is None:
        return []
    return [Setting("TOPOLOGY_DOMAIN_MULTIPLE", str(domains.size),
                    "TorchRec: nodes per NVLink domain, its planner's pod_size (TorchRec 1.8+)")]


YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's emitter when PyYAML is built with it (a 16,384-node topology.yaml in a tenth of
the time), else the pure-Python one: both emit the same text for these documents, which hold
only validated names and numbers (tests/test_nvlink_domains.py compares them)."""


def _yaml(data: object, *documents: object) -> str:
    """`data` (or, with `documents`, every document) as block YAML in the order written."""
    return yaml.dump_all([data, *documents], Dumper=YAML_DUMPER, sort_keys=False, default_flow_style=False, width=1000)


@generator("scheduler-topology", scope="cluster")
def scheduler_topology(ctx: ClusterGenContext) -> dict[str, str]:
    """`slurm/topology.yaml`, `slurm/topology-block.conf` (with NVLink domains),
    `kubernetes/topology.yaml` and `kubernetes/label-nodes.sh`."""
    topology: ClusterTopology = ctx.topology
    cluster = topology.platform
    refuse(cluster, "kubernetes and slurm topology", host_limits(cluster))
    name = k8s_name(cluster.name)  # never empty: an id starts with a letter
    slurm_note = ("# Slurm 25.05+ topology.yaml(5). Slurm reads this file instead of topology.conf when both exist\n"
                  "# (install one of them beside slurm.conf). Partitions choose a topology with Topology=<name>.\n")
    if cluster.nvlink_domains is not None:
        slurm_note += (f"# {TOPOLOGY_BLOCK}: one block per NVLink domain; ask for whole domains with --segment=N.\n")
    levels = k8s_levels(topology)
    documents = [
        {"apiVersion": KUEUE_API, "kind": "Topology", "metadata": {"name": name},
         "spec": {"levels": [{"nodeLabel": label} for label in levels]}},
        {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": name},
         "spec": {"nodeLabels": {LABEL_CLUSTER: name}, "topologyName": name}},
    ]
    k8s_note = (f"# Kueue topology-aware scheduling ({KUEUE_API}: Kueue {KUEUE_MIN_VERSION} or later):\n"
                "# kubectl apply -f topology.yaml, after labelling the nodes with label-nodes.sh.\n"
                "# Levels, coarsest first: " + ", ".join(levels) + ".\n")
    if topology.domains_split_by_leaves:
        k8s_note += "# The leaf level is left out: NVLink domains span leaf switches (HW825).\n"
    lines = ["#!/bin/sh", *ctx.header("hash").splitlines(),
             "# Labels every node of the cluster for the Kueue Topology in topology.yaml: one kubectl call per",
             f"# run of nodes with the same labels, at most {LABEL_BATCH} nodes a call.",
             "# KUBECTL overrides the command (e.g. KUBECTL='kubectl --context prod', or 'echo kubectl' for a dry run).",
             "set -eu", 'label() { ${KUBECTL:-kubectl} label node --overwrite "$@"; }']
    lines += label_lines(cluster.hostnames, label_runs(topology))
    slurm_documents = slurm_topologies(topology)
    plan = {}
    if cluster.nvlink_domains is not None:
        block = slurm_documents[0]["block"]
        plan["slurm/topology-block.conf"] = (
            ctx.header("hash")
            + "# Slurm 23.11-24.11: topology.conf for TopologyPlugin=topology/block (install it as topology.conf\n"
              "# and set TopologyPlugin=topology/block in slurm.conf). One block per NVLink domain, in\n"
              "# node order; Slurm pairs neighbouring blocks into the larger BlockSizes.\n"
            + "".join(f"BlockName={b['block']} Nodes={b['nodes']}\n" for b in block["blocks"])
            + "BlockSizes=" + ",".join(str(size) for size in block["block_sizes"]) + "\n")
    return {
        **plan,
        "slurm/topology.yaml": ctx.header("hash") + slurm_note + _yaml(slurm_documents),
        "kubernetes/topology.yaml": ctx.header("hash") + k8s_note + _yaml(*documents),
        "kubernetes/label-nodes.sh": "\n".join(lines) + "\n",
    }
