"""The spec language end to end: files -> diagnostics with exact text and positions, or a
resolved platform with the values the file means."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec.diagnostics import HwspecError
from hwspec.model.load import load_platform
from hwspec.topology import topology_of  # noqa: F401  (Platform.topology and its shorthands, gpu2nic ..., are built by it)

FIXTURES = Path(__file__).parent / "fixtures" / "spec"
ROOT = Path(__file__).resolve().parent.parent


def errors_of(name: str) -> list[str]:
    with pytest.raises(HwspecError) as caught:
        load_platform(FIXTURES / name)
    return [d.format().replace(str(FIXTURES) + "/", "") for d in caught.value.diagnostics]


@pytest.fixture(autouse=True)
def _relative_paths(monkeypatch):
    # diagnostics show paths relative to the working directory
    monkeypatch.chdir(FIXTURES)


def test_unknown_and_misspelt_keys_are_reported_at_the_key_with_allowed_keys_and_a_suggestion():
    # 'numa_node' is optional since a socket may list 'numa_nodes' instead: the misspelt key is
    # the one error, and its hint names the key meant
    assert errors_of("unknown_and_misspelt_keys.yaml") == [
        "unknown_and_misspelt_keys.yaml:7:5: error[E112]: sockets[0]: unknown key 'numa_nod'\n"
        "  hint: did you mean 'numa_node'? allowed keys here: assumed, cpus, id, memory, numa_node, numa_nodes, override, "
        "part, source",
        "unknown_and_misspelt_keys.yaml:9:1: error[E112]: unknown key 'colour'\n"
        "  hint: allowed keys here: assumed, backend, baseboard, cpu_interconnect, declares, description, environment, gpus, hwspec, "
        "kind, name, nics, nvlink, pcie, rules, sockets, source, sources, ssds, title",
    ]


def test_duplicate_key_names_both_places():
    assert errors_of("duplicate_key.yaml") == [
        "duplicate_key.yaml:8:5: error[E107]: duplicate key 'numa_node' (first defined at line 7, column 5)"]


def test_malformed_yaml_points_at_the_syntax_error():
    assert errors_of("malformed_yaml.yaml") == [
        "malformed_yaml.yaml:7:1: error[E103]: invalid YAML: expected ',' or ']', but got '<stream end>' "
        "(while parsing a flow sequence at line 6, column 11)"]


def test_dangling_reference_suggests_the_nearest_id():
    assert errors_of("dangling_reference.yaml") == [
        "dangling_reference.yaml:17:22: error[E201]: gpus[0].pcie.upstream: 'sw9' does not name a socket or PCIe bridge\n"
        "  hint: did you mean 'sw0'? known: cpu0, sw0"]


def test_every_problem_in_a_file_is_reported_with_its_line_and_column():
    assert errors_of("several_errors.yaml") == [
        "several_errors.yaml:6:11: error[E203]: sockets[0]: unknown CPU part 'xeon-platinum-838oh'\n"
        "  hint: did you mean 'xeon-platinum-8380h'? known CPU parts: epyc-7763, epyc-7v12, epyc-9654, grace, xeon-platinum-8280, xeon-platinum-8380h, xeon-platinum-8460y, xeon-platinum-8480p",
        "several_errors.yaml:7:16: error[E110]: sockets[0].numa_node: 'zero' is not a whole number, e.g. 2",
        "several_errors.yaml:8:24: error[E110]: sockets[0].memory.capacity: expected a size with a unit, e.g. '40 GiB' "
        "or '1.5 TB', got the bare number 256; accepted units: B, kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB",
        "several_errors.yaml:8:40: error[E110]: sockets[0].memory.bandwidth: a bandwidth needs a rate unit: "
        "did you mean '80 Gb/s'?",
        "several_errors.yaml:12:22: error[E201]: gpus[0].pcie.upstream: 'sw9' does not name a socket or PCIe bridge\n"
        "  hint: known: cpu0",
        "several_errors.yaml:12:32: error[E110]: gpus[0].pcie.bus: '0000:1A:00.0' is not a PCI bus id in lower-case "
        "'dddd:bb:dd.f' form, as the kernel and NCCL print it, e.g. '0000:17:00.0'",
        "several_errors.yaml:13:9: error[E202]: duplicate id 'gpu0' (also used by gpus[0])",
        "several_errors.yaml:15:71: error[E110]: gpus[1].pcie.link.width: Input should be 0, 1, 2, 4, 8, 16 or 32, got 12",
        "several_errors.yaml:20:16: error[E110]: nics[0].transport: Input should be 'rocev2', 'infiniband' or 'tcp', got 'rdma'",
    ]


def test_part_override_is_merged_and_its_errors_point_into_the_platform_file():
    assert errors_of("part_override.yaml") == [
        "part_override.yaml:19:24: error[E110]: gpus[1].override.hbm.bandwidth: cannot read 'lots' as a bandwidth: "
        "expected a number followed by a unit, e.g. '200 Gb/s'"]


def test_part_override_changes_only_the_named_fields(tmp_path, monkeypatch):
    text = (FIXTURES / "part_override.yaml").read_text().replace("bandwidth: lots", "bandwidth: 1 TB/s")
    (tmp_path / "ok.yaml").write_text(text)
    platform = load_platform(tmp_path / "ok.yaml")
    gpu0, gpu1 = platform.gpus
    assert (gpu0.hbm_capacity, gpu0.hbm_bandwidth) == (32 * 2**30, 1555e9)
    assert (gpu1.hbm_capacity, gpu1.hbm_bandwidth) == (40 * 2**30, 1e12)
    assert platform.sockets[0].cores == 24
    assert platform.sockets[0].cpus == tuple(range(48))


def test_repeat_blocks_expand_and_keep_their_template_line():
    platform = load_platform(FIXTURES / "minimal_node.yaml")
    assert [(g.id, g.bus, g.slot) for g in platform.gpus] == [("gpu0", "0000:14:00.0", 0), ("gpu1", "0000:1c:00.0", 1)]
    assert [(n.id, n.device, n.interface) for n in platform.backend_nics] == [("nic0", "mlx5_0", "eth1"), ("nic1", "mlx5_1", "eth2")]
    assert platform.locate("gpu1", "pcie", "bus").line == 22
    assert platform.locate("nic1").line == 25  # the "- repeat:" item


def test_minimal_node_resolves_topology_and_units():
    platform = load_platform(FIXTURES / "minimal_node.yaml")
    assert platform.memory_capacity == 256 * 2**30
    assert platform.sockets[0].memory_bandwidth == 80e9
    assert platform.gpus[0].socket == "cpu0" and platform.gpus[0].numa_node == 0
    assert platform.gpu2nic == {"gpu0": platform.nics[0], "gpu1": platform.nics[1]}
    assert [(c.a, c.b, c.links, c.bandwidth) for c in platform.nvlinks] == [("gpu0", "gpu1", 12, 300e9)]
    assert platform.nics[0].speed == 25e9
    assert platform.gpus[0].link.bandwidth == pytest.approx(31.5e9, rel=1e-3)


def test_shipped_zionex_matches_the_reference():
    platform = load_platform(ROOT / "platforms" / "zionex.yaml")
    assert len(platform.sockets) == 4 and len(platform.gpus) == 8
    assert platform.memory_capacity == int(1.5 * 2**40)
    assert sum(s.memory_bandwidth for s in platform.sockets) == 320e9
    assert {g.hbm_capacity for g in platform.gpus} == {40 * 2**30}
    assert [platform.fabric_bandwidth(g.id) for g in platform.gpus] == [300e9] * 8
    assert len(platform.backend_nics) == 8 and {n.speed for n in platform.backend_nics} == {25e9}
    for gpu in platform.gpus:
        nic = platform.gpu2nic[gpu.id]
        assert nic.upstream == gpu.upstream and nic.transport == "rocev2"
    assert {n.upstream for n in platform.host_nics} == {"cpu0", "cpu1", "cpu2", "cpu3"}
    assert platform.backend.gpudirect and platform.backend.nic_per_gpu
    assert any(a.path == "nvlink" for a in platform.assumptions)


def test_shipped_zion_matches_the_reference():
    platform = load_platform(ROOT / "platforms" / "zion.yaml")
    assert len(platform.sockets) == 8 and len(platform.gpus) == 8
    assert platform.backend_nics == ()
    assert {n.transport for n in platform.nics} == {"tcp"}
    assert {n.speed for n in platform.nics} == {12.5e9}
    assert all(n.upstream.startswith("cpu") for n in platform.nics)
    assert [platform.fabric_link_count(g.id) for g in platform.gpus] == [6] * 8


def test_a_changed_parts_file_is_read_again(tmp_path):
    (tmp_path / "parts").mkdir()
    cpus = (ROOT / "src/hwspec/data/parts" / "cpus.yaml").read_text()
    local = tmp_path / "parts" / "site.yaml"
    local.write_text(cpus.replace("xeon-platinum-8380h:", "site-cpu:").replace("xeon-platinum-8280:", "other-cpu:"))
    platform_file = tmp_path / "node.yaml"
    platform_file.write_text((FIXTURES / "minimal_node.yaml").read_text().replace("part: xeon-platinum-8380h", "part: site-cpu"))
    assert load_platform(platform_file).sockets[0].cores == 28
    local.write_text(local.read_text().replace("cores: 28\n    threads_per_core: 2\n\n  other-cpu", "cores: 20\n    threads_per_core: 2\n\n  other-cpu"))
    assert load_platform(platform_file).sockets[0].cores == 20


def test_an_unquoted_placeholder_in_a_flow_mapping_gets_a_hint(tmp_path):
    path = tmp_path / "flow.yaml"
    path.write_text("a:\n  - repeat: {g: 0..1}\n    pcie: {upstream: sw${g//2}, bus: x}\n")
    with pytest.raises(HwspecError) as caught:
        load_platform(path)
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.line, diagnostic.col, diagnostic.code) == (3, 25, "E103")
    assert diagnostic.hint == 'inside {...} or [...], quote values that contain ${...}: upstream: "sw${g//2}"'


def test_a_zero_bandwidth_is_refused(tmp_path):
    path = tmp_path / "zero.yaml"
    path.write_text((FIXTURES / "minimal_node.yaml").read_text().replace("bandwidth: 80 GB/s}", "bandwidth: 0 GB/s}"))
    with pytest.raises(HwspecError) as caught:
        load_platform(path)
    assert [d.format().split(": ", 1)[1] for d in caught.value.diagnostics] == [
        "error[E110]: sockets[0].memory.bandwidth: Input should be greater than 0, got '0 GB/s'"]
