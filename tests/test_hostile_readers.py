"""Every reader linear in time and memory in its input, refusing before it reads what it will
refuse (issue 45, classes 10 and 11, and the 40,000-function capture): NVML's saved answers with
escaped bus ids are located in one pass (64 of them in 4 MiB took 45-70 s), hwloc's NVLink matrix
is held in a few bytes a value (32 MB took 1.3 GB), and `diff` and `import` of a captured tree
past a capture's file limit refuse it from its listings, as `capture` does (40,000 functions
took 7 s of CPU). Timings are in benchmarks/hostile_inputs.py; here, CPU-time growth and
Python's allocation peak."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from hwspec.cli.commands import main
from hwspec.live import capture as capture_module
from hwspec.live import lstopo, nvml
from hwspec.live.observed import Machine
from hwspec.live.sysfs import Tree
from tests.cpu_time import grows_linearly
from tests.test_hostile_captures import SPEC, _add_functions, good_copy

ESCAPED_GPU = '{"bus": "\\u0030000:%02x:00.0", "name": "NVIDIA H100", "nvlinks": []}'
"""A GPU entry of nvml.json whose bus id starts with a JSON escape ("\\u0030" is "0")."""


def nvml_text(gpus: int) -> str:
    """nvml.json of `gpus` escaped entries, each followed by blank lines in proportion to `gpus`."""
    padding = "\n" * (64 * gpus)
    return '{"nvml": 1, "gpus": [\n' + (",\n" + padding).join(ESCAPED_GPU % (0x10 + i) for i in range(gpus)) + "\n]}\n"


@pytest.mark.slow  # grows the file to show its reader linear
def test_escaped_bus_ids_of_nvml_answers_are_located_in_time_linear_in_the_file():
    assert grows_linearly(lambda gpus: nvml.parse(nvml_text(gpus).encode(), "nvml.json", Machine()), 16, 64)


def test_an_escaped_bus_id_is_located_at_its_own_line():
    machine = Machine()
    text = nvml_text(2)
    nvml.parse(text.encode(), "nvml.json", machine)
    lines = [d.line for d in machine.problems]
    assert lines == [2, 2 + 1 + 128]  # each entry's own line, however its bus id is written
    assert [json.loads(text.splitlines()[line - 1].rstrip(","))["bus"] for line in lines] == ["0000:10:00.0", "0000:11:00.0"]


def matrix_xml(indexes: int, separator: str) -> str:
    """lstopo XML of one GPU whose NVLinkBandwidth matrix has `indexes` indexes (all naming that
    GPU, so that the matrix is read up to its rows) and indexes**2 zeros, one <u64values> a row."""
    row = separator.join(["0"] * indexes)
    rows = "\n".join(f"<u64values>{row}</u64values>" for _ in range(indexes))
    return f"""<topology version="2.0">
<object type="Machine" os_index="0" cpuset="0x000000ff" nodeset="0x00000001" gp_index="1">
<object type="Package" os_index="0" cpuset="0x000000ff" nodeset="0x00000001" gp_index="2">
<object type="NUMANode" os_index="0" cpuset="0x000000ff" nodeset="0x00000001" gp_index="3" local_memory="1073741824"/>
<object type="Bridge" gp_index="4" bridge_type="0-1" depth="0" bridge_pci="0000:[00-09]">
<object type="PCIDev" gp_index="11" pci_busid="0000:01:00.0" pci_type="0302 [10de:1db1] [10de:1212] a1">
<object type="OSDev" gp_index="21" name="nvml1" subtype="NVML" osdev_type="1"/></object></object></object></object>
<distances2hetero nbobjs="{indexes}" kind="25" name="NVLinkBandwidth"><indexes>{" ".join(["OSDev:21"] * indexes)}</indexes>
{rows}
</distances2hetero>
</topology>
"""


@pytest.mark.slow  # reads a matrix of tens of MB
@pytest.mark.parametrize("separator", [" ", "\n"], ids=["spaces", "line-breaks"])
def test_the_nvlink_matrix_is_read_in_memory_a_few_times_its_size(separator):
    """32 MB of matrix took 1.3 GB (a tuple, a text and an element reference a value)."""
    data = matrix_xml(400, separator).encode()
    machine = Machine()
    tracemalloc.start()
    try:
        lstopo.parse(data, "m.xml", machine)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert machine.problems[0].message == "NVLinkBandwidth index OSDev:21 names 0000:01:00.0 again: its row is ignored"
    assert peak < 6 * len(data), f"{peak / len(data):.1f} times the input"


@pytest.mark.parametrize("command", ["diff", "import"])
def test_diff_and_import_refuse_a_tree_past_a_captures_files_before_reading_its_functions(tmp_path, monkeypatch, capsys, command):
    """A tree `capture` refuses from its listings is refused by `diff` and `import` the same way,
    before any function's class is read (40,000 functions: 7 s of CPU, then the refusal)."""
    tree = good_copy(tmp_path)
    _add_functions(tree, 40)
    monkeypatch.setattr(capture_module, "MAX_CAPTURE_FILES", 124)  # what the good tree alone keeps
    reads: list[str] = []
    read = Tree.read

    def counted(self: Tree, rel: str) -> str | None:
        reads.append(rel)
        return read(self, rel)

    monkeypatch.setattr(Tree, "read", counted)
    args = [SPEC, "--sysfs-root", tree] if command == "diff" else ["--sysfs-root", tree, "-o", tmp_path / "draft.yaml"]
    status = main([command, *map(str, args)])
    captured = capsys.readouterr()
    errors = [line for line in (captured.out + captured.err).splitlines() if "error[" in line]
    assert status == 2
    assert errors == [f"{tree}/sys/bus/pci/devices:1:1: error[I101 input-syntax]: its first 18 PCI functions hold 131 files "
                      "and links to read: more than the 124 files a capture holds"]
    assert not [rel for rel in reads if rel.endswith("/class")]
