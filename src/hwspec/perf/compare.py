"""Two platforms side by side (the paper's Zion vs ZionEX table), and optionally what the change
buys a workload: both estimates term by term, the speedup, and the terms that changed most.

Pure functions of `Figures` and estimate documents; units as everywhere (bytes, bytes/s per
direction, FLOP/s, seconds). Text uses GB/s = 1e9 bytes/s, TFLOPS = 1e12 FLOP/s, ms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hwspec.perf.estimate import RESOURCES, ms, qps
from hwspec.perf.platform_figures import Figures
from hwspec.perf.tables import gbps, gib, number, table

PEAK_DTYPES = ("fp32", "tf32", "fp16", "bf16")
COLLECTIVE_ROWS = ("all_reduce", "all_to_all")


def _cpu_gpu_traffic(f: Figures) -> str:
    if f.nodes > 1 and not f.gpudirect:
        return "heavy: collectives via host memory"
    if f.gpudirect:
        return "light: input only (GPUDirect)"
    return "input only (single node)"


FABRIC_NAMES = (("nvlink", "NVLink"), ("xgmi", "xGMI"))
"""Part fabric kinds (`fabric.kind`, by prefix) -> what the GPU fabric is called."""


def fabric_name(f: Figures) -> str:
    """What the GPUs' fabric of `f` is called: NVLink or xGMI (AMD's Infinity Fabric links), or
    "GPU fabric" where the parts do not say or name several."""
    names = {next((name for prefix, name in FABRIC_NAMES if kind.startswith(prefix)), "GPU fabric") for kind in f.fabric_kinds}
    return names.pop() if len(names) == 1 else "GPU fabric"


def _fabric_label(a: Figures, b: Figures) -> str:
    """The GPU fabric row's label: "NVLink per GPU", "xGMI per GPU", or both names where they differ."""
    name_a, name_b = fabric_name(a), fabric_name(b)
    return f"{name_a} per GPU" if name_a == name_b else f"GPU fabric per GPU ({name_a} / {name_b})"


def platform_rows(a: Figures, b: Figures) -> list[dict[str, Any]]:
    """The side-by-side rows: {"row", "a", "b", "a_value", "b_value"} (values None for text rows).
    A ratio b/a is shown for numeric rows."""
    rows: list[dict[str, Any]] = []

    def text(label: str, va: str, vb: str) -> None:
        rows.append({"row": label, "a": va, "b": vb, "a_value": None, "b_value": None})

    def value(label: str, va: float | None, vb: float | None, fmt: Callable[[float], str]) -> None:
        rows.append({"row": label, "a": fmt(va) if va else "-", "b": fmt(vb) if vb else "-", "a_value": va, "b_value": vb})

    text("GPUs", f"{a.gpus} x {a.gpu_model}", f"{b.gpus} x {b.gpu_model}")
    text("nodes x GPUs per node", f"{a.nodes} x {a.gpus_per_node}", f"{b.nodes} x {b.gpus_per_node}")
    value("CPU sockets per node", a.sockets_per_node, b.sockets_per_node, str)
    text("inter-node transport", a.transport, b.transport)
    text("GPUDirect RDMA", "yes" if a.gpudirect else "no", "yes" if b.gpudirect else "no")
    text("CPU-GPU traffic", _cpu_gpu_traffic(a), _cpu_gpu_traffic(b))
    value("per-GPU NIC bandwidth", a.nic_bandwidth, b.nic_bandwidth, gbps)
    value("per-GPU injection bandwidth", a.injection_bandwidth, b.injection_bandwidth, gbps)
    value("per-GPU ingestion bandwidth", a.ingestion_bandwidth, b.ingestion_bandwidth, gbps)
    value("Host link per GPU (PCIe or NVLink-C2C, all at once)", a.pcie_host_shared_bandwidth, b.pcie_host_shared_bandwidth, gbps)
    value(_fabric_label(a, b), a.nvlink_bandwidth, b.nvlink_bandwidth, gbps)
    value("HBM per GPU", a.hbm_capacity, b.hbm_capacity, lambda v: gib(int(v)))
    value("HBM bandwidth per GPU", a.hbm_bandwidth, b.hbm_bandwidth, gbps)
    value("host DDR per GPU", a.ddr_capacity, b.ddr_capacity, lambda v: gib(int(v)))
    for dtype in PEAK_DTYPES:
        if dtype in a.peak_flop_per_s or dtype in b.peak_flop_per_s:
            value(f"peak {dtype} per GPU", a.peak_flop_per_s.get(dtype), b.peak_flop_per_s.get(dtype),
                  lambda v: f"{number(v / 1e12)} TFLOPS")
    value("peak fp16 total", a.peak_flop_per_s.get("fp16", 0) * a.gpus or None, b.peak_flop_per_s.get("fp16", 0) * b.gpus or None,
          lambda v: f"{number(v / 1e15)} PFLOPS")
    for name in COLLECTIVE_ROWS:
        value(f"{name} busbw bound ({a.collectives_scope} / {b.collectives_scope})", a.busbw.get(name), b.busbw.get(name), gbps)
    return rows


