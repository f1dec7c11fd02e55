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

    .venv/bin/python benchmarks/fleet_report.py --plan 65536 --repeat 1   # an acceptance plan's reports
    .venv/bin/python benchmarks/fleet_report.py --nodes 200 --findings-kib 1024 --repeat 1   # big reports

`--findings-kib K` adds to every report about K KiB of findings whose messages all differ
(drifted GPU links on a node that lists each lane's counters, say), and to every sixteenth
report one finding of a device no other report names: what a fleet of large, different reports
costs in memory against the same fleet of small ones. A report stays below 16 MiB.

`--plan N` writes instead the acceptance reports (`hwspec diff PLATFORM RESULT... --format
json`) of a bring-up plan over N nodes of 8 GPUs in leaves of 32: every node alone, two
pairings within each leaf, two pairings across the spine, and one run per rail over every
node (3N + 8 runs), each run `--sizes` records long, as many runs in a report as 4,096 records
allow (a rail run, whose records list every node, in a report of its own). Node 7 is below
its band in every run it joins, which makes every rail run slow: the CLI must name node 7
alone (A105) and read every report, and the benchmark checks that it does. The floor reads
and `json.loads` every report, as above.
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


def node_report(number: int, findings_kib: int = 0) -> dict:
    """The report of node `number`: drifted one time in 50, unchecked one in 200; with
    `findings_kib`, drifted with about that many KiB of findings whose messages all differ."""
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
    if findings_kib:
        status = "drift"
        findings += padding(number, findings_kib)
    return {"hwspec_report": 1, "node": f"gpu{number:05d}", "spec": "platforms/zionex.yaml", "platform": "zionex",
            "status": status, "exit_code": {"clean": 0, "drift": 1, "unchecked": 2}[status], "findings": findings}


def padding(number: int, kib: int) -> list[dict]:
    """About `kib` KiB of D106 findings of node `number`, each message its own (about 250 bytes
    each as indented JSON), and one finding of a device of this node alone in every sixteenth."""
    found = [finding("D106", f"gpu{lane % 8}", f"gpu{lane % 8}: NVLink {lane % 18} of node {number} lane {lane}: "
                     f"{number * 7919 + lane} replay errors since boot, {lane * 31 % 997} CRC errors", 120)
             for lane in range(kib * 1024 // 250)]
    if number % 16 == 0:
        found.append(finding("D102", f"extra{number}", f"extra{number}: a device the spec does not describe", 0))
    return found


def write_reports(directory: Path, nodes: int, findings_kib: int = 0) -> int:
    """One report file per node in `directory`; their total size in bytes."""
    size = 0
    for number in range(1, nodes + 1):
        text = json.dumps(node_report(number, findings_kib), indent=2) + "\n"
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


def measure(nodes: int, repeat: int, findings_kib: int = 0) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        reports = Path(tmp) / "reports"
        reports.mkdir()
        size = write_reports(reports, nodes, findings_kib)
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


# ---------------------------------------------------------------------- an acceptance plan

LEAF = 32
"""Nodes under one leaf in the plan."""
SLOW_NODE = 7
"""The node below its band in every run it joins."""
RECORDS_PER_REPORT = 4096


def plan_runs(nodes: int) -> list[tuple[str, list[int], tuple[int, ...]]]:
    """The plan's runs as (name, node numbers, GPU devices): alone, leaf pairs, spine pairs, rails."""
    eight = tuple(range(8))
    runs = [(f"alone/{n:05d}", [n], eight) for n in range(nodes)]
    for pairing in (0, 1):  # two pairings in each leaf: each node has two partners there
        for start in range(0, nodes, LEAF):
            leaf = list(range(start, min(start + LEAF, nodes)))
            shifted = leaf[pairing:] + leaf[:pairing]
            runs += [(f"leaf-pairs-{pairing}/{a:05d}", [a, b], eight) for a, b in zip(shifted[::2], shifted[1::2])]
    half = nodes // 2
    for pairing in (0, 1):  # across the spine: node i with a node of the other half
        runs += [(f"spine-pairs-{pairing}/{n:05d}", [n, half + (n + pairing) % half], eight) for n in range(half)]
    runs += [(f"rail-{device}", list(range(nodes)), (device,)) for device in range(8)]
    return runs


def plan_record(name: str, members: list[int], devices: tuple[int, ...], size: int) -> dict:
    slow = SLOW_NODE in members
    return {"file": f"results/{name}.txt", "line": 40 + size, "run": f"results/{name}.txt:12", "collective": "all_reduce",
            "bytes": 2**(34 - size), "nodes": len(members), "gpus_per_node": len(devices),
            "hosts": [f"gpu{n:05d}" for n in members], "devices": list(devices),
            "measured_busbw_gbps": 216.0 if slow else 450.0, "expected_busbw_gbps": 470.0, "low_busbw_gbps": 399.5,
            "high_busbw_gbps": 482.1, "algorithm": "Ring", "protocol": "Simple", "limit": "nvswitch" if len(members) == 1 else "nic",
            "judged": True, "verdict": "below" if slow else "within"}


def write_plan(directory: Path, nodes: int, sizes: int) -> tuple[int, int, int, int]:
    """The plan's acceptance reports in `directory`, a rail run in a report of its own (its
    records list every node); (runs, records, reports, bytes written)."""
    runs = plan_runs(nodes)
    per_report = max(1, RECORDS_PER_REPORT // sizes)
    pairs = [run for run in runs if len(run[1]) <= 2]
    chunks = [pairs[i:i + per_report] for i in range(0, len(pairs), per_report)] + [[r] for r in runs if len(r[1]) > 2]
    written = records = 0
    for number, chunk in enumerate(chunks):
        acceptance = [plan_record(*run, size) for run in chunk for size in range(sizes)]
        slow = any(r["verdict"] == "below" for r in acceptance)
        report = {"hwspec_report": 1, "node": "login1", "spec": "platforms/dgx-h100-16.yaml", "platform": "dgx-h100-16",
                  "status": "drift" if slow else "clean", "exit_code": int(slow), "summary": "", "fabric": None,
                  "findings": [], "acceptance": acceptance}
        text = json.dumps(report, indent=2) + "\n"
        (directory / f"acceptance-{number:05d}.json").write_text(text)
        written += len(text)
        records += len(acceptance)
    return len(runs), records, len(chunks), written


def measure_plan(nodes: int, sizes: int, repeat: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        reports = Path(tmp) / "reports"
        reports.mkdir()
        runs, records, files, size = write_plan(reports, nodes, sizes)
        out = Path(tmp) / "fleet.json"
        cli = [*hwspec_command(), "fleet-report", str(reports), "--format", "json"]
        floor = [sys.executable, "-c", FLOOR, str(reports)]
        run(cli, out, (1,)), run(floor, Path(os.devnull), (0,))
        cli_runs, floor_runs = [], []
        for _ in range(repeat):
            cli_runs.append(run(cli, out, (1,)))
            floor_runs.append(run(floor, Path(os.devnull), (0,)))
        document = json.loads(out.read_text())
        summary = document["acceptance"]
        shutil.rmtree(reports)
    assert document["reports"]["refused"] == 0 and summary["reports"]["counted"] == files, (document["problems"], files)
    named = [c["subject"] for c in summary["slow_in_every_run"]]
    assert named == [f"node gpu{SLOW_NODE:05d}"], named
    assert summary["runs"]["read"] == runs, summary["runs"]
    cli_s, floor_s = min(t for t, _ in cli_runs), min(t for t, _ in floor_runs)
    return {"plan_nodes": nodes, "runs": runs, "records": records, "reports": files, "report_bytes": size, "cli_s": round(cli_s, 3),
            "floor_s": round(floor_s, 3), "ratio": round(cli_s / floor_s, 2), "us_per_record": round(1e6 * cli_s / records, 1),
            "cli_peak_mib": round(max(m for _, m in cli_runs), 1), "floor_peak_mib": round(max(m for _, m in floor_runs), 1),
            "slow_runs": summary["runs"]["slow"], "named": named}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, action="append", help="node count (repeatable; default 1000 and 5000)")
    parser.add_argument("--plan", type=int, action="append", metavar="NODES",
                        help="an acceptance plan over NODES nodes instead (repeatable)")
    parser.add_argument("--sizes", type=int, default=4, help="records (message sizes) per run of a plan (default 4)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each process (default 5)")
    parser.add_argument("--findings-kib", type=int, default=0, metavar="K",
                        help="add about K KiB of findings, each message its own, to every report")
    args = parser.parse_args()
    if args.plan:
        for nodes in args.plan:
            print(json.dumps(measure_plan(nodes, args.sizes, args.repeat)), flush=True)
        return 0
    for nodes in args.nodes or [1000, 5000]:
        print(json.dumps(measure(nodes, args.repeat, args.findings_kib)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
