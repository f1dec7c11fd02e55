"""Spec features for machines as clouds present them: presented vs physical PCIe links."""

from __future__ import annotations

import re
from pathlib import Path

from hwspec import pipeline
from hwspec.generate import engine as generate
from hwspec.perf import roofline as rf
from hwspec.perf.torchrec import torchrec_topology

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
    kwargs = torchrec_topology(topology, doc)["topology_kwargs"]
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


# ------------------------------------------------------------------ the two public-machine shapes


def _plan(name: str) -> dict[str, str]:
    checked = _checked(name)
    return {path.split("/", 1)[1]: text for path, text in generate.plan_for(checked.topology).items()}


def _settings(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_a100_vm_with_four_numa_nodes_on_two_sockets_validates_clean():
    checked = _checked("a100_nvswitch_vm")
    assert "rules:" not in (FIXTURES / "a100_nvswitch_vm.yaml").read_text()
    assert checked.diagnostics == []
    platform = checked.platform
    assert platform.packages == ("cpu0", "cpu1")
    assert [(s.id, s.package, s.numa_node, s.cores, s.cpus[0], len(s.cpus)) for s in platform.sockets] == [
        ("numa0", "cpu0", 0, 24, 0, 24), ("numa1", "cpu0", 1, 24, 24, 24),
        ("numa2", "cpu1", 2, 24, 48, 24), ("numa3", "cpu1", 3, 24, 72, 24)]
    assert [g.numa_node for g in platform.gpus] == [1, 1, 0, 0, 3, 3, 2, 2]
    assert [s.id for s in platform.baseboard.nvswitches] == [f"nvs{i}" for i in range(6)]


def test_a100_vm_numbers_come_from_its_numa_nodes_and_links():
    topology = _checked("a100_nvswitch_vm").topology
    doc = rf.roofline(topology)
    (group,) = doc["gpu_groups"]
    tiers = group["tiers"]
    assert tiers["host_ddr"]["capacity_bytes"] == 225 * 2**30 // 2 and tiers["host_ddr"]["bandwidth_bytes_per_s"] == 51.2e9
    assert tiers["pcie_host"]["bandwidth_bytes_per_s"] == GEN4_X16
    assert tiers["pcie_host_shared"]["bandwidth_bytes_per_s"] == GEN4_X16 / 2  # 2 GPUs per fake switch
    assert (tiers["nvlink"]["bandwidth_bytes_per_s"], tiers["nvlink"]["links"]) == (300e9, 12)
    assert doc["intra_node_collectives"]["gpu_pairs_with_direct_nvlink"] == 28
    assert doc["node"]["sockets"] == 2
    kwargs = torchrec_topology(topology, doc)["topology_kwargs"]
    assert kwargs["hbm_to_ddr_mem_bw"] == GEN4_X16 / 1000 and kwargs["ddr_mem_bw"] == 51.2e9 / 1000


def test_a100_vm_launch_files_bind_by_numa_node_and_leave_hca_selection_to_nccl():
    plan = _plan("a100_nvswitch_vm")
    env = _settings(plan["launch.env"])
    assert env["OMP_NUM_THREADS"] == "12"  # 24 cores of a NUMA node (SMT off) for its 2 ranks
    assert "NCCL_IB_HCA" not in env and "NCCL_IB_HCA" not in _settings(plan["nccl.conf"])
    assert ("# NCCL_IB_HCA is not set: the platform names no RDMA devices, so NCCL selects the backend NICs itself "
            "(declare backend.ib_hca to filter them)") in plan["nccl.conf"].splitlines()
    xml = plan["nccl-topo.xml"]
    assert xml.count("<cpu ") == 4 and 'familyid="143" modelid="49"' in xml
    assert xml.count('<nvlink target="fffffff:ff:ff.0" count="12" tclass="0x068000"/>') == 8  # switches the VM hides
    assert "<net " not in xml  # no names: NCCL's detection adds the HCAs under their <pci>
    ranks = plan["ranks.tsv"].splitlines()
    assert ranks[-1].split("\t") == ["7", "gpu7", "000e:00:00.0", "ib7", "0108:00:00.0", "2", "48-71"]


def test_h100_vm_under_virtual_gen1_bridges_validates_clean_and_uses_physical_links():
    checked = _checked("h100_virtual_bridges_vm")
    assert "rules:" not in (FIXTURES / "h100_virtual_bridges_vm.yaml").read_text()
    assert checked.diagnostics == []
    doc = rf.roofline(checked.topology)
    (group,) = doc["gpu_groups"]
    gen5_x16 = 32e9 * (128 / 130) * 16 / 8
    assert group["tiers"]["pcie_host"] == {"bandwidth_bytes_per_s": gen5_x16, "link": "Gen5 x16", "hops": 2}
    assert (group["tiers"]["nvlink"]["bandwidth_bytes_per_s"], group["tiers"]["nvlink"]["links"]) == (450e9, 18)
    assert group["tiers"]["backend_nic"]["bandwidth_bytes_per_s"] == 25e9
    kwargs = torchrec_topology(checked.topology, doc)["topology_kwargs"]
    assert kwargs["hbm_to_ddr_mem_bw"] == gen5_x16 / 1000
    assert kwargs["intra_host_bw"] == 450e9 / 1000


def test_h100_vm_nccl_files_show_the_presented_links_and_the_switches_by_bus_id():
    plan = _plan("h100_virtual_bridges_vm")
    xml = plan["nccl-topo.xml"]
    assert xml.count('class="0x060400" link_speed="2.5 GT/s PCIe" link_width="1"') == 8
    assert xml.count('link_speed="32.0 GT/s PCIe" link_width="0"') == 16
    gpu0 = xml.split('<gpu dev="0"', 1)[1].split("</gpu>", 1)[0]
    assert re.findall(r'<nvlink target="([^"]+)" count="(\d+)"', gpu0) == [
        ("0000:f3:00.0", "4"), ("0000:f4:00.0", "5"), ("0000:f5:00.0", "5"), ("0000:f6:00.0", "4")]
    assert _settings(plan["nccl.conf"])["NCCL_IB_HCA"] == "mlx5"  # the declared filter, not guessed names


def test_nvswitch_links_count_against_the_gpu_link_budget(tmp_path):
    text = (FIXTURES / "h100_virtual_bridges_vm.yaml").read_text()
    over = text.replace('{id: nvs0, bus: "0000:f3:00.0", links_per_gpu: 4}', '{id: nvs0, bus: "0000:f3:00.0", links_per_gpu: 5}')
    (tmp_path / "vm.yaml").write_text(over)
    found = [d for d in pipeline.check(tmp_path / "vm.yaml").diagnostics if d.code == "HW302"]
    assert len(found) == 8
    assert found[0].message == ("gpu0 uses 19 NVLink links (nvs0: 5, nvs1: 5, nvs2: 5, nvs3: 4), "
                                "but its part h100-sxm5-80gb has 18")


def test_nvswitch_wiring_needs_its_switches(tmp_path):
    text = (FIXTURES / "h100_virtual_bridges_vm.yaml").read_text()
    start, end = text.index("  nvswitches:"), text.index("nvlink: {topology: nvswitch}")
    (tmp_path / "vm.yaml").write_text(text[:start] + text[end:])
    (message,) = [d.format() for d in pipeline.check(tmp_path / "vm.yaml").diagnostics]
    assert message.endswith("error[E110]: baseboard: 'wiring: nvswitch' and 'nvswitches' go together: list the "
                            "NVSwitch chips and each GPU's links to them")


def test_a_socket_is_one_numa_node_or_lists_its_numa_nodes(tmp_path):
    text = (FIXTURES / "a100_nvswitch_vm.yaml").read_text()
    both = text.replace("    numa_nodes:\n", "    numa_node: 0\n    numa_nodes:\n")
    (tmp_path / "vm.yaml").write_text(both)
    messages = [d.format() for d in pipeline.check(tmp_path / "vm.yaml").diagnostics]
    assert messages and all(m.endswith("a socket with 'numa_nodes' gives numa_node per NUMA node, not on the socket")
                            for m in messages)


# ------------------------------------------------------------------ environment: the vendor's settings


VENDOR = """environment:
  NCCL_IB_QPS_PER_CONNECTION: 4
  NCCL_IB_ADAPTIVE_ROUTING: true
  NCCL_IB_HCA: "=mlx5_0:1,mlx5_1:1"
  UCX_TLS: rc
"""


def test_platform_environment_is_merged_into_nccl_conf_and_launch_env(tmp_path):
    (tmp_path / "vm.yaml").write_text((FIXTURES / "h100_virtual_bridges_vm.yaml").read_text() + VENDOR)
    checked = pipeline.check(tmp_path / "vm.yaml")
    assert checked.diagnostics == []
    plan = {p.split("/", 1)[1]: t for p, t in generate.plan_for(checked.topology).items()}
    conf, env = _settings(plan["nccl.conf"]), _settings(plan["launch.env"])
    assert conf["NCCL_IB_QPS_PER_CONNECTION"] == "4" and conf["NCCL_IB_ADAPTIVE_ROUTING"] == "1"
    assert conf["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1"  # the platform's value replaces hwspec's, in place
    assert "# set by the platform's environment: (hwspec would write mlx5: the backend RDMA NICs, selected by the " \
           "filter the platform declares (backend.ib_hca))" in plan["nccl.conf"].splitlines()
    assert "UCX_TLS" not in conf and env["UCX_TLS"] == "rc"
    assert {k: v for k, v in env.items() if k.startswith("NCCL_")} == conf


def test_an_environment_value_that_needs_quoting_is_refused_where_it_is_written(tmp_path):
    (tmp_path / "vm.yaml").write_text((FIXTURES / "h100_virtual_bridges_vm.yaml").read_text()
                                      + 'environment:\n  NCCL_DEBUG: "INFO; reboot"\n')
    (message,) = [d.format() for d in pipeline.check(tmp_path / "vm.yaml").diagnostics]
    assert message == (f"{tmp_path / 'vm.yaml'}:62:15: error[E110]: environment.NCCL_DEBUG: 'INFO; reboot' is not a value "
                       "env files and nccl.conf take verbatim (letters, digits and _./:,=@%+^-; no spaces or quotes), e.g. '22'")


def test_cluster_environment_goes_to_the_cluster_files():
    fixtures = Path(__file__).parent / "fixtures"
    checked = pipeline.check(fixtures / "cluster" / "nccl_variable_unknown.yaml", platform_roots=[fixtures])
    plan = {p.split("/", 1)[1]: t for p, t in generate.plan_for(checked.topology).items()}
    conf, env = _settings(plan["nccl.conf"]), _settings(plan["cluster.env"])
    assert (conf["NCCL_IB_TIMEOUT"], conf["NCCL_IB_TIMEOUTS"], conf["NCCL_CROSS_NIC"]) == ("22", "23", "0")
    assert env["UCX_TLS"] == "rc" and env["NCCL_IB_TIMEOUT"] == "22" and "UCX_TLS" not in conf


def test_a_cluster_of_a100_vms_validates_clean_and_generates():
    checked = pipeline.check(FIXTURES / "a100_nvswitch_vm_cluster.yaml")
    assert checked.diagnostics == []
    cluster = checked.platform
    assert [len(leaf.nodes) for leaf in cluster.fabric.leaves] == [4] * 8  # one leaf per rail
    from hwspec.perf import cluster_roofline

    network = cluster_roofline.cluster_roofline(checked.topology)["network"]
    assert network["per_gpu_nic_bytes_per_s"] == network["per_gpu_injection_bytes_per_s"] == 25e9
    assert "graph" not in vars(checked.topology)
    plan = {p.split("/", 1)[1]: t for p, t in generate.plan_for(checked.topology).items()}
    node_env = _settings(plan["nodes/a100-nvswitch-vm/launch.env"])
    assert node_env["OMP_NUM_THREADS"] == "12" and "NCCL_IB_HCA" not in node_env
    assert _settings(plan["nccl.conf"])["NCCL_IB_TIMEOUT"] == "22"


def test_slurm_counts_physical_sockets_of_numa_split_nodes():
    """Slurm's Sockets/CoresPerSocket describe packages (slurmd -C counts them so), while each
    GPU's Cores= are its NUMA node's cores."""
    checked = pipeline.check(FIXTURES / "a100_nvswitch_vm_cluster.yaml")
    plan = {p.split("/", 1)[1]: t for p, t in generate.plan_for(checked.topology).items()}
    (node,) = [line for line in plan["slurm/slurm.conf"].splitlines() if line.startswith("NodeName=")]
    assert " Sockets=2 CoresPerSocket=48 ThreadsPerCore=1 " in node
    cores = [line.split("Cores=")[1].split()[0] for line in plan["slurm/gres.conf"].splitlines()
             if line.startswith("NodeName=") and "Cores=" in line]
    assert cores == ["24-47", "24-47", "0-23", "0-23", "72-95", "72-95", "48-71", "48-71"]
