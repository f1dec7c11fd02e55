#!/usr/bin/env python3
"""What hostile inputs cost the readers of `diff` and `import` (issue 45): time and memory
linear in the input, and a refusal before reading what will be refused.

    .venv/bin/python benchmarks/hostile_inputs.py                  # all three cases
    .venv/bin/python benchmarks/hostile_inputs.py --case nvml      # one of nvml, lstopo, functions

- nvml: the NVSwitch board's capture with an `nvml.json` of 4 MiB holding 64 GPU entries, their
  bus ids written with a JSON escape (`"\\u0030000:03:00.0"`), beside the same bytes written
  plainly; `hwspec diff SPEC --sysfs-root TREE`.
- lstopo: an lstopo XML of 32 MB whose NVLinkBandwidth matrix has 4,000 indexes and 16,000,000
  values (`hwspec import FILE -o DRAFT`), beside the floor of a Python process reading the
  file's bytes; `peak_over_input` is the peak above that floor over the input's size.
- functions: a captured tree of 40,000 PCI functions (the tests' good tree plus NIC functions,
  as benchmarks/capture_limit.py writes them), more than a capture holds: `hwspec capture`,
  `hwspec diff SPEC --sysfs-root TREE` and `hwspec import --sysfs-root TREE -o DRAFT`, each
  refused.

Each command runs as a process (PYTHONPATH=src), started by a small launcher (`LAUNCHER`);
printed: its exit status, wall seconds, CPU seconds (user + system, wait4's rusage) and peak
resident memory (MiB). One run each: the
hostile cases take seconds where a fault is left, which is what the numbers are to show.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from capture_limit import synthetic_tree  # noqa: E402

BOARD, BOARD_SPEC = ROOT / "tests/data/sysfs/nvswitch-board", ROOT / "tests/data/sysfs/nvswitch-board-node.yaml"
GOOD_SPEC = ROOT / "tests/data/sysfs/good-node.yaml"
NVML_BYTES, NVML_GPUS = 4 * 1024 * 1024, 64
MATRIX_INDEXES = 4000
FUNCTIONS = 40_000


LAUNCHER = """
import json, os, sys, time
null = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
start = time.perf_counter()
pid = os.posix_spawn(sys.executable, [sys.executable, *sys.argv[1:]], os.environ, file_actions=null)
_, status, usage = os.wait4(pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), time.perf_counter() - start, usage.ru_utime + usage.ru_stime,
                  usage.ru_maxrss]))
