#!/usr/bin/env python3
"""Validate + generate synthetic ZionEX clusters of growing size; print JSON figures.

    python benchmarks/scale.py                      # 16, 256, 2048, 16384 nodes
    python benchmarks/scale.py --sizes 16 256       # what CI runs

Each size runs in a fresh Python process (so peak RSS is that size's own), does the whole
job in-process (load, validate the node platform once, cluster rules, render the plan) and
writes the plan to a temporary directory. Targets on the 2-core, 24 GiB machine, checked at
every size run (`seconds_target`): up to 2,048 nodes under 2 s, beyond that 15 s per 16,384
nodes (16,384 under 15 s, 65,536 under 60 s); peak memory under 2 GiB; and time(16,384) at
most 10x time(2,048) when both run. Compare ratios within one run: the machines are shared
and noisy. The exit status is 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEAK_RSS_MIB = 2048.0
"""The most peak resident memory any size may take."""
RATIO_16384_OVER_2048 = 10.0


def seconds_target(nodes: int) -> float:
    """The most seconds validate + generate + write of `nodes` nodes may take."""
    return max(2.0, 15.0 * nodes / 16384)


def cluster_yaml(nodes: int) -> str:
    """A rail-optimized two-tier fabric: 64-port leaves (32 down, 32 up) per rail and pod,
    and a spine tier of director switches with a port per leaf (at least 4096), so that every
    leaf reaches every spine."""
    spine_ports = max(4096, 8 * -(-nodes // 32))
    return f"""hwspec: 1
kind: cluster
name: zionex-{nodes}
nodes:
  - platform: zionex.yaml
    count: {nodes}
    hostname: zx${{i:05}}
    address: 10.${{n//65536}}.${{n//256%256}}.${{n%256}}
world_size: {nodes * 8}
backend:
  transport: rocev2
  speed: 200 Gb/s
  topology: rail-optimized
  leaf: {{ports: 64, uplinks: 32}}
  spine: {{ports: {spine_ports}}}
  oversubscription: 1
frontend:
  speed: 100 Gb/s
"""


def run_one(nodes: int) -> dict:
    from hwspec import pipeline
    from hwspec.generate import engine as generate

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        node_text = (ROOT / "platforms" / "zionex.yaml").read_text().replace("rail_optimized: false", "rail_optimized: true")
        (work / "zionex.yaml").write_text(node_text)
        (work / "cluster.yaml").write_text(cluster_yaml(nodes))
        start = time.perf_counter()
        checked = pipeline.check(work / "cluster.yaml")
        validated = time.perf_counter()
        if checked.failed():
            raise SystemExit("\n".join(d.format() for d in checked.diagnostics))
        plan = generate.plan_for(checked.topology)
        planned = time.perf_counter()
        generate.write_plan(plan, work / "generated", [checked.platform.name])
        written = time.perf_counter()
        sizes = {path.split("/", 1)[1]: len(text.encode()) for path, text in plan.items()}
    return {
        "nodes": nodes, "gpus": nodes * 8,
        "seconds_validate": round(validated - start, 3),
        "seconds_generate": round(planned - validated, 3),
        "seconds_write": round(written - planned, 3),
        "seconds_total": round(written - start, 3),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "output_bytes": sum(sizes.values()),
        "largest_files": dict(sorted(sizes.items(), key=lambda kv: -kv[1])[:3]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 256, 2048, 16384])
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one)))
        return 0
    results = []
    for nodes in args.sizes:
        out = subprocess.run([sys.executable, __file__, "--one", str(nodes)], capture_output=True, text=True)
        if out.returncode != 0:
            sys.stderr.write(out.stderr or out.stdout)
            return 1
        results.append(json.loads(out.stdout))
    by_size = {r["nodes"]: r for r in results}
    summary: dict = {"python": sys.version.split()[0], "dot": bool(shutil.which("dot")), "results": results}
    if 2048 in by_size and 16384 in by_size:
        summary["ratio_16384_over_2048"] = round(by_size[16384]["seconds_total"] / by_size[2048]["seconds_total"], 2)
    checks: list[tuple[str, float, float]] = []
    for r in results:
        checks += [(f"seconds_{r['nodes']}", r["seconds_total"], seconds_target(r["nodes"])),
                   (f"peak_rss_mib_{r['nodes']}", r["peak_rss_mib"], PEAK_RSS_MIB)]
    if "ratio_16384_over_2048" in summary:
        checks.append(("ratio_16384_over_2048", summary["ratio_16384_over_2048"], RATIO_16384_OVER_2048))
    summary["targets"] = {name: {"measured": v, "target": limit, "met": v <= limit} for name, v, limit in checks}
    print(json.dumps(summary, indent=2))
    return 0 if all(t["met"] for t in summary["targets"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
