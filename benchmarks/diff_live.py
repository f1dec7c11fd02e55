#!/usr/bin/env python3
"""What `hwspec diff SPEC --live` costs on a node, run every few minutes by a health checker.

    .venv/bin/python benchmarks/diff_live.py                  # the synthetic GPU node capture
    .venv/bin/python benchmarks/diff_live.py --live SPEC      # this machine, against SPEC

Runs `hwspec diff SPEC --sysfs-root TREE` (or `--live`) as a process, and beside it the floor:
start Python and load the same spec with PyYAML's C loader. Each time is the best of several
repetitions after a warm-up (bytecode cached, as an installed tool has it); peak memory is the
process's maximum resident set size (wait4's rusage). Then `python -X importtime` of the same
command lists the hwspec modules the live path imports and checks the heavy ones are not.

Targets (issue 24): under 1 s and under 100 MiB; jinja2, networkx and hwspec.perf not imported.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC, TREE = ROOT / "tests/data/sysfs/good-node.yaml", ROOT / "tests/data/sysfs/good"
WALL_TARGET_S, PEAK_TARGET_MIB = 1.0, 100.0
HEAVY = ("jinja2", "networkx", "hwspec.perf", "hwspec.generate.engine", "matplotlib")
FLOOR = "import sys, yaml; yaml.load(open(sys.argv[1], 'rb').read(), Loader=yaml.CSafeLoader)"


def timed(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, exit status) of one run of `argv`."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment())
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYDANTIC_DISABLE_PLUGINS": "__all__"}


def best(argv: list[str], repeat: int) -> tuple[float, float, int]:
    timed(argv)  # warm-up: bytecode written, files in the page cache
    runs = [timed(argv) for _ in range(repeat)]
    return min(r[0] for r in runs), max(r[1] for r in runs), runs[-1][2]


def imported_modules(argv: list[str]) -> list[str]:
    """The modules `python -X importtime` shows the command importing."""
    result = subprocess.run([sys.executable, "-X", "importtime", *argv[1:]], cwd=ROOT, capture_output=True, text=True,
                            env=environment())
    return [line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")
            and "|" in line and not line.rstrip().endswith("package")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", metavar="SPEC", type=Path, help="diff this machine (--live) against SPEC")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    spec = args.live or SPEC
    source = ["--live"] if args.live else ["--sysfs-root", str(TREE)]
    command = [sys.executable, "-m", "hwspec", "diff", str(spec), *source]
    wall, peak, status = best(command, args.repeat)
    floor_wall, floor_peak, _ = best([sys.executable, "-c", FLOOR, str(spec)], args.repeat)
    modules = imported_modules(command)
    heavy = sorted({m for m in modules for h in HEAVY if m == h or m.startswith(h + ".")})
    ours = sorted(m for m in modules if m.startswith("hwspec"))
    print(f"hwspec diff {spec.name} {' '.join(source)}: exit {status}")
    print(f"  wall  {wall * 1000:7.0f} ms   (floor {floor_wall * 1000:5.0f} ms, x{wall / floor_wall:.1f})   target < {WALL_TARGET_S * 1000:.0f} ms")
    print(f"  peak  {peak:7.1f} MiB  (floor {floor_peak:5.1f} MiB)             target < {PEAK_TARGET_MIB:.0f} MiB")
    print(f"  imports {len(modules)} modules, {len(ours)} of hwspec; heavy ones: {', '.join(heavy) or 'none'}")
    print("  hwspec modules: " + " ".join(m.removeprefix("hwspec.") for m in ours))
    ok = wall < WALL_TARGET_S and peak < PEAK_TARGET_MIB and not heavy and status in (0, 1)
    print("within targets" if ok else "OUTSIDE TARGETS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
