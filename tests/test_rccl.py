"""AMD nodes and RCCL: the new parts, the RCCL dialect of the topology-file check (RCCL's parser
rules, exact messages, tiny files named for their fault), the generated rccl-topo.xml of the
MI300X node, its rccl.conf and launch.env, rule HW911, and the HGX H100 node's NCCL file."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from xml.etree import ElementTree

import pytest

from hwspec.formats.nccl_topology import check_nccl_xml, check_rccl_xml
from hwspec.generate.engine import plan_for
from hwspec.generate.rccl import rccl_limits
from hwspec.model.parts import load_catalogue
from hwspec.pipeline import check
from hwspec.testing import check_node_text, load_node_text
from hwspec.topology import topology_of
from tests.test_nccl_xml import replace_once

ROOT = Path(__file__).resolve().parent.parent
CONF_LINE = re.compile(r"^[A-Z0-9_]+=[^ \t'\"]*$")

TWO_MI300X = """\
<system version="2">
  <cpu numaid="0" arch="x86_64" vendor="AuthenticAMD" familyid="175" modelid="17">
    <pci busid="0000:05:00.0" class="0x120000" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="304" gcn="gfx942" arch="38911" rank="0" gdr="1">
        <xgmi target="0000:15:00.0" count="1" tclass="0x120000"/>
      </gpu>
    </pci>
    <pci busid="0000:15:00.0" class="0x120000" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="1" sm="304" gcn="gfx942" arch="38911" rank="1" gdr="1">
        <xgmi target="0000:05:00.0" count="1" tclass="0x120000"/>
      </gpu>
    </pci>
    <pci busid="0000:09:00.0" class="0x020000" link_speed="32.0 GT/s PCIe" link_width="16">
      <nic>
        <net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1"/>
      </nic>
    </pci>
  </cpu>
