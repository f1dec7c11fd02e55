"""hwloc's NVLink matrix (`<distances2hetero name="NVLinkBandwidth">`, written by its NVML
backend) read as the NVLinks it states: GPU pairs and NVSwitch links counted at hwloc's per-link
figure, links to a POWER CPU as links to the GPU's own CPU (one to another Package left out with
a located warning), a malformed matrix warned about and never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.live.lstopo import parse
from hwspec.live.observed import CPU, NVSWITCH, Machine
from hwspec.model.load import load_platform
from tests.cpu_time import grows_linearly
from tests.shared_data import REAL_MACHINES as REAL

P100 = "0302 [10de:15f9] [10de:116b] a1"
V100 = "0302 [10de:1db1] [10de:1212] a1"
NVSWITCH_TYPE = "0680 [10de:1af1] [10de:1712] a1"


def gpu(n: int, pci_type: str = P100) -> str:
    """GPU `n` (bus 0000:0n:00.0, PCIDev gp_index 1n) with its NVML OS device (gp_index 2n)."""
    return (f'<object type="PCIDev" gp_index="1{n}" pci_busid="0000:0{n}:00.0" pci_type="{pci_type}" pci_link_speed="15.753846">'
            f'<object type="OSDev" gp_index="2{n}" name="nvml{n}" subtype="NVML" osdev_type="1"/></object>')


def hwloc(devices: str, indexes: str, *rows: str, nbobjs: int | None = None) -> str:
    """hwloc 2 XML: one package (gp_index 2) of one NUMA node, `devices` below a host bridge, and
    the NVLinkBandwidth matrix over `indexes`, its values split over one <u64values> per row."""
    count = len(indexes.split()) if nbobjs is None else nbobjs
    values = "\n".join(f'    <u64values length="{len(row) + 1}">{row} </u64values>' for row in rows)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x000000ff" nodeset="0x00000001" gp_index="1">
    <info name="Architecture" value="ppc64le"/>
    <object type="Package" os_index="0" cpuset="0x000000ff" nodeset="0x00000001" gp_index="2">
      <object type="NUMANode" os_index="0" cpuset="0x000000ff" nodeset="0x00000001" gp_index="3" local_memory="1073741824"/>
      <object type="Bridge" gp_index="4" bridge_type="0-1" depth="0" bridge_pci="0000:[00-09]">
{devices}
      </object>
    </object>
  </object>
  <distances2hetero nbobjs="{count}" kind="25" name="NVLinkBandwidth">
    <indexes length="{len(indexes) + 1}">{indexes} </indexes>
{values}
  </distances2hetero>
</topology>
"""


TWO_P100 = hwloc(gpu(1) + gpu(2), "OSDev:21 OSDev:22 Package:2",
                 "1000000 40000 40000", "40000 1000000 40000", "40000 40000 1000000")
"""Two P100s with two NVLinks between them and two each to the CPU: a POWER8 board's half."""


def read(text: str) -> Machine:
    machine = Machine()
    parse(text.encode(), "l.xml", machine)
    return machine


def links(machine: Machine) -> list[tuple]:
    return [(l.gpu, l.target, l.count, l.where.line, l.switch, l.per_link) for l in machine.nvlinks]


def test_gpu_pairs_are_counted_at_hwlocs_nvlink1_figure_and_links_to_the_package_are_links_to_the_gpus_cpu():
    machine = read(TWO_P100)
    assert links(machine) == [("0000:01:00.0", "0000:02:00.0", 2, 15, None, 20e9), ("0000:01:00.0", CPU, 2, 15, None, 20e9),
                              ("0000:02:00.0", "0000:01:00.0", 2, 16, None, 20e9), ("0000:02:00.0", CPU, 2, 16, None, 20e9)]
    assert machine.problems == [] and machine.notes == []
    assert {"nvlinks", "cpu-nvlinks"} <= machine.listed


