"""Spec features for machines as clouds present them: presented vs physical PCIe links."""

from __future__ import annotations

import re
from pathlib import Path

from hwspec import generate, pipeline
from hwspec import roofline as rf

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
GEN4_X16 = 16e9 * (128 / 130) * 16 / 8  # the model's order of operations: 31.5077e9


def _checked(name: str) -> pipeline.Checked:
    return pipeline.check(FIXTURES / f"{name}.yaml")


def test_virtual_gen1_bridges_validate_clean_with_every_rule_on():
    checked = _checked("virtual_gen1_bridges")
    assert "rules:" not in (FIXTURES / "virtual_gen1_bridges.yaml").read_text()
    assert checked.diagnostics == []
    bridge = checked.platform.bridge_by_id["vbr0"]
    assert (str(bridge.link), str(bridge.physical)) == ("Gen1 x1", "Gen4 x16")
    gpu = checked.platform.gpu_by_id["gpu0"]
    assert (gpu.link.width, gpu.link.bandwidth, gpu.physical.bandwidth) == (0, 0.0, GEN4_X16)


def test_roofline_and_torchrec_use_the_physical_links():
    topology = _checked("virtual_gen1_bridges").topology
    doc = rf.roofline(topology)
    (group,) = doc["gpu_groups"]
    assert group["tiers"]["pcie_host"] == {"bandwidth_bytes_per_s": GEN4_X16, "link": "Gen4 x16", "hops": 2}
    assert group["tiers"]["pcie_host_shared"]["bandwidth_bytes_per_s"] == GEN4_X16
    kwargs = rf.torchrec_topology(topology, doc)["topology_kwargs"]
    assert kwargs["hbm_to_ddr_mem_bw"] == GEN4_X16 / 1000
    assert kwargs["inter_host_bw"] == 25e9 / 1000


def test_nccl_topology_gets_the_presented_links():
    plan = generate.plan_for(_checked("virtual_gen1_bridges").topology, only=["nccl-topo"])
    xml = plan["virtual-gen1-bridges/nccl-topo.xml"]
    links = re.findall(r'busid="([^"]+)" class="([^"]+)".*?link_speed="([^"]+)" link_width="(\d+)"', xml)
    by_bus = {bus: (cls, speed, width) for bus, cls, speed, width in links}
    assert by_bus["0000:a1:00.0"] == ("0x060400", "2.5 GT/s PCIe", "1")
    assert by_bus["0000:a4:00.0"] == ("0x030200", "16.0 GT/s PCIe", "0")
    assert by_bus["0000:a3:00.0"] == ("0x020700", "16.0 GT/s PCIe", "0")


def test_a_link_of_width_zero_needs_its_physical_form(tmp_path):
    text = (FIXTURES / "virtual_gen1_bridges.yaml").read_text()
    broken = text.replace("link: {gen: 4, width: 0, physical: {gen: 4, width: 16}}\nnvlink", "link: {gen: 4, width: 0}\nnvlink")
    assert broken != text
    (tmp_path / "vm.yaml").write_text(broken)
    messages = [d.format() for d in pipeline.check(tmp_path / "vm.yaml").diagnostics]
    # both expansions of the repeat block point at the one line where the link is written
    assert messages == [f"{tmp_path / 'vm.yaml'}:28:13: error[E110]: gpus[{g}].pcie.link: a link of width 0 carries no "
                        "bandwidth: add 'physical: {gen: .., width: ..}', the link the device trains at" for g in (0, 1)]


def test_a_slow_physical_uplink_is_judged_where_it_is_written(tmp_path):
    text = (FIXTURES / "virtual_gen1_bridges.yaml").read_text()
    slow = text.replace("link: {gen: 1, width: 1, physical: {gen: 4, width: 16}}", "link: {gen: 1, width: 1, physical: {gen: 3, width: 16}}")
    (tmp_path / "vm.yaml").write_text(slow)
    found = {(d.code, d.line) for d in pipeline.check(tmp_path / "vm.yaml").diagnostics}
    # Gen4 GPUs (line 28) and NICs (line 41) under physical Gen3 bridges (line 19), whose
    # uplink is now oversubscribed; the presented Gen1 x1 is judged by nothing
    assert found == {("HW104", 28), ("HW104", 41), ("HW103", 19)}
