"""NVLink-C2C: a GPU attached to its CPU over chip-to-chip links (Grace Blackwell).

The spec (`gpus[].c2c.socket`, the part's `c2c`), the topology's P2C path type and host link,
HW202's acceptance of a NIC on the GPU's own C2C socket, and the `<c2c>` element of NCCL's XML.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

import pytest

from hwspec.diagnostics import HwspecError
from hwspec.formats.nccl_topology import check_nccl_xml
from hwspec.generate.engine import plan_for
from hwspec.generate.launch import gdr_level
from hwspec.model.load import load_platform
from hwspec.perf import roofline as rf
from hwspec.perf.torchrec import torchrec_topology
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
OWN_GRACE = ROOT / "tests" / "fixtures" / "rules" / "c2c_gpu_nic_on_own_grace.yaml"
OTHER_GRACE = ROOT / "tests" / "fixtures" / "rules" / "c2c_gpu_nic_on_other_grace.yaml"


@pytest.fixture(scope="module")
def tray():
    return load_platform(ROOT / "platforms" / "gb200-tray.yaml")


def test_the_tray_gpus_carry_their_grace_and_the_parts_c2c_links(tray):
    gpus = {g.id: g for g in tray.gpus}
    assert [(g.c2c_socket, g.c2c_links, g.c2c_link_bandwidth) for g in gpus.values()] == [
        ("grace0", 5, 45e9), ("grace0", 5, 45e9), ("grace1", 5, 45e9), ("grace1", 5, 45e9)]
    assert gpus["gpu0"].c2c_bandwidth == 225e9
    assert topology_of(tray).c2c_socket("gpu2") == "grace1"


def test_a_gpu_without_c2c_has_none(tray):
    zionex = load_platform(ROOT / "platforms" / "zionex.yaml")
    gpu = zionex.gpus[0]
    assert (gpu.c2c_socket, gpu.c2c_links, gpu.c2c_bandwidth) == (None, 0, 0.0)
    assert topology_of(zionex).c2c_socket(gpu.id) is None


def test_a_nic_on_the_gpus_own_c2c_socket_is_p2c_and_on_the_other_grace_sys(tray):
    t = topology_of(tray)
    assert t.pcie_path_type("gpu0", "nic0") == "PHB"  # PCIe alone would go through Grace's host bridge
    assert t.path_type("gpu0", "nic0") == "P2C"
    assert t.path_type("nic0", "gpu0") == "P2C"
    assert t.path_type("gpu0", "nic1") == "P2C"  # the other NIC on the same Grace
    assert t.path_type("gpu0", "nic2") == "SYS"
    assert t.path_type("gpu0", "gpu1") == "NVL"
    assert t.gpudirect_path("gpu0", "nic0") and not t.gpudirect_path("gpu0", "nic2")


def test_gdr_distance_is_p2c_and_written_as_phb_for_nccl(tray):
    assert topology_of(tray).gdr_path_type() == "P2C"
    assert gdr_level(topology_of(tray)) == "PHB"


def test_gdr_distance_over_the_wrong_grace_is_sys():
    platform = load_platform(OTHER_GRACE)
    assert topology_of(platform).gdr_path_type() == "SYS"
    assert gdr_level(topology_of(platform)) == "PHB"  # capped as before: HW202/HW203 report the placement


def test_the_host_link_of_a_c2c_gpu_is_its_c2c_links_not_shared(tray):
    host = topology_of(tray).host_link("gpu0")
    assert (host.kind, host.link, host.bandwidth, host.shared_bandwidth, host.hops, host.shared_by) == (
        "c2c", "NVLink-C2C 5 x 45 GB/s", 225e9, 225e9, 1, 1)


def test_the_host_link_of_a_pcie_gpu_is_its_narrowest_pcie_link():
    zionex = load_platform(ROOT / "platforms" / "zionex.yaml")
    host = topology_of(zionex).host_link("gpu0")
    assert host.kind == "pcie" and host.link == "Gen4 x16" and host.shared_by == 2
    assert host.bandwidth == pytest.approx(31.5e9, rel=1e-3) and host.shared_bandwidth == pytest.approx(host.bandwidth / 2)


def test_roofline_and_torchrec_take_the_host_bandwidth_from_c2c(tray):
    doc = rf.roofline(topology_of(tray))
    tiers = doc["gpu_groups"][0]["tiers"]
    assert tiers["pcie_host"] == {"bandwidth_bytes_per_s": 225e9, "link": "NVLink-C2C 5 x 45 GB/s", "hops": 1}
    assert tiers["pcie_host_shared"] == {"bandwidth_bytes_per_s": 225e9, "shared_by_gpus": 1}
    kwargs = torchrec_topology(topology_of(tray), doc)["topology_kwargs"]
    assert kwargs["hbm_to_ddr_mem_bw"] == 225e6  # bytes per millisecond


def test_nccl_xml_gpus_carry_c2c_with_mb_per_s_per_link(tray):
    xml = plan_for(topology_of(tray), only=["nccl-topo"])["gb200-tray/nccl-topo.xml"]
    assert check_nccl_xml(xml) == []
    gpus = list(ElementTree.fromstring(xml).iter("gpu"))
    assert len(gpus) == 4
    for gpu in gpus:
        assert [child.tag for child in gpu] == ["nvlink", "c2c"]
        assert gpu.find("c2c").attrib == {"bw": "45000", "count": "5"}
    # the PCIe presence is the one the tray file states
    assert {pci.get("link_speed") for pci in ElementTree.fromstring(xml).iter("pci") if pci.find("gpu") is not None} == {
        "32.0 GT/s PCIe"}


def test_the_nccl_check_wants_c2c_bw_as_an_integer(tray):
    xml = plan_for(topology_of(tray), only=["nccl-topo"])["gb200-tray/nccl-topo.xml"]
    c2c = '<c2c bw="45000" count="5"/>'
    assert check_nccl_xml(xml.replace(c2c, '<c2c count="5"/>', 1)) == ["line 17: <c2c> is missing required attribute 'bw'"]
    assert check_nccl_xml(xml.replace(c2c, '<c2c bw="45 GB/s" count="5"/>', 1)) == ['line 17: <c2c>: bw="45 GB/s" is not an integer']


def _errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> list[str]:
    monkeypatch.chdir(tmp_path)
    path = Path("c2c.yaml")
    path.write_text(text)
    with pytest.raises(HwspecError) as caught:
        load_platform(path, parts_dirs=[ROOT / "src/hwspec/data/parts"])
    return [d.format() for d in caught.value.diagnostics]


def test_a_c2c_socket_that_names_a_gpu_is_refused_at_its_place(tmp_path, monkeypatch):
    text = OWN_GRACE.read_text().replace("c2c: {socket: grace1}", "c2c: {socket: gpu0}")
    assert _errors(tmp_path, monkeypatch, text) == [
        "c2c.yaml:24:19: error[E201]: gpus[1].c2c.socket: 'gpu0' is a gpu, not a socket"
        "\n  hint: expected one of: grace0, grace1"]


def test_c2c_on_a_gpu_whose_part_has_no_c2c_links_is_refused(tmp_path, monkeypatch):
    text = OWN_GRACE.read_text().replace(
        "    part: b200-gb200\n    pcie: {upstream: grace1", "    part: h100-sxm5-80gb\n    pcie: {upstream: grace1")
    assert _errors(tmp_path, monkeypatch, text) == [
        "c2c.yaml:24:10: error[E208]: gpus[1]: 'gpu1' is attached over NVLink-C2C, but its part 'h100-sxm5-80gb' "
        "has no C2C links\n  hint: add 'c2c: {links: .., link_bandwidth: ..}' to the GPU part, or drop the GPU's 'c2c:'"]


def test_the_diagram_draws_each_gpus_c2c_to_its_grace_and_its_figures_in_the_devices_table(tray):
    from tests.test_diagram import parse

    plan = plan_for(topology_of(tray), only=["diagram"])
    assert list(plan) == ["gb200-tray/topology.dot"]  # four GPUs fit: every device drawn, in one view
    nodes, edges, _ = parse(plan["gb200-tray/topology.dot"])
    c2c = [(a, b, "xlabel" in attrs) for a, b, attrs in edges if attrs.get("class") == "c2c"]
    assert c2c == [("grace0", "gpu0", False), ("grace0", "gpu1", False), ("grace1", "gpu2", False), ("grace1", "gpu3", False)]
    assert "; NVLink-C2C 5 x 45 GB/s, 225 GB/s to its CPU</td>" in nodes["_legend_devices"]["label"]
    assert "NVLink-C2C</td>" in nodes["_legend_legend"]["label"]
    zionex = load_platform(ROOT / "platforms" / "zionex.yaml")
    assert "c2c" not in plan_for(topology_of(zionex), only=["diagram"])["zionex/topology.dot"]


def test_a_c2c_link_slower_than_nccls_mb_per_s_unit_is_refused_in_the_part(tmp_path, monkeypatch):
    parts = (ROOT / "src/hwspec/data/parts" / "gb200.yaml").read_text().split("\ncpus:")[0]
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "slow.yaml").write_text(
        parts.replace("b200-gb200:", "slow-c2c:").replace("link_bandwidth: 45 GB/s", "link_bandwidth: 0.5 MB/s"))
    monkeypatch.chdir(tmp_path)
    Path("slow.yaml").write_text(OWN_GRACE.read_text().replace("part: b200-gb200", "part: slow-c2c"))
    with pytest.raises(HwspecError) as caught:
        load_platform(Path("slow.yaml"))
    line = next(i for i, text in enumerate((tmp_path / "parts" / "slow.yaml").read_text().splitlines(), 1)
                if "0.5 MB/s" in text)
    assert [d.format() for d in caught.value.diagnostics] == [
        f"parts/slow.yaml:{line}:23: error[E110]: gpus.slow-c2c.c2c.link_bandwidth: Input should be greater than or "
        "equal to 1000000, got '0.5 MB/s'"]


def test_nccl_settings_allow_gdr_over_c2c_only_where_gpus_reach_their_nics_over_it(tray):
    from hwspec.generate.launch import nccl_settings

    settings = {s.name: s for s in nccl_settings(topology_of(tray), "/etc/hwspec/gb200-tray")}
    assert (settings["NCCL_NET_GDR_LEVEL"].value, settings["NCCL_NET_GDR_C2C"].value) == ("PHB", "1")
    zionex = load_platform(ROOT / "platforms" / "zionex.yaml")
    names = [s.name for s in nccl_settings(topology_of(zionex), "/etc/hwspec/zionex")]
    assert "NCCL_NET_GDR_LEVEL" in names and "NCCL_NET_GDR_C2C" not in names
    wrong = load_platform(OTHER_GRACE)
    assert "NCCL_NET_GDR_C2C" not in [s.name for s in nccl_settings(topology_of(wrong), "/etc/hwspec/x")]


def test_diff_of_the_tray_against_its_own_nccl_xml_is_silent(tray, tmp_path):
    """The tray's GPU and NIC share no PCIe switch in the spec either (P2C over C2C): D107 stays quiet."""
    from hwspec.live.diff import diff
    from hwspec.live.merge import read_inputs

    live = tmp_path / "tray.xml"
    live.write_text(plan_for(topology_of(tray), only=["nccl-topo"])["gb200-tray/nccl-topo.xml"])
    assert [d.format() for d in diff(tray, read_inputs([live]))] == []