def test_a_link_to_a_package_the_gpu_does_not_sit_under_is_left_out_with_a_warning():
    second = ('<object type="Package" os_index="1" cpuset="0x0000ff00" nodeset="0x00000002" gp_index="5">'
              '<object type="NUMANode" os_index="1" cpuset="0x0000ff00" nodeset="0x00000002" gp_index="6" local_memory="1073741824"/>'
              '</object>')
    text = TWO_P100.replace("OSDev:21 OSDev:22 Package:2", "OSDev:21 OSDev:22 Package:5").replace(
        "  </object>\n  <distances2hetero", f"  {second}\n  </object>\n  <distances2hetero")
    machine = read(text)
    assert [(l.gpu, l.target) for l in machine.nvlinks] == [("0000:01:00.0", "0000:02:00.0"), ("0000:02:00.0", "0000:01:00.0")]
    assert [d.format() for d in machine.problems] == [
        f"l.xml:{line}:5: warning[I104 input-contradiction]: NVLinkBandwidth: 2 NVLink(s) from GPU 0000:0{g}:00.0 to Package 1, "
        "but the GPU sits under Package 0: NCCL joins such links to the GPU's own CPU, so they are left out" for g, line in ((1, 16), (2, 17))]


@pytest.mark.parametrize("value, per_link, count", [
    ("50000", 25e9, 2),     # NVLink 2-4: 25,000 MB/s a link
    ("150000", 25e9, 6),
    ("100000", 25e9, 4),    # also five NVLink 1 links: more than a P100 has to one peer
    ("80000", 20e9, 4),     # NVLink 1: 20,000 MB/s a link
])
def test_a_pairs_bandwidth_is_counted_in_links_of_the_figure_that_divides_it(value, per_link, count):
    machine = read(hwloc(gpu(1, V100) + gpu(2, V100), "OSDev:21 OSDev:22", f"1000000 {value}", f"{value} 1000000"))
    assert [(l.count, l.per_link) for l in machine.nvlinks] == [(count, per_link)] * 2
    assert machine.problems == []


SWITCH = f'<object type="PCIDev" gp_index="19" pci_busid="0000:09:00.0" pci_type="{NVSWITCH_TYPE}" subtype="NVSwitch"/>'
TWO_V100_ONE_SWITCH = hwloc(gpu(1, V100) + gpu(2, V100) + SWITCH, "OSDev:21 OSDev:22 PCIDev:19",
                            "1000000 0 150000", "0 1000000 150000", "150000 150000 1000000")
"""Two V100s with their six NVLinks each to one NVSwitch, as hwloc lists a switch (its PCI device)."""


def test_links_to_an_nvswitch_are_nvswitch_links_naming_the_switch_and_draft_an_hgx_board(tmp_path, capsys):
    machine = read(TWO_V100_ONE_SWITCH)
    assert links(machine) == [("0000:01:00.0", NVSWITCH, 6, 15, "0000:09:00.0", 25e9),
                              ("0000:02:00.0", NVSWITCH, 6, 16, "0000:09:00.0", 25e9)]
    assert machine.problems == []
    source, draft = tmp_path / "switch.xml", tmp_path / "draft.yaml"
    source.write_text(TWO_V100_ONE_SWITCH)
    assert main(["import", str(source), "-o", str(draft)]) == 0
    platform = load_platform(draft)
    assert [(s.id, s.bus, s.links_per_gpu) for s in platform.baseboard.nvswitches] == [("nvs0", "0000:09:00.0", 6)]
    assert main(["diff", str(draft), str(source)]) == 0


NOT_WHOLE = "is not a whole number of links at hwloc's 20000 MB/s (NVLink 1) or 25000 MB/s (NVLink 2-4): ignored"


