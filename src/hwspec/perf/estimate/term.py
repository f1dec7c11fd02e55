"""The vocabulary the estimate's modules share: the resources that work concurrently
(`RESOURCES`), every term's id, label and resource (`TERMS`), the `Term` record a bound is made
of and its two constructors (`_term`: an amount at one rate; `_work_term`: bytes moved at several
rates, seconds given), and `_error`, a workload diagnostic located at a path of its file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Severity
from hwspec.model.workload import Workload

RESOURCES = {
    "gpu": "GPU memory and compute",
    "network": "collective network",
    "pcie": "PCIe host link",
    "ingestion": "ingestion network",
    "host": "host CPUs and DDR",
}
"""Resources that work concurrently in the overlapped bound, with their display names."""


TERMS = (
    ("embedding_fwd", "embedding lookups forward", "gpu"),
    ("embedding_bwd", "embedding update backward", "gpu"),
    ("mlp_fwd", "MLP + interaction forward", "gpu"),
    ("mlp_bwd", "MLP + interaction backward", "gpu"),
    ("input_alltoall", "input (sparse ids) AlltoAll", "network"),
    ("embedding_alltoall_fwd", "pooled-embedding AlltoAll forward", "network"),
    ("embedding_alltoall_bwd", "pooled-embedding AlltoAll backward", "network"),
    ("dense_allreduce", "dense-gradient AllReduce", "network"),
    ("host_to_device", "host-to-device input copy", "pcie"),
    ("pooled_host_transfer", "pooled embeddings over PCIe (cpu-host)", "pcie"),
    ("host_staging", "collectives staged through host memory", "pcie"),
    ("ingestion", "input ingestion over the network", "ingestion"),
)
"""(id, label, resource) of every term, in display order."""


@dataclass(frozen=True)
class Call:
    """One collective call a network term makes per iteration: `nbytes` (the nccl-tests buffer S)
    moved in `seconds` at the term's rate, among the ranks of `scope`: "all" (every GPU),
    "node" (the G GPUs of one node) or "cross" (one GPU per node, the N of one local rank)."""

    collective: str
    nbytes: float
    seconds: float
    scope: str = "all"


@dataclass(frozen=True)
class Term:
    id: str
    label: str
    resource: str
    seconds: float
    amount: float          # bytes, or FLOPs for the MLP terms
    unit: str              # "bytes" or "flop"
    rate: float            # bytes/s or FLOP/s the amount is divided by (0 when the term is empty)
    bound_by: str          # which platform figure is the rate
    detail: str = ""
    calls: tuple[Call, ...] = ()  # the collective calls, where the term knows them (pooled embeddings)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "resource": self.resource, "seconds": self.seconds,
                f"amount_{self.unit}": self.amount, f"rate_{self.unit}_per_s": self.rate,
                "bound_by": self.bound_by, "detail": self.detail}


def _error(workload: Workload, path: tuple[str | int, ...], code: Code, message: str, hint: str | None = None) -> HwspecError:
    pos = workload.locate(*path)
    return HwspecError([Diagnostic(workload.file, pos.line, pos.col, Severity.ERROR, code, message, hint)])


def _term(tid: str, amount: float, unit: str, rate: float, bound_by: str, detail: str = "",
          resource: str | None = None) -> Term:
    """Term `tid` of `amount` at `rate`, on its TERMS resource unless `resource` says otherwise."""
    label, default = next((label, res) for i, label, res in TERMS if i == tid)
    seconds = amount / rate if amount > 0 and rate > 0 else 0.0
    return Term(tid, label, resource or default, seconds, amount, unit, rate if amount > 0 else 0.0, bound_by, detail)


def _work_term(tid: str, amount: float, seconds: float, bound_by: str, detail: str, resource: str | None = None) -> Term:
    """Term `tid` of bytes moved at several rates: its rate is the effective one, amount / seconds;
    on its TERMS resource unless `resource` says otherwise."""
    label, default = next((label, res) for i, label, res in TERMS if i == tid)
    resource = resource or default
    rate = amount / seconds if amount > 0 and seconds > 0 else 0.0
    return Term(tid, label, resource, seconds if rate else 0.0, amount, "bytes", rate, bound_by, detail)
