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

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Severity
from hwspec.perf import calibration as cal
from hwspec.perf import roofline as rf
from hwspec.perf.cache import cached_row_traffic, hit_rate, touched
from hwspec.perf.planner import plan
from hwspec.perf.platform_figures import Figures
from hwspec.spec.workload import (
    AUTO,
    DENSE_INPUT_BYTES,
    DTYPE_BYTES,
    LABEL_BYTES,
    LENGTH_BYTES,
    OPTIMIZER_STATE_BYTES,
    Table,
    Workload,
    mlp_layers,
)

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

TIER_NAMES = ("hbm", "host_ddr", "ssd")

ACCESS_BYTES = {"hbm": 32, "host_ddr": 64, "ssd": 512}
"""Smallest unit each tier moves, bytes: an embedding row (and its optimizer state, a separate
tensor) is read and written in whole units. HBM: the 32-byte sector of a GPU's global-memory
transactions (CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"); host DDR: the
64-byte cache line; SSD: the smallest logical block an NVMe namespace can be formatted with
(512 B, NVMe Base Specification's LBA formats). A drive formatted with 4 KiB blocks, or read
through the page cache, moves up to 8x more per small row: the bound takes the smallest unit so
that it stays a bound."""


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
    ids_bytes_per_sample: float       # input it receives: sum of pooling x id bytes + a length per shard
    storage_bytes: float
    dims: float                        # pooled-embedding elements it sends per sample
    shards: int
    imbalance: float


def column_shards(table: Table) -> int:
    """Indivisible shards per table: its column shards when column-wise, else 1."""
    return table.column_shards if table.sharding == "column-wise" else 1


def shard_row(workload: Workload, table: Table) -> tuple[float, float, float]:
    """(dim, weight bytes, optimizer-state bytes) of one row of one shard of `table`."""
    k = column_shards(table)
    dim = table.dim / k
    state = OPTIMIZER_STATE_BYTES[workload.optimizer](dim) if k > 1 else table.state_bytes_per_row
    return dim, dim * DTYPE_BYTES[table.precision], state


def ids_bytes(workload: Workload, table: Table) -> float:
    """Input bytes of one table per sample: pooling ids and one length."""
    return table.pooling * DTYPE_BYTES[workload.index_dtype] + LENGTH_BYTES


def table_wise_shards(workload: Workload, n: int) -> Shards:
    """The busiest-GPU bounds of the table-wise tables and column-wise shards on `n` GPUs."""
    fwd, ids, storage, dims = [], [], [], []
    shards = 0
    for t in workload.sharded("table-wise", "column-wise"):
        dim, weights, state = shard_row(workload, t)
        count = t.count * column_shards(t)
        shards += count
        fwd.append((t.pooling * weights, count))
        ids.append((ids_bytes(workload, t), count))
        storage.append((t.rows * (weights + state), count))
        dims.append((dim, count))
    lookup = busiest(fwd, n)
    average = math.fsum(w * c for w, c in fwd) / n if n else 0.0
    return Shards(lookup, busiest(ids, n), busiest(storage, n), busiest(dims, n), shards,
                  lookup / average if average else 1.0)


def per_node(groups: list[tuple[float, int]], nodes: int) -> tuple[float, float]:
    """(busiest, average) per GPU of table-row-wise tables: each of `count` tables of `weight`
    (one GPU's share of it: the table is row-wise over its node's G GPUs) lives whole on one of
    `nodes` nodes, so the busiest node is `busiest` over nodes, and the average is over nodes."""
    return busiest(groups, nodes), (math.fsum(w * c for w, c in groups) / nodes if nodes else 0.0)


def with_table_row_wise(table_wise: tuple[float, float], table_row_wise: tuple[float, float]) -> float:
    """The busiest GPU's share of table-wise work (busiest, average over GPUs) beside
    table-row-wise work (busiest, average): a planner may keep the busiest of each apart, so
    only max(either busiest, the sum of the averages) is certain. One of them alone: its busiest."""
    return max(table_wise[0], table_row_wise[0], table_wise[1] + table_row_wise[1])


def twrw_nodes(figures: Figures) -> tuple[int, int]:
    """(N, G) of the table-row-wise plan: nodes a table may live on, GPUs its rows spread over."""
    return figures.nodes, figures.gpus_per_node


def twrw_notes(figures: Figures, workload: Workload) -> list[str]:
    """What the estimate says about a table-row-wise plan the platform shapes: on one node it is
    row-wise; with fewer tables than nodes some nodes hold none (neither is refused)."""
    tables = sum(t.count for t in workload.sharded("table-row-wise"))
    nodes, g = twrw_nodes(figures)
    if not tables:
        return []
    if nodes == 1:
        return [f"table-row-wise on one node is row-wise: {tables} table(s) row-wise over its {g} GPUs"]
    if tables < nodes:
        return [f"table-row-wise: {tables} table(s) on {nodes} nodes, so {nodes - tables} node(s) hold none "
                f"and the busiest node serves a whole table on its {g} GPUs"]
    return []


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


# ---------------------------------------------------------------- placement


def placement(figures: Figures, workload: Workload) -> dict[str, Any]:
    """Where the busiest rank's share of the tables lives (`storage_need`). `gpu` placement: the
    busiest GPU's share in HBM (up to hbm_share of it), then the GPU's host-DDR share, then its SSD
    share, filled in that order; `cpu-host` placement (`host_placement`): the busiest CPU socket's
    share in its DDR, then its share of the node's SSDs. Lookups are taken as uniform over the
    stored bytes (no caching), so a tier serves the fraction of lookups it stores. Raises
    HwspecError (E401) when the tables do not fit."""
    if workload.placement == "cpu-host":
        return host_placement(figures, workload)
    if any(t.cache for t in workload.tables):
        return cached_placement(figures, workload)
    return _fill_tiers(figures, workload, figures.gpus, storage_need(figures, workload),
                       gpu_tiers(figures, figures.hbm_capacity * workload.hbm_share),
                       f"HBM ({rf.number(workload.hbm_share * 100)}% of it), host DDR and SSD")


def gpu_tiers(figures: Figures, hbm: float, ddr: float | None = None, ssd: float | None = None) -> list[tuple[str, float, float, float]]:
    """(name, capacity, read and update bandwidth) of a GPU's tiers with `hbm` bytes of HBM for
    tables (and `ddr`, `ssd` of host DDR and SSD when not all of the GPU's share). Lookups read
    one way across PCIe; updates read and write, one each way (PCIe is full duplex), while DDR
    and SSD serve reads and writes from one figure."""
    pcie = figures.pcie_host_shared_bandwidth
    return [("hbm", hbm, figures.hbm_bandwidth, figures.hbm_bandwidth),
            ("host_ddr", figures.ddr_capacity if ddr is None else ddr, min(figures.ddr_bandwidth, pcie), min(figures.ddr_bandwidth, 2 * pcie)),
            ("ssd", figures.ssd_capacity if ssd is None else ssd, min(figures.ssd_bandwidth, pcie), min(figures.ssd_bandwidth, 2 * pcie))]