@pytest.mark.parametrize("indexes, rows, nbobjs, problems", [
    ("OSDev:21 OSDev:22", ("1000000 40000", "40000 1000000"), 3,
     ["13:3: warning[I103 input-value]: the NVLinkBandwidth matrix has nbobjs=\"3\" but 2 indexes: its NVLinks are not read"]),
    ("OSDev:21 OSDev:22", ("1000000 40000", "40000"), None,
     ["13:3: warning[I103 input-value]: the NVLinkBandwidth matrix of 2 objects has 3 values, not 4: its NVLinks are not read"]),
    ("OSDev:21 OSDev:22", ("1000000 40000", "4e4 1000000"), None,
     ["16:5: warning[I103 input-value]: 1 value(s) of the NVLinkBandwidth matrix are not numbers of at most 20 digits (\"4e4\"): its NVLinks are not read"]),
    ("OSDev:21 OSDev:22", ("1000000 " + "9" * 21, "40000 1000000"), None,
     [f"15:5: warning[I103 input-value]: 1 value(s) of the NVLinkBandwidth matrix are not numbers of at most 20 digits (\"{'9' * 20}\"): "
      "its NVLinks are not read"]),
    ("OSDev:21 OSDev:99", ("1000000 40000", "40000 1000000"), None,
     ["14:5: warning[I103 input-value]: NVLinkBandwidth index OSDev:99 names no object of the file: its row is ignored"]),
    ("OSDev:21 Package:21", ("1000000 40000", "40000 1000000"), None,
     ["14:5: warning[I103 input-value]: NVLinkBandwidth index Package:21 names no object of the file: its row is ignored"]),
    ("OSDev:21 Bridge:4", ("1000000 40000", "40000 1000000"), None,
     ["14:5: warning[I103 input-value]: NVLinkBandwidth index Bridge:4 is neither a GPU, an NVSwitch nor a CPU: its row is ignored"]),
    ("OSDev:21 PCIDev:11", ("1000000 40000", "40000 1000000"), None,
     ["14:5: warning[I103 input-value]: NVLinkBandwidth index PCIDev:11 names 0000:01:00.0 again: its row is ignored"]),
    ("OSDev:21 OSDev:22", ("1000000 90000000000", "90000000000 1000000"), None,
     [f"{line}:5: warning[I103 input-value]: NVLinkBandwidth: 90000000000 MB/s from 0000:0{a}:00.0 to 0000:0{b}:00.0 is 3600000 "
      "links, more than the 18 a GPU has: ignored" for line, a, b in ((15, 1, 2), (16, 2, 1))]),
    ("OSDev:21 OSDev:22", ("1000000 30000", "30000 1000000"), None,
     [f"{line}:5: warning[I103 input-value]: NVLinkBandwidth: 30000 MB/s from 0000:0{a}:00.0 to 0000:0{b}:00.0 {NOT_WHOLE}"
      for line, a, b in ((15, 1, 2), (16, 2, 1))]),
])
def test_a_malformed_matrix_gives_located_warnings_and_no_nvlinks(indexes, rows, nbobjs, problems):
    machine = read(hwloc(gpu(1) + gpu(2), indexes, *rows, nbobjs=nbobjs))
    assert [d.format() for d in machine.problems] == [f"l.xml:{p}" for p in problems]
    assert machine.nvlinks == []


def test_an_entry_that_is_not_a_whole_number_of_the_gpus_links_is_left_out_and_the_others_kept():
    machine = read(hwloc(gpu(1) + gpu(2) + gpu(3), "OSDev:21 OSDev:22 OSDev:23",
                         "1000000 40000 30000", "40000 1000000 0", "30000 0 1000000"))
    assert [d.format() for d in machine.problems] == [
        "l.xml:15:5: warning[I103 input-value]: NVLinkBandwidth: 30000 MB/s from 0000:01:00.0 to 0000:03:00.0 is not a whole "
        "number of the NVLink 1 links (20000 MB/s each) its other entries count: ignored",
        f"l.xml:17:5: warning[I103 input-value]: NVLinkBandwidth: 30000 MB/s from 0000:03:00.0 to 0000:01:00.0 {NOT_WHOLE}"]
    assert [(l.gpu, l.target, l.count) for l in machine.nvlinks] == [
        ("0000:01:00.0", "0000:02:00.0", 2), ("0000:02:00.0", "0000:01:00.0", 2)]


def test_a_second_nvlink_matrix_is_ignored_with_a_warning():
    matrix = TWO_P100[TWO_P100.index("  <distances2hetero"):TWO_P100.index("</topology>")]
    machine = read(TWO_P100.replace("</topology>", matrix + "</topology>"))
    assert [d.format() for d in machine.problems] == [
        "l.xml:19:3: warning[I102 input-ignored]: a second NVLinkBandwidth matrix: ignored (the first is read)"]
    assert len(machine.nvlinks) == 4  # the first matrix: a pair each way, each GPU to its CPU


