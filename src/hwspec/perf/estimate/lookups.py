"""The embedding lookups forward and the update backward of the busiest rank: one row's traffic
over the placement's tiers or through its cache (`_row_traffic`, `row_parts_traffic`), one
shard's bytes and seconds (`lookup_work`), the busiest rank's sum over every sharding
(`embedding_work`), and the two terms made of it (`_embedding_terms`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hwspec.model.workload import DTYPE_BYTES, LENGTH_BYTES, Table, Workload
from hwspec.perf.cache import cached_row_traffic, touched
from hwspec.perf.estimate.placement import _tier_mix
from hwspec.perf.estimate.shards import busiest, column_shards, shard_row, twrw_nodes, twrw_parts, twrw_share, with_table_row_wise
from hwspec.perf.estimate.term import Term, _work_term
from hwspec.perf.platform_figures import Figures


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


def distinct_rows(ids: float, rows: float) -> float:
    """Expected distinct rows among `ids` lookups drawn uniformly from `rows` rows:
    rows (1 - (1 - 1/rows)^ids), at most min(ids, rows). Uniform access touches the most distinct
    rows a number of lookups can (a skewed one repeats rows more), so this is the most rows a
    de-duplicated update writes."""
    if ids <= 0 or rows <= 0:
        return 0.0
    if rows <= 1:
        return min(ids, rows)
    return min(ids, -rows * math.expm1(ids * math.log1p(-1.0 / rows)))


WGRAD_BYTES = 4
"""Bytes per element of a reduced-gradient buffer (HugeCTR's grad_ev is Float32)."""


@dataclass(frozen=True)
class LookupWork:
    """One GPU's embedding work on one shard: rows from wherever the tables live, ids and
    pooled outputs (or their gradients) in HBM. Amounts are bytes, times seconds."""

    bytes: float
    seconds: float
    ids: float = 0.0              # ids looked up (rows touched), one per pooled row
    reduction_bytes: float = 0.0  # HBM bytes of the de-duplication and segmented reduction (`reduction_bytes`)


def reduction_bytes(workload: Workload, ids: float, unique: float, pooled_samples: float, dim: float) -> float:
    """HBM bytes the backward moves between the id sort and the update, for one shard whose `ids`
    (sorted) lookups touch `unique` distinct rows: the de-duplication (a run-length encode of the
    sorted ids: each id read, each run's id and offset written, s_idx + 4 bytes) and the segmented
    reduction (each id gathers its bag's gradient, d s_b bytes; the bound's update term already
    reads each of the `pooled_samples` bags' gradients once, so the ids beyond that add their
    reads); with `gradient_buffer` (HugeCTR) each distinct row's fp32 sum is written and the
    optimizer reads it back, 2 d x 4 bytes."""
    s_idx = DTYPE_BYTES[workload.index_dtype]
    encode = ids * s_idx + unique * (s_idx + LENGTH_BYTES)
    gather = max(0.0, ids - pooled_samples) * dim * DTYPE_BYTES[workload.comm_backward]
    buffer = 2 * unique * dim * WGRAD_BYTES if workload.gradient_buffer else 0.0
    return encode + gather + buffer


def lookup_work(figures: Figures, workload: Workload, place: dict[str, Any], table: Table,
                row_samples: float, pooled_samples: float, backward: bool, shard_rows: float) -> LookupWork:
    """The work of one shard of `table` (`shard_rows` rows): `row_samples` samples' ids looked up
    (forward each of the `pooling` rows per sample read) and `pooled_samples` pooled rows written
    forward (their gradients read backward), with one length per pooled sample. Backward, each
    distinct row among the ids (`distinct_rows`) is read and written back once with its optimizer
    state: FBGEMM's and HugeCTR's update runs once per run of the sorted ids, after the
    de-duplication (FBGEMM fbgemm_gpu/codegen/training/backward/embedding_backward_split_template.cu,
    the *_per_row kernels over sorted_linear_indices_run; HugeCTR's optimizer over the reduction's
    unique keys). Row traffic follows `_row_traffic`; ids, lengths and pooled rows are in HBM.
    Backward also gives the reduction's bytes (`reduction_bytes`), which the expected iteration
    charges; the bound does not."""
    dim, weights, state = shard_row(workload, table)
    rows = row_parts_traffic(place, table, weights, state, backward)
    pooled_bytes = DTYPE_BYTES[workload.comm_backward if backward else workload.comm_forward]
    ids = row_samples * table.pooling
    unique = distinct_rows(ids, shard_rows) if backward else 0.0
    touched_rows = unique if backward else ids
    row_bytes = touched_rows * math.fsum(b for b, _ in rows)
    row_seconds = touched_rows * math.fsum(t for _, t in rows)
    hbm = ids * DTYPE_BYTES[workload.index_dtype] + pooled_samples * (LENGTH_BYTES + dim * pooled_bytes)
    hbm_seconds = hbm / figures.hbm_bandwidth if figures.hbm_bandwidth > 0 else 0.0
    if not backward:
        return LookupWork(row_bytes + hbm, row_seconds + hbm_seconds, ids)
    return LookupWork(row_bytes + hbm, row_seconds + hbm_seconds, ids,
                      reduction_bytes(workload, ids, unique, pooled_samples, dim))


def embedding_work(figures: Figures, workload: Workload, place: dict[str, Any], backward: bool) -> LookupWork:
    """The busiest GPU's lookup (or update) work: `busiest` over the table- and column-wise
    shards (each serves the global batch B) beside the table-row-wise tables of the busiest node
    (each GPU 1/G of a table's ids of the global batch, B pooled partial sums: `with_table_row_wise`),
    plus every row-wise table's 1/n of the ids of the global batch with B pooled partial sums,
    plus the data-parallel tables on the local batch."""
    n = figures.gpus
    b, big_b = workload.local_batch(n), workload.global_batch(n)
    indivisible = [(lookup_work(figures, workload, place, t, big_b, big_b, backward, t.rows), t.count * column_shards(t))
                   for t in workload.sharded("table-wise", "column-wise")]
    even = [lookup_work(figures, workload, place, t, big_b / n, big_b, backward, t.rows / n)
            for t in workload.sharded("row-wise")]
    even += [lookup_work(figures, workload, place, t, b, b, backward, t.rows) for t in workload.sharded("data-parallel")]
    counts = [t.count for t in workload.sharded("row-wise")] + [t.count for t in workload.sharded("data-parallel")]
    _, g = twrw_nodes(figures)
    by_shard = {(t.name, k): lookup_work(figures, workload, place, t, big_b / (k * g), big_b, backward, t.rows / (k * g))
                for t, k, _ in twrw_parts(figures, workload)}

    def share(field: str) -> float:
        tw = [(getattr(w, field), c) for w, c in indivisible]
        return (with_table_row_wise((busiest(tw, n), math.fsum(w * c for w, c in tw) / n),
                                    twrw_share(figures, workload, lambda t, k: float(getattr(by_shard[t.name, k], field))))
                + math.fsum(getattr(w, field) * c for w, c in zip(even, counts)))

    return LookupWork(share("bytes"), share("seconds"), share("ids"), share("reduction_bytes"))


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