def cached_placement(figures: Figures, workload: Workload) -> dict[str, Any]:
    """`gpu` placement with software caches (`embeddings.cache`, `hwspec.perf.cache`). The busiest
    GPU's cached tables (their `storage_need` alone) live in host DDR then SSD, behind a cache in
    HBM of max(hbm_fraction) x HBM (at most their size); a cached group holds the most popular
    min(1, its hbm_fraction x HBM / that need) of its rows (the same fraction of every table: TorchRec's
    `cache_load_factor`), and hits `hit_rate` of its lookups (a row-wise shard's rows are a
    hashed 1/n sample of the table's, so the table's rows and fraction give its hit rate). The
    other tables fill the tables' HBM share less the cache, then the DDR and SSD, first. The
    document is `placement`'s for the uncached tables (`tiers`; all zero without any) with
    `cache`: the cache's HBM bytes, the cached need, its `backing` tiers and each group's hit rate."""
    cached = tuple(t for t in workload.tables if t.cache)
    uncached = tuple(t for t in workload.tables if not t.cache)
    need_c = storage_need(figures, dataclasses.replace(workload, tables=cached))
    need_u = storage_need(figures, dataclasses.replace(workload, tables=uncached)) if uncached else 0.0
    hbm = figures.hbm_capacity
    cache_bytes = min(need_c, max(t.cache.hbm_fraction for t in cached if t.cache) * hbm)
    place = _fill_tiers(figures, workload, figures.gpus, need_u,
                        gpu_tiers(figures, max(0.0, hbm * workload.hbm_share - cache_bytes)),
                        f"HBM ({rf.number(workload.hbm_share * 100)}% of it, less the cache), host DDR and SSD")
    left = {t["tier"]: t["capacity_bytes"] - t["stored_bytes"] for t in place["tiers"]}
    backing = _fill_tiers(figures, workload, figures.gpus, need_c,
                          gpu_tiers(figures, 0.0, left["host_ddr"], left["ssd"])[1:], "host DDR and SSD behind the cache")
    groups = []
    for t in cached:
        assert t.cache is not None
        share = min(1.0, t.cache.hbm_fraction * hbm / need_c) if need_c else 1.0
        groups.append({"table": t.name, "hbm_fraction": t.cache.hbm_fraction, "skew": t.cache.skew,
                       "cached_rows_fraction": share, "hit_rate": hit_rate(share * t.rows, t.rows, t.cache.skew)})
    place["need_bytes_per_gpu"] = need_u + need_c
    place["cache"] = {"hbm_bytes": cache_bytes, "need_bytes": need_c, "backing": backing["tiers"], "groups": groups,
                      "hit_rates": {g["table"]: g["hit_rate"] for g in groups},
                      "method": "Zipf row popularity: hit rate H(c, s) / H(R, s) of the c most popular of R rows"}
    return place


def storage_need(figures: Figures, workload: Workload) -> float:
    """Bytes of tables (weights and optimizer state) the busiest of `figures.gpus` ranks stores:
    its table- and column-wise shards are the `busiest` bound, table-row-wise tables 1/G of the
    busiest node's (`with_table_row_wise` beside the former), row-wise tables are split evenly
    over all ranks, data-parallel tables are whole on every rank."""
    n = figures.gpus
    rw = sum(t.storage_bytes for t in workload.sharded("row-wise"))
    dp = sum(t.storage_bytes for t in workload.sharded("data-parallel"))
    nodes, g = twrw_nodes(figures)
    tw = [(t.rows * math.fsum(shard_row(workload, t)[1:]), t.count * column_shards(t))
          for t in workload.sharded("table-wise", "column-wise")]
    twrw = [(t.rows * t.row_bytes / g, t.count) for t in workload.sharded("table-row-wise")]
    indivisible = with_table_row_wise((table_wise_shards(workload, n).storage_bytes, math.fsum(w * c for w, c in tw) / n),
                                      per_node(twrw, nodes))
    return indivisible + rw / n + dp


def _fill_tiers(figures: Figures, workload: Workload, ranks: int, need: float,
                tiers_given: list[tuple[str, float, float, float]], holders: str) -> dict[str, Any]:
    """The placement document: `need` bytes filled into `tiers_given` (name, capacity, read and
    update bandwidth) in order, a tier without bandwidth skipped. E401 when they do not hold it."""
    left = need
    tiers: list[dict[str, Any]] = []
    for name, capacity, read, update in tiers_given:
        stored = min(left, capacity) if read > 0 else 0.0
        left -= stored
        tiers.append({"tier": name, "capacity_bytes": capacity, "stored_bytes": stored,
                      "fraction": stored / need if need else (1.0 if not tiers else 0.0),
                      "bandwidth_bytes_per_s": read, "update_bandwidth_bytes_per_s": update,
                      "access_bytes": ACCESS_BYTES[name]})
    rank = "CPU socket" if workload.placement == "cpu-host" else "GPU"
    if left > max(1.0, need * 1e-12):
        have = sum(t["stored_bytes"] for t in tiers)
        raise _error(workload, ("embeddings", "tables"), Code.TABLES_DO_NOT_FIT,
                     f"the embedding tables need {rf.gib(int(need))} per {rank} on {figures.name} ({ranks} {rank}s), "
                     f"but {holders} hold {rf.gib(int(have))}",
                     "use more GPUs, a smaller storage precision, or shard data-parallel tables")
    return {"need_bytes_per_gpu": need, "tiers": tiers, "on": workload.placement, "rank": rank}


# ---------------------------------------------------------------- cpu-host placement


def host_figures(figures: Figures) -> Figures:
    """The CPU sockets as the ranks that store and look up the tables (`cpu-host` placement): S
    per node (N x S in all), each with 1/S of its node's host DDR (capacity and bandwidth) in the
    place of HBM (where its ids and pooled outputs live too), 1/S of the node's SSDs, and 1/S of
    the node's NIC injection (G GPUs' shares: the NICs are the node's, whoever drives them)."""
    s, g = max(figures.sockets_per_node, 1), figures.gpus_per_node
    return dataclasses.replace(
        figures, gpus=figures.nodes * s, gpus_per_node=s,
        hbm_capacity=figures.host_memory_capacity / s, hbm_bandwidth=figures.host_memory_bandwidth / s,
        ddr_capacity=0.0, ddr_bandwidth=0.0, ssd_capacity=figures.ssd_capacity * g / s, ssd_bandwidth=figures.ssd_bandwidth * g / s,
        nic_bandwidth=figures.nic_bandwidth * g / s, injection_bandwidth=figures.injection_bandwidth * g / s)


def host_workload(workload: Workload, figures: Figures) -> Workload:
    """`workload` with its batch stated globally (the GPUs' global batch), so that the CPU
    sockets of `host_figures` split the same samples."""
    return dataclasses.replace(workload, batch_global=round(workload.global_batch(figures.gpus)), batch_per_gpu=None)


