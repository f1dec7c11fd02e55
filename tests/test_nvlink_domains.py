"""NVLink domains beyond a node: the GB200 NVL72 clusters' outputs state their 72-GPU domains
wherever a consumer expects them (Slurm topology.yaml, Kueue Topology and node labels, NCCL
MNNVL settings, TorchRec pod_size, roofline, diagram); every cluster's scheduler files follow
the consumers' grammars; rules HW821-HW825 each report their fault at its line."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from hwspec import pipeline
from hwspec.generate import engine as generate
from hwspec.topology.hostlist import expand
from tests.scheduler_formats import check_kueue_manifests, check_slurm_topology_yaml, parse_label_script

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"
PLATFORMS = ROOT / "platforms"
CLUSTERS = sorted(p.parent.name for p in GENERATED.glob("*/hosts.tsv"))
DOMAIN = "network.topology.nvidia.com/accelerator"


def hosts(cluster: str) -> list[str]:
    rows = [line.split("\t") for line in (GENERATED / cluster / "hosts.tsv").read_text().splitlines()
            if not line.startswith("#")]
    return [row[0] for row in rows[1:]]


def conf(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))


def test_every_cluster_is_covered():
    assert {"zion-16", "zionex-16", "gb200-nvl72", "gb200-nvl72-x4"} <= set(CLUSTERS)


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_slurm_topology_yaml_follows_the_man_page_and_covers_every_node(cluster):
    topologies = check_slurm_topology_yaml((GENERATED / cluster / "slurm" / "topology.yaml").read_text())
    names = hosts(cluster)
    tree = next(t for t in topologies if "tree" in t)
    leaves = [s for s in tree["tree"]["switches"] if "nodes" in s]
    assert sorted(h for s in leaves for h in expand(s["nodes"])) == sorted(names)  # each node under one leaf
    blocks = [t for t in topologies if "block" in t]
    for topology in blocks:
        members = [h for b in topology["block"]["blocks"] for h in expand(b["nodes"])]
        assert sorted(members) == sorted(names)


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_kubernetes_manifests_follow_kueue_schemas_and_label_every_node(cluster):
    manifests = check_kueue_manifests((GENERATED / cluster / "kubernetes" / "topology.yaml").read_text())
    levels = [level["nodeLabel"] for level in manifests["Topology"]["spec"]["levels"]]
    selector = manifests["ResourceFlavor"]["spec"]["nodeLabels"]
    rows = parse_label_script((GENERATED / cluster / "kubernetes" / "label-nodes.sh").read_text())
    assert [node for node, _ in rows] == hosts(cluster)
    for _, labels in rows:
        assert selector.items() <= labels.items()
        assert set(labels) == set(selector) | set(levels[:-1])
    # each level nests in the one above: a value never appears under two parents
    for upper, lower in zip(levels, levels[1:-1]):
        parents: dict[str, set[str]] = {}
        for _, labels in rows:
            parents.setdefault(labels[lower], set()).add(labels[upper])
        assert all(len(p) == 1 for p in parents.values()), (upper, lower, parents)


def test_kueue_manifests_are_v1beta2_and_their_header_states_kueue_0_15():
    text = (GENERATED / "gb200-nvl72-x4" / "kubernetes" / "topology.yaml").read_text()
    assert "# Kueue topology-aware scheduling (kueue.x-k8s.io/v1beta2: Kueue 0.15 or later):\n" in text
    assert {doc["apiVersion"] for doc in yaml.safe_load_all(text)} == {"kueue.x-k8s.io/v1beta2"}


def test_a_deprecated_v1beta1_manifest_fails_the_kueue_check():
    text = (GENERATED / "gb200-nvl72-x4" / "kubernetes" / "topology.yaml").read_text()
    with pytest.raises(jsonschema.ValidationError, match=re.escape("'kueue.x-k8s.io/v1beta2' was expected")):
        check_kueue_manifests(text.replace("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1"))


def test_node_labels_use_topograph_keys_for_the_nvlink_domain_and_fabric_tiers():
    rows = parse_label_script((GENERATED / "gb200-nvl72-x4" / "kubernetes" / "label-nodes.sh").read_text())
    assert rows[-1] == ("gb200-r3-t17", {
        "topology.hwspec.io/cluster": "gb200-nvl72-x4", "network.topology.nvidia.com/tier-1": "spine",
        "network.topology.nvidia.com/tier-0": "pod1", "network.topology.nvidia.com/accelerator": "nvl72-rack3"})

def test_label_script_runs_under_sh_with_one_dry_run_kubectl_call_per_rack():
    script = GENERATED / "gb200-nvl72-x4" / "kubernetes" / "label-nodes.sh"
    result = subprocess.run(["sh", str(script)], env={**os.environ, "KUBECTL": "echo kubectl"},
                            capture_output=True, text=True, check=True)
    calls = [line.split() for line in result.stdout.splitlines()]
    assert [call[:4] for call in calls] == [["kubectl", "label", "node", "--overwrite"]] * 4
    assert [call[4:22] for call in calls] == [[f"gb200-r{r}-t{t:02}" for t in range(18)] for r in range(4)]
    assert [call[-1] for call in calls] == [f"{DOMAIN}=nvl72-rack{r}" for r in range(4)]


def test_nvl72_rack_states_one_72_gpu_domain_to_every_consumer():
    out = GENERATED / "gb200-nvl72"
    slurm = check_slurm_topology_yaml((out / "slurm" / "topology.yaml").read_text())
    assert slurm[0]["topology"] == "nvlink-domains" and slurm[0]["cluster_default"] is True
    assert slurm[0]["block"] == {"block_sizes": [18], "blocks": [{"block": "nvl72-rack0", "nodes": "gb200-t[00-17]"}]}
    rows = parse_label_script((out / "kubernetes" / "label-nodes.sh").read_text())
    assert {labels[DOMAIN] for _, labels in rows} == {"nvl72-rack0"} and len(rows) == 18
    torchrec = json.loads((out / "torchrec-topology.json").read_text())["topology_kwargs"]
    assert (torchrec["pod_size"], torchrec["local_world_size"], torchrec["world_size"]) == (18, 4, 72)
    roofline = json.loads((out / "roofline.json").read_text())
    domain = roofline["network"]["nvlink_domain"]
    assert (domain["domains"], domain["nodes_per_domain"], domain["gpus_per_domain"]) == (1, 18, 72)
    assert domain["per_gpu_nvlink_bytes_per_s"] == 900e9  # 18 NVLink5 links x 50 GB/s per direction
    assert roofline["collectives"]["n_ranks"] == 72
    assert conf(out / "nccl.conf")["NCCL_MNNVL_ENABLE"] == "1"
    assert "NCCL_MNNVL_CLIQUE_ID" not in conf(out / "nccl.conf")  # the fabric manager's cliqueId
    assert conf(out / "cluster.env")["TOPOLOGY_DOMAIN_MULTIPLE"] == "18"
    dot = (out / "cluster.dot").read_text()
    assert 'subgraph "cluster_nvl72-rack0"' in dot and "18 nodes, 72 GPUs, 9 NVLink switch trays, 900 GB/s per GPU" in dot


def block_conf(text: str) -> tuple[list[tuple[str, str]], list[int]]:
    """topology.conf(5) for topology/block: `BlockName=... Nodes=...` lines and one
    `BlockSizes=a,b,...` line, whitespace-separated key=value pairs, '#' comments."""
    blocks, sizes = [], None
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        pairs = dict(pair.split("=", 1) for pair in line.split())
        if "BlockName" in pairs:
            assert set(pairs) == {"BlockName", "Nodes"}, line
            blocks.append((pairs["BlockName"], pairs["Nodes"]))
        else:
            assert set(pairs) == {"BlockSizes"} and sizes is None, line
            sizes = [int(x) for x in pairs["BlockSizes"].split(",")]
    return blocks, sizes


@pytest.mark.parametrize("cluster", ["gb200-nvl72", "gb200-nvl72-x4"])
def test_block_topology_conf_has_the_blocks_of_topology_yaml(cluster):
    block = check_slurm_topology_yaml((GENERATED / cluster / "slurm" / "topology.yaml").read_text())[0]["block"]
    blocks, sizes = block_conf((GENERATED / cluster / "slurm" / "topology-block.conf").read_text())
    assert blocks == [(b["block"], b["nodes"]) for b in block["blocks"]] and sizes == block["block_sizes"]


def test_clusters_without_domains_get_no_block_topology_conf():
    assert not (GENERATED / "zionex-16" / "slurm" / "topology-block.conf").exists()


def test_four_racks_are_four_blocks_under_two_pods():
    out = GENERATED / "gb200-nvl72-x4"
    slurm = check_slurm_topology_yaml((out / "slurm" / "topology.yaml").read_text())
    block = slurm[0]["block"]
    assert block["block_sizes"] == [18, 36, 72]
    assert [(b["block"], b["nodes"]) for b in block["blocks"]] == [
        (f"nvl72-rack{r}", f"gb200-r{r}-t[00-17]") for r in range(4)]
    levels = [level["nodeLabel"] for level in
              check_kueue_manifests((out / "kubernetes" / "topology.yaml").read_text())["Topology"]["spec"]["levels"]]
    assert levels == ["network.topology.nvidia.com/tier-1", "network.topology.nvidia.com/tier-0", DOMAIN, "kubernetes.io/hostname"]
    assert conf(out / "nccl.conf")["NCCL_MNNVL_CLIQUE_ID"] == "-2"
    torchrec = json.loads((out / "torchrec-topology.json").read_text())["topology_kwargs"]
    assert (torchrec["pod_size"], torchrec["world_size"]) == (18, 288)


def test_clusters_without_domains_get_no_mnnvl_and_no_pod_size():
    for cluster in ("zionex-16", "zion-16"):
        out = GENERATED / cluster
        assert not any(k.startswith("NCCL_MNNVL") for k in conf(out / "nccl.conf"))
        assert "pod_size" not in json.loads((out / "torchrec-topology.json").read_text())["topology_kwargs"]
        assert "nvlink_domain" not in json.loads((out / "roofline.json").read_text())["network"]
        slurm = check_slurm_topology_yaml((out / "slurm" / "topology.yaml").read_text())
        assert [t["topology"] for t in slurm] == ["fabric"] and slurm[0]["cluster_default"] is True


@pytest.mark.consumer
def test_torchrec_builds_the_topology_with_its_pod_size():
    types = pytest.importorskip("torchrec.distributed.planner.types", reason="TorchRec is not installed: pip install torch==2.13.0 "
                                "fbgemm-gpu-cpu==1.8.0 and torchrec==1.8.0 --no-deps (.ci/run does)")
    import inspect

    doc = json.loads((GENERATED / "gb200-nvl72" / "torchrec-topology.json").read_text())
    kwargs = doc["topology_kwargs"]
    accepted = inspect.signature(types.Topology).parameters
    topology = types.Topology(**{k: v for k, v in kwargs.items() if k in accepted})
    assert topology._intra_group_size == 72  # pod_size x local_world_size: the NVLink domain's GPUs
    factory = doc["factory"]
    assert factory["trainer_config"]["pod_size"] == 18
    built = types.TopologyFactory.create_topology(
        trainer_config=types.TrainerConfig(**factory["trainer_config"]),
        hardware_config=types.HardwareConfig(**factory["hardware_config"]),
        kernel_config=types.KernelConfig(**factory["kernel_config"]))
    assert built._intra_group_size == 72 and built.world_size == 72


# ---------------------------------------------------------------- rules and errors


def cluster_file(tmp_path: Path, body: str, platform: str = "gb200-tray.yaml") -> Path:
    shutil.copy(PLATFORMS / platform, tmp_path / platform)
    path = tmp_path / "cluster.yaml"
    path.write_text("hwspec: 1\nkind: cluster\nname: c\n" + body)
    return path


def findings(path: Path) -> list[str]:
    checked = pipeline.check(path)
    return [d.format() for d in checked.diagnostics]


NODES = "nodes:\n  - platform: gb200-tray.yaml\n    count: {count}\n    hostname: gb${{n:03}}\n"
DOMAIN_SECTION = "nvlink_domain:\n  nodes: 18\n  name: {name}\n  switch_trays: 9\n  switch_ports: {ports}\n"


def test_partial_last_domain_is_reported_at_the_domain_size(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = cluster_file(tmp_path, NODES.format(count=20) + DOMAIN_SECTION.format(name="nvl${d}", ports=144))
    assert findings(path) == [
        "cluster.yaml:9:10: error[HW821 nvlink-domain-size]: 20 nodes in NVLink domains of 18: the last domain (nvl1) "
        "has 2 node(s)\n  hint: use a multiple of 18 nodes, or turn the rule off with a reason for a partial rack"]


def test_too_few_switch_ports_are_reported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = cluster_file(tmp_path, NODES.format(count=18) + DOMAIN_SECTION.format(name="nvl${d}", ports=100))
    assert findings(path) == [
        "cluster.yaml:12:17: error[HW822 nvlink-domain-switch-ports]: a domain's GPUs have 1296 NVLinks, but 9 switch "
        "trays x 100 ports = 900\n  hint: add switch trays, or make domains smaller"]


def test_gpus_wired_to_each_other_cannot_form_a_multi_node_domain(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = cluster_file(tmp_path, "nodes:\n  - platform: zionex.yaml\n    count: 2\n    hostname: zx${n}\n"
                        "nvlink_domain: {nodes: 2, switch_trays: 1, switch_ports: 192}\n", platform="zionex.yaml")
    assert findings(path) == [
        "cluster.yaml:5:15: error[HW823 nvlink-domain-gpus]: nodes[0] (zionex) wires its NVLinks fully-connected, not "
        "to NVLink switches: its GPUs cannot reach other nodes over NVLink\n"
        "  hint: declare nvlink: {topology: nvswitch} on the node platform"]


def test_a_domain_of_two_node_platforms_is_reported_at_the_second_group(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    other = (PLATFORMS / "gb200-tray.yaml").read_text().replace("name: gb200-tray\n", "name: gb200-tray-b\n")
    (tmp_path / "tray-b.yaml").write_text(other)
    path = cluster_file(tmp_path, "nodes:\n  - platform: gb200-tray.yaml\n    count: 9\n    hostname: a${n}\n"
                                  "  - platform: tray-b.yaml\n    count: 9\n    hostname: b${i}\n"
                        + DOMAIN_SECTION.format(name="nvl${d}", ports=144))
    assert findings(path) == [
        "cluster.yaml:9:12: error[HW824 nvlink-domain-one-platform]: domain nvl0 holds nodes of gb200-tray (nodes[0]) "
        "and gb200-tray-b (nodes[1])\n  hint: make each node group a multiple of 18 nodes"]


def test_domains_across_leaves_warn_and_drop_the_kubernetes_leaf_level(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = cluster_file(tmp_path, NODES.format(count=72) + DOMAIN_SECTION.format(name="nvl${d}", ports=144)
                        + "backend:\n  transport: infiniband\n  speed: 400 Gb/s\n  topology: rail-optimized\n"
                          "  leaf: {ports: 64, uplinks: 32}\n  spine: {ports: 64}\n")
    assert findings(path) == [
        "cluster.yaml:17:17: warning[HW825 nvlink-domain-in-leaf]: 2 NVLink domain(s) span more than one leaf group, "
        "e.g. nvl1 on pod0 and pod1: the Kubernetes Topology leaves out the leaf level\n"
        "  hint: give leaves a multiple of 18 nodes (ports - uplinks, divided by NICs per node on a Clos fabric)"]
    checked = pipeline.check(path)
    plan = generate.plan_for(checked.topology, only=["scheduler-topology"])
    manifests = check_kueue_manifests(plan["c/kubernetes/topology.yaml"])
    assert [level["nodeLabel"] for level in manifests["Topology"]["spec"]["levels"]] == [
        "network.topology.nvidia.com/tier-1", DOMAIN, "kubernetes.io/hostname"]
    rows = parse_label_script(plan["c/kubernetes/label-nodes.sh"])
    assert "network.topology.nvidia.com/tier-0" not in rows[0][1]


@pytest.mark.parametrize("name, message", [
    ("Rack${d}", "cluster.yaml:10:9: error[E205]: nvlink_domain.name: 'Rack0' is not a domain name: lower-case letters, "
                 "digits, '-', '_' and '.', starting with a letter and ending with a letter or digit, at most 63\n"
                 "  hint: domain names become Kubernetes label values and Slurm block names, e.g. 'rack${d:02}'"),
    ("rack", "cluster.yaml:10:9: error[E205]: nvlink_domain.name: 2 domains but the pattern gives 'rack' more than "
             "once\n  hint: use d in the pattern, e.g. 'nvl${d}'"),
    ("r${x}", "cluster.yaml:10:9: error[E205]: nvlink_domain.name: unknown variable 'x' (variables here: d)\n"
              "  hint: the pattern may use d (the domain index)"),
])
def test_bad_domain_names_are_refused_at_their_line(tmp_path, monkeypatch, name, message):
    monkeypatch.chdir(tmp_path)
    path = cluster_file(tmp_path, NODES.format(count=36) + "nvlink_domain:\n  nodes: 18\n  name: " + name
                        + "\n  switch_trays: 9\n  switch_ports: 144\n")
    assert findings(path) == [message]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_scheduler_yaml_is_the_same_from_libyaml_and_the_pure_python_emitter(cluster):
    """The scheduler files are emitted by libyaml when PyYAML has it (speed at 16k nodes); a
    machine without it must write the same bytes, so both emitters agree on every document."""
    import yaml

    from hwspec.generate.domains import _yaml

    assert hasattr(yaml, "CSafeDumper"), "PyYAML without libyaml: the fast emitter is not being tested"
    for name in ("slurm/topology.yaml", "kubernetes/topology.yaml"):
        documents = list(yaml.safe_load_all((GENERATED / cluster / name).read_text()))
        pure = yaml.dump_all(documents, Dumper=yaml.SafeDumper, sort_keys=False, default_flow_style=False, width=1000)
        assert _yaml(*documents) == pure


@pytest.mark.parametrize("texts, words", [
    (["zx00001", "10.0.0.1", "a_b@c%d+e=f:g,h./-"], ["zx00001", "10.0.0.1", "a_b@c%d+e=f:g,h./-"]),
    (["zx1", "a b", "", "it's"], ["zx1", "'a b'", "''", "'it'\"'\"'s'"]),
])
def test_label_script_quotes_each_word_as_shlex_does(texts, words):
    from hwspec.generate.domains import shell_words

    assert shell_words(texts) == words