</system>
"""


# ------------------------------------------------------------------ parts


@pytest.mark.parametrize("kind, name, field, value", [
    ("gpus", "h200-sxm-141gb", ("hbm", "capacity"), 141e9),
    ("gpus", "h200-sxm-141gb", ("hbm", "bandwidth"), 4.8e12),
    ("gpus", "b200-hgx-180gb", ("fabric", "kind"), "nvlink5"),
    ("gpus", "b200-hgx-180gb", ("fabric", "link_bandwidth"), 50e9),
    ("gpus", "b200-hgx-180gb", ("sm",), 100),
    ("gpus", "mi300x-oam-192gb", ("compute_units",), 304),
    ("gpus", "mi300x-oam-192gb", ("gcn",), "gfx942"),
    ("gpus", "mi300x-oam-192gb", ("hip_arch",), 38911),
    ("gpus", "mi300x-oam-192gb", ("fabric", "links"), 7),
    ("gpus", "mi300x-oam-192gb", ("fabric", "link_bandwidth"), 64e9),
    ("gpus", "mi300x-oam-192gb", ("hbm", "capacity"), 192 * 2**30),
    ("nics", "connectx-7-2x200g", ("ports",), 2),
    ("nics", "connectx-7-2x200g", ("speed",), 25e9),
    ("nics", "bluefield-3-2x200g", ("pci_device",), "0xa2dc"),
    ("cpus", "epyc-9654", ("family",), 175),
    ("cpus", "epyc-9654", ("model",), 17),
    ("cpus", "epyc-7763", ("cores",), 64),
    ("cpus", "xeon-platinum-8480p", ("model",), 143),
])
def test_new_parts_load_with_their_datasheet_values(kind, name, field, value):
    part = load_catalogue([ROOT / "src/hwspec/data/parts"]).get(kind, name)
    assert part is not None, name
    got = part.model
    for key in field:
        got = getattr(got, key)
    assert got == pytest.approx(value) if isinstance(value, float) else got == value


def test_every_new_part_says_where_its_numbers_come_from():
    catalogue = load_catalogue([ROOT / "src/hwspec/data/parts"])
    new = {"gpus": ["h200-sxm-141gb", "b200-hgx-180gb", "mi300x-oam-192gb"],
           "nics": ["connectx-7-2x200g", "bluefield-3-2x200g"],
           "cpus": ["xeon-platinum-8480p", "epyc-9654", "epyc-7763"]}
    for kind, names in new.items():
        for name in names:
            assert catalogue.get(kind, name).model.source, name


# ------------------------------------------------------------------ the RCCL check


def test_a_small_rccl_file_is_accepted():
    assert check_rccl_xml(TWO_MI300X) == []


def test_nccls_version_1_file_is_refused_by_rccl():
    assert check_rccl_xml(replace_once(TWO_MI300X, 'version="2"', 'version="1"')) == [
        'line 1: <system>: version must be "2" (RCCL: "XML Topology has wrong version")']


def test_rccls_version_2_file_is_refused_by_nccl():
    assert 'line 1: <system>: version must be "1" (NCCL: "XML Topology has wrong version")' in check_nccl_xml(TWO_MI300X)


def test_nvlink_under_an_amd_gpu_is_ignored_by_rccl():
    text = TWO_MI300X.replace("<xgmi ", "<nvlink ")
    assert check_rccl_xml(text) == [
        "line 5: <nvlink> is not allowed under <gpu> (RCCL ignores it and everything inside it); allowed there: xgmi",
        "line 10: <nvlink> is not allowed under <gpu> (RCCL ignores it and everything inside it); allowed there: xgmi"]


@pytest.mark.parametrize("attribute", ["gcn", "arch", "sm", "rank", "dev"])
def test_gpu_without_an_attribute_rccl_reads(attribute):
    lines = TWO_MI300X.splitlines(keepends=True)
    lines[3] = re.sub(rf' {attribute}="[^"]*"', "", lines[3])
    expected = [f"line 4: <gpu> is missing required attribute '{attribute}'"]
    if attribute == "rank":
        expected.append("file: GPU ranks must be 0..0, each once; found 1 (missing 0)")
    assert check_rccl_xml("".join(lines)) == expected


def test_gcn_that_is_not_a_gfx_target():
    assert check_rccl_xml(replace_once(TWO_MI300X, 'gcn="gfx942"', 'gcn="942"')) == [
        "line 4: <gpu>: gcn=\"942\" is not a gfx target such as 'gfx942'"]


def test_amd_cpu_without_family_and_model():
    text = replace_once(TWO_MI300X, ' familyid="175" modelid="17"', "")
    assert check_rccl_xml(text) == ["line 2: <cpu> is missing required attribute 'familyid'",
                                    "line 2: <cpu> is missing required attribute 'modelid'"]
    assert check_nccl_xml(text.replace('version="2"', 'version="1"').replace("xgmi", "nvlink")
                          .replace('tclass="0x120000"', 'tclass="0x030200"')) == []  # NCCL does not read them for AMD


def test_xgmi_counts_asymmetric():
    text = replace_once(TWO_MI300X, 'count="1"', 'count="2"')
    assert check_rccl_xml(text) == ["line 5: xGMI count from 0000:05:00.0 to 0000:15:00.0 is 2 but from 0000:15:00.0 "
                                    "to 0000:05:00.0 is 1: xGMI counts must be symmetric",
                                    "line 10: xGMI count from 0000:15:00.0 to 0000:05:00.0 is 1 but from 0000:05:00.0 "
                                    "to 0000:15:00.0 is 2: xGMI counts must be symmetric"]


def test_xgmi_target_that_is_no_gpu():
    text = replace_once(TWO_MI300X, 'target="0000:15:00.0"', 'target="0000:99:00.0"')
    assert check_rccl_xml(text)[0] == 'line 5: <xgmi target="0000:99:00.0"> names no GPU in this file'


def test_xgmi_to_a_gpu_without_target():
    text = replace_once(TWO_MI300X, 'target="0000:15:00.0" ', "")
    assert check_rccl_xml(text)[0] == "line 5: <xgmi> is missing required attribute 'target'"


def test_rccl_element_limit():
    nets = "".join(f'    <nic><net name="n{i}" dev="{i + 1}"/></nic>\n' for i in range(520))
    text = replace_once(TWO_MI300X, "  </cpu>", nets + "  </cpu>")
    assert check_rccl_xml(text) == [
        'file: 1051 elements: RCCL reads at most 1024 ("XML parser is limited to 1024 nodes")',
        'line 2: <cpu> has 523 children: RCCL keeps at most 32 under one element']


# ------------------------------------------------------------------ generated files


@cache
def plan(name: str) -> dict[str, str]:
    checked = check(ROOT / "platforms" / f"{name}.yaml")
    assert not checked.failed(), checked.diagnostics
    return {key.split("/", 1)[1]: text for key, text in plan_for(checked.topology).items()}


def test_amd_node_gets_rccl_files_and_no_nccl_ones():
    files = plan("mi300x-oam")
    assert {"rccl-topo.xml", "rccl.conf", "launch.env"} <= set(files)
    assert "nccl-topo.xml" not in files and "nccl.conf" not in files


def test_mi300x_rccl_topology_passes_the_rccl_check_and_states_the_xgmi_mesh():
    text = plan("mi300x-oam")["rccl-topo.xml"]
    assert check_rccl_xml(text) == []
    root = ElementTree.fromstring(text)
    assert root.get("version") == "2"
    gpus = root.findall(".//gpu")
    assert len(gpus) == 8
    by_bus = {}
    for pci in root.iter("pci"):
        gpu = pci.find("gpu")
        if gpu is not None:
            assert pci.get("class") == "0x120000"
            by_bus[pci.get("busid")] = gpu
    for bus, gpu in by_bus.items():
        assert (gpu.get("sm"), gpu.get("gcn"), gpu.get("arch")) == ("304", "gfx942", "38911")
        links = gpu.findall("xgmi")
        assert sorted(link.get("target") for link in links) == sorted(b for b in by_bus if b != bus)
        assert {(link.get("count"), link.get("tclass")) for link in links} == {("1", "0x120000")}
    assert [net.get("speed") for net in root.iter("net") if net.get("gdr") == "1"] == ["400000"] * 8
    assert {cpu.get("vendor") for cpu in root.iter("cpu")} == {"AuthenticAMD"}


def test_mi300x_launch_env_orders_hip_devices_and_points_rccl_at_its_file():
    env = plan("mi300x-oam")["launch.env"]
    lines = [line for line in env.splitlines() if line and not line.startswith("#")]
    assert all(CONF_LINE.match(line) for line in lines), lines
    values = dict(line.split("=", 1) for line in lines)
    assert values["HIP_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
    assert "CUDA_DEVICE_ORDER" not in values
    assert values["NCCL_TOPO_FILE"] == "/etc/hwspec/mi300x-oam/rccl-topo.xml"
    assert values["NCCL_IB_HCA"] == "=" + ",".join(f"mlx5_{i}:1" for i in range(8))
    assert values["NCCL_CROSS_NIC"] == "0"


def test_mi300x_rccl_conf_carries_the_same_nccl_names_for_etc_rccl_conf():
    files = plan("mi300x-oam")
    conf = files["rccl.conf"]
    assert "Install as /etc/rccl.conf" in conf
    conf_lines = [line for line in conf.splitlines() if line and not line.startswith("#")]
    env_lines = [line for line in files["launch.env"].splitlines() if line.startswith("NCCL_")]
    assert conf_lines == env_lines


def test_hgx_h100_nccl_topology_names_its_four_nvswitch_chips():
    text = plan("hgx-h100")["nccl-topo.xml"]
    assert check_nccl_xml(text) == []
    root = ElementTree.fromstring(text)
    for gpu in root.iter("gpu"):
        links = [(link.get("target"), link.get("count"), link.get("tclass")) for link in gpu.findall("nvlink")]
        assert links == [("0000:f3:00.0", "5", "0x068000"), ("0000:f4:00.0", "4", "0x068000"),
                         ("0000:f5:00.0", "4", "0x068000"), ("0000:f6:00.0", "5", "0x068000")]
    assert len(root.findall(".//gpu")) == 8 and len(root.findall(".//net")) == 10


def test_hgx_h100_launch_env_keeps_cuda_ordering():
    env = plan("hgx-h100")["launch.env"]
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in env and "HIP_VISIBLE_DEVICES" not in env
    assert "NCCL_TOPO_FILE=/etc/hwspec/hgx-h100/nccl-topo.xml" in env


# ------------------------------------------------------------------ HW911 (what RCCL's file cannot say)


def _mi300x_text(old: str, new: str) -> str:
    return replace_once((ROOT / "platforms" / "mi300x-oam.yaml").read_text(encoding="utf-8"), old, new)


def test_amd_part_without_compute_units_is_reported_and_not_written():
    text = _mi300x_text("    part: mi300x-oam-192gb\n", "    part: mi300x-oam-192gb\n    override: {compute_units: null}\n")
    platform = load_node_text(text, file="platforms/mi300x-oam.yaml")
    assert next(limit.message for limit in rccl_limits(topology_of(platform))) == (
        "gpu0: part mi300x-oam-192gb has no compute_units; RCCL's <gpu> needs gcn, arch and sm (the compute-unit count): "
        "write them under the GPU's override: (compute_units: rocminfo's Compute Unit count; or an RCCL topology dump's gcn, "
        "arch and sm), or into the part")
    findings = [f for f in check_node_text(text, file="platforms/mi300x-oam.yaml") if f.code == "HW911"]
    assert len(findings) == 8


def test_nvidia_nodes_have_no_rccl_limits():
    checked = check(ROOT / "platforms" / "hgx-h100.yaml")
    assert rccl_limits(checked.topology) == []


def test_amd_cluster_gres_confines_gpus_by_render_node(tmp_path):
    (tmp_path / "mi300x-oam.yaml").write_text((ROOT / "platforms" / "mi300x-oam.yaml").read_text(encoding="utf-8"))
    (tmp_path / "mi-2.yaml").write_text(
        "hwspec: 1\nkind: cluster\nname: mi-2\nnodes:\n  - {platform: mi300x-oam.yaml, count: 2, hostname: 'mi${i}'}\n"
        "world_size: 16\n", encoding="utf-8")
    checked = check(tmp_path / "mi-2.yaml")
    assert not checked.failed(), checked.diagnostics
    files = plan_for(checked.topology)
    gres = [line for line in files["mi-2/slurm/gres.conf"].splitlines() if line.startswith("NodeName=")]
    assert [line.split(" File=")[1].split(" ")[0] for line in gres] == [f"/dev/dri/renderD{128 + i}" for i in range(8)]
    assert "mi-2/nodes/mi300x-oam/rccl-topo.xml" in files and "mi-2/nodes/mi300x-oam/nccl-topo.xml" not in files


def test_more_children_than_old_rccls_table_holds():
    nics = "".join(f'    <nic><net name="n{i}" dev="{i + 1}"/></nic>\n' for i in range(30))
    text = replace_once(TWO_MI300X, "  </cpu>", nics + "  </cpu>")
    assert check_rccl_xml(text) == ["line 2: <cpu> has 33 children: RCCL keeps at most 32 under one element"]


def test_hw911_cannot_be_switched_off_because_generate_would_refuse_anyway():
    text = _mi300x_text("    part: mi300x-oam-192gb\n", "    part: mi300x-oam-192gb\n    override: {compute_units: null}\n")
    text += "rules:\n  HW911: {severity: off, reason: \"RCCL will cope\"}\n"
    codes = [f.code for f in check_node_text(text, file="platforms/mi300x-oam.yaml")]
    assert "E304" in codes and codes.count("HW911") == 8


# MI250X/MI250 GCDs have 4 and 3 xGMI links: on the MI300X board they are wired as two hives of four
# (4 x 1 link to 3 peers), which every AMD part here can carry.
HIVES = "nvlink:\n  topology: fully-connected\n  links_per_pair: 1\n  exclude: [[0, 4], [0, 5], [0, 6], [0, 7], [1, 4], [1, 5], [1, 6], [1, 7], [2, 4], [2, 5], [2, 6], [2, 7], [3, 4], [3, 5], [3, 6], [3, 7]]\n"


@pytest.mark.parametrize(("part", "gcn", "cus"), [("mi325x-oam-256gb", "gfx942", "304"), ("mi250x-gcd-64gb", "gfx90a", "110"),
                                                   ("mi250-gcd-64gb", "gfx90a", "104"), ("mi355x-oam-288gb", "gfx950", "256")])
def test_every_amd_part_is_written_to_rccl_topo_xml_with_its_gcn_arch_and_compute_units(part, gcn, cus):
    text = (ROOT / "platforms" / "mi300x-oam.yaml").read_text(encoding="utf-8").replace("part: mi300x-oam-192gb", f"part: {part}")
    text = re.sub(r"nvlink:\n  topology: fully-connected\n  links_per_pair: 1\n", HIVES, text)
    assert [f.format() for f in check_node_text(text, file="amd.yaml") if f.severity.label == "error"] == []
    written = plan_for(topology_of(load_node_text(text, file="amd.yaml")))["mi300x-oam/rccl-topo.xml"]
    assert check_rccl_xml(written) == []
    rccl = ElementTree.fromstring(written)
    assert {(g.get("gcn"), g.get("arch"), g.get("sm")) for g in rccl.iter("gpu")} == {(gcn, "38911", cus)}
    assert len(list(rccl.iter("gpu"))) == 8
