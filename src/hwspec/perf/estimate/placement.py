"""Where the busiest rank's tables live: the memory tiers (HBM, host DDR, SSD; `gpu_tiers`,
`ACCESS_BYTES`) filled in order by `storage_need` (`_fill_tiers`, E401 when they do not hold it),
the software cache's split of HBM with its hit rates (`cached_placement`, the hook into
`hwspec.perf.cache`), and `cpu-host` placement on the CPU sockets (`host_figures`,
`host_workload`, `host_placement`). `placement` picks among them; `_tier_mix` and
`_uncached_mix` describe the result in words.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from hwspec.diagnostics import Code
from hwspec.model.workload import Workload
from hwspec.perf.cache import hit_rate
from hwspec.perf.estimate.shards import column_shards, shard_row, table_wise_shards, twrw_nodes, twrw_share, with_table_row_wise
from hwspec.perf.estimate.term import _error
from hwspec.perf.platform_figures import Figures
from hwspec.perf.tables import gbps, gib, number

ACCESS_BYTES = {"hbm": 32, "host_ddr": 64, "ssd": 512}
"""Smallest unit each tier moves, bytes: an embedding row (and its optimizer state, a separate
tensor) is read and written in whole units. HBM: the 32-byte sector of a GPU's global-memory
transactions (CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"); host DDR: the
64-byte cache line; SSD: the smallest logical block an NVMe namespace can be formatted with
(512 B, NVMe Base Specification's LBA formats). A drive formatted with 4 KiB blocks, or read
through the page cache, moves up to 8x more per small row: the bound takes the smallest unit so
that it stays a bound."""


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
                       f"HBM ({number(workload.hbm_share * 100)}% of it), host DDR and SSD")


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
                        f"HBM ({number(workload.hbm_share * 100)}% of it, less the cache), host DDR and SSD")
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
    _, g = twrw_nodes(figures)
    tw = [(t.rows * math.fsum(shard_row(workload, t)[1:]), t.count * column_shards(t))
          for t in workload.sharded("table-wise", "column-wise")]
    indivisible = with_table_row_wise((table_wise_shards(workload, n).storage_bytes, math.fsum(w * c for w, c in tw) / n),
                                      twrw_share(figures, workload, lambda t, k: t.rows * t.row_bytes / (k * g)))
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
                     f"the embedding tables need {gib(int(need))} per {rank} on {figures.name} ({ranks} {rank}s), "
                     f"but {holders} hold {gib(int(have))}",
                     "use more GPUs, a smaller storage precision, or shard data-parallel tables")
    return {"need_bytes_per_gpu": need, "tiers": tiers, "on": workload.placement, "rank": rank}


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
        hits = ", ".join(f"{g['table']} {number(100 * g['hit_rate'])}%" for g in place["cache"]["groups"])
        return f"HBM cache hits {hits}, misses from {_uncached_mix({'tiers': place['cache']['backing']})}"
    return _uncached_mix(place)


def _uncached_mix(place: dict[str, Any]) -> str:
    used = [t for t in place["tiers"] if t["fraction"] > 0]
    if len(used) == 1:
        return f"{used[0]['tier']} {gbps(used[0]['bandwidth_bytes_per_s'])}"
    return " / ".join(f"{number(100 * t['fraction'])}% {t['tier']}" for t in used)
