"""Clusters: the model derived from a cluster file, and the cluster rules (one fixture per fault)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec import pipeline
from hwspec.diagnostics import Severity
from hwspec.rules import Rule, load_rules, rule
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "cluster"


@pytest.fixture(autouse=True)
def _in_fixtures(monkeypatch):
    monkeypatch.chdir(FIXTURES)


def findings(name: str) -> list[str]:
    checked = pipeline.check(FIXTURES / name, platform_roots=[FIXTURES.parent])
    assert checked.platform is not None, [d.format() for d in checked.diagnostics]
    return [d.format() for d in checked.diagnostics]


def test_clean_rail_optimized_cluster_has_no_findings():
    assert findings("rail_cluster_ok.yaml") == []


@pytest.mark.parametrize("fixture, expected", [
    ("crossed_rails.yaml", [
        "node_crossed_rails.yaml:30:10: error[HW801 rail-alignment]: crossed: local rank 0 (gpu0) uses nic1, "
        "which is on rail 1, not rail 0\n  hint: pair GPU i with the i-th backend NIC by bus id, or use a Clos topology",
        "node_crossed_rails.yaml:30:10: error[HW801 rail-alignment]: crossed: local rank 1 (gpu1) uses nic0, "
        "which is on rail 0, not rail 1\n  hint: pair GPU i with the i-th backend NIC by bus id, or use a Clos topology"]),
    ("ports_overcommitted.yaml", [
        "ports_overcommitted.yaml:13:17: error[HW802 switch-ports]: 1 leaf switch(es) need more ports than they have: "
        "switch0 carries 8 NIC ports + 0 uplinks on 6 ports\n"
        "  hint: raise leaf ports, lower uplinks, or use more leaves (rail-optimized or clos)"]),
    ("oversubscription_mismatch.yaml", [
        "oversubscription_mismatch.yaml:15:21: error[HW803 oversubscription-declared]: the backend declares 2:1 "
        "oversubscription, but the leaves wire 6 x 200 Gb/s down and 2 x 200 Gb/s up: 3:1\n"
        "  hint: write the oversubscription the wiring gives (downlink over uplink bandwidth), or change the wiring"]),
    ("bisection_below_minimum.yaml", [
        "bisection_below_minimum.yaml:15:18: error[HW804 bisection-minimum]: bisection bandwidth is 0.4 Tb/s per "
        "direction, below the declared minimum of 10 Tb/s\n  hint: add uplinks or spines, or lower the declared minimum"]),
    ("address_zone_unsafe.yaml", [
        "address_zone_unsafe.yaml:8:14: error[HW903 hostfile-writable]: nodes[0]: address 'fe80::1%a b' cannot be "
        "written to a hostfile: only letters, digits and _./:,=@%+^- are allowed\n"
        "  hint: an IPv6 zone is an interface name, e.g. %eth0"]),
    ("duplicate_hostnames.yaml", [
        "duplicate_hostnames.yaml:7:15: error[HW805 host-names]: hostname 'node' is used by node 0 and node 1\n"
        "  hint: make the pattern depend on i or n"]),
    ("duplicate_addresses.yaml", [
        "duplicate_addresses.yaml:8:14: error[HW805 host-names]: address 10.0.0.1 is used by node 0 and node 1\n"
        "  hint: give each node a host name and address of its own; names of lower-case letters, digits and '-' (at most 63)"]),
    ("hostname_with_line_break.yaml", [  # the line break must not pass as the end of one good name
        "hostname_with_line_break.yaml:7:15: error[HW805 host-names]: nodes[0]: hostname 'n0\\x0ax' of node 0 is "
        "not a host name Kubernetes accepts: it has '\\x0a'\n"
        "  hint: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 (RFC 1123)"]),
    ("world_size_mismatch.yaml", [
        "world_size_mismatch.yaml:9:13: error[HW806 world-size]: world_size is declared as 100, but the nodes hold "
        "4 x 2 = 8 GPUs\n  hint: declare world_size as nodes x GPUs per node, or correct the node count"]),
    ("backend_speed_mismatch.yaml", [
        "backend_speed_mismatch.yaml:11:10: error[HW807 backend-matches-nodes]: nodes[0] (minimal): nic0 is "
        "200 Gb/s rocev2, the backend network is 100 Gb/s rocev2\n"
        "  hint: give the cluster's backend the transport and speed of the nodes' backend NICs"]),
    ("leaves_without_spine.yaml", [
        "leaves_without_spine.yaml:13:9: error[HW808 clos-connectivity]: 2 leaves have no spine tier between them: "
        "nodes on different leaves cannot reach each other\n  hint: declare leaf uplinks and a spine"]),
    ("mixed_gpu_counts.yaml", [
        "mixed_gpu_counts.yaml:6:16: error[HW810 uniform-gpus-per-node]: nodes[1] (one-gpu) has 1 GPUs per node, "
        "nodes[0] (minimal) has 2\n  hint: split the cluster, or use node platforms with equal GPU counts"]),
    ("nccl_variable_unknown.yaml", [
        "nccl_variable_unknown.yaml:15:21: warning[HW811 cluster-nccl-variable-known]: environment: NCCL does not read "
        "NCCL_IB_TIMEOUTS\n  hint: did you mean NCCL_IB_TIMEOUT? a variable of a newer NCCL or a plugin is fine: change "
        "this rule under 'rules:' with the reason"]),
    ("environment_redirects_rendezvous.yaml", [
        "environment_redirects_rendezvous.yaml:11:22: error[HW812 cluster-environment-policy]: environment: "
        "PET_RDZV_ENDPOINT changes where the job connects or what it runs on (hosts, addresses, rendezvous, ranks, "
        "devices): a platform file may not set it\n  hint: what a platform file sets runs as root on every node; set "
        "it in the job's own environment, or have the operator accept it for this run with --allow-env PET_RDZV_ENDPOINT"]),
    ("rail_declaration_mismatch.yaml", [
        "rail_declaration_mismatch.yaml:12:13: warning[HW809 rail-declaration]: minimal declares rail_optimized: true, "
        "but this cluster's backend is single-switch\n  hint: make the node platform's backend.rail_optimized agree with "
        "the cluster's fabric, or leave it out of the node platform"]),
])
def test_each_cluster_fault_is_caught_by_its_rule(fixture, expected):
    assert findings(fixture) == expected


@pytest.mark.parametrize(("hostname", "node", "fault"), [
    ("zx${i}-", 0, "it ends with '-'"), ("-zx${i}", 0, "it starts with '-'"), ("ZX${i}", 0, "it has upper-case letters"),
    ("zx${i}.rack", 0, "it has '.'"), ("zx${i}_a", 0, "it has '_'"), ("${0 - i}x", 1, "it starts with '-'"),
])
def test_a_host_name_kubernetes_refuses_is_an_hw805_naming_host_node_and_fault(tmp_path, hostname, node, fault):
    """label-nodes.sh names Kubernetes nodes by their host names: an RFC 1123 label in lower case."""
    (tmp_path / "node.yaml").write_text((FIXTURES.parent / "spec" / "minimal_node.yaml").read_text())
    (tmp_path / "c.yaml").write_text(f"hwspec: 1\nkind: cluster\nname: c\nnodes:\n  - platform: node.yaml\n    count: 2\n"
                                     f"    hostname: '{hostname}'\n")
    checked = pipeline.check(tmp_path / "c.yaml")
    (diagnostic,) = [d for d in checked.diagnostics if d.code == "HW805"]
    assert (diagnostic.line, diagnostic.col) == (7, 15)
    assert diagnostic.message.startswith("nodes[0]: hostname '") and diagnostic.message.endswith(
        f"' of node {node} is not a host name Kubernetes accepts: {fault}")


@pytest.mark.parametrize("name", ["zionex-16.yaml", "zion-16.yaml"])
def test_shipped_clusters_validate_clean(name):
    checked = pipeline.check(ROOT / "platforms" / name)
    assert [d.format() for d in checked.diagnostics] == []


def test_zionex_16_is_the_papers_cluster():
    cluster = pipeline.check(ROOT / "platforms" / "zionex-16.yaml").platform
    assert (cluster.node_count, cluster.world_size) == (16, 128)
    assert cluster.hostnames[0] == "zionex00" and cluster.hostnames[-1] == "zionex15"
    assert cluster.groups[0].addresses[:2] == ("10.16.0.1", "10.16.0.2")
    fabric = cluster.fabric
    assert (fabric.topology, fabric.nics_per_node, fabric.nic_speed) == ("single-switch", 8, 25e9)
    assert fabric.bisection == 64 * 25e9  # half of 128 NICs, non-blocking
    assert fabric.design_oversubscription is None


def test_rail_optimized_wiring_puts_nic_i_of_every_node_on_rail_i():
    cluster = pipeline.check(FIXTURES / "rail_cluster_ok.yaml", platform_roots=[FIXTURES.parent]).platform
    assert [(leaf.id, leaf.rail, list(leaf.nodes), leaf.down_ports) for leaf in cluster.fabric.leaves] == [
        ("rail0-leaf0", 0, [0, 1, 2, 3], 4), ("rail1-leaf0", 1, [0, 1, 2, 3], 4)]


def test_clos_wiring_derives_leaves_spines_and_bisection():
    cluster = pipeline.check(FIXTURES / "oversubscription_mismatch.yaml", platform_roots=[FIXTURES.parent]).platform
    fabric = cluster.fabric
    assert [(leaf.id, list(leaf.nodes), leaf.down_ports, leaf.uplinks) for leaf in fabric.leaves] == [
        ("leaf0", [0, 1, 2], 6, 2), ("leaf1", [3, 4, 5], 6, 2)]
    assert fabric.spine_count == 1 and fabric.design_oversubscription == 3
    assert fabric.bisection == 2 * 25e9  # 4 uplinks, half of them cross the cut


def test_a_node_platform_is_validated_once_per_cluster_not_once_per_node():
    calls: list[str] = []

    @rule("HW999", "count-calls", "info")
    def count_calls(ctx):
        """Counts its calls."""
        calls.append(ctx.platform.name)
        return ()

    counter = Rule("HW999", "count-calls", Severity.INFO, "node", count_calls, "test")
    checked = pipeline.check(ROOT / "platforms" / "zionex-16.yaml", rules=[*load_rules(pipeline.rule_directories()), counter])
    assert checked.platform.node_count == 16 and calls == ["zionex"]


def test_node_groups_may_use_different_node_platforms(tmp_path):
    from hwspec.generate import engine as generate

    checked = pipeline.check(FIXTURES / "mixed_platforms_ok.yaml", platform_roots=[FIXTURES.parent])
    assert checked.diagnostics == []
    cluster = checked.platform
    assert [g.platform.name for g in cluster.groups] == ["minimal", "star"]
    assert cluster.hostnames == ("a0", "a1", "b0", "b1", "b2") and cluster.world_size == 10
    assert [g.first_node for g in cluster.groups] == [0, 2]
    plan = generate.plan_for(topology_of(cluster))
    assert {p.split("/")[2] for p in plan if p.startswith("mixed-ok/nodes/")} == {"minimal", "star"}
    hosts = [line.split("\t") for line in plan["mixed-ok/hosts.tsv"].splitlines() if not line.startswith("#")][1:]
    assert [(h[0], h[2]) for h in hosts] == [("a0", "minimal"), ("a1", "minimal"), ("b0", "star"), ("b1", "star"), ("b2", "star")]
    gres = [line for line in plan["mixed-ok/slurm/gres.conf"].splitlines() if line.startswith("NodeName")]
    assert [line.split()[0] for line in gres] == ["NodeName=a[0-1]"] * 2 + ["NodeName=b[0-2]"] * 2


def copy_zionex_pair(directory: Path) -> tuple[Path, Path]:
    """zionex.yaml and zionex-16.yaml (a cluster of it) copied into `directory`."""
    for name in ("zionex.yaml", "zionex-16.yaml"):
        (directory / name).write_text((ROOT / "platforms" / name).read_text())
    return directory / "zionex.yaml", directory / "zionex-16.yaml"


def test_a_node_file_given_with_its_cluster_is_loaded_once(tmp_path, monkeypatch):
    import hwspec.model.load

    node, cluster = copy_zionex_pair(tmp_path)
    loads: list[str] = []
    real = hwspec.model.load.load_node
    monkeypatch.setattr(hwspec.model.load, "load_node", lambda doc, *rest: loads.append(doc.file) or real(doc, *rest))
    loaded = pipeline.LoadedNodes()
    first, _ = pipeline.load_any(node, loaded=loaded)
    _, nodes = pipeline.load_any(cluster, loaded=loaded)
    assert len(loads) == 1 and list(nodes.values()) == [first]


def test_without_a_run_s_loaded_nodes_every_load_is_fresh(tmp_path):
    """A library caller gets its own objects: nothing loaded outlives the call."""
    node, cluster = copy_zionex_pair(tmp_path)
    first, _ = pipeline.load_any(node)
    _, nodes = pipeline.load_any(cluster)
    assert next(iter(nodes.values())) is not first


def test_a_node_file_rewritten_in_place_is_loaded_again(tmp_path):
    """Same path, same size, maybe the same modification time (one clock tick): new contents."""
    node, _ = copy_zionex_pair(tmp_path)
    loaded = pipeline.LoadedNodes()
    before, _ = pipeline.load_any(node, loaded=loaded)
    node.write_text(node.read_text().replace("name: zionex", "name: zionez"))
    after, _ = pipeline.load_any(node, loaded=loaded)
    assert (before.name, after.name) == ("zionex", "zionez")


def test_a_node_platform_s_rules_run_once_per_run(tmp_path, monkeypatch):
    """zionex.yaml and zionex-16.yaml in one run: zionex's node rules run once, and both files
    report their findings."""
    import hwspec.rules.engine

    node, cluster = copy_zionex_pair(tmp_path)
    scopes: list[str] = []
    real = hwspec.rules.engine.run_rules
    monkeypatch.setattr(hwspec.rules.engine, "run_rules", lambda topology, rules, scope="node", **kw: scopes.append(scope)
                        or real(topology, rules, scope, **kw))
    rules = load_rules(pipeline.rule_directories())
    loaded = pipeline.LoadedNodes()
    checked = [pipeline.check(path, rules, loaded=loaded) for path in (node, cluster)]
    assert scopes == ["node", "cluster"]
    assert all(c.platform is not None and not c.failed() for c in checked)


def test_a_cluster_s_host_limits_are_decided_once_and_each_caller_gets_its_own_list(monkeypatch):
    """HW903 and every writer of hosts ask `host_limits`; the model never changes, so its hosts
    are checked once (at 65,536 nodes, passes over 131,072 names and addresses)."""
    from hwspec.formats import limits

    cluster = pipeline.check(FIXTURES / "address_zone_unsafe.yaml", platform_roots=[FIXTURES.parent]).platform
    calls: list[str] = []
    real = limits.all_lines
    monkeypatch.setattr(limits, "all_lines", lambda pattern, values: calls.append(pattern.pattern) or real(pattern, values))
    first, again = limits.host_limits(cluster), limits.host_limits(cluster)
    assert first == again and first is not again and [limit.reported_by for limit in first] == [""]
    assert calls == []  # HW903 decided them during the check


def test_a_backend_nic_of_unknown_speed_is_an_hw807_saying_so_not_a_failed_rule(tmp_path):
    """A node's backend NIC of an unknown part has no speed: HW807 says the NIC's speed is
    unknown (HW603 on the node says what to fill in) instead of failing on it."""
    fixtures = Path(__file__).resolve().parent / "fixtures"
    (tmp_path / "node.yaml").write_text((fixtures / "spec" / "minimal_node.yaml").read_text()
                                        .replace("part: connectx-6-200g", "part: unknown"))
    cluster = (fixtures / "cluster" / "backend_speed_mismatch.yaml").read_text()
    (tmp_path / "cluster.yaml").write_text(cluster.replace("../spec/minimal_node.yaml", "node.yaml"))
    checked = pipeline.check(tmp_path / "cluster.yaml")
    assert [(d.code, d.message) for d in checked.diagnostics if d.code in ("HW807", "E900")] == [
        ("HW807", "nodes[0] (minimal): nic0 is rocev2 of unknown speed, the backend network is 100 Gb/s rocev2")]


def test_an_nvlink_domain_of_gpus_of_an_unknown_part_is_judged_by_the_node_s_wiring(tmp_path):
    """A GPU of an unknown part has no known fabric (HW603 on the node says so): HW823 does not
    call it NVLink-less, and still reports the node's wiring, which is known."""
    fixtures = Path(__file__).resolve().parent / "fixtures"
    (tmp_path / "node.yaml").write_text((fixtures / "spec" / "minimal_node.yaml").read_text()
                                        .replace("part: a100-sxm4-40gb", "part: unknown"))
    (tmp_path / "cluster.yaml").write_text(
        "hwspec: 1\nkind: cluster\nname: domain\nnodes:\n  - platform: node.yaml\n    count: 2\n    hostname: n${i}\n"
        "    address: 10.0.0.${n+1}\nnvlink_domain:\n  nodes: 2\n  name: d${d}\n  switch_trays: 1\n  switch_ports: 144\n")
    checked = pipeline.check(tmp_path / "cluster.yaml")
    assert [(d.code, d.message) for d in checked.diagnostics if d.code in ("HW823", "E900")] == [
        ("HW823", "nodes[0] (minimal) wires its NVLinks fully-connected, not to NVLink switches: its GPUs cannot reach "
                  "other nodes over NVLink")]
