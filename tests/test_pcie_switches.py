"""PCIe switches as catalogue parts: HW104 judges a switch by its own generation, the uplink
still limits bandwidth, nccl-topo.xml carries switch ids as NCCL reads them, import keeps
them; and the nets and NCCL_CROSS_NIC nccl-topo.xml / nccl.conf write as the platform says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hwspec import content
from hwspec.generate.engine import plan_for
from hwspec.live.draft import draft_text
from hwspec.live.merge import read_inputs
from hwspec.model.node import PcieLink
from hwspec.model.parts import load_catalogue
from hwspec.perf.roofline import per_gpu
from hwspec.testing import check_node_text, load_node_text
from hwspec.topology import topology_of
from tests.shared_data import REAL_MACHINES as REAL

# A p5-like slice: a Gen5 switch (Broadcom PEX890xx) under a Gen4 root port, a Gen5 GPU and
# NIC below it, a TCP ingestion NIC on the CPU listed before the RDMA NICs by bus id.
NODE = """\
hwspec: 1
kind: node
name: gen5-switch
declares: {sockets: 1, gpus: 2, memory: 256 GiB}
sockets:
  - id: cpu0
    part: xeon-platinum-8380h
    numa_node: 0
    memory: {capacity: 256 GiB, bandwidth: 80 GB/s}
pcie:
  - id: rp0
    kind: root-port
    upstream: cpu0
    bus: "0000:10:00.0"
    link: {gen: 4, width: 16}
  - id: sw0
    part: SWITCH_PART
    pci: {subsystem_vendor: "0x1000", subsystem_device: "0x0000"}
    upstream: rp0
    bus: "0000:11:00.0"
    link: {gen: 4, width: 16}
    max_oversubscription: 8
baseboard: {slots: 2, ports_per_slot: 1, links_per_port: 18, wiring: fully-connected}
gpus:
  - repeat: {g: 0..1}
    id: gpu${g}
    part: h200-sxm-141gb
    slot: ${g}
    pcie: {upstream: sw0, bus: "0000:${0x14+g*8:02x}:00.0"}
nvlink: {topology: fully-connected, links_per_pair: 18}
nics:
  - id: fe0
    part: ethernet-100g
    role: ingestion
    transport: tcp
    interface: eth0
    pcie: {upstream: cpu0, bus: "0000:0a:00.0"}
  - repeat: {g: 0..1}
    id: nic${g}
    part: connectx-7-400g
    role: backend
    transport: rocev2
    gpu: gpu${g}
    device: mlx5_${g}
    interface: eth${g+1}
    pcie: {upstream: sw0, bus: "0000:${0x16+g*8:02x}:00.0"}
