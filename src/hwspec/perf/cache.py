"""A software cache of the hottest embedding rows in HBM, in front of host DDR/SSD.

The paper (Mudigere et al., ISCA 2022) keeps the hottest rows in a software cache in HBM over
DDR and SSD; TorchRec's `FUSED_UVM_CACHING` kernel does it with FBGEMM's set-associative LRU/LFU
cache (`fbgemm_gpu` `SplitTableBatchedEmbeddingBagsCodegen`, `EmbeddingLocation.MANAGED_CACHING`:
the table in host memory, `cache_load_factor` of its rows in HBM).

Access skew: the k-th most popular of a table's R rows is looked up with probability
k^-s / H(R, s), Zipf with exponent s (the usual model of recommendation id popularity, e.g.
Adnan et al., "Accelerating recommendation system training 15x with RAPIDS", and the
heavy-tailed feature accesses the paper's cache relies on). A cache holding the c most popular
rows (what an LFU cache converges to, the bound LRU approaches) hits with probability

    hit(c, R, s) = H(c, s) / H(R, s),   H(n, s) = sum_{k=1..n} k^-s   (generalized harmonic)

s = 0 gives c / R (uniform). H is summed exactly up to `EXACT_TERMS` terms and beyond by
Euler-Maclaurin, so no cost grows with the rows (a table has up to 1e13).

Traffic of one lookup of a cached row part of `nbytes` (`cached_row_traffic`), FBGEMM's
order of events: a miss fetches the part from the backing tier (read across PCIe) and writes it
into the cache before the kernel reads it (`prefetch`/`lxu_cache_insert`); every lookup then
reads (forward) or reads and writes (backward) its row in HBM; a missed row evicts a row that
training made dirty, written back to the backing tier. In the steady state one row is evicted
per miss, so per lookup: hit rate h, miss rate m = 1 - h,

    forward    HBM read + m x (backing read + HBM write)                 weights
    backward   HBM read and write + m x (backing write-back)             weights
               HBM read and write + m x (backing read + write-back)      optimizer state (first
                                                                         needed backward)

each in the tier's whole access units (`touched`), backing reads at the tier's read bandwidth,
backward backing traffic at its update bandwidth (PCIe is full duplex: fetches come up while
write-backs go down).
"""

from __future__ import annotations

import math
from typing import Any

EXACT_TERMS = 64
"""H(n, s) is summed term by term up to this n, and by Euler-Maclaurin beyond it."""


def touched(nbytes: float, access: int) -> float:
    """Bytes a tier moves to read `nbytes` stored contiguously: whole access units."""
    return math.ceil(nbytes / access) * access if nbytes > 0 else 0.0


def harmonic(n: float, s: float) -> float:
    """The generalized harmonic number H(n, s) = sum_{k=1..floor(n)} k^-s, for n >= 0 and s >= 0.
    Exact for n <= EXACT_TERMS; beyond, the first m - 1 = EXACT_TERMS - 1 terms plus the
    Euler-Maclaurin tail from m to n:

        integral_m^n x^-s dx + (m^-s + n^-s)/2 + s/12 (m^-s-1 - n^-s-1) - s(s+1)(s+2)/720 (m^-s-3 - n^-s-3)

    whose error is below 1e-12 relative for any s here (the next term has m^-s-5 / 30240)."""
    n = math.floor(n)
    if n <= EXACT_TERMS:
        return math.fsum(k ** -s for k in range(1, n + 1))
    m = EXACT_TERMS
    head = math.fsum(k ** -s for k in range(1, m))
    # integral of x^-s from m to n, written to stay exact as s -> 1
    log_ratio = math.log(n / m)
    a = 1.0 - s
    integral = m ** a * (math.expm1(a * log_ratio) / a if a != 0 else log_ratio)
    ends = (m ** -s + n ** -s) / 2
    first = s / 12 * (m ** (-s - 1) - n ** (-s - 1))
    second = s * (s + 1) * (s + 2) / 720 * (m ** (-s - 3) - n ** (-s - 3))
    total: float = head + integral + ends + first - second  # typeshed types int ** float as Any (a negative base gives a complex)
    return total


def hit_rate(cached_rows: float, rows: int, skew: float) -> float:
    """Fraction of lookups that find their row in a cache of the `cached_rows` most popular of
    `rows` rows whose popularity is Zipf with exponent `skew`: H(c, s) / H(R, s), in [0, 1],
    rising with the cached rows and with the skew; c / R when `skew` is 0."""
    c = math.floor(min(max(cached_rows, 0.0), rows))
    if c <= 0 or rows <= 0:
        return 0.0
    if c >= rows:
        return 1.0
    return min(1.0, harmonic(c, skew) / harmonic(rows, skew))


def cached_row_traffic(hbm: dict[str, Any], backing: list[dict[str, Any]], hit: float, nbytes: float,
                       fetch: bool, update: bool) -> tuple[float, float]:
    """(bytes, seconds) of one lookup of a cached row part of `nbytes`, as the module docstring
    counts it: read (and written when `update`) in HBM, and on a miss (1 - `hit`) fetched from
    the backing tiers when `fetch` (written into the cache) and written back to them when
    `update`. `hbm` and `backing` are placement tiers (`bandwidth_bytes_per_s`,
    `update_bandwidth_bytes_per_s`, `access_bytes`); a miss goes to each backing tier in
    proportion to its `fraction` (they sum to 1 over the backing tiers that store rows)."""
    miss = 1.0 - hit
    sector = touched(nbytes, hbm["access_bytes"])
    in_hbm = sector * ((2 if update else 1) + (miss if fetch else 0.0))
    moved, seconds = in_hbm, in_hbm / hbm["bandwidth_bytes_per_s"]
    for tier in backing:
        if tier["fraction"] <= 0 or miss <= 0:
            continue
        unit = touched(nbytes, tier["access_bytes"])
        crossing = unit * miss * tier["fraction"] * ((1 if fetch else 0) + (1 if update else 0))
        rate = tier["update_bandwidth_bytes_per_s" if update else "bandwidth_bytes_per_s"]
        moved += crossing
        seconds += crossing / rate
    return moved, seconds
