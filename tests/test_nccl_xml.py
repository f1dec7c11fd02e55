"""NCCL topology XML: the compatibility check (NCCL's parser rules, exact messages) and the
generated nccl-topo.xml of ZionEX and Zion."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwspec.formats.nccl_topology import check_nccl_xml
from hwspec.formats.nccl_tree import cpumap, net_speed
from hwspec.generate.engine import GenerationError, plan_for
from hwspec.pipeline import check
from hwspec.topology import topology_of
from tests.examples import pinned

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
SKELETON = (DATA / "a100-8gpu-8hca-skeleton.xml").read_text(encoding="utf-8")
DUMP = (DATA / "h100-8gpu-8nic-dump.xml").read_text(encoding="utf-8")

TWO_GPUS = """\
<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">
    <pci busid="0000:14:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="80" rank="0" gdr="1">
        <nvlink target="0000:1c:00.0" count="2" tclass="0x030200"/>
      </gpu>
    </pci>
    <pci busid="0000:1c:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16">
      <gpu dev="1" sm="80" rank="1" gdr="1">
        <nvlink target="0000:14:00.0" count="2" tclass="0x030200"/>
      </gpu>
    </pci>
    <pci busid="0000:16:00.0" class="0x020000" link_speed="16.0 GT/s PCIe" link_width="16">
      <nic>
        <net name="mlx5_0" dev="0" speed="200000" port="1" gdr="1"/>
      </nic>
    </pci>
  </cpu>
