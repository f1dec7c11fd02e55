"""The acceptance plan (`hwspec.acceptance.plan`): as properties over drawn clusters, no node is
in two runs of a round, cross-spine runs of a round stay within every leaf group's uplinks, every
node runs alone once, a node of a leaf group of three or more gets two leaf partners, and the
rounds are the formula's; the shipped clusters' plans exactly (as plan.tsv writes them); the
65,536-node benchmark cluster's round counts; the message size rule."""

from __future__ import annotations

import math
import runpy
from collections import Counter, defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import event, given, note, settings

from hwspec import pipeline
from hwspec.acceptance.plan import GIB, AcceptancePlan, RoundCounts, max_message_bytes, plan, size_text
from hwspec.formats.transports import facts
from hwspec.generate.engine import GenerationError, plan_for
from hwspec.testing import cluster_specs, dump_yaml
from hwspec.testing.clusters import check_cluster_files
from hwspec.topology import ClusterTopology

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = settings.default.max_examples
SIZES = {"max_gpus": 4, "max_sockets": 2, "max_nodes": 24}


def checked_plan(files) -> tuple[ClusterTopology, AcceptancePlan]:
    note(dump_yaml(files.cluster))
    checked = check_cluster_files(files)
    assert checked.topology is not None and not checked.failed(), "\n".join(d.format() for d in checked.diagnostics)
    return checked.topology, plan(checked.topology)


def runs_by_round(acceptance: AcceptancePlan) -> dict[int, list[tuple[str, tuple[int, ...], dict[str, str]]]]:
    """round -> [(scope, nodes, env)] of every run."""
    rounds: dict[int, list[tuple[str, tuple[int, ...], dict[str, str]]]] = defaultdict(list)
    for run_set in acceptance.sets:
        rounds[run_set.round].extend((run_set.scope, run, dict(run_set.env)) for run in run_set.runs())
    return rounds


def uplink_capacity(topology: ClusterTopology, nodes: range) -> int:
    """Cross-spine nodes the leaves of the leaf group `nodes` pass at once: each leaf's uplinks
    over one node's ports on it (a rail leaf: 1 NIC; a Clos leaf: all of them), at least one node;
    0 without a spine."""
    fabric = topology.platform.fabric
    if fabric is None or not fabric.spine_count:
        return 0
    leaves = [leaf for leaf in fabric.leaves if leaf.nodes == nodes]
    return min(max(1, int(leaf.uplinks * fabric.uplink_speed // ((1 if leaf.rail is not None else fabric.nics_per_node)
                                                                  * fabric.nic_speed)))
               for leaf in leaves)


def check_invariants(topology: ClusterTopology, acceptance: AcceptancePlan) -> None:
    cluster = topology.platform
    group_of = topology.leaf_group_of
    groups = topology.leaf_groups
    for number, runs in runs_by_round(acceptance).items():
        nodes = [node for _, run, _ in runs for node in run]
        assert len(nodes) == len(set(nodes)), f"round {number}: a node in two runs"
        scopes = {scope for scope, _, _ in runs}
        assert len(scopes) == 1, f"round {number} mixes {scopes}"
        crossing = Counter(node_group for _, run, _ in runs if len({group_of(n) for n in run}) > 1
                           for node_group in map(group_of, run))
        for index, count in crossing.items():
            assert count <= uplink_capacity(topology, groups[index][1]), f"round {number}: {groups[index][0]}'s uplinks"
        for scope, run, env in runs:
            run_groups = {group_of(n) for n in run}
            if scope in ("leaf-pair", "rail"):
                assert len(run_groups) == 1, f"{scope} run {run} crosses leaf groups"
            if scope == "spine-pair":
                assert len(run_groups) >= 2 and len(run) in (2, 3), run
            if scope == "rail":
                assert env["LOCAL_RANK"] == (env.get("CUDA_VISIBLE_DEVICES") or env["HIP_VISIBLE_DEVICES"])
                assert "," not in env.get("NCCL_IB_HCA", env.get("NCCL_SOCKET_IFNAME", "")), "a rail run names one NIC"
    alone = [run for scope, run, _ in (r for runs in runs_by_round(acceptance).values() for r in runs) if scope == "node"]
    assert sorted(alone) == [(node,) for node in range(cluster.node_count)], "every node alone once"


