#!/usr/bin/env python3
"""How soon `hwspec capture` refuses a tree past its file limit, and what the normal reads cost.

    .venv/bin/python benchmarks/capture_limit.py                 # 9,000 full functions (~54k files)
    .venv/bin/python benchmarks/capture_limit.py --functions N   # N functions instead
    .venv/bin/python benchmarks/capture_limit.py --profile       # cProfile of the refused capture

Writes a synthetic captured tree (the tests' good tree plus N PCI functions, each a link in
sys/bus/pci/devices and a directory of the attributes the reader reads of a NIC: class, vendor,
device, numa_node, current_link_speed and current_link_width), then times, in process:
`capture(TREE, OUT)` on it (refused: more than MAX_CAPTURE_FILES files), the read a capture of
the good tree makes (`read_live(GOOD, record=True)`, the normal path; writing the copy is left
out, its time is the disk's), and `read_sysfs` of this machine's `/` and of every tree in
tests/data/sysfs. Each time is the best of several repetitions after a warm-up (files in the
page cache). Target (issue 36): the refusal in well under a second.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hwspec.live.capture import MAX_CAPTURE_FILES, capture, read_live  # noqa: E402
from hwspec.live.sysfs import read_sysfs  # noqa: E402

GOOD, TREES = ROOT / "tests/data/sysfs/good", ROOT / "tests/data/sysfs"
ATTRIBUTES = {"class": "0x020000", "vendor": "0x15b3", "device": "0x101b", "numa_node": "0",
              "current_link_speed": "16.0 GT/s PCIe", "current_link_width": "16"}
TARGET_S = 0.5


def synthetic_tree(where: Path, functions: int) -> Path:
    """The good tree plus `functions` NIC functions under a host bridge of their own."""
    tree = where / "tree"
    shutil.copytree(GOOD, tree, symlinks=True)
    devices, host = tree / "sys/bus/pci/devices", tree / "sys/devices/pci0001:00"
    for index in range(functions):
        name = f"0001:{index // 2048:02x}:{index // 8 % 256:02x}.{index % 8}"  # 2,048 functions a bus
        directory = host / name
        directory.mkdir(parents=True)
        for attribute, text in ATTRIBUTES.items():
            (directory / attribute).write_text(text + "\n")
        (devices / name).symlink_to(f"../../../devices/pci0001:00/{name}")
    return tree


def best(function, repeat: int) -> float:
    function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--functions", type=int, default=9000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch)
        tree = synthetic_tree(where, args.functions)
        out = where / "cap"

        def refused() -> None:
            read = capture(tree, out)
            errors = [d for d in read.machine.problems if d.severity.label == "error"]
            assert errors and not out.exists(), "the synthetic tree was not refused"
            refused.message = f"{errors[0].file.removeprefix(scratch)}: {errors[0].message}"  # type: ignore[attr-defined]

        def normal() -> None:
            read = read_live(GOOD, record=True)
            assert not [d for d in read.machine.problems if d.severity.label == "error"]

        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(refused)
            pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
            return 0
        refusal = best(refused, args.repeat)
        print(f"synthetic tree: {args.functions} functions, limit {MAX_CAPTURE_FILES} files")
        print(f"  refused in {refusal * 1000:8.1f} ms  ({refused.message})")  # type: ignore[attr-defined]
        print(f"  target under {TARGET_S * 1000:.0f} ms: {'ok' if refusal < TARGET_S else 'MISSED'}")
        print(f"capture's read of tests/data/sysfs/good: {best(normal, args.repeat * 10) * 1000:8.2f} ms")
        print(f"read_sysfs of /:                         {best(lambda: read_sysfs(Path('/')), args.repeat * 10) * 1000:8.2f} ms")
        trees = sorted(p for p in TREES.iterdir() if (p / "sys").is_dir())
        total = best(lambda: [read_sysfs(p) for p in trees], args.repeat * 2)
        print(f"read_sysfs of {len(trees)} trees in tests/data/sysfs: {total * 1000:8.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