def host_placement(figures: Figures, workload: Workload) -> dict[str, Any]:
    """`cpu-host` placement: the busiest socket's share (`storage_need` over the N x S sockets of
    `host_figures`) in its DDR, then in its share of the node's SSDs (read by the CPU: no PCIe
    in between). DDR serves reads and writes from one figure. E401 when the node has no host DDR
    of its own (an APU) or the tables do not fit."""
    hf = host_figures(figures)
    hw = host_workload(workload, figures)
    if hf.hbm_bandwidth <= 0:
        raise _error(workload, ("embeddings", "placement"), Code.TABLES_DO_NOT_FIT,
                     f"embeddings.placement: cpu-host needs host DDR, but {figures.name}'s nodes have none of their own",
                     "use placement: gpu")
    return _fill_tiers(hf, hw, hf.gpus, storage_need(hf, hw), [
        ("host_ddr", hf.hbm_capacity, hf.hbm_bandwidth, hf.hbm_bandwidth),
        ("ssd", hf.ssd_capacity, hf.ssd_bandwidth, hf.ssd_bandwidth)], "host DDR and SSD")


def _tier_mix(place: dict[str, Any]) -> str:
    if "cache" in place:
        hits = ", ".join(f"{g['table']} {rf.number(100 * g['hit_rate'])}%" for g in place["cache"]["groups"])
        return f"HBM cache hits {hits}, misses from {_uncached_mix({'tiers': place['cache']['backing']})}"
    return _uncached_mix(place)


def _uncached_mix(place: dict[str, Any]) -> str:
    used = [t for t in place["tiers"] if t["fraction"] > 0]
    if len(used) == 1:
        return f"{used[0]['tier']} {rf.gbps(used[0]['bandwidth_bytes_per_s'])}"
    return " / ".join(f"{rf.number(100 * t['fraction'])}% {t['tier']}" for t in used)


def _row_traffic(place: dict[str, Any], nbytes: float, update: bool) -> tuple[float, float]:
    """(bytes, seconds) of one lookup of a row part of `nbytes`, averaged over the tiers by the
    fraction each stores: rounded up to the tier's access size, read (and written back when
    `update`, at the tier's update bandwidth)."""
    moved = seconds = 0.0
    for tier in place["tiers"]:
        if tier["fraction"] > 0:
            amount = touched(nbytes, tier["access_bytes"]) * (2 if update else 1)
            rate = tier["update_bandwidth_bytes_per_s" if update else "bandwidth_bytes_per_s"]
            moved += tier["fraction"] * amount
            seconds += tier["fraction"] * amount / rate
    return moved, seconds


def row_parts_traffic(place: dict[str, Any], table: Table, weights: float, state: float,
                      backward: bool) -> list[tuple[float, float]]:
    """(bytes, seconds) of one lookup's row parts: forward its weights, backward its weights and
    optimizer state, updated. A cached table (`cached_placement`) goes through its HBM cache
    (`hwspec.perf.cache.cached_row_traffic`: the weights fetched on a miss forward, the state
    backward, both written back on eviction); any other through the tier mix (`_row_traffic`)."""
    cache = place.get("cache")
    if table.cache is None or cache is None:
        return [_row_traffic(place, weights, backward)] + ([_row_traffic(place, state, True)] if backward else [])
    hit, hbm, backing = cache["hit_rates"][table.name], place["tiers"][0], cache["backing"]
    if not backward:
        return [cached_row_traffic(hbm, backing, hit, weights, fetch=True, update=False)]
    return [cached_row_traffic(hbm, backing, hit, weights, fetch=False, update=True),
            cached_row_traffic(hbm, backing, hit, state, fetch=True, update=True)]


@dataclass(frozen=True)
class LookupWork:
    """One GPU's embedding work on one shard: rows from wherever the tables live, ids and
    pooled outputs (or their gradients) in HBM. Amounts are bytes, times seconds."""

    bytes: float
    seconds: float


def lookup_work(figures: Figures, workload: Workload, place: dict[str, Any], table: Table,
                row_samples: float, pooled_samples: float, backward: bool) -> LookupWork:
    """The work of one shard of `table`: `row_samples` samples' ids looked up (each `pooling`
    rows read; read and written back with their optimizer state when `backward`) and
    `pooled_samples` pooled rows written forward (their gradients read backward), with one
    length per pooled sample. Row traffic follows `_row_traffic`; ids, lengths and pooled rows
    are in HBM."""
    dim, weights, state = shard_row(workload, table)
    rows = row_parts_traffic(place, table, weights, state, backward)
    pooled_bytes = DTYPE_BYTES[workload.comm_backward if backward else workload.comm_forward]
    row_bytes = row_samples * table.pooling * math.fsum(b for b, _ in rows)
    row_seconds = row_samples * table.pooling * math.fsum(t for _, t in rows)
    hbm = (row_samples * table.pooling * DTYPE_BYTES[workload.index_dtype]
           + pooled_samples * (LENGTH_BYTES + dim * pooled_bytes))
    hbm_seconds = hbm / figures.hbm_bandwidth if figures.hbm_bandwidth > 0 else 0.0
    return LookupWork(row_bytes + hbm, row_seconds + hbm_seconds)


def embedding_work(figures: Figures, workload: Workload, place: dict[str, Any], backward: bool) -> LookupWork:
    """The busiest GPU's lookup (or update) work: `busiest` over the table- and column-wise
    shards (each serves the global batch B) beside the table-row-wise tables of the busiest node
    (each GPU 1/G of a table's ids of the global batch, B pooled partial sums: `with_table_row_wise`),
    plus every row-wise table's 1/n of the ids of the global batch with B pooled partial sums,
    plus the data-parallel tables on the local batch."""
    n = figures.gpus
    b, big_b = workload.local_batch(n), workload.global_batch(n)
    indivisible = [(lookup_work(figures, workload, place, t, big_b, big_b, backward), t.count * column_shards(t))
                   for t in workload.sharded("table-wise", "column-wise")]
    even = [lookup_work(figures, workload, place, t, big_b / n, big_b, backward) for t in workload.sharded("row-wise")]
    even += [lookup_work(figures, workload, place, t, b, b, backward) for t in workload.sharded("data-parallel")]
    counts = [t.count for t in workload.sharded("row-wise")] + [t.count for t in workload.sharded("data-parallel")]
    nodes, g = twrw_nodes(figures)
    by_node = [(lookup_work(figures, workload, place, t, big_b / g, big_b, backward), t.count)
               for t in workload.sharded("table-row-wise")]

    def share(field: str) -> float:
        tw = [(getattr(w, field), c) for w, c in indivisible]
        return (with_table_row_wise((busiest(tw, n), math.fsum(w * c for w, c in tw) / n),
                                    per_node([(getattr(w, field), c) for w, c in by_node], nodes))
                + math.fsum(getattr(w, field) * c for w, c in zip(even, counts)))

    return LookupWork(share("bytes"), share("seconds"))


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


