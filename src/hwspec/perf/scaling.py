"""Scaling efficiency: one workload on one cluster re-sized to several node counts, at a constant
per-GPU batch (the paper's weak scaling: the global batch grows with the GPUs).

The cluster is re-sized by `hwspec.model.resolve_cluster.resized` (its file resolved again with
the new count, so the fabric, bisection and NVLink domains follow) and estimated by
`hwspec.perf.estimate.estimate` as it is. For each QPS bound q the estimate gives (overlapped,
serial, and expected where the estimate has it):

  per-GPU q(N)    = q(N) / GPUs(N)
  efficiency(N)   = per-GPU q(N) / per-GPU q(N0), N0 the smallest count estimated

so efficiency is 1 at N0 and, with a constant per-GPU batch, drops exactly as far as the
iteration time grows: efficiency(N) = time(N0) / time(N).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Severity
from hwspec.model.cluster import Cluster
from hwspec.model.workload import Workload
from hwspec.perf.estimate import estimate, ms, qps
from hwspec.perf.platform_figures import figures
from hwspec.perf.tables import number, table
from hwspec.topology import topology_of

BOUNDS = ("overlapped", "serial", "expected")
"""The QPS bounds an estimate may give (`qps_<bound>`), in display order; `expected` only where
the estimate computes it."""

MAX_NODE_COUNTS = 64
"""Node counts one scaling run estimates (each one resolves and estimates the cluster again)."""


def per_gpu_workload(workload: Workload, world_size: int) -> Workload:
    """`workload` with its per-GPU batch stated: as written for `batch.per_gpu`; for `batch.global`,
    the global batch over `world_size` GPUs (the platform as written), which must be whole.
    Raises HwspecError (E405, at batch.global) when it is not."""
    if workload.batch_per_gpu is not None:
        return workload
    assert workload.batch_global is not None, "a workload states one of the two batch sizes"
    local, left = divmod(workload.batch_global, world_size)
    if left or not local:
        pos = workload.locate("batch", "global")
        raise HwspecError([Diagnostic(
            workload.file, pos.line, pos.col, Severity.ERROR, Code.CANNOT_SCALE,
            f"batch.global {workload.batch_global} over {world_size} GPUs is {number(workload.batch_global / world_size)} "
            "per GPU: scaling holds the per-GPU batch constant, and it must be whole",
            "give batch.per_gpu instead")])
    return dataclasses.replace(workload, batch_global=None, batch_per_gpu=local)


def row(document: dict[str, Any]) -> dict[str, Any]:
    """One node count's row from its estimate: the QPS bounds and per-GPU QPS by bound, and the bottleneck."""
    p = document["platform"]
    bounds = {b: document[f"qps_{b}"] for b in BOUNDS if document.get(f"qps_{b}") is not None}
    return {"nodes": p["nodes"], "gpus": p["gpus"], "global_batch": document["global_batch"],
            "overlapped_seconds": document["overlapped_seconds"], "serial_seconds": document["serial_seconds"],
            "qps": bounds, "per_gpu_qps": {b: v / p["gpus"] for b, v in bounds.items()},
            "bottleneck": document["bottleneck"], "estimate": document}


def hbm_fraction(document: dict[str, Any]) -> float:
    """The share of the busiest GPU's tables its HBM holds (the rest spills to host DDR or SSD)."""
    held: float = sum(t["fraction"] for t in document["placement"]["tiers"] if t["tier"] == "hbm")  # a JSON document's numbers
    return held