</system>
"""


def replace_once(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# ------------------------------------------------------------------ the check


@pytest.mark.parametrize("text", [SKELETON, DUMP, TWO_GPUS], ids=["azure-skeleton", "h100-dump", "two-gpus"])
def test_real_files_are_accepted(text):
    assert check_nccl_xml(text) == []


def test_xml_declaration_is_rejected():
    assert check_nccl_xml('<?xml version="1.0"?>\n' + SKELETON) == [
        "line 1: XML declaration '<?xml ...?>' is not allowed (NCCL: \"XML Parse : expected >, got '?'\")"]


def test_tab_is_rejected_once_per_line():
    text = replace_once(SKELETON, "  <cpu numaid=\"1\"", "\t\t<cpu numaid=\"1\"")
    assert check_nccl_xml(text) == [
        "line 10: TAB character: NCCL skips only spaces and line breaks "
        "(NCCL: \"XML Parse error : expecting '<', got '\\t'\")"]


def test_single_quotes_are_rejected():
    text = replace_once(DUMP, 'numaid="0"', "numaid='0'")
    assert check_nccl_xml(text) == [
        "line 2: single-quoted value of 'numaid' in <cpu>: NCCL before 2.27 accepts double quotes only"]


def test_unquoted_value_stops_the_check():
    text = replace_once(TWO_GPUS, 'numaid="0"', "numaid=0")
    assert check_nccl_xml(text) == [
        "line 2: value of 'numaid' in <cpu> is not quoted (NCCL: \"XML Parse : Expected (double) quote.\")"]


def test_link_speed_without_pcie_suffix_is_rejected():
    text = replace_once(TWO_GPUS, 'link_speed="16.0 GT/s PCIe"', 'link_speed="16.0 GT/s"')
    assert check_nccl_xml(text) == [
        "line 3: <pci>: link_speed=\"16.0 GT/s\" is not one of NCCL's strings (2.5 GT/s PCIe, 5.0 GT/s PCIe, "
        "8.0 GT/s PCIe, 16.0 GT/s PCIe, 32.0 GT/s PCIe, 64.0 GT/s PCIe); NCCL would silently assume Gen3"]


def test_kernel_style_link_speeds_are_accepted():
    # "16 GT/s" (kernels up to 5.6) is in NCCL's table; the Azure skeleton uses it
    assert 'link_speed="16 GT/s"' in SKELETON and check_nccl_xml(SKELETON) == []


def test_gpu_directly_under_cpu_is_rejected():
    text = replace_once(SKELETON, '    <pci busid="ffff:ff:01.0"',
                        '    <gpu dev="0" sm="80" rank="0" gdr="1"/>\n    <pci busid="ffff:ff:01.0"')
    assert check_nccl_xml(text) == [
        "line 3: <gpu> is not allowed under <cpu> (NCCL ignores it and everything inside it); allowed there: pci, nic"]


def test_missing_required_attributes_are_named():
    text = replace_once(TWO_GPUS, ' rank="1"', "")
    text = replace_once(text, ' arch="x86_64"', "")
    assert check_nccl_xml(text) == [
        "line 2: <cpu> is missing required attribute 'arch'",
        "line 9: <gpu> is missing required attribute 'rank'",
    ]


def test_intel_cpu_needs_family_and_model():
    text = replace_once(TWO_GPUS, ' familyid="6" modelid="85"', "")
    assert check_nccl_xml(text) == [
        "line 2: <cpu> is missing required attribute 'familyid'",
        "line 2: <cpu> is missing required attribute 'modelid'",
    ]


def test_more_than_256_elements_are_rejected():
    bridges = "".join(f'    <pci busid="0000:{i // 32:02x}:{i % 32:02x}.0" class="0x060400" '
                      f'link_speed="16.0 GT/s PCIe" link_width="16"/>\n' for i in range(255))
    text = f'<system version="1">\n  <cpu numaid="0" arch="arm64">\n{bridges}  </cpu>\n</system>\n'
    assert check_nccl_xml(text) == [
        "file: 257 elements: NCCL 2.21+ reads at most 256 (\"XML parser is limited to 256 nodes\")"]
    assert check_nccl_xml(text.replace(bridges.splitlines()[0] + "\n", "", 1)) == []


def test_upper_case_busid_is_rejected():
    text = replace_once(DUMP, 'busid="0000:a1:00.0"', 'busid="0000:A1:00.0"')
    assert check_nccl_xml(text) == [
        "line 3: <pci>: busid=\"0000:A1:00.0\" is not a lower-case 'dddd:bb:dd.f' bus id "
        "(NCCL matches bus ids as exact strings)"]


def test_asymmetric_nvlink_counts_are_rejected():
    text = replace_once(TWO_GPUS, 'target="0000:14:00.0" count="2"', 'target="0000:14:00.0" count="1"')
    assert check_nccl_xml(text) == [
        "line 5: NVLink count from 0000:14:00.0 to 0000:1c:00.0 is 2 but from 0000:1c:00.0 to 0000:14:00.0 is 1: "
        "NVLink counts must be symmetric",
        "line 10: NVLink count from 0000:1c:00.0 to 0000:14:00.0 is 1 but from 0000:14:00.0 to 0000:1c:00.0 is 2: "
        "NVLink counts must be symmetric",
    ]


def test_nvlink_to_a_gpu_not_in_the_file_is_rejected():
    text = replace_once(TWO_GPUS, 'target="0000:1c:00.0"', 'target="0000:2c:00.0"')
    assert check_nccl_xml(text) == [
        'line 5: <nvlink target="0000:2c:00.0"> names no GPU in this file',
        "line 10: NVLink count from 0000:1c:00.0 to 0000:14:00.0 is 2 but from 0000:14:00.0 to 0000:1c:00.0 is 0: "
        "NVLink counts must be symmetric",
    ]


def test_a_gpu_whose_pci_has_no_busid_is_reported_once_not_matched_by_its_links():
    """Its links have no source to be symmetric with: the missing busid is the finding (mixing
    it with the other GPUs' links once failed with a TypeError)."""
    def gpu(busid: str, rank: int, target: str) -> str:
        return (f'    <pci{busid} class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16">\n'
                f'      <gpu dev="{rank}" sm="80" rank="{rank}" gdr="1">\n'
                f'        <nvlink target="{target}" count="2" tclass="0x030200"/>\n      </gpu>\n    </pci>\n')
    text = ('<system version="1">\n  <cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">\n'
            + gpu("", 0, "0000:1c:00.0") + gpu(' busid="0000:1c:00.0"', 1, "0000:2c:00.0")
            + gpu(' busid="0000:2c:00.0"', 2, "0000:1c:00.0") + "  </cpu>\n</system>\n")
    assert check_nccl_xml(text) == ["line 3: <pci> is missing required attribute 'busid'"]


def test_ranks_must_be_0_to_n_minus_1_and_net_devs_unique():
    text = replace_once(TWO_GPUS, 'rank="1"', 'rank="0"')
    text = replace_once(text, "</nic>", '</nic>\n      <nic>\n        <net name="mlx5_1" dev="0"/>\n      </nic>')
    assert check_nccl_xml(text) == [
        'line 9: <gpu rank="0"> repeats the rank of line 4',
        "file: GPU ranks must be 0..1, each once; found 0, 0 (missing 1)",
        'line 18: <net dev="0"> repeats the dev of line 15',
    ]


def test_system_version_and_root():
    assert check_nccl_xml(replace_once(TWO_GPUS, 'version="1"', 'version="2"')) == [
        'line 1: <system>: version must be "1" (NCCL: "XML Topology has wrong version")']
    assert check_nccl_xml('<topology version="1"/>\n') == [
        'line 1: the root element is <topology>: NCCL needs <system version="1">']


def test_layout_traps_of_the_tokenizer():
    assert check_nccl_xml(replace_once(TWO_GPUS, 'numaid="0" arch', 'numaid="0"  arch')) == [
        "line 2: more than one space between attributes in <cpu>: NCCL reads each extra space as an empty attribute"]
    assert check_nccl_xml(replace_once(TWO_GPUS, 'numaid="0" arch', 'numaid="0"\n    arch')) == [
        "line 2: line break inside <cpu>: NCCL needs a tag and all its attributes on one line "
        "(NCCL: \"XML Parse : expected >, got '\\n'\")"]
    assert check_nccl_xml(replace_once(TWO_GPUS, "<nic>", "<nic>\n        text")) == [
        "line 15: text 't' outside a tag: NCCL expects only elements and comments "
        "(NCCL: \"XML Parse error : expecting '<', got 't'\")"]
    assert check_nccl_xml(replace_once(TWO_GPUS, "</cpu>", "</pci>")) == [
        "line 18: closing tag </pci> does not match <cpu> opened on line 2 (NCCL: \"XML Mismatch : cpu / pci\")"]
    assert check_nccl_xml(replace_once(TWO_GPUS, 'name="mlx5_0"', 'name="a&amp;b"')) == [
        "line 15: value of 'name' in <net> contains '&' (NCCL does not decode entities)"]


def test_comments_are_accepted_anywhere():
    text = "<!-- header -->\n" + replace_once(TWO_GPUS, "<nic>", "<nic> <!-- inline -->")
    assert check_nccl_xml(text) == []


def test_more_than_16_attributes_are_rejected():
    extra = "".join(f' x{i}="{i}"' for i in range(11))
    assert check_nccl_xml(replace_once(TWO_GPUS, 'gdr="1"/>', f'gdr="1"{extra}/>')) == []  # 5 + 11 = 16
    text = replace_once(TWO_GPUS, 'gdr="1"/>', f'gdr="1"{extra} x11="11"/>')
    assert check_nccl_xml(text) == ["line 15: <net> has 17 attributes: NCCL keeps only the first 16"]


# ------------------------------------------------------------------ the generated files


@cache
def generated(name: str) -> str:
    checked = check(ROOT / "platforms" / f"{name}.yaml")
    assert not checked.failed(), checked.diagnostics
    return plan_for(checked.topology, only=["nccl-topo"])[f"{name}/nccl-topo.xml"]


@pytest.mark.parametrize("name", ["zionex", "zion"])
def test_generated_files_pass_the_check_and_the_format_rules(name):
    text = generated(name)
    assert check_nccl_xml(text) == []
    lines = text.splitlines()
    assert lines[0].startswith("<!-- Generated by hwspec ") and lines[0].endswith(" -->")
    assert lines[1] == '<system version="1">' and lines[-1] == "</system>"
    assert "\t" not in text and "'" not in text and "<?xml" not in text
    for line in lines[1:]:
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 2 == 0, line
    assert len(ElementTree.fromstring(text).findall(".//*")) + 1 <= 256


def _gpus(root: ElementTree.Element) -> dict[str, ElementTree.Element]:
    """GPU bus id -> <gpu>."""
    return {pci.get("busid"): gpu for pci in root.iter("pci") for gpu in pci.findall("gpu")}


def test_zionex_has_8_gpus_with_their_nic_on_the_same_switch():
    root = ElementTree.fromstring(generated("zionex"))
    gpus = _gpus(root)
    assert sorted(int(g.get("rank")) for g in gpus.values()) == list(range(8))
    assert all(g.get("dev") == g.get("rank") and g.get("sm") == "80" and g.get("gdr") == "1" for g in gpus.values())
    switches = [pci for pci in root.iter("pci") if pci.find("pci/gpu") is not None]
    assert len(switches) == 4
    for switch in switches:
        assert switch.get("class") == "0x060400"
        gpu_pcis = [p for p in switch.findall("pci") if p.find("gpu") is not None]
        nets = [p.find("nic/net") for p in switch.findall("pci") if p.find("nic") is not None]
        assert len(gpu_pcis) == 2 and len(nets) == 2
        for net in nets:
            assert net.get("name").startswith("mlx5_")
            assert (net.get("speed"), net.get("gdr"), net.get("port")) == ("200000", "1", "1")
    # the ingestion NICs sit on the CPUs, without GPUDirect
    for cpu in root.findall("cpu"):
        direct = [p.find("nic/net") for p in cpu.findall("pci") if p.find("nic") is not None]
        assert [(n.get("name"), n.get("speed"), n.get("gdr")) for n in direct] == [
            (f"eth{10 * (int(cpu.get('numaid')) + 1)}", "100000", "0")]
    assert sorted(int(n.get("dev")) for n in root.iter("net")) == list(range(12))


def test_zionex_nvlink_counts_are_symmetric_with_12_links_per_gpu():
    gpus = _gpus(ElementTree.fromstring(generated("zionex")))
    counts = {(bus, link.get("target")): int(link.get("count"))
              for bus, gpu in gpus.items() for link in gpu.findall("nvlink")}
    assert all(counts[(b, a)] == n for (a, b), n in counts.items())
    for gpu in gpus.values():
        links = gpu.findall("nvlink")
        assert sum(int(link.get("count")) for link in links) == 12
        assert {link.get("tclass") for link in links} == {"0x030200"}
        assert len(links) == 6 and all(link.get("target") in gpus for link in links)


def test_zionex_cpus_carry_vendor_family_model_and_cpumap():
    cpus = ElementTree.fromstring(generated("zionex")).findall("cpu")
    assert [c.get("numaid") for c in cpus] == ["0", "1", "2", "3"]
    assert {(c.get("arch"), c.get("vendor"), c.get("familyid"), c.get("modelid")) for c in cpus} == {
        ("x86_64", "GenuineIntel", "6", "85")}
    # 224 logical CPUs: node 0 holds 0-27 and their siblings 112-139
    assert cpus[0].get("affinity") == "00000000,00000000,00000fff,ffff0000,00000000,00000000,0fffffff"


def test_zion_nics_hang_off_the_cpus_without_gpudirect():
    root = ElementTree.fromstring(generated("zion"))
    assert all(g.get("gdr") == "0" for g in _gpus(root).values())
    assert len(_gpus(root)) == 8
    nets = list(root.iter("net"))
    assert [n.get("name") for n in nets] == ["eth0", "eth1", "eth2", "eth3"]
    for cpu in root.findall("cpu"):
        for pci in cpu.findall("pci"):
            if pci.find("nic") is not None:
                assert pci.get("class") == "0x020000" and pci.find("nic/net").get("gdr") == "0"
    assert sum(1 for cpu in root.findall("cpu") for p in cpu.findall("pci") if p.find("nic") is not None) == 4
    assert all(p.find("nic") is None for p in root.iter("pci") if p.get("class") == "0x060400")


def test_cpumap_and_net_speed_helpers():
    assert cpumap((0, 1, 33), 64) == "00000002,00000003"
    assert cpumap((0,), 8) == "00000001"
    assert cpumap(tuple(range(32, 40)), 40) == "000000ff,00000000"

    class Nic:
        speed = 25e9

    assert net_speed(Nic()) == 200000


def test_generation_fails_when_the_output_breaks_the_nccl_rules(tmp_path, monkeypatch):
    # a site template that writes an XML declaration: plan_for must refuse the result
    (tmp_path / "nccl-topo.xml.j2").write_text('<?xml version="1.0"?>\n<system version="1">\n</system>\n')
    monkeypatch.chdir(ROOT)
    checked = check(Path("platforms/zionex.yaml"))
    with pytest.raises(GenerationError) as caught:
        plan_for(checked.topology, template_dirs=[tmp_path], only=["nccl-topo"])
    assert str(caught.value) == (
        "platforms/zionex.yaml: nccl-topo.xml fails the NCCL compatibility check:\n"
        "  line 2: XML declaration '<?xml ...?>' is not allowed (NCCL: \"XML Parse : expected >, got '?'\")")


DUAL_PORT = """\
hwspec: 1
kind: node
name: dual
sockets:
  - {id: cpu0, part: xeon-platinum-8380h, numa_node: 0, memory: {capacity: 256 GiB, bandwidth: 80 GB/s}}
pcie:
  - {id: sw0, upstream: cpu0, bus: "0000:11:00.0", link: {gen: 4, width: 16}, max_oversubscription: 8}
  - {id: sw9, upstream: cpu0, bus: "0000:40:00.0", link: {gen: 4, width: 16}}
gpus:
  - {id: gpu0, part: a100-sxm4-40gb, pcie: {upstream: sw0, bus: "0000:14:00.0"}}
nics:
  - {id: nic0, part: connectx-6-200g, role: backend, transport: infiniband, gpu: gpu0, device: mlx5_0, port: 1,
     pcie: {upstream: sw0, bus: "0000:16:00.0"}}
  - {id: nic1, part: connectx-6-200g, role: backend, transport: infiniband, device: mlx5_0, port: 2,
     pcie: {upstream: sw0, bus: "0000:16:00.0"}}
  - {id: bmc0, part: ethernet-100g, role: management, transport: tcp, interface: eno1,
     pcie: {upstream: cpu0, bus: "0000:30:00.0"}}
ssds:
  - {id: ssd0, capacity: 1 TB, bandwidth: 3 GB/s, pcie: {upstream: sw9, bus: "0000:41:00.0"}}
backend: {transport: infiniband, nic_per_gpu: true, gpudirect: true}
"""


def test_ports_share_their_adapter_and_unused_branches_are_left_out(tmp_path, monkeypatch):
    from hwspec.model.load import load_platform

    monkeypatch.chdir(tmp_path)
    Path("dual.yaml").write_text(DUAL_PORT)
    platform = load_platform(Path("dual.yaml"))
    text = plan_for(topology_of(platform), only=["nccl-topo"])["dual/nccl-topo.xml"]
    assert check_nccl_xml(text) == []
    # mlx5_0's verbs port 2 is written as NCCL writes it: port 2 plus the one port of the device before it
    # (net_ib.cc ncclIbGetPhysProperties, portNum + realPort)
    assert text.split("\n", 1)[1] == """\
<system version="1">
  <cpu numaid="0" affinity="00ffffff,ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">
    <pci busid="0000:11:00.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">
      <pci busid="0000:14:00.0" class="0x030200" vendor="0x10de" device="0x20b0" link_speed="16.0 GT/s PCIe" link_width="16">
        <gpu dev="0" sm="80" rank="0" gdr="1"/>
      </pci>
      <pci busid="0000:16:00.0" class="0x020700" link_speed="16.0 GT/s PCIe" link_width="16">
        <nic>
          <net name="mlx5_0" dev="0" speed="200000" port="1" guid="0x16000" gdr="1"/>
          <net name="mlx5_0" dev="1" speed="200000" port="3" guid="0x16000" gdr="1"/>
        </nic>
      </pci>
    </pci>
    <pci busid="0000:30:00.0" class="0x020000" link_speed="8.0 GT/s PCIe" link_width="16"/>
  </cpu>
</system>
"""


def test_nvswitch_links_use_the_sentinel_target(tmp_path, monkeypatch):
    from hwspec.model.load import load_platform

    monkeypatch.chdir(tmp_path)
    text = DUAL_PORT.replace("nics:", '  - {id: gpu1, part: a100-sxm4-40gb, pcie: {upstream: sw0, bus: "0000:18:00.0"}}\n'
                                      "nvlink: {topology: nvswitch}\nnics:")
    Path("dual.yaml").write_text(text)
    platform = load_platform(Path("dual.yaml"))
    xml = plan_for(topology_of(platform), only=["nccl-topo"])["dual/nccl-topo.xml"]
    assert check_nccl_xml(xml) == []
    links = [(pci.get("busid"), link.attrib) for pci in ElementTree.fromstring(xml).iter("pci")
             for link in pci.findall("gpu/nvlink")]
    assert links == [(bus, {"target": "fffffff:ff:ff.0", "count": "12", "tclass": "0x068000"})
                     for bus in ("0000:14:00.0", "0000:18:00.0")]


_ATTRIBUTES = st.lists(st.tuples(st.sampled_from(["id", "busid", "x", "id", "a" * 256, "9bad", "tclass"]),
                                 st.sampled_from(['"0"', '"1"', "'2'", '"a b"', '"<"', '"' + "v" * 255 + '"', '""']),
                                 st.sampled_from([" ", "  ", "\n", "\t"])), max_size=4)


@settings(derandomize=True, database=None, max_examples=pinned(300))
@given(st.lists(st.tuples(st.sampled_from(["system", "cpu", "pci", "gpu", "nvlink", "x.y", "a" * 255]), _ATTRIBUTES,
                          st.sampled_from([">", "/>", " >", " />"])), min_size=1, max_size=5))
def test_the_one_step_tag_reader_reports_as_the_long_way(tags):
    """`open_tag` reads a clean tag in one regex step; every tag must give the same report
    as with that step switched off."""
    import re

    from hwspec.formats import nccl_topology as nccl_check

    text = '<system version="1">\n' + "".join(
        "<" + name + "".join(space + key + "=" + value for key, value, space in attrs) + end + "\n"
        for name, attrs, end in tags) + "</system>\n"
    fast = nccl_check._check_topology_xml(text, nccl_check.NCCL)
    clean, nccl_check._CLEAN_TAG = nccl_check._CLEAN_TAG, re.compile(r"(?!)")
    try:
        assert nccl_check._check_topology_xml(text, nccl_check.NCCL) == fast
    finally:
        nccl_check._CLEAN_TAG = clean