def input_alltoall_bytes(figures: Figures, workload: Workload, shards: Shards) -> tuple[float, str]:
    """The input AlltoAll's buffer S for the busiest rank and what it is. Every GPU sends the ids
    and lengths of its local batch to the shards' owners; the busiest receiver gets, for the
    global batch, the ids of its table- and column-wise shards (`Shards.ids_bytes_per_sample`)
    beside 1/G of the ids of the busiest node's table-row-wise tables (`with_table_row_wise`),
    1/n of the ids of every row-wise table, and a length per sample of each. The collective ends
    when the larger of the busiest receiver's and a sender's bytes has moved."""
    n = figures.gpus
    nodes, g = twrw_nodes(figures)
    b, big_b = workload.local_batch(n), workload.global_batch(n)
    s_idx = DTYPE_BYTES[workload.index_dtype]
    mp = workload.sharded("table-wise", "row-wise", "column-wise", "table-row-wise")
    sent = b * math.fsum(t.count * column_shards(t) * ids_bytes(workload, t) for t in mp)
    tw_average = math.fsum(t.count * column_shards(t) * ids_bytes(workload, t)
                           for t in workload.sharded("table-wise", "column-wise")) / n
    twrw = per_node([(t.pooling * s_idx / g + LENGTH_BYTES, t.count) for t in workload.sharded("table-row-wise")], nodes)
    received = big_b * (with_table_row_wise((shards.ids_bytes_per_sample, tw_average), twrw) + math.fsum(
        t.count * (t.pooling * s_idx / n + LENGTH_BYTES) for t in workload.sharded("row-wise")))
    if not sent:
        return 0.0, ""
    if received > sent:
        return received, f"the busiest receiver: {rf.number(received / sent)}x what each GPU sends"
    return sent, "what each GPU sends (no receiver gets more)"


def cross_node_alltoall_algbw(figures: Figures) -> float:
    """algbw of an AlltoAll among the N GPUs of one local rank, one per node (TorchRec's
    table-row-wise cross-node group): each sends (N-1)/N of its buffer over its NIC share, so
    S / t = N B_inj / (N-1); 0 on one node (nothing crosses) or with no injection bandwidth."""
    nodes = figures.nodes
    if nodes <= 1 or figures.injection_bandwidth <= 0:
        return 0.0
    return nodes * figures.injection_bandwidth / (nodes - 1)


def intra_node_algbw(figures: Figures, collective: str) -> float:
    """The node's intra-node algbw bound for `collective` (`Figures.intra_algbw`); a Figures
    record without it (built by hand) falls back to its `algbw`, which on a node is the same and
    on a cluster is never faster."""
    return figures.intra_algbw.get(collective) or figures.algbw.get(collective, 0.0)


@dataclass(frozen=True)
class TableRowWiseExchange:
    """The busiest node's pooled-embedding exchange per GPU, bytes per element of the wire dtype:
    `intra` the intra-node ReduceScatter's (forward) or AllGather's (backward) buffer, B x D;
    `cross` the cross-node AlltoAll's, B/G x D (D = the busiest node's sum of dims)."""

    intra: float
    cross: float


def table_row_wise_exchange(figures: Figures, workload: Workload) -> TableRowWiseExchange:
    """`TableRowWiseExchange` of the table-row-wise tables (zero without any): TorchRec's
    TwRwPooledEmbeddingDist reduce-scatters the node's B x D partial sums within the node (each
    GPU keeps B/G samples: its local rank's samples of every node), then AlltoAlls them among the
    N GPUs of that local rank, sending B/G x D; backward an AlltoAll then an AllGather."""
    nodes, g = twrw_nodes(figures)
    big_b = workload.global_batch(figures.gpus)
    dims = busiest([(float(t.dim), t.count) for t in workload.sharded("table-row-wise")], nodes)
    return TableRowWiseExchange(big_b * dims, big_b / g * dims if nodes > 1 else 0.0)


def ingestion_term(figures: Figures, inputs: float) -> Term:
    """Input ingestion over the network. Where the collectives' NICs are the ingestion NICs
    (Zion: CPU NICs, no backend network), both are charged to one resource, the collective
    network, and ingestion moves at the GPU's full share of those NICs between the collectives;
    otherwise it has its own NICs and its own resource at the ingestion share."""
    if figures.ingestion_on_collective_nics:
        return _term("ingestion", inputs, "bytes", figures.nic_bandwidth,
                     f"the collectives' NICs, per GPU {rf.gbps(figures.nic_bandwidth)}",
                     "shares the NICs with the collectives: charged in series with them", resource="network")
    return _term("ingestion", inputs, "bytes", figures.ingestion_bandwidth,
                 f"ingestion share per GPU {rf.gbps(figures.ingestion_bandwidth)}" if figures.ingestion_bandwidth
                 else "no ingestion bandwidth stated: not bounded")


def time_to_train_seconds(samples_to_converge: float | None, qps: float | None) -> float | None:
    """Seconds to train on `samples_to_converge` samples at `qps` samples/s, any of the
    estimate's QPS figures (from a QPS bound, a lower bound on the time); None when either is
    unknown. Whole iterations are not rounded up: one iteration is far below the error."""
    if not samples_to_converge or not qps:
        return None
    return samples_to_converge / qps


def pooled_term(tid: str, parts: list[tuple[str, float, float, str]], default_bound: str) -> Term:
    """A pooled-embedding term from its collectives, each (what, buffer bytes S, algbw, what
    bounds it): they run one after another, so the seconds add (a part with S or algbw 0 is left
    out); the term's rate is the effective one, its amount the sum of the buffers."""
    used = [part for part in parts if part[1] > 0 and part[2] > 0]
    seconds = math.fsum(nbytes / rate for _, nbytes, rate, _ in used)
    amount = math.fsum(nbytes for _, nbytes, _, _ in used)
    label, resource = next((label, res) for i, label, res in TERMS if i == tid)
    return Term(tid, label, resource, seconds, amount, "bytes", amount / seconds if seconds else 0.0,
                "; ".join(bound for *_, bound in used) or default_bound,
                "; ".join(f"{what} of {rf.gib(int(nbytes))} at {rf.gbps(rate)}" for what, nbytes, rate, _ in used))


@dataclass(frozen=True)
class Crossing:
    """Bytes per rank of each embedding exchange's buffers that cross nodes under the
    hierarchical algorithm (`inter_node_share`): the input ids, the pooled embeddings forward
    and their gradients backward."""

    input: float
    forward: float
    backward: float


def crossing_bytes(figures: Figures, workload: Workload, ids: float, shards: Shards, twrw: TableRowWiseExchange) -> Crossing:
    """`Crossing` of the exchanges on `figures`' ranks: the input AlltoAll's buffer `ids` and the
    table/column-wise AlltoAll's at the AlltoAll's share, row-wise tables' ReduceScatter forward
    and AllGather backward at theirs, the table-row-wise cross-node AlltoAll's (N-1)/N."""
    big_b, nodes = workload.global_batch(figures.gpus), figures.nodes
    a2a = inter_node_share(figures, "all_to_all")
    rw_dims = sum(t.count * t.dim for t in workload.sharded("row-wise"))

    def pooled(s_comm: float, reduction: str) -> float:
        return s_comm * (big_b * shards.dims * a2a + big_b * rw_dims * inter_node_share(figures, reduction)
                         + twrw.cross * (nodes - 1) / nodes)

    return Crossing(ids * a2a, pooled(DTYPE_BYTES[workload.comm_forward], "reduce_scatter"),
                    pooled(DTYPE_BYTES[workload.comm_backward], "all_gather"))


