#!/usr/bin/env python3
"""Measure the CPU the test suite costs, workers included, and print it.

    .venv/bin/python benchmarks/suite_time.py --fast-loop   # the fast loop only
    .venv/bin/python benchmarks/suite_time.py               # the fast loop, then the whole suite

Each run is `python -m pytest -q -p no:cacheprovider` as a child process, with the fast loop's
`-m 'not slow and not consumer'` or with nothing more (the README's test command). Its CPU is the
user and system time of the child and of every process it waited for (its pytest-xdist workers,
the hwspec processes and interpreters the tests start), as `/usr/bin/time` reports it: CPU, not
wall-clock time, so that a loaded machine changes it little. Wall-clock seconds are printed beside.

Targets (a guard against the suite growing slow, on the project's 2-core machine): the fast loop
<= 60 s of CPU, the whole suite <= 300 s. What the whole suite runs depends on what is installed
(the consumer tests skip without their packages), so the figure printed says which extras were
present. The exit status is 1 when a target is missed or a run fails, 0 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FAST_LOOP = ["-m", "not slow and not consumer"]
"""The fast loop's selection (docs/contributing.md, docs/ci-recipes.md)."""
TARGETS_CPU_SECONDS = {"fast_loop": 60.0, "whole_suite": 300.0}
"""Run -> the most CPU seconds (user + system, workers included) it may cost."""
CONSUMER_MODULES = ("torch", "torchrec", "mkdocs", "prometheus_client", "check_jsonschema", "sarif")
"""Importable packages whose tests skip without them: what the whole suite's figure covers."""


@dataclass
class Run:
    """One pytest run: its exit status, the CPU seconds it and every process it waited for used,
    its wall-clock seconds and pytest's last line."""

    status: int
    cpu_seconds: float
    wall_seconds: float
    summary: str


def run_pytest(arguments: list[str]) -> Run:
    """`python -m pytest -q ARGUMENTS` in the repository, measured."""
    before = os.times()
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments],
                            cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - started
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    output = result.stdout.strip().splitlines() or result.stderr.strip().splitlines() or [""]
    return Run(result.returncode, round(cpu, 1), round(wall, 1), output[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--fast-loop", action="store_true", help="measure the fast loop only, not the whole suite")
    args = parser.parse_args(argv)
    selections = {"fast_loop": FAST_LOOP} if args.fast_loop else {"fast_loop": FAST_LOOP, "whole_suite": []}
    runs = {}
    for name, arguments in selections.items():
        run = run_pytest(arguments)
        target = TARGETS_CPU_SECONDS[name]
        runs[name] = {**asdict(run), "cpu_target_seconds": target, "met": run.status == 0 and run.cpu_seconds <= target}
        print(f"{name}: {run.cpu_seconds} s of CPU (target <= {target:.0f}), {run.wall_seconds} s wall, "
              f"exit {run.status}: {run.summary}", file=sys.stderr)
    print(json.dumps({
        "python": sys.version.split()[0],
        "cores": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
        "installed": [m for m in CONSUMER_MODULES if importlib.util.find_spec(m) is not None],
        "runs": runs,
    }, indent=2))
    return 0 if all(r["met"] for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
