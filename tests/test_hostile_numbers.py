"""Readers bound numbers and nesting before they convert (issue 36, class 5): a 5,000-digit
number (`int` of it raises past 4,300 digits) or 100,000-deep JSON (RecursionError) is a located
I101 error in every reader of machine data, never a traceback."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path

import pytest

from hwspec.cli.commands import main

ROOT = Path(__file__).resolve().parent.parent
LIVE = ROOT / "tests" / "data" / "live"
GOOD_TREE = ROOT / "tests" / "data" / "sysfs" / "good"
SPEC = ROOT / "tests" / "data" / "sysfs" / "good-node.yaml"
LONG = "9" * 5000
TOO_LONG = "is a number of 5000 digits, more than the 20 a reader converts"


def run(*args: str) -> tuple[int, list[str]]:
    """hwspec ARGS in this process (a traceback fails the test); its status and error lines."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return status, [line for line in (err.getvalue() + out.getvalue()).splitlines() if ": error[" in line]


def tree(tmp_path: Path) -> Path:
    copy = tmp_path / "tree"
    shutil.copytree(GOOD_TREE, copy, symlinks=True)
    return copy


def test_a_long_memtotal_in_sysfs_meminfo_is_a_located_error(tmp_path):
    root = tree(tmp_path)
    meminfo = root / "sys/devices/system/node/node0/meminfo"
    meminfo.write_text(re.sub(r"MemTotal:\s+\d+", "MemTotal: " + LONG, meminfo.read_text()))
    assert run("diff", str(SPEC), "--sysfs-root", str(root)) == (2, [
        f"{meminfo}:1:1: error[I101 input-syntax]: MemTotal {TOO_LONG}: not a sysfs meminfo"])


def test_a_long_numa_node_of_a_pci_function_is_a_located_error(tmp_path):
    root = tree(tmp_path)
    next(root.glob("sys/devices/pci0000:00/**/0000:03:00.0/numa_node")).write_text(LONG + "\n")
    assert run("diff", str(SPEC), "--sysfs-root", str(root)) == (2, [
        f"{root}/sys/bus/pci/devices/0000:03:00.0/numa_node:1:1: error[I101 input-syntax]: numa_node {TOO_LONG}: not a sysfs attribute"])


@pytest.mark.parametrize(("text", "where", "message"), [
    ('{"nvml": 1, "gpus": [' + "[" * 100_000 + "]" * 100_000 + "]}", "1:84", "arrays and objects nested deeper than 64"),
    ('{"nvml": 1,\n "gpus": [' + LONG + "]}", "2:11", "a number of 5000 characters, more than the 32 a reader converts"),
], ids=["deep", "long-number"])
def test_nvml_answers_past_a_bound_are_a_located_error(tmp_path, text, where, message):
    root = tree(tmp_path)
    (root / "nvml.json").write_text(text)
    assert run("diff", str(SPEC), "--sysfs-root", str(root)) == (2, [
        f"{root}/nvml.json:{where}: error[I101 input-syntax]: not NVML's answers as 'hwspec capture' saves them: {message}"])


def test_a_long_numaid_in_an_nccl_dump_is_a_located_error(tmp_path):
    path = tmp_path / "n.xml"
    path.write_text(re.sub(r'numaid="\d+"', f'numaid="{LONG}"', (LIVE / "zionex.nccl.xml").read_text(), count=1))
    status, errors = run("import", str(path))
    assert status == 2
    assert errors == [f"{path}:2:3: error[I101 input-syntax]: <cpu> numaid {TOO_LONG}: not an NCCL topology dump"]


@pytest.mark.parametrize("key", ["os_index", "local_memory"])
def test_a_long_number_of_an_lstopo_numa_node_is_a_located_error(tmp_path, key):
    text = (LIVE / "zionex.lstopo.xml").read_text()
    numa = text.index('type="NUMANode"')
    number = re.compile(key + r'="\d+"').search(text, numa)
    assert number is not None
    path = tmp_path / "l.xml"
    path.write_text(text[:number.start()] + f'{key}="{LONG}"' + text[number.end():])
    line = text.count("\n", 0, text.rindex("<object", 0, numa)) + 1
    status, errors = run("import", "--input-format", "lstopo", str(path))
    assert status == 2
    assert errors[0].startswith(f"{path}:{line}:")
    assert errors[0].endswith(f": error[I101 input-syntax]: NUMANode {key} {TOO_LONG}: not hwloc XML")


@pytest.mark.parametrize(("old", "new", "message"), [
    ("\t0\t", f"\t{LONG}\t", f"2:1: error[I101 input-syntax]: GPU0: NUMA Affinity {TOO_LONG}: not 'nvidia-smi topo -m' output"),
    ("GPU0", f"GPU{LONG}", f"1:1: error[I101 input-syntax]: a GPU column's index {TOO_LONG}: not 'nvidia-smi topo -m' output"),
], ids=["numa", "gpu-column"])
def test_a_long_number_in_topo_m_is_a_located_error(tmp_path, old, new, message):
    path = tmp_path / "t.txt"
    path.write_text((LIVE / "zionex.topo-m.txt").read_text().replace(old, new, 1))
    status, errors = run("import", "--input-format", "topo-m", str(path))
    assert status == 2
    assert errors[0] == f"{path}:{message}"


def test_a_long_number_in_a_topo_m_cpu_list_is_warned_about_at_its_row(tmp_path, capsys):
    path = tmp_path / "t.txt"
    path.write_text((LIVE / "zionex.topo-m.txt").read_text().replace("\t0-27,112-139\t", f"\t0-{LONG}\t", 1))
    main(["import", "--input-format", "topo-m", "-o", str(tmp_path / "draft.yaml"), str(path)])
    assert f"{path}:2:1: warning[I103 input-value]: GPU0: CPU Affinity '0-{LONG[:38]}' is not a CPU list" in capsys.readouterr().err