def _embedding_terms(figures: Figures, workload: Workload, place: dict[str, Any], resource: str) -> list[Term]:
    """Lookups forward and update backward of the busiest rank of `figures` (`embedding_work`):
    ids read, rows read in whole access units, pooled rows written forward; backward, rows and
    optimizer state read and written back; data-parallel tables' dense optimizer step."""
    mix = _tier_mix(place)
    fwd = embedding_work(figures, workload, place, backward=False)
    bwd = embedding_work(figures, workload, place, backward=True)
    dp_update = sum(2 * t.storage_bytes for t in workload.sharded("data-parallel"))
    dp_seconds = math.fsum(tier["fraction"] * dp_update / tier["update_bandwidth_bytes_per_s"]
                           for tier in place["tiers"] if tier["fraction"] > 0)
    where = "; on the busiest CPU socket (cpu-host)" if resource == "host" else ""
    return [_work_term("embedding_fwd", fwd.bytes, fwd.seconds, mix, "ids, rows in whole access units, pooled outputs" + where,
                       resource),
            _work_term("embedding_bwd", bwd.bytes + dp_update, bwd.seconds + dp_seconds, mix,
                       "ids, rows and optimizer state read and written back, output gradients"
                       + ("; the dense optimizer step of the data-parallel tables" if dp_update else "") + where, resource)]


def _gpu_exchange_terms(figures: Figures, workload: Workload, ids: float, ids_detail: str, shards: Shards,
                        twrw: TableRowWiseExchange) -> list[Term]:
    """The input AlltoAll (done when the busiest receiver is: `input_alltoall_bytes`) and the
    pooled embeddings among the GPUs: TW/CW by AlltoAll, finished when the busiest sender is
    (S = global batch x its dims), RW by ReduceScatter forward and AllGather backward (S = global
    batch x dims), TWRW by the same within the busiest node then an AlltoAll across nodes
    (`table_row_wise_exchange`)."""
    big_b = workload.global_batch(figures.gpus)
    a2a = _collective(figures, "all_to_all")
    a2a_name = f"all_to_all algbw {rf.gbps(a2a)} ({figures.collectives_scope})"
    terms = [_term("input_alltoall", ids, "bytes", a2a, a2a_name, ids_detail)]
    rw_dims = sum(t.count * t.dim for t in workload.sharded("row-wise"))
    cross = cross_node_alltoall_algbw(figures)
    for tid, s_comm, rw_collective in (("embedding_alltoall_fwd", DTYPE_BYTES[workload.comm_forward], "reduce_scatter"),
                                       ("embedding_alltoall_bwd", DTYPE_BYTES[workload.comm_backward], "all_gather")):
        rw_rate, intra = _collective(figures, rw_collective), intra_node_algbw(figures, rw_collective)
        terms.append(pooled_term(tid, [
            ("table/column-wise: AlltoAll", big_b * shards.dims * s_comm, a2a, a2a_name),
            (f"row-wise: {rw_collective}", big_b * rw_dims * s_comm, rw_rate, f"{rw_collective} algbw {rf.gbps(rw_rate)}"),
            (f"table-row-wise: intra-node {rw_collective}", twrw.intra * s_comm, intra,
             f"intra-node {rw_collective} algbw {rf.gbps(intra)}"),
            ("table-row-wise: cross-node AlltoAll", twrw.cross * s_comm, cross,
             f"cross-node all_to_all algbw {rf.gbps(cross)} (N x NIC share / (N-1))"),
        ], a2a_name))
    return terms


def _host_exchange_terms(hosts: Figures, crossing: Crossing) -> list[Term]:
    """cpu-host placement: the ids to the sockets that own the tables, and the pooled embeddings
    (gradients backward) between sockets, host to host. Within a node they move through host
    memory (not charged); across nodes the busiest socket's `crossing` bytes go over its share of
    the node's NICs (`host_figures`), the same share a hierarchical AlltoAll's algbw comes from."""
    rate = hosts.injection_bandwidth
    bound = f"a CPU socket's share of its node's NICs {rf.gbps(rate)}"
    detail = "host to host across nodes (within a node through host memory, not charged)"
    return [_term("input_alltoall", crossing.input, "bytes", rate, bound, "ids to the sockets that own the tables; " + detail),
            _term("embedding_alltoall_fwd", crossing.forward, "bytes", rate, bound, detail),
            _term("embedding_alltoall_bwd", crossing.backward, "bytes", rate, bound, detail)]


def pooled_host_transfer(figures: Figures, workload: Workload, inputs: float) -> Term:
    """cpu-host placement: every GPU receives its local batch's pooled embeddings from the host
    (b x sum(count x dim) x forward dtype, host to device) and sends their gradients back (x
    backward dtype, device to host). PCIe is full duplex: the forward direction also carries the
    `inputs` copy, so this term adds max(inputs + forward, backward) - inputs bytes' time."""
    if workload.placement != "cpu-host":
        return _work_term("pooled_host_transfer", 0.0, 0.0, "embeddings on the GPUs: none", "")
    pcie = figures.pcie_host_shared_bandwidth
    width = sum(t.count * t.dim for t in workload.tables) * workload.local_batch(figures.gpus)
    forward, backward = width * DTYPE_BYTES[workload.comm_forward], width * DTYPE_BYTES[workload.comm_backward]
    seconds = (max(inputs + forward, backward) - inputs) / pcie if pcie > 0 else 0.0
    return _work_term("pooled_host_transfer", forward + backward, seconds, f"PCIe host link, each direction {rf.gbps(pcie)}",
                      "pooled embeddings host to device, their gradients device to host (full duplex)")