def term_changes(ea: dict[str, Any], eb: dict[str, Any]) -> list[dict[str, Any]]:
    """Every term of two estimates of one workload, with the time saved (a - b, seconds), biggest first."""
    tb = {t["id"]: t for t in eb["terms"]}
    changes = []
    for t in ea["terms"]:
        other = tb[t["id"]]
        changes.append({"id": t["id"], "label": t["label"], "a_seconds": t["seconds"], "b_seconds": other["seconds"],
                        "saved_seconds": t["seconds"] - other["seconds"], "a_bound_by": t["bound_by"], "b_bound_by": other["bound_by"]})
    return sorted(changes, key=lambda c: (-abs(c["saved_seconds"]), c["id"]))


def comparison(a: Figures, b: Figures, ea: dict[str, Any] | None = None, eb: dict[str, Any] | None = None) -> dict[str, Any]:
    """The comparison document; with both estimates, the speedup and its reasons."""
    doc: dict[str, Any] = {"a": a.name, "b": b.name, "a_file": a.file, "b_file": b.file, "rows": platform_rows(a, b)}
    if ea is not None and eb is not None:
        changes = term_changes(ea, eb)
        speedup = (eb["qps_overlapped"] / ea["qps_overlapped"]) if ea["qps_overlapped"] and eb["qps_overlapped"] else None
        serial = (eb["qps_serial"] / ea["qps_serial"]) if ea["qps_serial"] and eb["qps_serial"] else None
        doc["workload"] = ea["workload"]
        doc["estimates"] = {"a": ea, "b": eb}
        doc["speedup_overlapped"] = speedup
        doc["speedup_serial"] = serial
        doc["term_changes"] = changes
        doc["changes_most"] = changes[0]["id"] if changes else None
    return doc


def _ratio(va: float | None, vb: float | None) -> str:
    if not va or not vb:
        return ""
    return f"{number(vb / va)}x"