def formula(topology: ClusterTopology) -> RoundCounts:
    """The round counts the module's docstring states, computed here from the fabric."""
    cluster = topology.platform
    sizes = [len(nodes) for _, nodes in topology.leaf_groups]
    fabric = cluster.fabric
    rails = 0
    if fabric is not None and fabric.topology == "rail-optimized" and max(sizes) >= 2:
        nics = cluster.groups[0].platform.collective_nics
        rails = sum(1 for nic in nics[:fabric.nics_per_node]  # a rank selects the NIC by its verbs device or socket interface
                    if (facts(nic.transport).ib_verbs and nic.device) or (nic.transport == "tcp" and nic.interface))
    spine = 0
    if fabric is not None and fabric.spine_count and len(sizes) >= 2:
        largest = max(sizes)
        width = min(min(uplink_capacity(topology, nodes) for _, nodes in topology.leaf_groups), largest,
                    cluster.node_count - largest)
        spine = math.ceil(largest / width)
    domains = cluster.nvlink_domains
    return RoundCounts(node=1, domain=int(domains is not None and domains.size >= 2),
                       leaf=(max(sizes, default=0) >= 2) + (max(sizes, default=0) >= 3) + any(n >= 3 and n % 2 for n in sizes),
                       rail=rails, spine=spine)


@settings(max_examples=EXAMPLES)
@given(cluster_specs(backend_network=True, **SIZES))
def test_runs_of_a_round_share_no_node_and_no_uplink_beyond_capacity(files):
    topology, acceptance = checked_plan(files)
    fabric = topology.platform.fabric
    event(f"{fabric.topology}, {len(topology.leaf_groups)} leaf groups, {acceptance.rounds} rounds")
    check_invariants(topology, acceptance)


