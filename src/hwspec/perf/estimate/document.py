"""The estimate document: `estimate` plans the workload's `auto` groups (`hwspec.perf.planner`)
and hands the planned workload to `estimate_plan`, which sums the terms per resource into the
serial and overlapped bounds (`unpipelined_chain` when not pipelined), the QPS bounds and
bottleneck, the expected iteration, and the time to train (`time_to_train_seconds`).
"""

from __future__ import annotations

import math
from typing import Any

from hwspec.diagnostics import Code
from hwspec.model.workload import Workload
from hwspec.perf.estimate.expected import expected
from hwspec.perf.estimate.shards import twrw_notes
from hwspec.perf.estimate.term import RESOURCES, Term, _error
from hwspec.perf.estimate.terms import _terms
from hwspec.perf.planner import plan
from hwspec.perf.platform_figures import Figures


def time_to_train_seconds(samples_to_converge: float | None, qps: float | None) -> float | None:
    """Seconds to train on `samples_to_converge` samples at `qps` samples/s, any of the
    estimate's QPS figures (from a QPS bound, a lower bound on the time); None when either is
    unknown. Whole iterations are not rounded up: one iteration is far below the error."""
    if not samples_to_converge or not qps:
        return None
    return samples_to_converge / qps


def estimate(figures: Figures, workload: Workload) -> dict[str, Any]:
    """The estimate document: terms, resources, serial and overlapped times and QPS bounds, the
    bottleneck, the expected iteration (`expected`; `qps_expected <= qps_overlapped`) and the
    sharding `plan`, per table group: stated, or chosen by `hwspec.perf.planner` for the groups
    the workload leaves `auto`. Raises HwspecError for a workload the platform cannot run (E401
    tables do not fit, E402 no peak for the compute dtype)."""
    planned = plan(figures, workload, estimate_plan)
    return estimate_plan(figures, planned.workload) | {"plan": planned.groups}


def estimate_plan(figures: Figures, workload: Workload) -> dict[str, Any]:
    """`estimate` of a workload whose every table group has its sharding (no `auto`), without `plan`."""
    n = figures.gpus
    b = workload.local_batch(n)
    big_b = workload.global_batch(n)
    dtype = workload.compute_dtype
    if figures.peak_flop_per_s.get(dtype, 0.0) <= 0:
        raise _error(workload, ("compute_dtype",), Code.NO_PEAK_FOR_DTYPE,
                     f"compute_dtype '{dtype}' has no peak on {figures.name}'s GPUs ({figures.gpu_model})",
                     "peaks known: " + (", ".join(figures.peak_flop_per_s) or "none"))
    terms, place, shards = _terms(figures, workload)
    resources = {r: math.fsum(t.seconds for t in terms if t.resource == r) for r in RESOURCES}
    serial = math.fsum(t.seconds for t in terms)
    overlapped = max(*resources.values(), unpipelined_chain(terms, workload))
    busiest = max(RESOURCES, key=lambda r: resources[r])
    worst = max((t for t in terms if t.resource == busiest), key=lambda t: t.seconds)
    qps_serial = big_b / serial if serial else None
    qps_overlapped = big_b / overlapped if overlapped else None
    exp = expected(figures, workload)
    qps_expected = big_b / exp["iteration_seconds"] if exp["iteration_seconds"] else None
    return {
        "platform": {"name": figures.name, "title": figures.title, "file": figures.file, "kind": figures.kind,
                     "gpus": n, "gpus_per_node": figures.gpus_per_node, "nodes": figures.nodes},
        "workload": {"name": workload.name, "title": workload.title, "file": workload.file,
                     "assumptions": len(workload.assumptions)},
        "local_batch": b,
        "global_batch": big_b,
        "compute_dtype": dtype,
        "table_wise_balance": {"shards": shards.shards, "busiest_over_average": shards.imbalance},
        "sharding_notes": twrw_notes(figures, workload),
        "embedding_placement": workload.placement,
        "pipeline": workload.pipeline,
        "placement": place,
        "terms": [t.as_dict() for t in terms],
        "resources_seconds": resources,
        "serial_seconds": serial,
        "overlapped_seconds": overlapped,
        "qps_serial": qps_serial,
        "qps_overlapped": qps_overlapped,
        "samples_to_converge": workload.samples_to_converge,
        "time_to_train_seconds": {"overlapped": time_to_train_seconds(workload.samples_to_converge, qps_overlapped),
                                  "serial": time_to_train_seconds(workload.samples_to_converge, qps_serial),
                                  "expected": time_to_train_seconds(workload.samples_to_converge, qps_expected)},
        "bottleneck": {"resource": busiest, "resource_name": RESOURCES[busiest], "term": worst.id, "label": worst.label,
                       "bound_by": worst.bound_by},
        "method": ("per-GPU, per-iteration time bounds from datasheet peaks and link bandwidths (no latency, no "
                   "efficiency factor, balanced load); serial = sum of the terms, overlapped = the busiest resource"
                   + ("" if workload.pipeline else " or the input AlltoAll + lookups + update (not pipelined)")),
        "expected": exp,
        "iteration_seconds_expected": exp["iteration_seconds"],
        "qps_expected": qps_expected,
    }


def unpipelined_chain(terms: list[Term], workload: Workload) -> float:
    """Without pipelining (`pipeline: false`) the lookups of batch i wait for its ids, and
    nothing of batch i+1 starts before batch i ends: the input AlltoAll, the lookups and the
    update run one after another. 0 when pipelined (the AlltoAll of batch i+1 overlaps batch i)."""
    if workload.pipeline:
        return 0.0
    return math.fsum(t.seconds for t in terms if t.id in ("input_alltoall", "embedding_fwd", "embedding_bwd"))
