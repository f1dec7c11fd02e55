"""The live-machine parsers (hwspec/live/: NCCL topology XML, hwloc XML, nvidia-smi topo -m):
what they read from real and generated samples, and how they fail. Hostile or truncated input
gives diagnostics located at the input's file and line, never a traceback, hang or guess."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwspec.live import inputs
from hwspec.live.inputs import read_input
from hwspec.live.merge import read_inputs
from hwspec.live.observed import FATAL_INPUT_CODES, NVSWITCH, Machine
from tests.cpu_time import grows_linearly
from tests.examples import pinned

ROOT = Path(__file__).resolve().parent.parent
LIVE = ROOT / "tests/data/live"
H100 = ROOT / "tests/data/h100-8gpu-8nic-dump.xml"
A100_SKELETON = ROOT / "tests/data/a100-8gpu-8hca-skeleton.xml"
SAMPLES = sorted([*LIVE.glob("*.xml"), *LIVE.glob("*.txt"), H100, A100_SKELETON])


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def parse_text(tmp_path: Path, text: str | bytes, name: str = "input.xml", fmt: str | None = None) -> Machine:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return read_input(path, fmt)


def formatted(machine: Machine) -> list[str]:
    return [d.format().replace(str(Path.cwd()) + "/", "") for d in machine.problems]


# ------------------------------------------------------------------ what they read


def test_the_h100_dump_is_read_in_full():
    m = read_input(H100)
    assert m.problems == []
    assert sorted(m.numa) == [0, 1] and m.numa[0].vendor == "intel" and (m.numa[0].family, m.numa[0].model) == (6, 143)
    assert m.numa[0].cpus == tuple(range(80)) and m.numa[1].cpus == tuple(range(80, 160))
    gpus = m.gpus_in_order()
    assert [g.bus for g in gpus] == ["0000:a4:00.0", "0000:ae:00.0", "0000:b8:00.0", "0000:c2:00.0",
                                     "0000:cc:00.0", "0000:d6:00.0", "0000:e0:00.0", "0000:ea:00.0"]
    assert {(g.vendor, g.device, g.sm, g.gdr) for g in gpus} == {("0x10de", "0x2330", 90, True)}
    assert [m.numa_of(g.key) for g in gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    # width 0 is NCCL's "not reported" for the virtual functions: kept unknown, not guessed
    assert {(g.link.gen, g.link.width) for g in gpus} == {(5, None)}
    assert {(b.link.gen, b.link.width) for b in m.bridges.values()} == {(1, 1)}
    counts = m.nvlink_counts()
    assert {counts[(g.key, NVSWITCH)][0] for g in gpus} == {18}  # 5+5+4+4 to four NVSwitches
    assert sorted(m.nvswitches) == ["0000:f3:00.0", "0000:f4:00.0", "0000:f5:00.0", "0000:f6:00.0"]
    # one NIC beside each GPU under the same virtual bridge; mlx5_7 beside GPU 0
    assert [n.ports[0].name for n in sorted(m.nics.values(), key=lambda n: n.bus)] == [f"mlx5_{i}" for i in range(7, -1, -1)]
    assert all(n.parent == g.parent for n, g in zip(sorted(m.nics.values(), key=lambda n: n.bus), gpus))
    assert {(p.speed, p.gdr) for n in m.nics.values() for p in n.ports} == {(25e9, True)}


def test_the_a100_skeleton_gives_devices_by_pci_class_only():
    m = read_input(A100_SKELETON)
    assert m.problems == []
    assert len(m.gpus) == 8 and len(m.nics) == 8 and m.nvlinks == []
    assert {(g.vendor, g.sm) for g in m.gpus.values()} == {(None, None)}
    assert {n.fabric for n in m.nics.values()} == {"infiniband"} and all(not n.ports for n in m.nics.values())
    assert {(l.gen, l.width) for l in (*(g.link for g in m.gpus.values()),)} == {(4, 16)}  # "16 GT/s" (old kernels)


def test_lstopo_xml_gives_numa_memory_interfaces_and_link_bandwidth():
    m = read_input(LIVE / "zionex.lstopo.xml")
    assert m.problems == [] and m.nvlinks == []
    assert m.numa[2].memory == 384 * 2**30 and m.numa[2].package == 2 and m.numa[2].model_name == "Intel Xeon Platinum 8380H"
    nic = m.nics["0000:16:00.0"]
    assert (nic.vendor, nic.device, nic.interfaces, [p.name for p in nic.ports]) == ("0x15b3", "0x101b", ["eth1"], ["mlx5_0"])
    assert m.gpus["0000:14:00.0"].link.gen is None  # hwloc gives GB/s only: Gen3 x16 and Gen4 x8 look the same
    assert m.gpus["0000:14:00.0"].link.bandwidth == pytest.approx(31.507692e9)
    assert m.ancestors("0000:14:00.0") == ["0000:11:00.0", "0000:10:00.0", "numa:0"]


def test_a_real_lstopo_sample_from_this_machine_is_read():
    m = read_input(LIVE / "vm-2cpu.lstopo.xml")
    assert m.problems == []
    assert list(m.numa) == [0] and m.numa[0].cpus == (0, 1) and m.numa[0].vendor == "amd"
    assert [n.interfaces for n in m.nics.values()] == [["eth0"]]


def test_topo_m_gives_nvlinks_affinity_and_a_tree_from_the_path_types():
    m = read_input(LIVE / "zionex.topo-m.txt")
    assert m.problems == []
    assert m.nvlink_counts()[("GPU0", "GPU1")][0] == 2 and ("GPU0", "GPU4") not in m.nvlink_counts()
    assert m.gpus["GPU2"].numa == 1 and m.gpus["GPU2"].cpus == (*range(28, 56), *range(140, 168))
    assert m.nics["NIC3"].ports[0].name == "mlx5_3"
    # GPU0, GPU1, NIC0, NIC1 are PIX to each other: one switch on NUMA node 0
    assert m.gpus["GPU0"].parent == m.nics["NIC1"].parent and m.numa_of("NIC1") == 0


def test_topo_m_with_ansi_underlined_header_and_old_nic_names(tmp_path):
    text = ("\x1b[4m\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\tNUMA Affinity\x1b[0m\n"
            "GPU0\t X \tNV4\tPXB\t0-7\t0\n"
            "GPU1\tNV4\t X \tPXB\t0-7\t0\n"
            "mlx5_0\tPXB\tPXB\t X \n")
    m = parse_text(tmp_path, text, "topo.txt")
    assert m.problems == []
    assert m.nvlink_counts()[("GPU1", "GPU0")][0] == 4 and m.nics["mlx5_0"].ports[0].name == "mlx5_0"


def test_merging_lstopo_and_topo_m_adds_the_nvlinks_to_the_tree():
    m = read_inputs([LIVE / "zionex.lstopo.xml", LIVE / "zionex.topo-m.txt"])
    assert m.problems == []
    counts = m.nvlink_counts()
    assert counts[("0000:14:00.0", "0000:1c:00.0")][0] == 2 and ("0000:14:00.0", "0000:94:00.0") not in counts
    assert counts[("0000:14:00.0", "0000:1c:00.0")][1].file == "tests/data/live/zionex.topo-m.txt"
    assert m.gpus["0000:54:00.0"].cpus == (*range(28, 56), *range(140, 168))


def test_merging_contradicting_inputs_warns_at_the_second_input(tmp_path):
    topo = (LIVE / "zionex.topo-m.txt").read_text().replace("GPU0\t X \tNV2", "GPU0\t X \tNV1", 1)
    other = tmp_path / "topo.txt"
    other.write_text(topo)
    m = read_inputs([LIVE / "zionex.nccl.xml", other])
    assert [d.code for d in m.problems] == ["I104"]
    assert m.problems[0].line == 2 and m.problems[0].file.endswith("topo.txt")
    assert "NVLinks from 0000:14:00.0 to 0000:1c:00.0: 1 here, but 2 in tests/data/live/zionex.nccl.xml:7; keeping 2" in m.problems[0].message


# ------------------------------------------------------------------ located problems


def test_unknown_elements_and_bad_values_are_located_warnings(tmp_path):
    text = ('<system version="1">\n'
            '  <cpu numaid="0" affinity="zz" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">\n'
            '    <pcie busid="0000:01:00.0"/>\n'
            '    <pci busid="0000:07:00.0" class="0x030200" link_speed="16 GT" link_width="x16">\n'
            '      <gpu dev="0" sm="80" rank="0" gdr="1"><nvlink target="0000:99:00.0" count="2" tclass="0x030200"/></gpu>\n'
            '    </pci>\n'
            '    <pci busid="0000:07:00.0" class="0x020000"/>\n'
            '  </cpu>\n'
            '</system>\n')
    m = parse_text(tmp_path, text)
    assert [line.split(str(tmp_path) + "/")[-1] for line in formatted(m)] == [
        'input.xml:2:3: warning[I103 input-value]: affinity="zz" is not a sysfs cpumap',
        "input.xml:3:5: warning[I102 input-ignored]: <pcie> under <cpu> is ignored",
        'input.xml:4:5: warning[I103 input-value]: link_speed="16 GT" is not a PCIe speed NCCL knows (it would read Gen3)',
        'input.xml:4:5: warning[I103 input-value]: link_width="x16" is not a lane count',
        "input.xml:5:45: warning[I104 input-contradiction]: NVLink target 0000:99:00.0 is not a GPU in this file",
        "input.xml:7:5: warning[I104 input-contradiction]: bus id 0000:07:00.0 repeats line 4",
    ]
    assert len(m.gpus) == 1 and m.nvlinks == []


@pytest.mark.parametrize("text, message", [
    ('<!DOCTYPE system [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>\n<system version="1">&b;</system>',
     "input.xml:1:30: error[I101 input-syntax]: entity declarations are not accepted (they can expand without bound)"),
    ('<!DOCTYPE system [\n<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<system version="1">&x;</system>',
     "input.xml:2:39: error[I101 input-syntax]: entity declarations are not accepted (they can expand without bound)"),
    ('<system version="1">\n  <cpu numaid="0">\n', "input.xml:3:1: error[I101 input-syntax]: not well-formed XML: no element found"),
    ('<system version="1"><cpu numaid="0"></system>',
     "input.xml:1:39: error[I101 input-syntax]: not well-formed XML: mismatched tag"),
    ("<graphs version=\"1\"/>",
     "input.xml:1:1: error[I101 input-syntax]: the root element is <graphs>, not <system>: not an NCCL topology file"),
    ("<system>" * 300, "input.xml:1:2057: error[I101 input-syntax]: elements nested deeper than 256"),
    ("\x00\xff garbage", "input.xml:1:1: error[I101 input-syntax]: not an input hwspec reads: expected an NCCL topology dump "
     "(<system>), hwloc XML (<topology>), 'nvidia-smi topo -m' output, 'nvidia-smi -q -x' output (<nvidia_smi_log>) or "
     "'nvidia-smi nvlink -R' / '-s' output"),
])
def test_unusable_xml_is_one_located_error(tmp_path, text, message):
    m = parse_text(tmp_path, text)
    assert [line.split(str(tmp_path) + "/")[-1].split("\n")[0] for line in formatted(m)][:1] == [message]
    assert m.problems[0].code in FATAL_INPUT_CODES


def test_an_input_over_the_size_limit_is_refused_before_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "MAX_INPUT_BYTES", 1000)
    m = parse_text(tmp_path, "<system>" + " " * 2000 + "</system>")
    assert [(d.code, d.line, d.message) for d in m.problems] == [("I100", 0, "larger than 0 MiB: not a node topology")]


def test_a_missing_file_is_an_unreadable_input(tmp_path):
    m = read_input(tmp_path / "absent.xml")
    assert [(d.code, d.message) for d in m.problems] == [("I100", "cannot read: no such file or directory")]


def test_topo_m_truncated_rows_and_unknown_cells_are_located(tmp_path):
    text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNVX\t0-3\t0\nGPU1\tNV2\n"
    m = parse_text(tmp_path, text, "topo.txt")
    assert [(d.line, d.message) for d in m.problems] == [
        (2, "GPU0 to GPU1: 'NVX' is not a topo -m path type (X, NV#, PIX, PXB, PHB, NODE, SYS, SOC)"),
        (3, "row GPU1 has 1 cells for 2 devices: truncated?"),
    ]


def test_topo_m_without_a_header_is_unusable(tmp_path):
    m = parse_text(tmp_path, "GPU0 and GPU1 are fine\n", "topo.txt", fmt="topo-m")
    assert [(d.code, d.line, d.message) for d in m.problems] == [
        ("I101", 1, "no header row with GPU0: not 'nvidia-smi topo -m' output")]


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_every_truncation_of_every_sample_gives_located_diagnostics_never_a_traceback(sample):
    data = sample.read_bytes()
    step = max(1, len(data) // 60)
    for cut in range(0, len(data), step):
        m = Machine()
        fmt = inputs.sniff(data) or "nccl"
        __import__(f"hwspec.live.{ {'nccl': 'nccl', 'lstopo': 'lstopo', 'topo-m': 'topo_matrix', 'smi-xml': 'smi_xml'}[fmt] }", fromlist=["parse"]).parse(
            data[:cut], sample.name, m)
        for d in m.problems:
            assert d.file == sample.name and d.line >= 1 and d.col >= 1, (cut, d)


@settings(max_examples=pinned(60))
@given(st.sampled_from(SAMPLES), st.data())
def test_mutated_samples_never_raise(sample, data):
    """Random byte changes anywhere in a sample: each parser reports, never raises."""
    raw = bytearray(sample.read_bytes())
    for _ in range(data.draw(st.integers(1, 8), label="edits")):
        at = data.draw(st.integers(0, len(raw) - 1), label="offset")
        raw[at] = data.draw(st.sampled_from(list(b"<>\"'=/&;\t\n 0x9fGPUNV-")), label="byte")
    m = Machine()
    for module in ("nccl", "lstopo", "topo_matrix"):
        __import__(f"hwspec.live.{module}", fromlist=["parse"]).parse(bytes(raw), "mutated", m)
    assert all(d.line >= 0 for d in m.problems)


@pytest.mark.slow  # grows each input to show its reader linear (seconds of CPU)
def test_parsing_is_linear_in_the_input(tmp_path):
    """A flat file of 20,000 bridges parses in well under a second per 10,000 (no quadratic step)."""
    def body(n: int) -> str:
        rows = "".join(f'<pci busid="0000:{i // 256 % 256:02x}:{i % 32:02x}.{i % 8}" class="0x060400" '
                       f'link_speed="16.0 GT/s PCIe" link_width="16"/>\n' for i in range(n))
        return f'<system version="1">\n<cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">\n{rows}</cpu>\n</system>\n'

    assert grows_linearly(lambda n: parse_text(tmp_path, body(n)), 5000, 20000)


def test_an_rccl_dump_with_xgmi_links_is_read_like_nccls(tmp_path):
    text = ('<system version="2">\n'
            '  <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="AuthenticAMD" familyid="25" modelid="17">\n'
            '    <pci busid="0000:05:00.0" class="0x120000" vendor="0x1002" device="0x74a1" link_speed="32.0 GT/s PCIe" link_width="16">\n'
            '      <gpu dev="0" sm="94" gcn="gfx942" arch="38911" rank="0" gdr="1">\n'
            '        <xgmi target="0000:15:00.0" count="1" tclass="0x120000"/>\n'
            '      </gpu>\n'
            '    </pci>\n'
            '    <pci busid="0000:15:00.0" class="0x120000" vendor="0x1002" device="0x74a1" link_speed="32.0 GT/s PCIe" link_width="16">\n'
            '      <gpu dev="1" sm="94" gcn="gfx942" arch="38911" rank="1" gdr="1">\n'
            '        <xgmi target="0000:05:00.0" count="1" tclass="0x120000"/>\n'
            '      </gpu>\n'
            '    </pci>\n'
            '  </cpu>\n'
            '</system>\n')
    m = parse_text(tmp_path, text)
    assert m.problems == []
    assert {k: v[0] for k, v in m.nvlink_counts().items()} == {("0000:05:00.0", "0000:15:00.0"): 1, ("0000:15:00.0", "0000:05:00.0"): 1}
    assert m.gpus["0000:05:00.0"].vendor == "0x1002" and m.numa[0].vendor == "amd"


def test_topo_m_of_an_nvswitch_board_gives_links_to_the_switches(tmp_path):
    """HGX H100: every pair shows NV18, the 18 links each GPU has to the NVSwitches (7 x 18
    links per GPU would be more than any GPU has)."""
    n = 8
    rows = ["\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\tNUMA Affinity"]
    for i in range(n):
        cells = [" X " if i == j else "NV18" for j in range(n)]
        rows.append(f"GPU{i}\t" + "\t".join(cells) + f"\t{0 if i < 4 else 56}-{55 if i < 4 else 111}\t{i // 4}")
    m = parse_text(tmp_path, "\n".join(rows) + "\n", "topo.txt")
    assert m.problems == []
    assert {k: v[0] for k, v in m.nvlink_counts().items()} == {(f"GPU{i}", NVSWITCH): 18 for i in range(n)}
    # the ZionEX board (NV2 to 6 of 7 peers) stays GPU-to-GPU
    assert all(t != NVSWITCH for _, t in read_input(LIVE / "zionex.topo-m.txt").nvlink_counts())


def test_asymmetric_nvlink_counts_in_one_dump_are_a_located_contradiction(tmp_path):
    text = (LIVE / "zionex.nccl.xml").read_text()
    lines = text.splitlines(keepends=True)
    lines[6] = lines[6].replace('count="2"', 'count="3"')  # gpu0 -> gpu1 only
    m = parse_text(tmp_path, "".join(lines))
    assert [(d.code, d.line, d.message) for d in m.problems] == [
        ("I104", 7, "3 NVLinks from 0000:14:00.0 to 0000:1c:00.0, but 2 back: NVLink counts are the same both ways")]


def test_topo_m_pasted_with_spaces_instead_of_tabs_is_read(tmp_path):
    """Output copied from a terminal or a web page loses its tabs: columns are runs of spaces."""
    rows = ["        GPU0  GPU1  GPU2  GPU3  CPU Affinity  NUMA"]
    for i in range(4):
        cells = "  ".join(" X  " if i == j else "NV18" for j in range(4))
        rows.append(f"GPU{i}    {cells}  {0 if i < 2 else 52}-{51 if i < 2 else 103}         {i // 2}")
    m = parse_text(tmp_path, "\n".join(rows) + "\n\nLegend:\n\n  X    = Self\n", "topo.txt")
    assert m.problems == []
    assert {k: v[0] for k, v in m.nvlink_counts().items()} == {(f"GPU{i}", NVSWITCH): 18 for i in range(4)}
    assert [m.gpus[f"GPU{i}"].numa for i in range(4)] == [0, 0, 1, 1] and m.gpus["GPU3"].cpus == tuple(range(52, 104))


def test_hwloc_3_xml_with_flag_typed_os_devices_and_nvswitches(tmp_path):
    text = ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n<topology version="3.0">\n'
            ' <object type="Machine" os_index="0" cpuset="0x0000000f" nodeset="0x00000001">\n'
            '  <object type="Package" os_index="0" cpuset="0x0000000f" nodeset="0x00000001">\n'
            '   <object type="NUMANode" os_index="0" cpuset="0x0000000f" nodeset="0x00000001" local_memory="1024"/>\n'
            '   <object type="Bridge" bridge_type="0-1" depth="0">\n'
            '    <object type="PCIDev" pci_busid="0000:3b:00.0" pci_type="0207 [15b3:1021] [15b3:0023] 00 00" pci_link_speed="63.015385">\n'
            '     <object type="OSDev" name="ibp59s0" osdev_type="16"/>\n'
            '     <object type="OSDev" name="mlx5_0" osdev_type="32"/>\n'
            '    </object>\n'
            '    <object type="PCIDev" subtype="NVSwitch" pci_busid="0000:61:00.0" pci_type="0000 [0000:0000] [0000:0000] 00 00"/>\n'
            '   </object>\n'
            '  </object>\n'
            ' </object>\n'
            '</topology>\n')
    m = parse_text(tmp_path, text)
    assert m.problems == []
    nic = m.nics["0000:3b:00.0"]
    assert (nic.fabric, nic.interfaces, [p.name for p in nic.ports]) == ("infiniband", ["ibp59s0"], ["mlx5_0"])
    assert nic.link.bandwidth == pytest.approx(63.015385e9) and list(m.nvswitches) == ["0000:61:00.0"]


# ---------------------------------------------------------------- inputs larger than one node


def _topo_matrix(gpus: int) -> str:
    """`nvidia-smi topo -m` text for `gpus` GPUs whose pairs alternate NV1 and PIX."""
    names = [f"GPU{i}" for i in range(gpus)]
    rows = ["\t" + "\t".join(names) + "\tCPU Affinity\tNUMA Affinity"]
    for i in range(gpus):
        cells = ["X" if j == i else ("NV1" if (i + j) % 2 else "PIX") for j in range(gpus)]
        rows.append(f"GPU{i}\t" + "\t".join(cells) + f"\t0-63\t{i % 2}")
    return "\n".join(rows + ["", "Legend:", "", "  X    = Self"]) + "\n"


def test_topo_matrix_of_1024_gpus_is_refused_at_its_header_not_a_resource_bomb(tmp_path):
    (tmp_path / "topo.txt").write_text(_topo_matrix(1024))  # 4 MB: 1M cells took 51 s and 1.2 GB into a 14 MiB draft
    m = read_input(tmp_path / "topo.txt")
    assert [(d.code, d.line, d.message) for d in m.problems] == [
        ("I101", 1, "the header has 1024 GPU columns, more than the 64 one node has: not one node's 'nvidia-smi topo -m' output")]
    assert not m.gpus and not m.nvlinks and not m.paths


def test_topo_matrix_of_64_gpus_is_read(tmp_path):
    (tmp_path / "topo.txt").write_text(_topo_matrix(64))
    m = read_input(tmp_path / "topo.txt")
    assert (len(m.gpus), len(m.nvlinks), m.problems) == (64, 64 * 32, [])


def test_nccl_dump_with_more_gpus_than_a_node_is_refused(tmp_path):
    gpus = "".join(f'<pci busid="0000:{i // 256:02x}:{i % 256:02x}.0" class="0x030200" vendor="0x10de" link_speed="16.0 GT/s PCIe" '
                   f'link_width="16"><gpu dev="{i}" sm="80" rank="{i}" gdr="1"/></pci>\n' for i in range(65))
    (tmp_path / "dump.xml").write_text(f'<system version="1">\n<cpu numaid="0" affinity="ff">\n{gpus}</cpu>\n</system>\n')
    m = read_input(tmp_path / "dump.xml")
    assert [(d.code, d.line, d.message) for d in m.problems if d.code in FATAL_INPUT_CODES] == [
        ("I101", 1, "65 GPUs, more than the 64 one node has: not one node's topology")]