def test_counts_that_differ_both_ways_are_a_contradiction_and_each_direction_is_kept():
    machine = read(hwloc(gpu(1) + gpu(2), "OSDev:21 OSDev:22", "1000000 40000", "20000 1000000"))
    assert [d.format() for d in machine.problems] == [
        "l.xml:15:5: warning[I104 input-contradiction]: NVLinkBandwidth: 40000 MB/s from 0000:01:00.0 to 0000:02:00.0, "
        "but 20000 back: hwloc writes the same both ways"]
    assert [(l.gpu, l.count) for l in machine.nvlinks] == [("0000:01:00.0", 2), ("0000:02:00.0", 1)]


def test_a_gpu_the_matrix_does_not_name_has_its_nvlinks_unknown_not_none():
    machine = read(hwloc(gpu(1) + gpu(2) + gpu(3), "OSDev:21 OSDev:22", "1000000 40000", "40000 1000000"))
    assert [sorted(g.unknown) for g in machine.gpus.values()] == [[], [], ["nvlinks"]]


def test_a_file_without_the_matrix_lists_no_nvlinks():
    text = TWO_P100.split("  <distances2hetero")[0] + "</topology>\n"
    machine = read(text)
    assert machine.nvlinks == [] and "nvlinks" not in machine.listed


@pytest.mark.slow  # grows the matrix to show its reader linear (seconds of CPU)
def test_reading_the_matrix_grows_linearly_with_its_values():
    def run(n: int) -> None:
        devices = "".join(f'<object type="PCIDev" gp_index="1{i:04}" pci_busid="0000:{i // 32:02x}:{i % 32:02x}.0" '
                          f'pci_type="{P100}"><object type="OSDev" gp_index="2{i:04}" name="nvml{i}" osdev_type="1"/></object>'
                          for i in range(n))
        indexes = " ".join(f"OSDev:2{i:04}" for i in range(n))
        rows = [" ".join("1000000" if i == j else "25000" if abs(i - j) == 1 else "0" for j in range(n)) for i in range(n)]
        read(hwloc(devices, indexes, *rows))

    assert grows_linearly(run, 30, 60)  # 900 then 3,600 values: linear in the values is n squared


def test_the_draft_has_the_pairs_validates_and_diffs_clean_and_diff_sees_a_missing_link(tmp_path, capsys):
    source = tmp_path / "two-p100.xml"
    source.write_text(TWO_P100)
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(source), "-o", str(draft)]) == 0
    platform = load_platform(draft)
    assert [(l.a, l.b, l.links) for l in platform.nvlinks] == [("gpu0", "gpu1", 2)]
    assert main(["validate", str(draft)]) == 0
    assert main(["diff", str(draft), str(source)]) == 0
    capsys.readouterr()
    source.write_text(TWO_P100.replace("40000 1000000 40000", "20000 1000000 40000").replace("1000000 40000 40000", "1000000 20000 40000"))
    assert main(["diff", str(draft), str(source)]) == 1
    assert "gpu0-gpu1: 2 NVLinks in the spec, but 1 in the machine" in capsys.readouterr().out


def test_the_real_power8_file_drafts_its_gpu_pairs_and_cpu_links_generates_them_and_diffs_clean(tmp_path, capsys):
    source = REAL / "hwloc-power8-4xp100.lstopo.xml"
    if not source.exists():
        pytest.skip("../shared/data/real-machines is absent")
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(source), "-o", str(draft)]) == 0
    assert "I102" not in capsys.readouterr().err
    platform = load_platform(draft)
    assert [g.part for g in platform.gpus] == ["p100-sxm2-16gb"] * 4
    assert [(l.a, l.b, l.links) for l in platform.nvlinks] == [("gpu0", "gpu1", 2), ("gpu2", "gpu3", 2)]
    assert [(l.gpu, l.socket, l.links, l.bandwidth) for l in platform.cpu_nvlinks] == [
        ("gpu0", "cpu0", 2, 40e9), ("gpu1", "cpu0", 2, 40e9), ("gpu2", "cpu1", 2, 40e9), ("gpu3", "cpu1", 2, 40e9)]
    assert main(["validate", str(draft)]) == 0
    assert "error[" not in capsys.readouterr().out
    assert main(["diff", str(draft), str(source)]) == 0
    assert main(["generate", str(draft), "-o", str(tmp_path / "gen"), "--no-svg"]) == 0
    written = tmp_path / "gen" / "draft" / "nccl-topo.xml"
    assert written.read_text().count('<nvlink target="fffffff:ff:ff.0" count="2" tclass="0x068001"/>') == 4
    assert main(["diff", str(draft), str(written)]) == 0


