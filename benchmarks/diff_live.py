#!/usr/bin/env python3
"""What `hwspec diff SPEC --live` costs on a node, run every few minutes by a health checker.

    .venv/bin/python benchmarks/diff_live.py                  # the synthetic GPU node capture, then NVML
    .venv/bin/python benchmarks/diff_live.py --live SPEC      # this machine, against SPEC

Runs `hwspec diff SPEC --sysfs-root TREE` (or `--live`) as a process, and beside it the floor:
start Python and load the same spec with PyYAML's C loader. Then the NVML path: an 8-GPU
NVSwitch board's tree read as `--live` reads `/`, with NVML asked live through the real
nvidia-ml-py binding over the tests' stand-in C library (tests/nvml_library.py), beside a floor
that also imports the binding, initialises NVML and shuts it down (on a real node NVML's own
initialisation is 150-180 ms of the floor; the stand-in's is next to nothing, so the ratio here
is the harder one). Each time is the best of several
repetitions after a warm-up (bytecode cached, as an installed tool has it); peak memory is the
process's maximum resident set size (wait4's rusage). Then `python -X importtime` of the same
command lists the hwspec modules the live path imports and checks the heavy ones are not.

Targets (issues 24 and 33): under 1 s, within 2x the floor and under 100 MiB; jinja2, networkx and
hwspec.perf not imported.
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
BOARD_SPEC, BOARD = ROOT / "tests/data/sysfs/nvswitch-board-node.yaml", ROOT / "tests/data/sysfs/nvswitch-board"
WALL_TARGET_S, PEAK_TARGET_MIB, FLOOR_RATIO = 1.0, 100.0, 2.0
HEAVY = ("jinja2", "networkx", "hwspec.perf", "hwspec.generate.engine", "matplotlib")
FLOOR = "import sys, yaml; yaml.load(open(sys.argv[1], 'rb').read(), Loader=yaml.CSafeLoader)"
STAND_IN = ("import sys; from pathlib import Path; import pynvml; from tests.nvml_library import FakeNvmlLibrary, answers_of, installed; "
            "installed(pynvml, FakeNvmlLibrary(answers_of(Path(sys.argv[2])))).__enter__(); ")
NVML_FLOOR = STAND_IN + ("import yaml; yaml.load(open(sys.argv[1], 'rb').read(), Loader=yaml.CSafeLoader); "
                         "pynvml.nvmlInit(); pynvml.nvmlShutdown()")
NVML_DIFF = STAND_IN + ("from hwspec.live import capture; capture.is_live_root = lambda root: True; "
                        "from hwspec.cli.commands import run_command; "
                        "sys.argv = ['hwspec', 'diff', sys.argv[1], '--sysfs-root', sys.argv[2]]; run_command()")


def timed(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, exit status) of one run of `argv`."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment())
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "PYDANTIC_DISABLE_PLUGINS": "__all__"}


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
    ok = wall < WALL_TARGET_S and wall / floor_wall <= FLOOR_RATIO and peak < PEAK_TARGET_MIB and not heavy and status in (0, 1)
    if not args.live:
        ok = nvml_path(args.repeat) and ok
    print("within targets" if ok else "OUTSIDE TARGETS")
    return 0 if ok else 1


def nvml_path(repeat: int) -> bool:
    """The NVML path (module docstring): prints its figures, True when within the targets."""
    try:
        import pynvml  # noqa: F401  (only to say it is there)
    except ImportError:
        print("NVML path: nvidia-ml-py is not installed (pip install -e '.[test]'): not measured")
        return True
    wall, peak, status = best([sys.executable, "-c", NVML_DIFF, str(BOARD_SPEC), str(BOARD)], repeat)
    floor_wall, floor_peak, _ = best([sys.executable, "-c", NVML_FLOOR, str(BOARD_SPEC), str(BOARD)], repeat)
    print(f"hwspec diff {BOARD_SPEC.name} --live (sysfs: {BOARD.name}, NVML: the real binding over the stand-in library): exit {status}")
    print(f"  wall  {wall * 1000:7.0f} ms   (floor with NVML's init {floor_wall * 1000:5.0f} ms, x{wall / floor_wall:.1f})   "
          f"target <= x{FLOOR_RATIO:.0f}")
    print(f"  peak  {peak:7.1f} MiB  (floor {floor_peak:5.1f} MiB)             target < {PEAK_TARGET_MIB:.0f} MiB")
    return wall / floor_wall <= FLOOR_RATIO and wall < WALL_TARGET_S and peak < PEAK_TARGET_MIB and status == 0


if __name__ == "__main__":
    sys.exit(main())
