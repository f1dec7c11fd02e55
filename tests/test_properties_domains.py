"""Property: on any valid cluster with NVLink domains, every consumer sees the same domains.

Slurm's topology.yaml blocks, the Kubernetes node labels (and the Kueue Topology's levels),
TorchRec's pod_size, the NCCL multi-node NVLink settings and the roofline's domain tier are
all derived from one `nvlink_domain` section; drawn clusters must agree across all of them,
and their scheduler files must follow the consumers' grammars."""

from __future__ import annotations

import json

from hypothesis import event, given, note, settings

from hwspec.generate.engine import plan_for
from hwspec.testing import check_cluster_files, cluster_specs, dump_yaml
from hwspec.topology.hostlist import expand
from tests.scheduler_formats import check_kueue_manifests, check_slurm_topology_yaml, parse_label_script

EXAMPLES = settings.default.max_examples
DOMAIN = "network.topology.nvidia.com/accelerator"
LEAF = "network.topology.nvidia.com/tier-0"


def conf(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


@settings(max_examples=EXAMPLES)
@given(cluster_specs(nvlink_domains=True, max_nodes=12, max_gpus=4, max_sockets=2))
def test_domains_agree_across_slurm_kubernetes_torchrec_and_nccl(files):
    note(dump_yaml(files.cluster))
    note(dump_yaml(files.node))
    checked = check_cluster_files(files)
    assert checked.platform is not None and checked.diagnostics == [], "\n".join(d.format() for d in checked.diagnostics)
    cluster = checked.platform
    size = files.cluster["nvlink_domain"]["nodes"]
    gpus = len(files.node["gpus"])
    hostnames = list(cluster.hostnames)
    expected = [hostnames[d * size:(d + 1) * size] for d in range(cluster.node_count // size)]
    event(f"{len(expected)} domain(s) of {size} node(s), backend {cluster.fabric.topology if cluster.fabric else 'none'}")
    plan = {path.split("/", 1)[1]: text for path, text in plan_for(checked.topology).items()}

    # Slurm: one block per domain, in order, with the domain's hosts; base block size = domain size
    slurm = check_slurm_topology_yaml(plan["slurm/topology.yaml"])
    block = slurm[0]["block"]
    assert slurm[0]["cluster_default"] is True and block["block_sizes"][0] == size
    assert block["block_sizes"][-1] <= cluster.node_count < 2 * block["block_sizes"][-1]
    assert [expand(b["nodes"]) for b in block["blocks"]] == expected
    names = [b["block"] for b in block["blocks"]]

    # Kubernetes: each node labelled with its block's name; domains nest in leaves when labelled
    manifests = check_kueue_manifests(plan["kubernetes/topology.yaml"])
    levels = [level["nodeLabel"] for level in manifests["Topology"]["spec"]["levels"]]
    assert DOMAIN in levels and levels[-1] == "kubernetes.io/hostname"
    rows = parse_label_script(plan["kubernetes/label-nodes.sh"])
    assert [node for node, _ in rows] == hostnames
    by_domain: dict[str, list[str]] = {}
    for node, labels in rows:
        by_domain.setdefault(labels[DOMAIN], []).append(node)
    assert list(by_domain.values()) == expected and list(by_domain) == names
    if LEAF in levels:
        leaf_of = {labels[DOMAIN]: set() for _, labels in rows}
        for _, labels in rows:
            leaf_of[labels[DOMAIN]].add(labels[LEAF])
        assert all(len(leaves) == 1 for leaves in leaf_of.values())

    # TorchRec: pod_size nodes per domain; its intra group is the domain's GPUs
    torchrec = json.loads(plan["torchrec-topology.json"])["topology_kwargs"] if "torchrec-topology.json" in plan else None
    if torchrec is not None:
        assert torchrec["pod_size"] == size and torchrec["local_world_size"] == gpus
        assert torchrec["pod_size"] <= torchrec["world_size"]  # TorchRec's own check
    assert conf(plan["cluster.env"])["TOPOLOGY_DOMAIN_MULTIPLE"] == str(size)

    # roofline: the domain tier has the domain's GPUs; collectives count domains
    roofline = json.loads(plan["roofline.json"])
    tier = roofline["network"]["nvlink_domain"]
    assert (tier["domains"], tier["nodes_per_domain"], tier["gpus_per_domain"]) == (len(expected), size, size * gpus)
    if torchrec is not None:
        assert torchrec["pod_size"] * torchrec["local_world_size"] == tier["gpus_per_domain"]

    # NCCL: MNNVL on exactly when a domain spans nodes; the chassis-serial clique id only when asked
    nccl = conf(plan["nccl.conf"])
    assert ("NCCL_MNNVL_ENABLE" in nccl) == (size > 1)
    wants_serial = files.cluster["nvlink_domain"].get("clique_id") == "rack-serial" and size > 1
    assert (nccl.get("NCCL_MNNVL_CLIQUE_ID") == "-2") == wants_serial
    assert "NCCL_MNNVL_UUID" not in nccl


@settings(max_examples=EXAMPLES)
@given(cluster_specs(max_nodes=12, max_gpus=4, max_sockets=2))
def test_scheduler_files_of_any_cluster_follow_the_consumers_grammars(files):
    """Clusters without NVLink domains too: topology.yaml has only the fabric tree (the cluster
    default) over every node once; the Kueue documents pass the CRD schemas; every node gets
    one value per level and the levels nest."""
    checked = check_cluster_files(files)
    assert checked.platform is not None and checked.diagnostics == []
    cluster = checked.platform
    plan = {path.split("/", 1)[1]: text for path, text in plan_for(checked.topology, only=["scheduler-topology"]).items()}
    slurm = check_slurm_topology_yaml(plan["slurm/topology.yaml"])
    assert [t["topology"] for t in slurm] == ["fabric"]
    leaves = [s for s in slurm[0]["tree"]["switches"] if "nodes" in s]
    assert sorted(h for s in leaves for h in expand(s["nodes"])) == sorted(cluster.hostnames)
    levels = [level["nodeLabel"] for level in
              check_kueue_manifests(plan["kubernetes/topology.yaml"])["Topology"]["spec"]["levels"]]
    assert DOMAIN not in levels
    rows = parse_label_script(plan["kubernetes/label-nodes.sh"])
    assert [node for node, _ in rows] == list(cluster.hostnames)
    assert all(set(levels[:-1]) <= set(labels) for _, labels in rows)
    if LEAF in levels:  # the Kubernetes leaf of a node is its Slurm leaf switch
        slurm_leaf = {h: s["switch"] for s in leaves for h in expand(s["nodes"])}
        assert all(labels[LEAF] == slurm_leaf[node] for node, labels in rows)
