"""APUs and shared memory: an MI300A socket whose memory is its GPU's HBM, counted once everywhere;
Grace Hopper, whose Grace memory is a second pool reached over NVLink-C2C."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

import pytest

from hwspec.cli.commands import main
from hwspec.diagnostics import HwspecError
from hwspec.generate.engine import plan_for
from hwspec.model.load import load_platform
from hwspec.perf import roofline as rf
from hwspec.perf.calculon import PEAK_EFFICIENCY, calculon_system
from hwspec.perf.platform_figures import figures
from hwspec.perf.roofline_report import text_report
from hwspec.perf.torchrec import torchrec_topology
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
MI300A = ROOT / "platforms" / "hpe-ex255a-mi300a.yaml"
GH200 = ROOT / "platforms" / "jupiter-gh200.yaml"
HBM = 128 * 2**30

TWO_APUS = """\
hwspec: 1
kind: node
name: apus
sockets:
  - {id: apu0, part: mi300a-zen4, numa_node: 0, memory: {shared_with: gpu0}}
  - {id: apu1, part: mi300a-zen4, numa_node: 1, memory: {shared_with: gpu1}}
gpus:
  - {id: gpu0, part: mi300a, pcie: {upstream: apu0, bus: "0000:02:00.0"}}
  - {id: gpu1, part: mi300a, pcie: {upstream: apu1, bus: "0000:42:00.0"}}