"""
"""Runs a command and prints its exit status, wall and CPU seconds and peak RSS (KiB): a small
process of its own, because a child's peak counts the memory of the process it was forked from
(this one holds the inputs it wrote)."""


def measured(argv: list[str], python: list[str] | None = None) -> dict[str, float | int]:
    """Exit status, wall and CPU seconds and peak RSS (MiB) of one run of `hwspec ARGV...` (or,
    with `python`, of `python PYTHON...`)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYDANTIC_DISABLE_PLUGINS": "__all__"}
    result = subprocess.run([sys.executable, "-c", LAUNCHER, *(python or ["-m", "hwspec", *argv])], cwd=ROOT, env=env,
                            capture_output=True, text=True, check=True)
    status, wall, cpu, peak = json.loads(result.stdout)
    return {"exit": status, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_mib": round(peak / 1024, 1)}


def nvml_tree(where: Path, escaped: bool) -> Path:
    """The board's capture with a padded `nvml.json` of NVML_GPUS entries (see the docstring)."""
    tree = where / ("escaped" if escaped else "plain")
    shutil.copytree(BOARD, tree, symlinks=True)
    gpus = json.loads((BOARD / "nvml.json").read_text())["gpus"]
    entries = []
    for index in range(NVML_GPUS):
        entry = dict(gpus[index % len(gpus)])
        if index >= len(gpus):
            entry["bus"] = f"0000:{0x40 + index:02x}:00.0"
        text = json.dumps(entry, sort_keys=True)
        entries.append(text.replace('"bus": "0000', '"bus": "\\u0030000', 1) if escaped else text)
    padding = "\n" * ((NVML_BYTES - sum(map(len, entries))) // NVML_GPUS)
    (tree / "nvml.json").write_text('{"nvml": 1, "gpus": [\n' + (",\n" + padding).join(entries) + "\n]}\n")
    return tree


def nvml_case(where: Path) -> None:
    for escaped in (False, True):
        tree = nvml_tree(where, escaped)
        size = (tree / "nvml.json").stat().st_size
        print(json.dumps({"case": "nvml.json, bus ids " + ("escaped" if escaped else "plain"), "bytes": size,
                          **measured(["diff", str(BOARD_SPEC), "--sysfs-root", str(tree)])}))


def lstopo_file(where: Path) -> Path:
    """An lstopo XML of one GPU whose NVLinkBandwidth matrix has MATRIX_INDEXES indexes."""
    n = MATRIX_INDEXES
    row = f'    <u64values length="{2 * n}">' + " ".join(["0"] * n) + " </u64values>"
    rows = "\n".join([row] * n)
    text = f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x000000ff" nodeset="0x00000001" gp_index="1">
    <object type="Package" os_index="0" cpuset="0x000000ff" nodeset="0x00000001" gp_index="2">
      <object type="NUMANode" os_index="0" cpuset="0x000000ff" nodeset="0x00000001" gp_index="3" local_memory="1073741824"/>
      <object type="Bridge" gp_index="4" bridge_type="0-1" depth="0" bridge_pci="0000:[00-09]">
        <object type="PCIDev" gp_index="11" pci_busid="0000:01:00.0" pci_type="0302 [10de:1db1] [10de:1212] a1" pci_link_speed="15.753846">
          <object type="OSDev" gp_index="21" name="nvml1" subtype="NVML" osdev_type="1"/>
        </object>
      </object>
    </object>
  </object>
  <distances2hetero nbobjs="{n}" kind="25" name="NVLinkBandwidth">
    <indexes length="{8 * n}">{" ".join(["OSDev:21"] * n)} </indexes>
{rows}
  </distances2hetero>
</topology>
"""
    path = where / "matrix.lstopo.xml"
    path.write_text(text)
    return path


def lstopo_case(where: Path) -> None:
    path = lstopo_file(where)
    size = path.stat().st_size
    floor = measured([], ["-c", "import sys; open(sys.argv[1], 'rb').read()", str(path)])  # the bytes, read
    run = measured(["import", str(path), "-o", str(where / "draft.yaml")])
    print(json.dumps({"case": f"lstopo NVLink matrix of {MATRIX_INDEXES} indexes", "bytes": size, **run,
                      "peak_over_input": round((run["peak_mib"] - floor["peak_mib"]) * 1024 * 1024 / size, 1),
                      "floor_peak_mib": floor["peak_mib"]}))


def functions_case(where: Path) -> None:
    started = time.perf_counter()
    tree = synthetic_tree(where, FUNCTIONS)
    print(json.dumps({"case": f"writing a tree of {FUNCTIONS} functions", "wall_s": round(time.perf_counter() - started, 1)}))
    for name, argv in (("capture", ["capture", "--sysfs-root", str(tree), str(where / "cap")]),
                       ("diff", ["diff", str(GOOD_SPEC), "--sysfs-root", str(tree)]),
                       ("import", ["import", "--sysfs-root", str(tree), "-o", str(where / "draft.yaml")])):
        print(json.dumps({"case": f"{name} of {FUNCTIONS} functions", **measured(argv)}))


CASES = {"nvml": nvml_case, "lstopo": lstopo_case, "functions": functions_case}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    args = parser.parse_args()
    for case in args.case or list(CASES):
        with tempfile.TemporaryDirectory() as scratch:
            CASES[case](Path(scratch))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
