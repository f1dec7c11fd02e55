"""Property tests of clusters over generated node platforms: they validate clean, the world size
is nodes x GPUs, hostnames are unique, the generated host lists agree, and on a rail-optimized
fabric leaf `rail` i only carries NIC i of every node (the NIC of local rank i)."""

from __future__ import annotations

from collections import Counter

from hypothesis import event, given, note, settings

from hwspec.generate.engine import plan_for
from hwspec.testing import check_cluster_files, cluster_specs, dump_yaml
from hwspec.topology import topology_of

EXAMPLES = settings.default.max_examples
SIZES = {"max_gpus": 8, "max_sockets": 4, "max_nodes": 24}


def checked_cluster(files):
    note(dump_yaml(files.cluster))
    note(dump_yaml(files.node))
    checked = check_cluster_files(files)
    assert checked.platform is not None and checked.diagnostics == [], \
        "\n".join(d.format() for d in checked.diagnostics)
    return checked


@settings(max_examples=EXAMPLES)
@given(cluster_specs(**SIZES))
def test_cluster_world_size_hostnames_and_host_lists(files):
    checked = checked_cluster(files)
    cluster = checked.platform
    count, gpus = files.cluster["nodes"][0]["count"], len(files.node["gpus"])
    assert cluster.node_count == count
    assert cluster.world_size == count * gpus == sum(g.count * len(g.platform.gpus) for g in cluster.groups)
    assert len(set(cluster.hostnames)) == len(cluster.hostnames) == count

    plan = plan_for(topology_of(cluster), only=["hostfile"])
    lines = [line.split() for line in plan[f"{cluster.name}/hostfile"].splitlines() if not line.startswith("#")]
    assert [host for host, _ in lines] == list(cluster.hostnames)
    assert sum(int(slots.removeprefix("slots=")) for _, slots in lines) == cluster.world_size
    header, *rows = [row.split("\t") for row in plan[f"{cluster.name}/hosts.tsv"].splitlines() if not row.startswith("#")]
    assert header == ["hostname", "address", "node_platform", "gpus"]
    assert [row[0] for row in rows] == list(cluster.hostnames)
    assert sum(int(row[3]) for row in rows) == cluster.world_size
    addresses = [row[1] for row in rows if row[1] != "-"]
    assert len(set(addresses)) == len(addresses)


@settings(max_examples=EXAMPLES)
@given(cluster_specs(backend_network=True, **SIZES))
def test_rail_layout_is_consistent(files):
    checked = checked_cluster(files)
    cluster, graph = checked.platform, checked.topology.graph
    fabric = cluster.fabric
    platform = cluster.groups[0].platform
    nics = platform.collective_nics
    event(f"{fabric.topology}, {len(fabric.leaves)} leaves, {'a' if fabric.spine_count else 'no'} spine")
    assert fabric.nics_per_node == max(1, len(nics))
    if fabric.topology != "rail-optimized":
        assert all(leaf.rail is None for leaf in fabric.leaves)
        return
    # every (rail, node) is served by exactly one leaf, one port per node: NIC `rail` only
    served = Counter((leaf.rail, node) for leaf in fabric.leaves for node in leaf.nodes)
    assert set(served) == {(rail, node) for rail in range(len(nics)) for node in range(cluster.node_count)}
    assert set(served.values()) == {1}
    for leaf in fabric.leaves:
        assert leaf.down_ports == len(leaf.nodes)
        ports = sum(data["links"] for _, peer, data in graph.edges(leaf.id, data=True)
                    if graph.nodes[peer]["kind"] == "group")
        assert ports == len(leaf.nodes)
    # local rank i uses the NICs on its rails: NIC i with one NIC per GPU, NICs k*i..k*i+k-1 with k each
    for gpu in platform.gpus:
        own = [platform.nic_by_id[n] for n in topology_of(platform).nics_of(gpu.id)]
        if own and all(n.gpus == (gpu.id,) for n in own):
            assert [nics.index(n) for n in own] == [len(own) * gpu.index + k for k in range(len(own))]


@settings(max_examples=max(5, EXAMPLES // 2))
@given(cluster_specs(**SIZES))
def test_cluster_plan_is_deterministic(files):
    """Every cluster generator (host lists, Slurm, the node files rendered for the cluster, launch
    files, roofline, diagram) runs on the cluster and renders the same plan twice."""
    checked = checked_cluster(files)
    plan = plan_for(checked.topology)
    assert plan and plan == plan_for(checked.topology)