def test_links_counted_at_a_figure_other_than_hwlocs_for_the_parts_nvlink_version_are_noted_in_the_draft(tmp_path, capsys):
    source = tmp_path / "two-v100.xml"  # V100s (NVLink 2: 25,000 MB/s a link) whose 40,000 MB/s only NVLink 1 divides
    source.write_text(hwloc(gpu(1, V100) + gpu(2, V100), "OSDev:21 OSDev:22", "1000000 40000", "40000 1000000"))
    draft = tmp_path / "draft.yaml"
    assert main(["import", str(source), "-o", str(draft)]) == 0
    note = ("the input's NVLinks were counted at 20000 MB/s each, but hwloc counts the links of v100-sxm2-16gb (nvlink2) "
            "at 25000 MB/s: check the NVLink counts")
    assert [f"gpu{n}: {note}" in draft.read_text() for n in (0, 1)] == [True, True]


def test_a_dgx2_shaped_matrix_keeps_each_gpus_link_to_each_nvswitch(tmp_path, capsys):
    """hwloc's DGX-2 dump gives every V100-SXM3 one 25,000 MB/s link to each of six NVSwitches and
    none between GPUs; here two GPUs and three switches of that shape."""
    v100_sxm3 = "0302 [10de:1db8] [10de:131d] a1"
    switches = "".join(f'<object type="PCIDev" gp_index="3{s}" subtype="NVSwitch" pci_busid="0000:6{s}:00.0" '
                       f'pci_type="0680 [10de:1ac2] [0000:0000] a1"/>' for s in (1, 2, 3))
    rows = ["1000000 0 25000 25000 25000",
            "0 1000000 25000 25000 25000",
            "25000 25000 1000000 0 0",
            "25000 25000 0 1000000 0",
            "25000 25000 0 0 1000000"]
    source, draft = tmp_path / "dgx2.xml", tmp_path / "draft.yaml"
    source.write_text(hwloc(gpu(1, v100_sxm3) + gpu(2, v100_sxm3) + switches,
                            "OSDev:21 OSDev:22 PCIDev:31 PCIDev:32 PCIDev:33", *rows))
    machine = read(source.read_text())
    assert machine.problems == []
    assert machine.nvswitch_links() == {g: {f"0000:6{s}:00.0": 1 for s in (1, 2, 3)} for g in ("0000:01:00.0", "0000:02:00.0")}
    assert main(["import", str(source), "-o", str(draft)]) == 0
    platform = load_platform(draft)
    assert [(s.bus, s.links_per_gpu) for s in platform.baseboard.nvswitches] == [(f"0000:6{s}:00.0", 1) for s in (1, 2, 3)]
    assert main(["diff", str(draft), str(source)]) == 0


DGX2 = Path(__file__).parent / "data" / "live" / "hwloc-nvidia-dgx2.lstopo.xml"
"""hwloc's own lstopo of a DGX-2H (an excerpt of its tests/hwloc/xml/nvidiaDGX2.xml): 16 GPUs, 12
NVSwitches, the matrix over three <indexes> and 79 <u64values>, ten to an element."""
BOARD = {0: ["0000:61:00.0", "0000:62:00.0", "0000:63:00.0", "0000:65:00.0", "0000:66:00.0", "0000:67:00.0"],
         1: ["0000:c1:00.0", "0000:c2:00.0", "0000:c3:00.0", "0000:c5:00.0", "0000:c6:00.0", "0000:c7:00.0"]}