def with_efficiency(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` (estimated ones, in node order) with `efficiency` by bound: per-GPU QPS over the first row's."""
    if not rows:
        return []
    base = rows[0]["per_gpu_qps"]
    return [{**r, "efficiency": {b: v / base[b] for b, v in r["per_gpu_qps"].items() if base.get(b)}} for r in rows]


def scaling(cluster: Cluster, workload: Workload, node_counts: list[int]) -> tuple[dict[str, Any], list[Diagnostic]]:
    """The scaling document of `workload` on `cluster` (a resolved `Cluster`) at each of
    `node_counts` (distinct, ascending), and the diagnostics of the counts it could not estimate.
    A count the workload cannot run at (E401-E403: tables that do not fit on few nodes) is a row
    with its `error`; efficiency is relative to the smallest count that ran (`reference_nodes`,
    None when none did). Raises HwspecError (E405) before estimating anything when the cluster
    cannot be re-sized to one of the counts, or the per-GPU batch is not whole."""
    from hwspec.model.resolve_cluster import resized

    held = per_gpu_workload(workload, cluster.world_size)
    sized = [resized(cluster, nodes) for nodes in node_counts]
    estimated: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    problems: list[Diagnostic] = []
    for each in sized:
        try:
            estimated.append(row(estimate(figures(topology_of(each)), held)))
        except HwspecError as exc:
            first = exc.diagnostics[0]
            failed.append({"nodes": each.node_count, "gpus": each.world_size, "code": str(first.code), "error": first.message,
                           "at": f"{first.file}:{first.line}:{first.col}"})
            problems.extend(exc.diagnostics)
    rows = sorted(with_efficiency(estimated) + failed, key=lambda r: r["nodes"])
    document = {
        "platform": {"name": cluster.name, "title": cluster.title, "file": cluster.file, "nodes": cluster.node_count,
                     "gpus_per_node": cluster.groups[0].gpus_per_node},
        "workload": {"name": workload.name, "title": workload.title, "file": workload.file},
        "local_batch": held.local_batch(1),
        "reference_nodes": estimated[0]["nodes"] if estimated else None,
        "rows": rows,
        "method": "weak scaling: the per-GPU batch is held and the cluster file resolved again at each node count; "
                  "efficiency = per-GPU QPS at N over per-GPU QPS at reference_nodes"}
    return document, problems


def against_one_node(cluster: Cluster, workload: Workload, document: dict[str, Any]) -> dict[str, Any]:
    """Per-GPU QPS of `document` (`workload` estimated on `cluster` as written) and, by bound, its
    efficiency over the same cluster re-sized to one node at the same per-GPU batch, and the share
    of the tables HBM holds in both (few nodes spill more of a fixed-size model). Where the
    one-node estimate cannot be had (several node groups, tables that do not fit one node), `note`
    says why and `efficiency` is empty."""
    here = row(document)
    result: dict[str, Any] = {"gpus": here["gpus"], "per_gpu_qps": here["per_gpu_qps"], "hbm_fraction": hbm_fraction(document),
                              "one_node_per_gpu_qps": {}, "one_node_hbm_fraction": None, "efficiency": {}, "note": ""}
    if cluster.node_count == 1:
        result.update(one_node_per_gpu_qps=here["per_gpu_qps"], one_node_hbm_fraction=result["hbm_fraction"],
                      efficiency={b: 1.0 for b in here["per_gpu_qps"]})
        return result
    try:
        from hwspec.model.resolve_cluster import resized

        held = per_gpu_workload(workload, cluster.world_size)
        one = row(estimate(figures(topology_of(resized(cluster, 1))), held))
    except HwspecError as exc:
        result["note"] = f"no one-node estimate: {exc.diagnostics[0].message} ({exc.diagnostics[0].code})"
        return result
    scaled = with_efficiency([one, here])[1]
    result.update(one_node_per_gpu_qps=one["per_gpu_qps"], one_node_hbm_fraction=hbm_fraction(one["estimate"]),
                  efficiency=scaled["efficiency"])
    return result


def text_report(doc: dict[str, Any]) -> str:
    """The scaling table for people (ms; QPS in k or M samples/s; efficiency in %)."""
    p, w = doc["platform"], doc["workload"]
    shown = [b for b in BOUNDS if any(b in r.get("qps", {}) for r in doc["rows"])]
    out = [f"{w['name']} on {p['name']} re-sized ({p['gpus_per_node']} GPUs per node; the file has {p['nodes']} nodes), "
           f"local batch {number(doc['local_batch'])} held per GPU",
           f"workload: {w['file']}; platform: {p['file']}",
           f"Scaling efficiency: per-GPU QPS over per-GPU QPS at {doc['reference_nodes']} node(s)" if doc["reference_nodes"]
           else "Scaling efficiency: no node count could be estimated", ""]
    header = ["nodes", "GPUs", "global batch", "tables in HBM", "overlapped (ms)"]
    for b in shown:
        header += [f"QPS ({b})", "per GPU", "efficiency"]
    header.append("bottleneck")
    lines = []
    for r in doc["rows"]:
        if "error" in r:
            lines.append([str(r["nodes"]), str(r["gpus"]), "-", "-", "-", *(["-"] * 3 * len(shown)), f"{r['code']}: {r['error']}"])
            continue
        cells = [str(r["nodes"]), str(r["gpus"]), number(r["global_batch"]), f"{number(100 * hbm_fraction(r['estimate']))}%",
                 ms(r["overlapped_seconds"])]
        for b in shown:
            eff = r["efficiency"].get(b)
            cells += [qps(r["qps"].get(b)), number(r["per_gpu_qps"][b]) if b in r["per_gpu_qps"] else "-",
                      f"{number(100 * eff)}%" if eff is not None else "-"]
        bn = r["bottleneck"]
        cells.append(f"{bn['resource_name']}: {bn['label']}")
        lines.append(cells)
    out += table(tuple(header), lines, align="rrrrr" + "rrr" * len(shown) + "l")
    return "\n".join(out) + "\n"
