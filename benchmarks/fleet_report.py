#!/usr/bin/env python3
"""Time `hwspec fleet-report` over synthetic node reports against a floor, and print both.

    .venv/bin/python benchmarks/fleet_report.py                 # 1,000 and 5,000 nodes
    .venv/bin/python benchmarks/fleet_report.py --nodes 20000   # one size

Each size writes one node report per node into a temporary directory, as `srun ... hwspec diff
SPEC --live --format json` leaves them (indented JSON, one file per node): 2% of the nodes
drifted (a GPU link at x8 on one of eight GPUs, a third of them also a NIC at the wrong
speed), 0.5% unchecked, the rest clean. The CLI runs as a process (`hwspec fleet-report DIR
--format json`, its report written to a file) beside a floor process that does the
unavoidable part of the job: start Python, list the directory, read every file and
`json.loads` it. Each time is the best of `--repeat` runs, CLI and floor alternating, after a
warm-up of each (which writes Python's bytecode cache); peak memory is each process's own
maximum resident set size (wait4's rusage). Prints one JSON object per size.
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
FLOOR = r"""
import json, os, sys
directory = sys.argv[1]
for name in sorted(os.listdir(directory)):
    if name.endswith(".json"):
        with open(os.path.join(directory, name), "rb") as stream:
            json.loads(stream.read())
"""
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def finding(code: str, device: str, message: str, line: int) -> dict:
    return {"code": code, "severity": "error", "device": device, "message": message,
            "file": "platforms/zionex.yaml", "line": line, "col": 11, "hint": None}


def node_report(number: int) -> dict:
    """The report of node `number`: drifted one time in 50, unchecked one in 200."""
    status, findings = "clean", []
    if number % 50 == 7:
        gpu = number % 8
        status = "drift"
        findings.append(finding("D105", f"gpu{gpu}", f"gpu{gpu}: PCIe link is Gen4 x16 in the spec, but Gen4 x8 in the "
                                f"machine (narrower) (seen at /sys/bus/pci/devices/0000:{0x19 + gpu:02x}:00.0)", 40 + 6 * gpu))
        if number % 3 == 0:
            findings.append(finding("D110", "nic1", "nic1: speed is 200 Gb/s in the spec, but 100 Gb/s in the machine", 95))
    elif number % 200 == 11:
        status = "unchecked"
        findings.append(finding("I100", "", "cannot read /sys/bus/pci/devices: permission denied", 0) | {"device": None})
    return {"hwspec_report": 1, "node": f"gpu{number:05d}", "spec": "platforms/zionex.yaml", "platform": "zionex",
            "status": status, "exit_code": {"clean": 0, "drift": 1, "unchecked": 2}[status], "findings": findings}


def write_reports(directory: Path, nodes: int) -> int:
    """One report file per node in `directory`; their total size in bytes."""
    size = 0
    for number in range(1, nodes + 1):
        text = json.dumps(node_report(number), indent=2) + "\n"
        (directory / f"gpu{number:05d}.json").write_text(text)
        size += len(text)
    return size


def hwspec_command() -> list[str]:
    """The `hwspec` console script beside this Python, else `python -m hwspec`."""
    script = Path(sys.executable).with_name("hwspec")
    return [str(script)] if script.exists() else [sys.executable, "-m", "hwspec"]


def run(argv: list[str], output: Path, allowed: tuple[int, ...]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one process, its stdout written to `output`."""
    with open(output, "wb") as stdout:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=stdout, stderr=subprocess.PIPE, env=ENV)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    err = proc.stderr.read() if proc.stderr else b""
    code = os.waitstatus_to_exitcode(status)
    if code not in allowed:
        raise SystemExit(f"{' '.join(argv)} exited {code}:\n{err.decode()}")
    return elapsed, usage.ru_maxrss / 1024


def measure(nodes: int, repeat: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        reports = Path(tmp) / "reports"
        reports.mkdir()
        size = write_reports(reports, nodes)
        out = Path(tmp) / "fleet.json"
        cli = [*hwspec_command(), "fleet-report", str(reports), "--format", "json"]
        floor = [sys.executable, "-c", FLOOR, str(reports)]
        run(cli, out, (0, 1)), run(floor, Path(os.devnull), (0,))  # warm-up: bytecode caches, directory in the page cache
        cli_runs, floor_runs = [], []
        for _ in range(repeat):
            cli_runs.append(run(cli, out, (0, 1)))
            floor_runs.append(run(floor, Path(os.devnull), (0,)))
        summary = json.loads(out.read_text())
        shutil.rmtree(reports)
    assert summary["nodes"]["total"] == nodes, summary["nodes"]
    cli_s, floor_s = min(t for t, _ in cli_runs), min(t for t, _ in floor_runs)
    return {"nodes": nodes, "report_bytes": size, "cli_s": round(cli_s, 3), "floor_s": round(floor_s, 3),
            "ratio": round(cli_s / floor_s, 2), "cli_peak_mib": round(max(m for _, m in cli_runs), 1),
            "floor_peak_mib": round(max(m for _, m in floor_runs), 1),
            "drift": summary["nodes"]["drift"], "unchecked": summary["nodes"]["unchecked"],
            "finding_groups": len(summary["findings"])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, action="append", help="node count (repeatable; default 1000 and 5000)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each process (default 5)")
    args = parser.parse_args()
    for nodes in args.nodes or [1000, 5000]:
        print(json.dumps(measure(nodes, args.repeat)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