def _terms(figures: Figures, workload: Workload) -> tuple[list[Term], dict[str, Any], Shards]:
    """Every term of `workload` on `figures`, the placement and the table-wise shards. With
    `cpu-host` placement the embedding side (lookups, shards, ids and pooled exchanges) is
    computed by the same functions on the CPU sockets (`host_figures`)."""
    assert not workload.sharded(AUTO), "plan the workload first: hwspec.perf.planner.plan"
    n = figures.gpus
    b = workload.local_batch(n)
    dtype = workload.compute_dtype
    peak = figures.peak_flop_per_s.get(dtype, 0.0)
    place = placement(figures, workload)
    cpu_host = workload.placement == "cpu-host"
    ranks, ranked = (host_figures(figures), host_workload(workload, figures)) if cpu_host else (figures, workload)
    s_idx, s_ar = DTYPE_BYTES[workload.index_dtype], DTYPE_BYTES[workload.comm_allreduce]
    shards = table_wise_shards(ranked, ranks.gpus)
    terms = _embedding_terms(ranks, ranked, place, "host" if cpu_host else "gpu")

    # MLPs and interaction: 2 x in x out FLOPs per layer per sample forward, twice that backward.
    flops = b * (workload.mlp_flops_per_sample + workload.interaction_flops_per_sample)
    bound = f"{dtype} dense peak {rf.number(peak / 1e12)} TFLOPS"
    terms.append(_term("mlp_fwd", flops, "flop", peak, bound))
    terms.append(_term("mlp_bwd", 2 * flops, "flop", peak, bound))

    ids, ids_detail = input_alltoall_bytes(ranks, ranked, shards)
    twrw = table_row_wise_exchange(ranks, ranked)
    crossing = crossing_bytes(ranks, ranked, ids, shards, twrw)
    terms += (_host_exchange_terms(ranks, crossing) if cpu_host
              else _gpu_exchange_terms(figures, workload, ids, ids_detail, shards, twrw))

    # Dense gradients: MLP and interaction (DCNv2 cross layers) weights and biases, and every data-parallel table.
    dense = workload.dense_parameters * s_ar + sum(t.count * t.rows * t.dim * s_ar for t in workload.sharded("data-parallel"))
    ar = _collective(figures, "all_reduce")
    terms.append(_term("dense_allreduce", dense, "bytes", ar, f"all_reduce algbw {rf.gbps(ar)} ({figures.collectives_scope})"))

    # Input: dense features, labels, and (unless the CPUs take them: cpu-host) ids and lengths of the local batch.
    ids_in = 0.0 if cpu_host else sum(t.count * (t.pooling * s_idx + LENGTH_BYTES) for t in workload.tables)
    inputs = b * (workload.dense_features * DENSE_INPUT_BYTES + LABEL_BYTES + ids_in)
    terms.append(_term("host_to_device", inputs, "bytes", figures.pcie_host_shared_bandwidth,
                       f"host link (PCIe, or NVLink-C2C), all GPUs at once {rf.gbps(figures.pcie_host_shared_bandwidth)}"))
    terms.append(pooled_host_transfer(figures, workload, inputs))

    # Without GPUDirect RDMA, the inter-node part of every GPU collective crosses the PCIe host link.
    staged = 0.0
    if not figures.gpudirect and figures.nodes > 1:
        gpu_side = 0.0 if cpu_host else crossing.input + crossing.forward + crossing.backward
        staged = gpu_side + dense * inter_node_share(figures, "all_reduce")
    terms.append(_term("host_staging", staged, "bytes", figures.pcie_host_shared_bandwidth,
                       "PCIe host link (no GPUDirect RDMA)" if staged else "GPUDirect RDMA: not staged",
                       "the inter-node share of the collectives above, bounced through host memory" if staged else ""))
    # cpu-host: the ids and the features are read by the hosts; ingestion is the same bytes either way.
    terms.append(ingestion_term(figures, inputs + (0.0 if not cpu_host else b * sum(
        t.count * (t.pooling * s_idx + LENGTH_BYTES) for t in workload.tables))))
    return terms, place, shards


def estimate(figures: Figures, workload: Workload) -> dict[str, Any]:
    """The estimate document: terms, resources, serial and overlapped times and QPS bounds, the
    bottleneck, the expected iteration (`expected`; `qps_expected <= qps_overlapped`) and the
    sharding `plan`, per table group: stated, or chosen by `hwspec.perf.planner` for the groups
    the workload leaves `auto`. Raises HwspecError for a workload the platform cannot run (E401
    tables do not fit, E402 no peak for the compute dtype)."""
    planned = plan(figures, workload, estimate_plan)
    return estimate_plan(figures, planned.workload) | {"plan": planned.groups}


TABLE_TERMS = ("embedding_fwd", "embedding_bwd", "input_alltoall", "embedding_alltoall_fwd", "embedding_alltoall_bwd")
"""The terms `table_terms` gives per table: the ones a sharding planner costs per shard."""


def table_terms(figures: Figures, workload: Workload, table: Table) -> tuple[dict[str, Term], float]:
    """One table of `table`'s group on its own, as a per-shard planner (TorchRec's) costs it:
    the `TABLE_TERMS` of the estimate of `workload` with that one table (count 1, its sharding)
    as its only table, and the bytes it stores per rank (weights and optimizer state). The
    terms are the estimate's own (`_terms`), not a second formula: a table-wise table is the
    busiest GPU's whole embedding work and the busiest receiver's whole exchange. Its tiers are
    where the table alone would be placed, which differs from the whole workload's only when
    the workload's tables spill out of HBM. Raises HwspecError as the estimate does (E401)."""
    one = dataclasses.replace(workload, tables=(dataclasses.replace(table, count=1),))
    terms, place, _ = _terms(figures, one)
    return {t.id: t for t in terms if t.id in TABLE_TERMS}, place["need_bytes_per_gpu"]


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


# ---------------------------------------------------------------- the expected iteration


def achievable(figures: Figures) -> Figures:
    """`figures` with every rate at its calibrated achieved fraction (`hwspec.perf.calibration`):
    HBM, GEMM peaks, the PCIe host link, NICs by transport (ingestion over TCP), and the
    collective algbw bounds phase by phase (`achieved_algbw`). Capacities, DDR and SSD (no cited
    measurement; behind PCIe when spilled) are unchanged. Every factor is in (0, 1]."""
    intra = intra_node_efficiency(figures)
    network = cal.network_efficiency(figures.transport)
    pcie, tcp = cal.value("pcie_efficiency"), cal.value("tcp_efficiency")
    return dataclasses.replace(
        figures,
        peak_flop_per_s={k: v * cal.value("gemm_efficiency") for k, v in figures.peak_flop_per_s.items()},
        hbm_bandwidth=figures.hbm_bandwidth * cal.value("hbm_efficiency"),
        pcie_host_bandwidth=figures.pcie_host_bandwidth * pcie,
        pcie_host_shared_bandwidth=figures.pcie_host_shared_bandwidth * pcie,
        nic_bandwidth=figures.nic_bandwidth * (tcp if figures.ingestion_on_collective_nics else network),
        injection_bandwidth=figures.injection_bandwidth * network,
        ingestion_bandwidth=figures.ingestion_bandwidth * tcp,
        algbw={k: achieved_algbw(figures, k) for k in figures.algbw},
        intra_algbw={k: v * intra for k, v in figures.intra_algbw.items()},
    )


def intra_node_efficiency(figures: Figures) -> float:
    """Achieved fraction of the intra-node link: NVLink's (`cal.nvlink_efficiency`), else PCIe's."""
    return cal.nvlink_efficiency(figures.fabric_kinds) if figures.nvlink_bandwidth > 0 else cal.value("pcie_efficiency")


def achieved_algbw(figures: Figures, collective: str) -> float:
    """The achieved algbw of `collective`: each hierarchical phase (`Figures.collective_phases`)
    at its own link's efficiency, the intra-node phase at the NVLink (or PCIe) one and the
    inter-node phase at the network's, and the slower phase bounds (NCCL pipelines them):
    1 / max(t_intra / e_intra, t_inter / e_network). On one node the intra-node efficiency; a
    cluster without phases (a Figures built by hand) takes the lower of the two."""
    bound = figures.algbw[collective]
    intra, network = intra_node_efficiency(figures), cal.network_efficiency(figures.transport)
    if figures.nodes <= 1:
        return bound * intra
    phases = figures.collective_phases.get(collective)
    if not phases:
        return bound * min(intra, network)
    seconds_per_byte = max(phases["intra"] / intra, phases["inter"] / network)
    return 1 / seconds_per_byte if seconds_per_byte > 0 else bound


