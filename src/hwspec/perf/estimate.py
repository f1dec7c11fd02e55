"""Per-iteration time bounds of a DLRM-style workload on a platform, term by term.

`estimate(figures, workload)` is a pure function of the platform's `Figures` (bytes, bytes/s
per direction, FLOP/s) and a resolved `Workload`. Every term is a time in seconds per
iteration for the busiest GPU (row-wise and data-parallel work is even; table-wise tables and
column-wise shards are indivisible, so the busiest GPU carries at least the `busiest` bound),
computed as an amount divided by the rate that bounds it:

  embedding lookups  bytes touched / tier bandwidth (HBM; host DDR and SSD across PCIe when the
                     tables spill), forward and backward
  MLP                FLOPs / dense peak of the compute dtype, forward and backward (2 x forward)
  collectives        nccl-tests buffer S / algbw bound (intra-node bound on a node, the
                     hierarchical cluster bound on a cluster)
  input              bytes / PCIe host link (host-to-device copy) and / ingestion NIC share

"serial" adds every term (nothing overlaps); "overlapped" lets the four resources (GPU memory
and compute, the collective network, the PCIe host link, the ingestion network) work at once
and takes the busiest one. QPS bounds are global batch / time. The README's "Estimating a
workload" section gives the formulas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Severity
from hwspec.perf import roofline as rf
from hwspec.perf.platform_figures import Figures
from hwspec.spec.workload import DENSE_INPUT_BYTES, DTYPE_BYTES, LABEL_BYTES, LENGTH_BYTES, OPTIMIZER_STATE_BYTES, Workload

RESOURCES = {
    "gpu": "GPU memory and compute",
    "network": "collective network",
    "pcie": "PCIe host link",
    "ingestion": "ingestion network",
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
    ("host_staging", "collectives staged through host memory", "pcie"),
    ("ingestion", "input ingestion over the network", "ingestion"),
)
"""(id, label, resource) of every term, in display order."""

TIER_NAMES = ("hbm", "host_ddr", "ssd")


def busiest(groups: list[tuple[float, int]], n: int) -> float:
    """A lower bound on the largest per-GPU sum when, for each (weight, count), `count`
    indivisible items of `weight` are placed on `n` GPUs, whatever the placement: the average,
    the largest item, the n-th plus the (n+1)-th largest (two of the n+1 largest share a GPU), and
    (k+1) x the (kn+1)-th largest for every k (some GPU holds k+1 of the kn+1 largest).
    `busiest([(1.0, 200)], 128) == 2.0`; a greedy largest-first placement comes close to it."""
    items = sorted(((w, c) for w, c in groups if w > 0 and c > 0), reverse=True)
    if not items or n < 1:
        return 0.0
    bound = max(math.fsum(w * c for w, c in items) / n, items[0][0])
    end = 0
    weights_at: list[tuple[int, float]] = []  # (last rank, weight) of each group, ranks from 1
    for w, c in items:
        end += c
        weights_at.append((end, w))
        k = (end - 1) // n
        bound = max(bound, (k + 1) * w)

    def kth(rank: int) -> float:
        return next((w for last, w in weights_at if last >= rank), 0.0)

    return max(bound, kth(n) + kth(n + 1))


@dataclass(frozen=True)
class Shards:
    """The busiest GPU's share of the table- and column-wise tables (indivisible shards), each
    figure a `busiest` bound on its own; `imbalance` is the lookup bound over the average."""

    lookup_bytes_per_sample: float    # forward: sum of pooling x dim x bytes of its shards
    update_bytes_per_sample: float    # backward: sum of pooling x 2 (row + optimizer state) bytes
    storage_bytes: float
    dims: float                        # pooled-embedding elements it sends per sample
    shards: int
    imbalance: float


def table_wise_shards(workload: Workload, n: int) -> Shards:
    """The busiest-GPU bounds of the table-wise tables and column-wise shards on `n` GPUs."""
    fwd, bwd, storage, dims = [], [], [], []
    shards = 0
    for t in workload.sharded("table-wise", "column-wise"):
        k = t.column_shards if t.sharding == "column-wise" else 1
        dim = t.dim / k
        row = dim * DTYPE_BYTES[t.precision] + (OPTIMIZER_STATE_BYTES[workload.optimizer](dim) if k > 1 else t.state_bytes_per_row)
        count = t.count * k
        shards += count
        fwd.append((t.pooling * dim * DTYPE_BYTES[t.precision], count))
        bwd.append((t.pooling * 2 * row, count))
        storage.append((t.rows * row, count))
        dims.append((dim, count))
    lookup = busiest(fwd, n)
    average = math.fsum(w * c for w, c in fwd) / n if n else 0.0
    return Shards(lookup, busiest(bwd, n), busiest(storage, n), busiest(dims, n), shards,
                  lookup / average if average else 1.0)


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

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "resource": self.resource, "seconds": self.seconds,
                f"amount_{self.unit}": self.amount, f"rate_{self.unit}_per_s": self.rate,
                "bound_by": self.bound_by, "detail": self.detail}


def _error(workload: Workload, path: tuple, code: Code, message: str, hint: str | None = None) -> HwspecError:
    pos = workload.locate(*path)
    return HwspecError([Diagnostic(workload.file, pos.line, pos.col, Severity.ERROR, code, message, hint)])


def _term(tid: str, amount: float, unit: str, rate: float, bound_by: str, detail: str = "") -> Term:
    label, resource = next((label, res) for i, label, res in TERMS if i == tid)
    seconds = amount / rate if amount > 0 and rate > 0 else 0.0
    return Term(tid, label, resource, seconds, amount, unit, rate if amount > 0 else 0.0, bound_by, detail)


# ---------------------------------------------------------------- placement


def placement(figures: Figures, workload: Workload) -> dict[str, Any]:
    """Where each GPU's share of the tables lives: HBM (up to hbm_share of it), then the GPU's
    host-DDR share, then its SSD share, filled in that order. The GPU is the busiest one: its
    table- and column-wise shards are the `busiest` bound, row-wise tables are split evenly over
    all GPUs, data-parallel tables are whole on every GPU. Lookups are taken as
    uniform over the stored bytes (no caching), so a tier serves the fraction of lookups it
    stores. Raises HwspecError (E401) when the tables do not fit."""
    n = figures.gpus
    rw = sum(t.storage_bytes for t in workload.sharded("row-wise"))
    dp = sum(t.storage_bytes for t in workload.sharded("data-parallel"))
    need = table_wise_shards(workload, n).storage_bytes + rw / n + dp
    capacities = {"hbm": figures.hbm_capacity * workload.hbm_share, "host_ddr": figures.ddr_capacity,
                  "ssd": figures.ssd_capacity}
    bandwidths = {"hbm": figures.hbm_bandwidth,
                  "host_ddr": min(figures.ddr_bandwidth, figures.pcie_host_shared_bandwidth),
                  "ssd": min(figures.ssd_bandwidth, figures.pcie_host_shared_bandwidth)}
    left = need
    tiers: list[dict[str, Any]] = []
    for name in TIER_NAMES:
        stored = min(left, capacities[name]) if bandwidths[name] > 0 else 0.0
        left -= stored
        tiers.append({"tier": name, "capacity_bytes": capacities[name], "stored_bytes": stored,
                      "fraction": stored / need if need else (1.0 if name == "hbm" else 0.0),
                      "bandwidth_bytes_per_s": bandwidths[name]})
    if left > max(1.0, need * 1e-12):
        have = sum(t["stored_bytes"] for t in tiers)
        raise _error(workload, ("embeddings", "tables"), Code.TABLES_DO_NOT_FIT,
                     f"the embedding tables need {rf.gib(int(need))} per GPU on {figures.name} ({n} GPUs), "
                     f"but HBM ({rf.number(workload.hbm_share * 100)}% of it), host DDR and SSD hold {rf.gib(int(have))}",
                     "use more GPUs, a smaller storage precision, or shard data-parallel tables")
    return {"need_bytes_per_gpu": need, "tiers": tiers}


def _per_lookup_time(place: dict[str, Any]) -> tuple[float, str]:
    """Seconds per byte of lookup traffic, averaged over the tiers, and the tier mix as text."""
    used = [t for t in place["tiers"] if t["fraction"] > 0]
    per_byte = sum(t["fraction"] / t["bandwidth_bytes_per_s"] for t in used)
    if len(used) == 1:
        return per_byte, f"{used[0]['tier']} {rf.gbps(used[0]['bandwidth_bytes_per_s'])}"
    mix = " / ".join(f"{rf.number(100 * t['fraction'])}% {t['tier']}" for t in used)
    return per_byte, f"{mix}: {rf.gbps(1 / per_byte)} effective" if per_byte else mix


# ---------------------------------------------------------------- the estimate


def _collective(figures: Figures, name: str) -> float:
    return figures.algbw.get(name, 0.0)


def inter_node_share(figures: Figures, collective: str) -> float:
    """Fraction of a rank's buffer S that crosses nodes under the hierarchical algorithm:
    AlltoAll (n-G)/n; AllReduce 2(N-1)/(N G); AllGather and ReduceScatter (N-1)/(N G)."""
    n, g, nodes = figures.gpus, figures.gpus_per_node, figures.nodes
    if nodes <= 1:
        return 0.0
    if collective == "all_to_all":
        return (n - g) / n
    factor = 2 if collective == "all_reduce" else 1
    return factor * (nodes - 1) / (nodes * g)


def estimate(figures: Figures, workload: Workload) -> dict[str, Any]:
    """The estimate document: terms, resources, serial and overlapped times and QPS bounds, and
    the bottleneck. Raises HwspecError for a workload the platform cannot run (E401 tables do
    not fit, E402 no peak for the compute dtype)."""
    n = figures.gpus
    b = workload.local_batch(n)
    big_b = workload.global_batch(n)
    dtype = workload.compute_dtype
    peak = figures.peak_flop_per_s.get(dtype, 0.0)
    if peak <= 0:
        raise _error(workload, ("compute_dtype",), Code.NO_PEAK_FOR_DTYPE,
                     f"compute_dtype '{dtype}' has no peak on {figures.name}'s GPUs ({figures.gpu_model})",
                     "peaks known: " + (", ".join(figures.peak_flop_per_s) or "none"))
    place = placement(figures, workload)
    per_byte, mix = _per_lookup_time(place)
    lookup_rate = 1 / per_byte if per_byte > 0 else 0.0
    s_idx = DTYPE_BYTES[workload.index_dtype]
    s_fwd, s_bwd, s_ar = (DTYPE_BYTES[workload.comm_forward], DTYPE_BYTES[workload.comm_backward],
                          DTYPE_BYTES[workload.comm_allreduce])
    terms: list[Term] = []

    # Embedding lookups: rows read forward; rows and optimizer state read and written backward.
    # A table-wise GPU looks up its shards for the whole global batch; row-wise tables are spread
    # evenly; data-parallel tables serve the local batch.
    shards = table_wise_shards(workload, n)
    even = workload.sharded("row-wise", "data-parallel")
    fwd = big_b * shards.lookup_bytes_per_sample + b * sum(t.count * t.pooling * t.dim * DTYPE_BYTES[t.precision] for t in even)
    bwd = big_b * shards.update_bytes_per_sample + b * sum(t.count * t.pooling * 2 * t.row_bytes for t in even)
    dp_update = sum(2 * t.storage_bytes for t in workload.sharded("data-parallel"))
    terms.append(_term("embedding_fwd", fwd, "bytes", lookup_rate, mix))
    terms.append(_term("embedding_bwd", bwd + dp_update, "bytes", lookup_rate, mix,
                       "includes the dense optimizer step of the data-parallel tables" if dp_update else ""))

    # MLPs and interaction: 2 x in x out FLOPs per layer per sample forward, twice that backward.
    flops = b * (workload.mlp_flops_per_sample + workload.interaction_flops_per_sample)
    bound = f"{dtype} dense peak {rf.number(peak / 1e12)} TFLOPS"
    terms.append(_term("mlp_fwd", flops, "flop", peak, bound))
    terms.append(_term("mlp_bwd", 2 * flops, "flop", peak, bound))

    # Input AlltoAll: each GPU sends the ids (and lengths) of its local samples to the owners.
    mp = workload.sharded("table-wise", "row-wise", "column-wise")
    ids = b * sum(t.count * (t.pooling * s_idx + LENGTH_BYTES) * (t.column_shards if t.sharding == "column-wise" else 1)
                  for t in mp)
    a2a = _collective(figures, "all_to_all")
    a2a_name = f"all_to_all algbw {rf.gbps(a2a)} ({figures.collectives_scope})"
    terms.append(_term("input_alltoall", ids, "bytes", a2a, a2a_name))

    # Pooled embeddings: TW/CW by AlltoAll, finished when the busiest sender is (S = global batch x
    # its dims), RW by ReduceScatter forward and AllGather backward (S = global batch x dims).
    rw_dims = sum(t.count * t.dim for t in workload.sharded("row-wise"))
    for tid, s_comm, rw_collective in (("embedding_alltoall_fwd", s_fwd, "reduce_scatter"),
                                       ("embedding_alltoall_bwd", s_bwd, "all_gather")):
        tw_bytes, rw_bytes = big_b * shards.dims * s_comm, big_b * rw_dims * s_comm
        rw_rate = _collective(figures, rw_collective)
        seconds = (tw_bytes / a2a if tw_bytes and a2a else 0.0) + (rw_bytes / rw_rate if rw_bytes and rw_rate else 0.0)
        amount = tw_bytes + rw_bytes
        parts = []
        if tw_bytes:
            parts.append(f"table/column-wise: AlltoAll of {rf.gib(int(tw_bytes))}")
        if rw_bytes:
            parts.append(f"row-wise: {rw_collective} of {rf.gib(int(rw_bytes))} at {rf.gbps(rw_rate)}")
        label, resource = next((label, res) for i, label, res in TERMS if i == tid)
        rate = amount / seconds if seconds else 0.0
        terms.append(Term(tid, label, resource, seconds, amount, "bytes", rate,
                          a2a_name if not rw_bytes else f"{a2a_name}; {rw_collective} algbw {rf.gbps(rw_rate)}",
                          "; ".join(parts)))

    # Dense gradients: MLP weights and biases, and every data-parallel table.
    dense = workload.mlp_parameters * s_ar + sum(t.count * t.rows * t.dim * s_ar for t in workload.sharded("data-parallel"))
    ar = _collective(figures, "all_reduce")
    terms.append(_term("dense_allreduce", dense, "bytes", ar, f"all_reduce algbw {rf.gbps(ar)} ({figures.collectives_scope})"))

    # Input: dense features, labels, ids and lengths of the local batch.
    inputs = b * (workload.dense_features * DENSE_INPUT_BYTES + LABEL_BYTES
                  + sum(t.count * (t.pooling * s_idx + LENGTH_BYTES) for t in workload.tables))
    terms.append(_term("host_to_device", inputs, "bytes", figures.pcie_host_shared_bandwidth,
                       f"host link (PCIe, or NVLink-C2C), all GPUs at once {rf.gbps(figures.pcie_host_shared_bandwidth)}"))

    # Without GPUDirect RDMA, the inter-node part of every collective crosses the PCIe host link.
    staged = 0.0
    if not figures.gpudirect and figures.nodes > 1:
        staged = (ids * inter_node_share(figures, "all_to_all")
                  + big_b * shards.dims * (s_fwd + s_bwd) * inter_node_share(figures, "all_to_all")
                  + big_b * rw_dims * (s_fwd * inter_node_share(figures, "reduce_scatter") + s_bwd * inter_node_share(figures, "all_gather"))
                  + dense * inter_node_share(figures, "all_reduce"))
    terms.append(_term("host_staging", staged, "bytes", figures.pcie_host_shared_bandwidth,
                       "PCIe host link (no GPUDirect RDMA)" if staged else "GPUDirect RDMA: not staged",
                       "the inter-node share of the collectives above, bounced through host memory" if staged else ""))
    terms.append(_term("ingestion", inputs, "bytes", figures.ingestion_bandwidth,
                       f"ingestion share per GPU {rf.gbps(figures.ingestion_bandwidth)}" if figures.ingestion_bandwidth
                       else "no ingestion bandwidth stated: not bounded"))

    resources = {r: math.fsum(t.seconds for t in terms if t.resource == r) for r in RESOURCES}
    serial = math.fsum(t.seconds for t in terms)
    overlapped = max(resources.values())
    busiest = max(RESOURCES, key=lambda r: resources[r])
    worst = max((t for t in terms if t.resource == busiest), key=lambda t: t.seconds)
    return {
        "platform": {"name": figures.name, "title": figures.title, "file": figures.file, "kind": figures.kind,
                     "gpus": n, "gpus_per_node": figures.gpus_per_node, "nodes": figures.nodes},
        "workload": {"name": workload.name, "title": workload.title, "file": workload.file,
                     "assumptions": len(workload.assumptions)},
        "local_batch": b,
        "global_batch": big_b,
        "compute_dtype": dtype,
        "table_wise_balance": {"shards": shards.shards, "busiest_over_average": shards.imbalance},
        "placement": place,
        "terms": [t.as_dict() for t in terms],
        "resources_seconds": resources,
        "serial_seconds": serial,
        "overlapped_seconds": overlapped,
        "qps_serial": big_b / serial if serial else None,
        "qps_overlapped": big_b / overlapped if overlapped else None,
        "bottleneck": {"resource": busiest, "resource_name": RESOURCES[busiest], "term": worst.id, "label": worst.label,
                       "bound_by": worst.bound_by},
        "method": ("per-GPU, per-iteration time bounds from datasheet peaks and link bandwidths (no latency, no "
                   "efficiency factor, balanced load); serial = sum of the terms, overlapped = the busiest resource"),
    }


# ---------------------------------------------------------------- text


def ms(seconds: float) -> str:
    return rf.number(seconds * 1e3)


def qps(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{rf.number(value / 1e6)} M" if value >= 1e6 else f"{rf.number(value / 1e3)} k"


def amount(term: dict[str, Any]) -> str:
    if "amount_flop" in term:
        return f"{rf.number(term['amount_flop'] / 1e9)} GFLOP"
    return rf.gib(int(term["amount_bytes"])) if term["amount_bytes"] >= 1 else "0"


def text_report(doc: dict[str, Any]) -> str:
    """The estimate as tables for people (ms, GB/s = 1e9 bytes/s, GiB = 1024^3 bytes)."""
    p, w = doc["platform"], doc["workload"]
    out = [f"{w['name']} on {p['name']}: {p['gpus']} GPUs ({p['nodes']} node(s) x {p['gpus_per_node']}), "
           f"local batch {rf.number(doc['local_batch'])}, global batch {rf.number(doc['global_batch'])}, MLPs in {doc['compute_dtype']}",
           f"workload: {w['file']} ({w['assumptions']} assumption(s)); platform: {p['file']}", "",
           f"Embedding placement per GPU: {rf.gib(int(doc['placement']['need_bytes_per_gpu']))}"]
    out += rf.table(("tier", "capacity", "stored", "share", "bandwidth"),
                    ((t["tier"], rf.gib(int(t["capacity_bytes"])), rf.gib(int(t["stored_bytes"])) if t["stored_bytes"] >= 1 else "0",
                      f"{rf.number(100 * t['fraction'])}%", rf.gbps(t["bandwidth_bytes_per_s"]))
                     for t in doc["placement"]["tiers"]))
    balance = doc["table_wise_balance"]
    if balance["shards"]:
        out += ["", f"Table-wise balance: {balance['shards']} indivisible table/column shards on {p['gpus']} GPUs; "
                    f"the busiest GPU looks up at least {rf.number(balance['busiest_over_average'])}x the average"]
    out += ["", "Per-iteration terms per GPU (ms, the busiest GPU)"]
    out += rf.table(("term", "resource", "amount", "time", "bound by"),
                    ((t["label"], t["resource"], amount(t), ms(t["seconds"]), t["bound_by"]) for t in doc["terms"]),
                    align="llrrl")
    out += ["", "Resources (ms)"]
    out += rf.table(("resource", "time"), ((RESOURCES[r], ms(s)) for r, s in doc["resources_seconds"].items()))
    bottleneck = doc["bottleneck"]
    out += ["",
            f"Iteration: {ms(doc['overlapped_seconds'])} ms overlapped (busiest resource), {ms(doc['serial_seconds'])} ms serial (sum of terms)",
            f"QPS bound: {qps(doc['qps_overlapped'])} samples/s with overlap, {qps(doc['qps_serial'])} without",
            f"Bottleneck: {bottleneck['resource_name']}, mostly {bottleneck['label']} ({bottleneck['bound_by']})"]
    return "\n".join(out) + "\n"