def test_hwlocs_dgx2_matrix_over_several_indexes_gives_each_gpu_one_link_to_each_switch_of_its_board():
    machine = read(DGX2.read_text())
    assert machine.problems == []
    per_gpu = machine.nvswitch_links()
    assert len(per_gpu) == 16 and len(machine.nvswitches) == 12
    for index, gpu in enumerate(machine.gpus_in_order()):
        assert per_gpu[gpu.key] == {bus: 1 for bus in BOARD[index // 8]}
    assert {link.per_link for link in machine.nvlinks} == {25e9}


def test_the_dgx2_drafts_its_v100_sxm3s_and_each_boards_switches_generates_them_and_diffs_clean(tmp_path, capsys):
    draft = tmp_path / "dgx2.yaml"
    assert main(["import", str(DGX2), "-o", str(draft)]) == 0
    assert "NVSwitch" not in capsys.readouterr().err  # no switch left out, no note about them
    platform = load_platform(draft)
    assert {(g.part, g.sm) for g in platform.gpus} == {("v100-sxm3-32gb", 70)}
    assert [(s.bus, s.links_per_gpu, s.gpus) for s in platform.baseboard.nvswitches] == [
        (bus, 1, tuple(f"gpu{g}" for g in range(8 * board, 8 * board + 8))) for board in (0, 1) for bus in BOARD[board]]
    assert main(["diff", str(draft), str(DGX2)]) == 0
    assert main(["generate", str(draft), "-o", str(tmp_path / "gen"), "--no-svg"]) == 0
    written = (tmp_path / "gen" / "dgx2" / "nccl-topo.xml").read_text()
    assert written.count('<gpu dev="0" sm="70" rank="0">') == 1
    assert written.count('<nvlink target="0000:61:00.0" count="1" tclass="0x068000"/>') == 8
    assert written.count('<nvlink target="0000:c1:00.0" count="1" tclass="0x068000"/>') == 8
    assert main(["diff", str(draft), str(tmp_path / "gen" / "dgx2" / "nccl-topo.xml")]) == 0


def test_a_matrix_of_gpus_alone_is_read_from_hwlocs_homogeneous_distances2():
    """hwloc writes a matrix whose objects are all of one type (GPUs alone: no switch, no CPU end) as
    <distances2 type="OSDev" indexing="gp">, its indexes bare gp_indexes (topology-xml.c,
    hwloc___xml_v2export_distances)."""
    text = TWO_P100.replace('<distances2hetero nbobjs="3" kind="25" name="NVLinkBandwidth">',
                            '<distances2 type="OSDev" nbobjs="2" kind="25" name="NVLinkBandwidth" indexing="gp">')
    text = text.replace("</distances2hetero>", "</distances2>").replace("OSDev:21 OSDev:22 Package:2", "21 22")
    text = text.replace('1000000 40000 40000 </u64values>\n    <u64values length="20">40000 1000000 40000 </u64values>\n'
                        '    <u64values length="20">40000 40000 1000000 ', '1000000 40000 40000 1000000 ')
    machine = read(text)
    assert machine.problems == []
    assert [(l.gpu, l.target, l.count) for l in machine.nvlinks] == [("0000:01:00.0", "0000:02:00.0", 2),
                                                                     ("0000:02:00.0", "0000:01:00.0", 2)]


def test_a_homogeneous_matrix_not_indexed_by_gp_index_is_not_read_and_says_why():
    text = TWO_P100.replace('<distances2hetero nbobjs="3" kind="25" name="NVLinkBandwidth">',
                            '<distances2 type="OSDev" nbobjs="3" kind="25" name="NVLinkBandwidth" indexing="os">')
    machine = read(text.replace("</distances2hetero>", "</distances2>"))
    assert [d.format() for d in machine.problems] == [
        'l.xml:13:3: warning[I103 input-value]: the NVLinkBandwidth matrix has type="OSDev" indexing="os", not a type indexed '
        "by gp_index (hwloc's form of a matrix of GPUs alone): its NVLinks are not read"]
    assert machine.nvlinks == []