backend: {transport: rocev2, nic_per_gpu: true, gpudirect: true RAILS}
"""


def node(switch_part: str = "broadcom-pex890xx", rails: str = "") -> str:
    return NODE.replace("SWITCH_PART", switch_part).replace(" RAILS", rails)


def generated(text: str, name: str) -> str:
    (content,) = (c for p, c in plan_for(topology_of(load_node_text(text))).items()
                  if p.endswith("/" + name))
    return content


def nccl_topo(text: str) -> str:
    return generated(text, "nccl-topo.xml")


def nccl_conf(text: str) -> str:
    return generated(text, "nccl.conf")


def test_a_gen5_switch_part_under_a_gen4_root_port_validates():
    assert [d.format() for d in check_node_text(node())] == []


def test_the_gen4_uplink_caps_host_bandwidth_below_a_gen5_switch():
    tiers = per_gpu(topology_of(load_node_text(node())))["gpu0"]["tiers"]
    assert tiers["pcie_host"]["link"] == "Gen4 x16"
    assert tiers["pcie_host"]["bandwidth_bytes_per_s"] == PcieLink(4, 16).bandwidth
    assert tiers["pcie_host_shared"]["bandwidth_bytes_per_s"] == PcieLink(4, 16).bandwidth / 2


def test_a_gen5_gpu_under_a_gen4_switch_part_is_hw104():
    found = [d for d in check_node_text(node("broadcom-pex880xx")) if d.code == "HW104"]
    assert [d.message for d in found] == [
        f"{device}: Gen5 x16 link below sw0, a Gen4 switch (PEX880xx PCIe Gen4 switch): a Gen4 switch has no Gen5 ports"
        for device in ("gpu0", "gpu1", "nic0", "nic1")]
    assert found[0].hint.startswith("correct the generation gpu0 or sw0 trains at ('lspci -vv', LnkSta), "
                                    "or sw0's part (broadcom-pex880xx); ")


def test_without_a_part_a_switch_is_as_new_as_its_uplink():
    text = node().replace("    part: broadcom-pex890xx\n", "")
    assert sorted({d.code for d in check_node_text(text)}) == ["HW104"]


def test_an_unknown_switch_part_is_a_located_error_naming_the_known_ones():
    (error,) = check_node_text(node("pex-nonesuch"))
    assert (error.line, error.col, error.code) == (17, 11, "E203")
    assert error.message == "pcie[1]: unknown PCIe switch part 'pex-nonesuch'"


def test_switch_ids_are_written_as_nccl_reads_them():
    lines = [line.strip() for line in nccl_topo(node()).splitlines() if 'class="0x060400"' in line]
    assert lines == [
        '<pci busid="0000:10:00.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">',
        '<pci busid="0000:11:00.0" class="0x060400" vendor="0x1000" device="0xc030" subsystem_vendor="0x1000" '
        'subsystem_device="0x0000" link_speed="16.0 GT/s PCIe" link_width="16">',
    ]


def test_the_plugins_nets_are_numbered_first_and_ingestion_nics_after_them():
    nets = re.findall(r'<net name="([^"]+)" dev="(\d+)"', nccl_topo(node()))
    assert nets == [("eth0", "2"), ("mlx5_0", "0"), ("mlx5_1", "1")]


def test_with_a_tcp_backend_the_socket_nics_are_the_plugins_nets():
    text = node().replace("transport: rocev2", "transport: tcp").replace("    device: mlx5_${g}\n", "")
    nets = re.findall(r'<net name="([^"]+)" dev="(\d+)"', nccl_topo(text))
    assert nets == [("eth0", "0"), ("eth1", "1"), ("eth2", "2")]


@pytest.mark.parametrize(("rails", "line"), [(", rail_optimized: true", "NCCL_CROSS_NIC=0\n"),
                                             (", rail_optimized: false", "NCCL_CROSS_NIC=1\n")])
def test_nccl_cross_nic_is_what_the_platform_declares(rails, line):
    assert line in nccl_conf(node(rails=rails))


def test_without_a_declared_rail_layout_nccl_cross_nic_is_left_to_nccl():
    assert "NCCL_CROSS_NIC" not in nccl_conf(node())


def test_an_import_does_not_declare_a_rail_layout():
    dump = Path("tests/data/h100-8gpu-8nic-dump.xml")
    text, _ = draft_text(read_inputs([Path(__file__).parent / "data" / dump.name]), _catalogue(), "h100")
    assert "rail_optimized" not in text
    assert "NCCL_CROSS_NIC" not in nccl_conf(text)


def _catalogue():
    return load_catalogue([content.builtin_dir("parts")])


def _switch_ids(xml: str) -> dict[str, tuple[str | None, ...]]:
    ids = {}
    for busid, attrs in re.findall(r'<pci busid="([^"]+)" class="0x060400"([^>]*)>', xml):
        values = dict(re.findall(r'(\w+)="([^"]*)"', attrs))
        ids[busid] = tuple(values.get(k) for k in ("vendor", "device", "subsystem_vendor", "subsystem_device"))
    return ids


def test_the_aliyun_dumps_broadcom_switches_survive_import_and_regeneration():
    dump = REAL / "aliyun-simai-8xa100-4xcx6.nccl.xml"
    if not dump.exists():
        pytest.skip("../shared/data/real-machines is not here")
    text, _ = draft_text(read_inputs([dump]), _catalogue(), "aliyun")
    assert "part: broadcom-pex880xx" in text
    observed = _switch_ids(dump.read_text())
    assert len(observed) == 20 and all(ids[:2] == ("0x1000", "0xc010") for ids in observed.values())
    assert _switch_ids(nccl_topo(text)) == observed


def test_switch_ids_no_part_has_are_kept_as_observed_pci_ids():
    dump = Path(__file__).parent / "data" / "h100-8gpu-8nic-dump.xml"  # a VM's TI 0x104c:0x8232 bridges
    text, _ = draft_text(read_inputs([dump]), _catalogue(), "h100")
    assert ('  pci:\n    vendor: "0x104c"\n    device: "0x8232"\n    subsystem_vendor: "0x0000"\n'
            '    subsystem_device: "0x0000"\n') in text
    assert "part: broadcom" not in text
    kept = _switch_ids(nccl_topo(text))
    assert kept and all(ids == ("0x104c", "0x8232", "0x0000", "0x0000") for ids in kept.values())



def test_a_switch_of_unpublished_model_declares_its_own_generation_with_gen():
    text = node().replace("    part: broadcom-pex890xx\n", "    gen: 5\n")
    assert [d.format() for d in check_node_text(text)] == []
    tiers = per_gpu(topology_of(load_node_text(text)))["gpu0"]["tiers"]
    assert tiers["pcie_host"]["bandwidth_bytes_per_s"] == PcieLink(4, 16).bandwidth


def test_a_gen4_declared_switch_names_its_declaration_in_hw104():
    text = node().replace("    part: broadcom-pex890xx\n", "    gen: 4\n")
    found = [d for d in check_node_text(text) if d.code == "HW104"]
    assert found[0].message == ("gpu0: Gen5 x16 link below sw0, a Gen4 switch (declared gen: 4): "
                                "a Gen4 switch has no Gen5 ports")


def test_gen_beside_a_part_is_refused_at_the_bridge():
    text = node().replace("    part: broadcom-pex890xx\n", "    part: broadcom-pex890xx\n    gen: 5\n")
    (error,) = check_node_text(text)
    assert (error.code, error.message) == (
        "E110", "pcie[1]: a bridge with a part takes its generation from the part: write 'part' or 'gen', not both")