def protocol_latency(figures: Figures, collective: str, protocol: cal.Protocol) -> float:
    """Latency of one collective under one NCCL (algorithm, protocol), seconds, as NCCL's cost
    model computes it: Ring: base + (steps - inter) x intra-node step + inter x network step,
    steps = 2(n-1), inter = 2(N-1) for AllReduce (x 1.9 for Ring/Simple across nodes), n-1 and
    N-1 for AllGather and ReduceScatter; Tree (AllReduce): base + 2((G-1) x intra-node step +
    log2(N) x network step). AlltoAll: `alltoall_latency`."""
    n, nodes, g = figures.gpus, figures.nodes, figures.gpus_per_node
    intra = protocol.nvlink if figures.nvlink_bandwidth > 0 else protocol.pcie
    if collective == "all_to_all":
        return alltoall_latency(figures, protocol)
    if protocol.algorithm == "Tree":
        return protocol.base + 2 * ((g - 1) * intra + math.log2(nodes) * protocol.net)
    steps, inter = (2 * (n - 1), 2 * (nodes - 1)) if collective == "all_reduce" else (n - 1, nodes - 1)
    latency = protocol.base + (steps - inter) * intra + inter * protocol.net
    plateau = collective == "all_reduce" and nodes > 1 and protocol.protocol == "Simple"
    return latency * (cal.value("nccl_multinode_allreduce_factor") if plateau else 1.0)


def alltoall_latency(figures: Figures, protocol: cal.Protocol) -> float:
    """Latency of one AlltoAll, seconds: base + one step over the slowest link a peer is reached
    by (the network's on a cluster, else NVLink's or PCIe's). NCCL runs an AlltoAll as grouped
    sends and receives to every peer in one kernel (src/enqueue.cc: p2p rounds, up to
    NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8 per batch, batches spread over the p2p channels, which
    run at once), so the peers' transfers overlap instead of following each other as a ring's
    n-1 steps do. nccl-tests alltoall_perf on 8 GPUs over NVLink measures 10.6 us at 128 bytes
    (`alltoall_latency_8_nvlink`) against base + NVLink step = 11.8 us for Ring/Simple."""
    if figures.nodes > 1:
        return protocol.base + protocol.net
    return protocol.base + (protocol.nvlink if figures.nvlink_bandwidth > 0 else protocol.pcie)


def collective_seconds(figures: Figures, collective: str, bandwidth_seconds: float) -> tuple[float, str]:
    """Time of one collective call whose Ring/Simple transfer takes `bandwidth_seconds` at the
    achieved algbw: NCCL's choice, the (algorithm, protocol) with the least latency +
    bandwidth_seconds / its bandwidth fraction, and its name."""
    if figures.gpus <= 1:
        return bandwidth_seconds, "none"
    options = [(protocol_latency(figures, collective, p) + bandwidth_seconds / p.bandwidth, f"{p.algorithm}/{p.protocol}")
               for p in cal.NCCL_PROTOCOLS if p.algorithm == "Ring" or collective == "all_reduce"]
    return min(options)


def collectives_per_iteration(workload: Workload, term: Term, nodes: int = 1) -> dict[str, int]:
    """The NCCL collectives a network term issues per iteration on `nodes` nodes: one AlltoAll per
    exchange (and a ReduceScatter / AllGather for row-wise tables); table-row-wise tables their
    own intra-node ReduceScatter / AllGather and, across nodes, their own AlltoAll (TorchRec's
    output dist per sharding type); the dense gradients in DDP buckets of 25 MiB."""
    if term.amount <= 0 or term.resource != "network" or term.id == "ingestion":
        return {}
    if term.id == "dense_allreduce":
        return {"all_reduce": math.ceil(term.amount / cal.value("allreduce_bucket_bytes"))}
    if term.id == "input_alltoall":
        return {"all_to_all": 1}
    counts = {}
    if workload.sharded("table-wise", "column-wise"):
        counts["all_to_all"] = 1
    reduction = "reduce_scatter" if term.id == "embedding_alltoall_fwd" else "all_gather"
    if workload.sharded("row-wise"):
        counts[reduction] = 1
    if workload.sharded("table-row-wise"):
        counts[reduction] = counts.get(reduction, 0) + 1
        if nodes > 1:
            counts["all_to_all"] = counts.get("all_to_all", 0) + 1
    return counts


def kernels_per_iteration(workload: Workload, term: Term) -> int:
    """Kernels a GPU term launches per iteration: forward a GEMM and an activation per MLP layer
    and the interaction, backward two GEMMs (input and weight gradients) and an activation
    gradient per layer and the interaction's gradient; one fused lookup kernel forward and one
    fused update backward (FBGEMM's batched tables, the paper's kernel fusion), and the dense
    tables' optimizer step."""
    layers = len(workload.bottom_mlp) - 1 + len(workload.top_mlp) - 1
    if term.amount <= 0 or term.resource != "gpu":  # cpu-host lookups run on the CPUs
        return 0
    return {"mlp_fwd": 2 * layers + 1, "mlp_bwd": 3 * layers + 1, "embedding_fwd": 1,
            "embedding_bwd": 1 + (1 if workload.sharded("data-parallel") else 0)}.get(term.id, 0)


PIPELINE = ("embedding_alltoall_fwd", "embedding_alltoall_bwd", "pooled_host_transfer")
"""Terms on the GPU's critical path besides its own: the pooled embeddings must arrive before
the interaction, and their gradients before the embedding update (with cpu-host placement also
across PCIe, and the host's lookups and updates: the whole `host` resource). The input AlltoAll
of batch i+1 overlaps batch i's top MLP when the workload is pipelined (`pipeline: true`, the
paper's pipelining; otherwise it is on the path too) and the dense AllReduce overlaps the
backward pass, so they only load the network."""


def expected(figures: Figures, workload: Workload) -> dict[str, Any]:
    """The expected iteration: every term on `achievable(figures)`, each collective call at NCCL's
    cost model (`collective_seconds`: its latency, and a protocol's bandwidth fraction) and a
    launch overhead per kernel; the resources overlap as the bound's
    do, except that the GPU waits for the pooled-embedding AlltoAlls (`PIPELINE`), so the
    iteration is max(GPU + those AlltoAlls, every resource). Never shorter than the overlapped
    bound: every rate is at most the bound's and every added time is >= 0."""
    derated, _, _ = _terms(achievable(figures), workload)
    launch = cal.value("kernel_launch_overhead")
    rows: list[dict[str, Any]] = []
    for term in derated:
        counts = collectives_per_iteration(workload, term, figures.nodes)
        calls = sum(counts.values())
        communication, algorithms = 0.0, dict[str, str]()
        for name, c in counts.items():
            # the term's transfer time is split evenly over its calls (one size per term)
            seconds, algorithms[name] = collective_seconds(figures, name, term.seconds / calls)
            communication += c * seconds
        latency = communication - term.seconds if calls else 0.0
        kernels = kernels_per_iteration(workload, term)
        rows.append({"id": term.id, "resource": term.resource, "bandwidth_seconds": term.seconds,
                     "latency_seconds": latency, "kernels": kernels, "launch_seconds": kernels * launch,
                     "collectives": counts, "algorithms": algorithms, "seconds": term.seconds + latency + kernels * launch})
    resources = {r: math.fsum(row["seconds"] for row in rows if row["resource"] == r) for r in RESOURCES}
    critical = critical_path(workload, rows, resources)
    iteration = max(critical, *resources.values())
    return {"terms": rows, "resources_seconds": resources, "critical_path_seconds": critical,
            "iteration_seconds": iteration,
            "bound_by": ("critical path (GPU + pooled-embedding AlltoAlls)" if workload.placement == "gpu" else
                         "critical path (GPU + host lookups + pooled-embedding exchanges)") if iteration == critical
                        else RESOURCES[max(RESOURCES, key=lambda r: resources[r])],
            "method": ("terms at calibrated achieved rates (hwspec.perf.calibration), each collective call at NCCL's "
                       "latency/bandwidth model (the best algorithm and protocol), + launch overhead per kernel; "
                       "iteration = max(GPU + host + pooled-embedding exchanges not hidden behind the bottom MLP "
                       "(+ input AlltoAll unless pipelined), each resource)")}