@settings(max_examples=max(5, EXAMPLES // 2))
@given(cluster_specs(nvlink_domains=True, **SIZES))
def test_clusters_with_nvlink_domains_keep_the_invariants_and_run_each_domain_whole(files):
    topology, acceptance = checked_plan(files)
    check_invariants(topology, acceptance)
    domains = topology.platform.nvlink_domains
    whole = sorted(run for s in acceptance.sets if s.scope == "domain" for run in s.runs())
    expected = sorted(tuple(domains.nodes(d)) for d in range(domains.count) if len(domains.nodes(d)) >= 2)
    assert whole == expected
    network = [s for s in acceptance.sets if s.scope in ("leaf-pair", "rail", "spine-pair")]
    assert all(("NCCL_MNNVL_ENABLE", "0") in s.env for s in network) == (domains.size > 1) or not network


@settings(max_examples=EXAMPLES)
@given(cluster_specs(backend_network=True, **SIZES))
def test_every_node_of_a_leaf_group_of_three_or_more_has_two_leaf_partners(files):
    topology, acceptance = checked_plan(files)
    partners: dict[int, set[int]] = defaultdict(set)
    for run_set in acceptance.sets:
        if run_set.scope == "leaf-pair":
            for a, b in run_set.runs():
                partners[a].add(b)
                partners[b].add(a)
    for _, nodes in topology.leaf_groups:
        for node in nodes:
            assert len(partners[node]) == min(2, len(nodes) - 1), (node, sorted(partners[node]))
            assert partners[node] <= set(nodes) - {node}


@settings(max_examples=EXAMPLES)
@given(cluster_specs(**SIZES))
def test_rounds_are_the_formulas_and_every_node_crosses_the_spine(files):
    topology, acceptance = checked_plan(files)
    counts = formula(topology)
    assert acceptance.counts == counts
    assert acceptance.rounds == counts.total
    if counts.spine:
        crossing = {node for s in acceptance.sets if s.scope == "spine-pair" for node in s.nodes()}
        assert crossing == set(range(topology.platform.node_count))


# ---------------------------------------------------------------- the shipped clusters, exactly


def plan_lines(name: str) -> list[str]:
    """plan.tsv of a shipped cluster as generated now, without its comment lines."""
    checked = pipeline.check(ROOT / "platforms" / f"{name}.yaml")
    text = plan_for(checked.topology, only=["acceptance"])[f"{name}/acceptance/plan.tsv"]
    return [line for line in text.splitlines() if not line.startswith("#")]


HEADER = "round\tscope\tresults\truns\tnodes\tlayout\tranks\tgpus\tnics\ttests\tenv\thosts"
H100_NICS = "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7"
H100_RAILS = [f"{3 + i}\trail\tr{3 + i:02d}-rail{i}\t1\t{{n}}\tconsecutive\t1\t{i}\tmlx5_{i}\tnccl\t"
              f"CUDA_VISIBLE_DEVICES={i} LOCAL_RANK={i} NCCL_IB_HCA==mlx5_{i}:1\tdgxh100-[00-{{last}}]" for i in range(8)]
NVL72_NICS = "mlx5_0,mlx5_1,mlx5_2,mlx5_3"
NO_MNNVL = "NCCL_MNNVL_ENABLE=0"

SHIPPED = {
    "dgx-h100-8": [
        "0\tnode\tr00-node\t8\t1\tconsecutive\t8\t0-7\t-\tnccl,nvbandwidth\t-\tdgxh100-[00-07]",
        f"1\tleaf-pair\tr01-leaf-pair-a\t4\t2\tconsecutive\t8\t0-7\t{H100_NICS}\tnccl\t-\tdgxh100-[00-07]",
        f"2\tleaf-pair\tr02-leaf-pair-b\t3\t2\tconsecutive\t8\t0-7\t{H100_NICS}\tnccl\t-\tdgxh100-[01-06]",
        f"2\tleaf-pair\tr02-leaf-pair-b\t1\t2\tconsecutive\t8\t0-7\t{H100_NICS}\tnccl\t-\tdgxh100-[00,07]",
        *(line.format(n=8, last="07") for line in H100_RAILS),
    ],
    "dgx-h100-16": [
        "0\tnode\tr00-node\t16\t1\tconsecutive\t8\t0-7\t-\tnccl,nvbandwidth\t-\tdgxh100-[00-15]",
        f"1\tleaf-pair\tr01-leaf-pair-a\t8\t2\tconsecutive\t8\t0-7\t{H100_NICS}\tnccl\t-\tdgxh100-[00-15]",
        f"2\tleaf-pair\tr02-leaf-pair-b\t7\t2\tconsecutive\t8\t0-7\t{H100_NICS}\tnccl\t-\tdgxh100-[01-14]",
        f"2\tleaf-pair\tr02-leaf-pair-b\t1\t2\tconsecutive\t8\t0-7\t{H100_NICS}\tnccl\t-\tdgxh100-[00,15]",
        *(line.format(n=16, last="15") for line in H100_RAILS),
    ],
    "gb200-nvl72": [
        "0\tnode\tr00-node\t18\t1\tconsecutive\t4\t0-3\t-\tnccl,nvbandwidth\t-\tgb200-t[00-17]",
        "1\tdomain\tr01-domain\t1\t18\tconsecutive\t4\t0-3\t-\tnccl\t-\tgb200-t[00-17]",
        f"2\tleaf-pair\tr02-leaf-pair-a\t9\t2\tconsecutive\t4\t0-3\t{NVL72_NICS}\tnccl\t{NO_MNNVL}\tgb200-t[00-17]",
        f"3\tleaf-pair\tr03-leaf-pair-b\t8\t2\tconsecutive\t4\t0-3\t{NVL72_NICS}\tnccl\t{NO_MNNVL}\tgb200-t[01-16]",
        f"3\tleaf-pair\tr03-leaf-pair-b\t1\t2\tconsecutive\t4\t0-3\t{NVL72_NICS}\tnccl\t{NO_MNNVL}\tgb200-t[00,17]",
        *(f"{4 + i}\trail\tr{4 + i:02d}-rail{i}\t1\t18\tconsecutive\t1\t{i}\tmlx5_{i}\tnccl\t"
          f"CUDA_VISIBLE_DEVICES={i} LOCAL_RANK={i} NCCL_IB_HCA==mlx5_{i}:1 {NO_MNNVL}\tgb200-t[00-17]" for i in range(4)),
    ],
    "gb200-nvl72-x4": [
        "0\tnode\tr00-node\t72\t1\tconsecutive\t4\t0-3\t-\tnccl,nvbandwidth\t-\t"
        "gb200-r0-t[00-17],gb200-r1-t[00-17],gb200-r2-t[00-17],gb200-r3-t[00-17]",
        "1\tdomain\tr01-domain\t4\t18\tconsecutive\t4\t0-3\t-\tnccl\t-\t"
        "gb200-r0-t[00-17],gb200-r1-t[00-17],gb200-r2-t[00-17],gb200-r3-t[00-17]",
        f"2\tleaf-pair\tr02-leaf-pair-a\t36\t2\tconsecutive\t4\t0-3\t{NVL72_NICS}\tnccl\t{NO_MNNVL}\t"
        "gb200-r0-t[00-17],gb200-r1-t[00-17],gb200-r2-t[00-17],gb200-r3-t[00-17]",
        f"3\tleaf-pair\tr03-leaf-pair-b\t34\t2\tconsecutive\t4\t0-3\t{NVL72_NICS}\tnccl\t{NO_MNNVL}\t"
        "gb200-r0-t[01-17],gb200-r1-t[00-16],gb200-r2-t[01-17],gb200-r3-t[00-16]",
        f"3\tleaf-pair\tr03-leaf-pair-b\t2\t2\tconsecutive\t4\t0-3\t{NVL72_NICS}\tnccl\t{NO_MNNVL}\t"
        "gb200-r0-t00,gb200-r1-t17,gb200-r2-t00,gb200-r3-t17",
        *(f"{4 + i}\trail\tr{4 + i:02d}-rail{i}\t2\t36\tconsecutive\t1\t{i}\tmlx5_{i}\tnccl\t"
          f"CUDA_VISIBLE_DEVICES={i} LOCAL_RANK={i} NCCL_IB_HCA==mlx5_{i}:1 {NO_MNNVL}\t"
          "gb200-r0-t[00-17],gb200-r1-t[00-17],gb200-r2-t[00-17],gb200-r3-t[00-17]" for i in range(4)),
        f"8\tspine-pair\tr08-spine-pair-0\t28\t2\thalves\t4\t0-3\t{NVL72_NICS}\tnccl\t{NO_MNNVL}\t"
        "gb200-r0-t[00-17],gb200-r1-t[00-09],gb200-r2-t[00-17],gb200-r3-t[00-09]",
        f"9\tspine-pair\tr09-spine-pair-1\t8\t2\thalves\t4\t0-3\t{NVL72_NICS}\tnccl\t{NO_MNNVL}\t"
        "gb200-r1-t[10-17],gb200-r3-t[10-17]",
    ],
    "zionex-16": [
        "0\tnode\tr00-node\t16\t1\tconsecutive\t8\t0-7\t-\tnccl,nvbandwidth\t-\tzionex[00-15]",
        f"1\tleaf-pair\tr01-leaf-pair-a\t8\t2\tconsecutive\t8\t0-7\t{H100_NICS}\tnccl\t-\tzionex[00-15]",
        f"2\tleaf-pair\tr02-leaf-pair-b\t7\t2\tconsecutive\t8\t0-7\t{H100_NICS}\tnccl\t-\tzionex[01-14]",
        f"2\tleaf-pair\tr02-leaf-pair-b\t1\t2\tconsecutive\t8\t0-7\t{H100_NICS}\tnccl\t-\tzionex[00,15]",
    ],
    "zion-16": [
        "0\tnode\tr00-node\t16\t1\tconsecutive\t8\t0-7\t-\tnccl,nvbandwidth\t-\tzion[00-15]",
        "1\tleaf-pair\tr01-leaf-pair-a\t8\t2\tconsecutive\t8\t0-7\teth0,eth1,eth2,eth3\tnccl\t-\tzion[00-15]",
        "2\tleaf-pair\tr02-leaf-pair-b\t7\t2\tconsecutive\t8\t0-7\teth0,eth1,eth2,eth3\tnccl\t-\tzion[01-14]",
        "2\tleaf-pair\tr02-leaf-pair-b\t1\t2\tconsecutive\t8\t0-7\teth0,eth1,eth2,eth3\tnccl\t-\tzion[00,15]",
    ],
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_each_shipped_cluster_has_exactly_this_plan(name):
    assert plan_lines(name) == [HEADER, *SHIPPED[name]]


@pytest.mark.parametrize(("name", "rounds"), [("dgx-h100-8", 11), ("dgx-h100-16", 11), ("gb200-nvl72", 8),
                                               ("gb200-nvl72-x4", 10), ("zionex-16", 3), ("zion-16", 3)])
def test_the_shipped_clusters_round_counts_are_the_formulas(name, rounds):
    topology = pipeline.check(ROOT / "platforms" / f"{name}.yaml").topology
    acceptance = plan(topology)
    check_invariants(topology, acceptance)
    assert acceptance.counts == formula(topology)
    assert acceptance.rounds == acceptance.counts.total == rounds


def test_the_gb200_racks_cross_the_spine_28_nodes_a_round_as_their_leaves_have_28_uplinks():
    """36 trays per pod on each rail leaf, 28 uplinks of the same speed: ceil(36 / 28) = 2 rounds."""
    acceptance = plan(pipeline.check(ROOT / "platforms" / "gb200-nvl72-x4.yaml").topology)
    assert acceptance.spine is not None
    assert (acceptance.spine.largest, acceptance.spine.others, acceptance.spine.per_group, acceptance.spine.width,
            acceptance.spine.rounds) == (36, 36, 28, 28, 2)
    first = next(s for s in acceptance.sets if s.scope == "spine-pair")
    assert list(first.runs())[:2] == [(0, 36), (1, 37)]


@pytest.mark.slow
def test_the_65536_node_benchmark_cluster_takes_12_rounds(tmp_path):
    cluster_yaml = runpy.run_path(str(ROOT / "benchmarks" / "scale.py"))["cluster_yaml"]  # the benchmark's own cluster
    node = (ROOT / "platforms" / "zionex.yaml").read_text().replace("rail_optimized: false", "rail_optimized: true")
    (tmp_path / "zionex.yaml").write_text(node)
    (tmp_path / "cluster.yaml").write_text(cluster_yaml(65536))
    topology = pipeline.check(tmp_path / "cluster.yaml").topology
    acceptance = plan(topology)
    assert acceptance.counts == RoundCounts(node=1, domain=0, leaf=2, rail=8, spine=1)
    assert acceptance.rounds == 12 and len(acceptance.sets) == 13
    assert [(s.label, s.run_count) for s in acceptance.sets if s.scope != "rail"] == [
        ("r00-node", 65536), ("r01-leaf-pair-a", 32768), ("r02-leaf-pair-b", 30720), ("r02-leaf-pair-b", 2048),
        ("r11-spine-pair-0", 32768)]
    assert {s.run_count for s in acceptance.sets if s.scope == "rail"} == {2048}


# ---------------------------------------------------------------- runs of particular clusters


def test_an_amd_clusters_rail_runs_confine_the_rank_with_hip_visible_devices(tmp_path):
    (tmp_path / "cluster.yaml").write_text(
        "hwspec: 1\nkind: cluster\nname: mi\nnodes:\n"
        f"  - {{platform: {ROOT / 'platforms' / 'mi300x-oam.yaml'}, count: 4, hostname: 'mi${{i}}'}}\n"
        "backend: {transport: rocev2, speed: 400 Gb/s, topology: rail-optimized, leaf: {ports: 64}}\n")
    checked = pipeline.check(tmp_path / "cluster.yaml", platform_roots=[ROOT])
    assert not checked.failed(), [d.format() for d in checked.diagnostics]
    rail = next(s for s in plan(checked.topology).sets if s.label.endswith("rail3"))
    assert rail.env == (("HIP_VISIBLE_DEVICES", "3"), ("LOCAL_RANK", "3"), ("NCCL_IB_HCA", "=mlx5_3:1"))
    assert (rail.gpus, rail.nics, rail.ranks_per_node, list(rail.runs())) == ((3,), ("mlx5_3",), 1, [(0, 1, 2, 3)])


def test_a_cluster_without_a_backend_fabric_runs_its_nodes_alone(tmp_path):
    (tmp_path / "cluster.yaml").write_text(
        "hwspec: 1\nkind: cluster\nname: bare\nnodes:\n"
        f"  - {{platform: {ROOT / 'platforms' / 'hgx-h100.yaml'}, count: 3, hostname: 'h${{i}}'}}\n")
    topology = pipeline.check(tmp_path / "cluster.yaml", platform_roots=[ROOT]).topology
    acceptance = plan(topology)
    assert [(s.scope, s.run_count) for s in acceptance.sets] == [("node", 3)]
    assert acceptance.counts == RoundCounts(node=1, domain=0, leaf=0, rail=0, spine=0)


def test_a_host_name_outside_hw805s_syntax_is_refused_by_the_generator(tmp_path):
    """A library caller may generate without the rules; the scripts take host names unquoted."""
    (tmp_path / "cluster.yaml").write_text(
        "hwspec: 1\nkind: cluster\nname: bad\nnodes:\n"
        f"  - {{platform: {ROOT / 'platforms' / 'hgx-h100.yaml'}, count: 2, hostname: 'Node_${{i}}'}}\n")
    topology = pipeline.check(tmp_path / "cluster.yaml", platform_roots=[ROOT]).topology
    with pytest.raises(GenerationError) as raised:
        plan_for(topology, only=["acceptance"])
    assert str(raised.value) == (f"{tmp_path / 'cluster.yaml'}: acceptance: nodes[0]: hostname 'Node_0' is not a host name "
                                 "(lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63): "
                                 "it has upper-case letters")


# ---------------------------------------------------------------- message sizes


def gpus_with(*hbm: int | None) -> list[SimpleNamespace]:
    return [SimpleNamespace(gpus=[SimpleNamespace(hbm_capacity=h) for h in hbm])]


@pytest.mark.parametrize(("hbm", "size"), [
    ((80 * GIB,), "16G"),             # (80 - 1) / 3 = 26.3 GiB: 16 GiB
    ((40 * 10**9,), "8G"),           # A100 40 GB: 12.1 GiB -> 8 GiB
    ((16 * 10**9, 80 * GIB), "4G"),  # the smallest GPU decides: 4.6 GiB -> 4 GiB
    ((None,), "16G"),                # unknown: nccl-tests lowers it itself
    ((GIB + 100,), "32"),            # 33 bytes fit: 32
    ((GIB,), "8"),                   # nothing fits: the first size
])
def test_the_largest_message_is_a_power_of_two_the_gpus_hold_three_times(hbm, size):
    assert size_text(max_message_bytes(gpus_with(*hbm))) == size