"""


@pytest.fixture(scope="module")
def node():
    return load_platform(MI300A)


def _load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str):
    monkeypatch.chdir(tmp_path)
    Path("apus.yaml").write_text(text)
    return load_platform(Path("apus.yaml"))


def _errors(tmp_path, monkeypatch, text) -> list[str]:
    with pytest.raises(HwspecError) as caught:
        _load(tmp_path, monkeypatch, text)
    return [d.format() for d in caught.value.diagnostics]


def _rule(platform, rule_id: str) -> list[str]:
    from hwspec import pipeline
    from hwspec.rules import load_rules, run_rules

    rules = [r for r in load_rules(pipeline.rule_directories()) if r.id == rule_id]
    return [f.diagnostic.format() if hasattr(f, "diagnostic") else f.format() for f in run_rules(topology_of(platform), rules)]


def test_an_apu_socket_takes_its_gpus_hbm_and_the_node_counts_it_once(node):
    assert [(s.id, s.memory_shared_with, s.memory_capacity) for s in node.sockets] == [
        (f"apu{i}", f"gpu{i}", HBM) for i in range(4)]
    assert node.memory_capacity == 0 and node.memory_bandwidth == 0
    assert topology_of(node).memory_shared_with("gpu2") == "apu2"
    assert topology_of(node).host_link("gpu0") is None


def test_roofline_tiers_say_the_memory_is_shared_and_add_no_second_pool(node):
    doc = rf.roofline(topology_of(node))
    [group] = doc["gpu_groups"]
    tiers = group["tiers"]
    assert tiers["hbm"] == {"capacity_bytes": HBM, "bandwidth_bytes_per_s": 5.3e12, "shared_with_cpu_cores": 24}
    assert tiers["host_ddr"] == {"capacity_bytes": 0, "bandwidth_bytes_per_s": 0.0, "same_memory_as": "hbm"}
    assert tiers["pcie_host"] is None and tiers["pcie_host_shared"] is None
    assert doc["tier_notes"]["host_ddr"] == rf.UNIFIED_TIER_NOTES["host_ddr"]
    assert doc["node"]["hbm_capacity_bytes"] == 4 * HBM and doc["node"]["ddr_capacity_bytes"] == 0
    assert doc["node"]["unified_memory"]["sockets_sharing_gpu_hbm"] == {f"apu{i}": f"gpu{i}" for i in range(4)}
    assert "shared with the 24 CPU cores of its NUMA node" in text_report(doc)


def test_torchrec_calculon_and_the_estimate_see_no_ddr_on_an_apu(node):
    kwargs = torchrec_topology(topology_of(node))["topology_kwargs"]
    assert (kwargs["hbm_cap"], kwargs["ddr_cap"]) == (HBM, 0)
    assert "ddr_mem_bw" not in kwargs and "hbm_to_ddr_mem_bw" not in kwargs
    system, notes = calculon_system(topology_of(node))
    assert system["mem1"]["GiB"] == 128 and system["mem2"] == {"GiB": 0.0, "GBps": 0.0, "MB_efficiency": PEAK_EFFICIENCY}
    assert any(n.startswith("mem2 is 0: on these APUs") for n in notes)
    f = figures(topology_of(node))
    assert (f.hbm_capacity, f.ddr_capacity, f.ddr_bandwidth, f.pcie_host_bandwidth) == (HBM, 0, 0, 0)


def test_a_gh200_keeps_two_pools_and_reaches_the_grace_over_c2c():
    platform = load_platform(GH200)
    assert topology_of(platform).memory_shared_with("gpu0") is None
    tiers = rf.roofline(topology_of(platform))["gpu_groups"][0]["tiers"]
    assert tiers["hbm"] == {"capacity_bytes": 96e9, "bandwidth_bytes_per_s": 4e12}
    assert (tiers["host_ddr"]["capacity_bytes"], tiers["pcie_host"]["bandwidth_bytes_per_s"]) == (120e9, 450e9)
    assert rf.roofline(topology_of(platform))["node"]["ddr_capacity_bytes"] == 480e9


def test_the_shipped_mi300a_node_validates_clean(capsys):
    assert main(["validate", str(MI300A)]) == 0
    assert "0 error(s), 0 warning(s)" in capsys.readouterr().err


def test_the_shipped_gh200_node_says_which_bus_ids_are_unknown_and_writes_no_nccl_topology(capsys):
    """Only the first superchip's GPU bus id is published: the others, and the NICs', are
    `unknown`, each a HW603 warning, and NCCL detects the node itself (no nccl-topo.xml)."""
    assert main(["validate", str(GH200)]) == 0
    out, err = capsys.readouterr()
    assert "0 error(s), 8 warning(s)" in err
    assert out.count("warning[HW603 unknown-facts]") == 8
    assert "jupiter-gh200/nccl-topo.xml" not in plan_for(topology_of(load_platform(GH200)))


def test_the_mi300a_rccl_xml_is_rccls_own_model_of_the_node(node):
    root = ElementTree.fromstring(plan_for(topology_of(node), only=["rccl-topo"])["hpe-ex255a-mi300a/rccl-topo.xml"])
    cpu = root.find("cpu")
    assert (cpu.get("numaid"), cpu.get("familyid"), cpu.get("modelid")) == ("0", "175", "144")
    assert cpu.get("affinity") == "00000000,00000000,00ffffff,00000000,00000000,00ffffff"
    pci = cpu.find("pci[@class='0x120000']")
    assert (pci.get("busid"), pci.get("vendor"), pci.get("device"), pci.get("link_speed"), pci.get("link_width")) == (
        "0000:02:00.0", "0x1002", "0x74a0", "32.0 GT/s PCIe", "16")
    gpu = pci.find("gpu")
    assert (gpu.get("sm"), gpu.get("gcn"), gpu.get("arch"), gpu.get("gdr")) == ("228", "gfx942", "38911", "1")
    assert [(x.get("target"), x.get("count")) for x in gpu.findall("xgmi")] == [
        ("0000:42:00.0", "1"), ("0000:82:00.0", "1"), ("0000:c2:00.0", "1")]
    assert cpu.find("pci/nic/net").attrib["name"] == "cxi2" and cpu.find("pci/nic/net").attrib["gdr"] == "1"


def test_shared_with_beside_a_capacity_is_refused_at_the_memory(tmp_path, monkeypatch):
    text = TWO_APUS.replace("memory: {shared_with: gpu1}", "memory: {shared_with: gpu1, capacity: 128 GB}")
    assert _errors(tmp_path, monkeypatch, text) == [
        "apus.yaml:6:57: error[E110]: sockets[1].memory: memory shared with gpu1 is that GPU's HBM: its capacity and "
        "bandwidth are the GPU part's, so do not give capacity here (one pool, counted once)"]


def test_shared_with_that_names_no_gpu_is_a_located_bad_reference(tmp_path, monkeypatch):
    text = TWO_APUS.replace("memory: {shared_with: gpu1}", "memory: {shared_with: gpu7}")
    assert _errors(tmp_path, monkeypatch, text) == [
        "apus.yaml:6:71: error[E201]: sockets[1].memory.shared_with: 'gpu7' does not name a GPU"
        "\n  hint: did you mean 'gpu1'? known: gpu0, gpu1"]


def test_one_hbm_named_by_two_sockets_is_hw106(tmp_path, monkeypatch):
    platform = _load(tmp_path, monkeypatch, TWO_APUS.replace("memory: {shared_with: gpu1}", "memory: {shared_with: gpu0}"))
    assert platform.memory_capacity == 0 and topology_of(platform).memory_shared_with("gpu0") == "apu0"
    assert _rule(platform, "HW106") == [
        "apus.yaml:6:71: error[HW106 shared-memory]: apu1: memory is shared with gpu0, whose HBM is already apu0's memory"
        "\n  hint: an APU's HBM is the memory of one NUMA node: name the GPU of this socket's own package"]


def test_memory_shared_with_a_gpu_that_is_no_apu_is_hw106(tmp_path, monkeypatch):
    platform = _load(tmp_path, monkeypatch, TWO_APUS.replace("  - {id: gpu1, part: mi300a,", "  - {id: gpu1, part: h100-sxm5-80gb,"))
    assert _rule(platform, "HW106") == [
        "apus.yaml:6:71: error[HW106 shared-memory]: apu1: memory is shared with gpu1, but its part h100-sxm5-80gb "
        "is not an APU (form factor sxm5): its HBM is no CPU's memory"
        "\n  hint: give the socket its own memory (capacity, bandwidth), or name the APU part"]


def test_an_apu_whose_socket_gives_ddr_of_its_own_is_hw107(tmp_path, monkeypatch):
    text = TWO_APUS.replace("memory: {shared_with: gpu1}", "memory: {capacity: 256 GB, bandwidth: 100 GB/s}")
    assert _rule(_load(tmp_path, monkeypatch, text), "HW107") == [
        "apus.yaml:6:57: error[HW107 apu-memory]: gpu1 is an APU (AMD Instinct MI300A): its HBM is the memory of its "
        "CPU cores, but no socket says so; apu1 gives memory of its own (256 GB), a second pool"
        "\n  hint: write 'memory: {shared_with: gpu1}' on the socket of its package"]


def test_import_of_an_rccl_mi300a_names_the_apu_and_shares_its_memory(tmp_path, capsys):
    source = ROOT / "tests" / "data" / "live" / "mi300a-one-apu.rccl.xml"
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(source), "-o", str(draft)]) == 0
    platform = load_platform(draft)
    assert (platform.gpus[0].part, platform.sockets[0].part) == ("mi300a", "mi300a-zen4")
    assert platform.sockets[0].memory_shared_with == "gpu0" and "placeholder" not in draft.read_text()
    assert main(["diff", str(draft), str(source)]) == 0