def bottom_mlp_share(workload: Workload) -> float:
    """The bottom MLP's share of the MLP and interaction FLOPs (forward; backward is 2x each)."""
    total = workload.mlp_flops_per_sample + workload.interaction_flops_per_sample
    bottom = sum(2 * i * o for i, o in mlp_layers(workload.bottom_mlp))
    return bottom / total if total else 0.0


def critical_path(workload: Workload, rows: list[dict[str, Any]], resources: dict[str, float]) -> float:
    """The expected iteration's critical path, seconds: the GPU's and the host's work, and the
    exchanges it waits for (`PIPELINE`; the input AlltoAll too unless pipelined). The bottom MLP
    needs no embedding, so the pooled-embedding AlltoAll forward runs beside the bottom MLP's
    forward and the gradient AlltoAll beside its backward (HugeCTR's intra-iteration overlap,
    the paper's overlap of embedding communication with the bottom MLP): each adds
    max(AlltoAll, bottom MLP pass) - bottom MLP pass. The bottom MLP's part of `mlp_fwd` /
    `mlp_bwd` is its FLOP share (`bottom_mlp_share`), launches included."""
    seconds = {row["id"]: row["seconds"] for row in rows}
    waits = PIPELINE if workload.pipeline else (*PIPELINE, "input_alltoall")
    share = bottom_mlp_share(workload) if workload.placement == "gpu" else 0.0
    hidden = {"embedding_alltoall_fwd": share * seconds.get("mlp_fwd", 0.0),
              "embedding_alltoall_bwd": share * seconds.get("mlp_bwd", 0.0)}
    exposed = math.fsum(max(0.0, seconds[tid] - hidden.get(tid, 0.0)) for tid in waits if tid in seconds)
    return resources["gpu"] + resources["host"] + exposed


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


def minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{rf.number(seconds / 60)} min"


def _time_to_train_lines(doc: dict[str, Any]) -> list[str]:
    """The time-to-train line, when the workload states its samples to converge."""
    samples, times = doc.get("samples_to_converge"), doc.get("time_to_train_seconds") or {}
    if not samples:
        return []
    return [f"Time to train ({rf.number(samples / 1e9)} G samples): {minutes(times.get('overlapped'))} at the QPS bound "
            f"with overlap, {minutes(times.get('serial'))} without, {minutes(times.get('expected'))} expected"]


def _plan_lines(groups: list[dict[str, Any]]) -> list[str]:
    """The sharding plan as a table: each group's sharding, planned or stated, and why."""
    out = ["Sharding plan (planned groups: the least expected iteration of their candidates, ties by the serial sum)"]
    out += rf.table(("table group", "tables", "sharding", "shards per table", "why"),
                    ((g["table"], str(g["count"]), g["kind"] + (f" x{g['column_shards']}" if g["column_shards"] else ""),
                      str(g["shards_per_table"]), g["why"]) for g in groups), align="lrlrl")
    return out


def _tier_lines(place: dict[str, Any]) -> list[str]:
    """The tiers the (uncached) tables fill; none to show when every table is cached."""
    if "cache" in place and place["need_bytes_per_gpu"] == place["cache"]["need_bytes"]:
        return ["  every table is cached (below)"]
    return rf.table(("tier", "capacity", "stored", "share", "bandwidth"),
                    ((t["tier"], rf.gib(int(t["capacity_bytes"])), rf.gib(int(t["stored_bytes"])) if t["stored_bytes"] >= 1 else "0",
                      f"{rf.number(100 * t['fraction'])}%", rf.gbps(t["bandwidth_bytes_per_s"]))
                     for t in place["tiers"]))


def _cache_lines(place: dict[str, Any]) -> list[str]:
    """The software cache, when the workload has one: its HBM, its backing tiers, each group's hit rate."""
    cache = place.get("cache")
    if not cache:
        return []
    out = ["", f"Embedding cache in HBM: {rf.gib(int(cache['hbm_bytes']))} in front of {rf.gib(int(cache['need_bytes']))} "
               f"of cached tables, behind it in {_uncached_mix({'tiers': cache['backing']})}"]
    out += rf.table(("table group", "HBM fraction", "skew", "rows cached", "hit rate"),
                    ((g["table"], rf.number(g["hbm_fraction"]), rf.number(g["skew"]), f"{rf.number(100 * g['cached_rows_fraction'])}%",
                      f"{rf.number(100 * g['hit_rate'])}%") for g in cache["groups"]), align="lrrrr")
    return out


def text_report(doc: dict[str, Any]) -> str:
    """The estimate as tables for people (ms, GB/s = 1e9 bytes/s, GiB = 1024^3 bytes)."""
    p, w = doc["platform"], doc["workload"]
    out = [f"{w['name']} on {p['name']}: {p['gpus']} GPUs ({p['nodes']} node(s) x {p['gpus_per_node']}), "
           f"local batch {rf.number(doc['local_batch'])}, global batch {rf.number(doc['global_batch'])}, MLPs in {doc['compute_dtype']}",
           f"workload: {w['file']} ({w['assumptions']} assumption(s)); platform: {p['file']}", "",
           f"Embedding placement per {doc['placement']['rank']} ({doc['placement']['on']}): "
           f"{rf.gib(int(doc['placement']['need_bytes_per_gpu']))}"
           + ("" if doc["pipeline"] else "; not pipelined (the GPU waits for the input AlltoAll)")]
    out += _tier_lines(doc["placement"])
    out += _cache_lines(doc["placement"])
    balance = doc["table_wise_balance"]
    if balance["shards"]:
        out += ["", f"Table-wise balance: {balance['shards']} indivisible table/column shards on {p['gpus']} GPUs; "
                    f"the busiest GPU looks up at least {rf.number(balance['busiest_over_average'])}x the average"]
    if any(group["planned"] for group in doc.get("plan", ())):
        out += ["", *_plan_lines(doc["plan"])]
    if doc.get("sharding_notes"):
        out += ["", *(f"Sharding: {note}" for note in doc["sharding_notes"])]
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
            f"Expected: {ms(doc['iteration_seconds_expected'])} ms per iteration, {qps(doc['qps_expected'])} samples/s "
            f"(achieved rates, latencies, launches; bound by the {doc['expected']['bound_by']})",
            *_time_to_train_lines(doc),
            f"Bottleneck: {bottleneck['resource_name']}, mostly {bottleneck['label']} ({bottleneck['bound_by']})"]
    return "\n".join(out) + "\n"
