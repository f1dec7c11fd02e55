"""Expansions and old outputs bounded by their size (issue 36, class 6): a CPU list, cpumap or
hwloc bitmap is counted before it is expanded (4.8 KB expanded to over 2 GB), and `generate`
and `generate --check` compare an old file by its size, then a chunk at a time, never reading
a file hwspec did not write whole (a 2 GiB file made them peak at 2.1 and 10.3 GB)."""

from __future__ import annotations

import contextlib
import io
import shutil
import tracemalloc
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.live.lstopo import parse_bitmap
from hwspec.live.nccl import parse_cpumap
from hwspec.live.observed import MAX_CPUS
from hwspec.live.topo_matrix import parse_cpu_list

ROOT = Path(__file__).resolve().parent.parent
ZIONEX = ROOT / "platforms" / "zionex.yaml"
BIG = 64 * 2**20
"""A sparse old file: large enough that reading it whole shows in the peak, small enough to run."""


def peak_of(call) -> tuple[object, int]:
    """What `call()` returns and the peak of Python allocations while it ran, in bytes."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(("parse", "bomb"), [
    (parse_cpu_list, ",".join(["0-65535"] * 600)),
    (parse_cpumap, ",".join(["ffffffff"] * (MAX_CPUS // 32 + 1))),
    (parse_bitmap, ",".join(["0xffffffff"] * (MAX_CPUS // 32 + 1))),
], ids=["cpu-list", "cpumap", "hwloc-bitmap"])
def test_a_cpu_set_past_the_bound_is_refused_before_it_is_expanded(parse, bomb):
    result, peak = peak_of(lambda: parse(bomb))
    assert result is None
    assert peak < 2 * 2**20


def test_a_cpu_set_at_the_bound_is_read():
    assert parse_cpu_list(f"0-{MAX_CPUS - 1}") == tuple(range(MAX_CPUS))
    assert parse_cpu_list(f"0-{MAX_CPUS}") is None


def test_a_cpu_list_bomb_in_a_sysfs_tree_is_a_warning_not_gigabytes(tmp_path, capsys):
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "tests/data/sysfs/good", tree, symlinks=True)
    cpulist = tree / "sys/devices/system/node/node0/cpulist"
    cpulist.write_text(",".join(["0-65535"] * 600) + "\n")
    _, peak = peak_of(lambda: main(["diff", str(ROOT / "tests/data/sysfs/good-node.yaml"), "--sysfs-root", str(tree)]))
    out = capsys.readouterr()
    assert f"{cpulist}:1:1: warning[I103 input-value]: \"0-65535,0-65535,0-65535,0-65535,0-65535,\" is not a CPU list" in out.out + out.err
    assert peak < 64 * 2**20


def _generated(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["generate", "--no-svg", "-o", str(out), str(ZIONEX)]) == 0
    return out


def _grow(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.truncate(BIG)  # sparse: nothing is written


def test_generate_replaces_a_huge_old_file_without_reading_it_whole(tmp_path):
    out = _generated(tmp_path)
    conf = out / "zionex" / "nccl.conf"
    expected = conf.read_bytes()
    _grow(conf)
    status, peak = peak_of(lambda: main(["generate", "--no-svg", "-o", str(out), str(ZIONEX)]))
    assert status == 0
    assert conf.read_bytes() == expected
    assert peak < BIG // 4


def test_generate_check_reports_a_huge_old_file_without_reading_it_whole(tmp_path, capsys):
    out = _generated(tmp_path)
    conf = out / "zionex" / "nccl.conf"
    size = len(conf.read_bytes())
    _grow(conf)
    status, peak = peak_of(lambda: main(["generate", "--check", "--no-svg", "-o", str(out), str(ZIONEX)]))
    assert status == 1
    assert f"stale: {conf}\n{BIG} bytes, {size} generated: too large to show a diff" in capsys.readouterr().out
    assert peak < BIG // 4