def text_report(doc: dict[str, Any]) -> str:
    out = [f"{doc['a']} ({doc['a_file']})  vs  {doc['b']} ({doc['b_file']}); bandwidths per direction, GB/s = 1e9 bytes/s", ""]
    out += table(("", doc["a"], doc["b"], f"{doc['b']}/{doc['a']}"),
                    ((r["row"], r["a"], r["b"], _ratio(r["a_value"], r["b_value"])) for r in doc["rows"]), align="lllr")
    if "estimates" not in doc:
        return "\n".join(out) + "\n"
    ea, eb = doc["estimates"]["a"], doc["estimates"]["b"]
    w = doc["workload"]
    out += ["", f"Workload {w['name']} ({w['file']}): per-iteration terms per GPU (ms)"]
    rows = []
    for c in sorted(doc["term_changes"], key=lambda c: [t["id"] for t in ea["terms"]].index(c["id"])):
        rows.append((c["label"], ms(c["a_seconds"]), ms(c["b_seconds"]), _ratio(c["b_seconds"], c["a_seconds"]) if c["b_seconds"] else ""))
    out += table(("term", doc["a"], doc["b"], "speedup"), rows)
    out += [""] + table(("resource", doc["a"], doc["b"], "speedup"),
                    ((RESOURCES[r], ms(ea["resources_seconds"][r]), ms(eb["resources_seconds"][r]),
                      _ratio(eb["resources_seconds"][r], ea["resources_seconds"][r]) if eb["resources_seconds"][r] else "")
                     for r in RESOURCES))
    out += [""] + table(("iteration", doc["a"], doc["b"], "speedup"), (
        ("overlapped (ms)", ms(ea["overlapped_seconds"]), ms(eb["overlapped_seconds"]), _ratio(eb["overlapped_seconds"], ea["overlapped_seconds"])),
        ("serial (ms)", ms(ea["serial_seconds"]), ms(eb["serial_seconds"]), _ratio(eb["serial_seconds"], ea["serial_seconds"])),
        ("QPS bound, overlapped", qps(ea["qps_overlapped"]), qps(eb["qps_overlapped"]), _ratio(ea["qps_overlapped"], eb["qps_overlapped"])),
        ("QPS bound, serial", qps(ea["qps_serial"]), qps(eb["qps_serial"]), _ratio(ea["qps_serial"], eb["qps_serial"]))))
    speedup = doc["speedup_overlapped"]
    out += ["", f"Estimated speedup of {doc['b']} over {doc['a']} on {w['name']}: "
                + (f"{number(speedup)}x with overlap" if speedup else "-")
                + (f", {number(doc['speedup_serial'])}x without" if doc["speedup_serial"] else ""), "Why:"]
    for name, e in ((doc["a"], ea), (doc["b"], eb)):
        bn = e["bottleneck"]
        out.append(f"  - {name} is bound by the {bn['resource_name']} ({ms(e['overlapped_seconds'])} ms), "
                   f"mostly {bn['label']} ({bn['bound_by']})")
    for c in doc["term_changes"][:3]:
        if c["saved_seconds"] == 0:
            break
        verb = "saves" if c["saved_seconds"] > 0 else "costs"
        out.append(f"  - {c['label']}: {ms(c['a_seconds'])} -> {ms(c['b_seconds'])} ms ({verb} {ms(abs(c['saved_seconds']))} ms): "
                   f"{c['a_bound_by']} -> {c['b_bound_by']}")
    first = doc["term_changes"][0] if doc["term_changes"] else None
    if first is not None:
        out.append(f"The term that changes most: {first['label']}.")
    if "scaling" in doc:
        out += ["", "Scaling from one node of each (same per-GPU batch):"] + scaling_table(doc)
    return "\n".join(out) + "\n"


def scaling_table(doc: dict[str, Any]) -> list[str]:
    """Per-GPU QPS bounds of both clusters and their efficiency over one node of their own
    (`hwspec.perf.scaling.against_one_node`), with why a one-node figure is missing."""
    sa, sb = doc["scaling"]["a"], doc["scaling"]["b"]
    rows = []
    for bound in ("overlapped", "serial"):
        rows.append((f"per-GPU QPS bound, {bound}", _per_gpu(sa["per_gpu_qps"].get(bound)), _per_gpu(sb["per_gpu_qps"].get(bound)),
                     _ratio(sa["per_gpu_qps"].get(bound), sb["per_gpu_qps"].get(bound))))
        rows.append(("  on 1 node", _per_gpu(sa["one_node_per_gpu_qps"].get(bound)), _per_gpu(sb["one_node_per_gpu_qps"].get(bound)), ""))
        rows.append(("  scaling efficiency vs 1 node", _percent(sa["efficiency"].get(bound)), _percent(sb["efficiency"].get(bound)), ""))
    rows.append(("tables in HBM, all nodes / 1 node", _hbm(sa), _hbm(sb), ""))
    out = table(("", f"{doc['a']} ({sa['gpus']} GPUs)", f"{doc['b']} ({sb['gpus']} GPUs)", "ratio"), rows)
    return out + [f"  {name}: {s['note']}" for name, s in ((doc["a"], sa), (doc["b"], sb)) if s["note"]]


def _hbm(side: dict[str, Any]) -> str:
    one = side["one_node_hbm_fraction"]
    return f"{_percent(side['hbm_fraction'])} / {_percent(one)}"


def _per_gpu(value: float | None) -> str:
    return number(value) if value else "-"


def _percent(value: float | None) -> str:
    return f"{number(100 * value)}%" if value is not None else "-"
