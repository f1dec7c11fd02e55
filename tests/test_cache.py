"""The software embedding cache (`embeddings.cache`, hwspec.perf.cache) on hand-computed cases.

The platform is TINY of tests/test_estimate.py (HBM 1e9 B/s in 32-byte sectors, host DDR 1e8
B/s in 64-byte lines behind a 1e8 B/s PCIe share). The workload is its tiny DLRM: 2 table-wise
tables of 100 rows x dim 2 fp32 (8-byte rows, sgd: no optimizer state), pooling 3, 4 GPUs x 10
samples, so the busiest GPU holds one table (800 B) and serves B x pooling = 40 x 3 = 120 lookups.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwspec.diagnostics import HwspecError
from hwspec.model.workload import load_workload
from hwspec.perf.cache import harmonic, hit_rate
from hwspec.perf.estimate import estimate, placement, text_report
from tests.test_estimate import BASE, TINY, UNIQUE, amounts, terms, tiny


def cached(tmp_path: Path, cache: str, **changes: str):
    """The tiny workload with `cache` written under `embeddings` (after hbm_share: 0.5)."""
    text = BASE.format(**({"dtype": "fp16", "interaction": "cat", "optimizer": "sgd", "sharding": "table-wise",
                           "forward": "fp32"} | changes))
    path = tmp_path / "cached.yaml"
    path.write_text(text.replace("  hbm_share: 0.5\n", f"  hbm_share: 0.5\n  cache: {cache}\n"))
    return load_workload(path)


def exact_harmonic(n: int, s: float) -> float:
    return math.fsum(k ** -s for k in range(1, n + 1))


def test_uniform_access_hits_the_cached_fraction_of_rows():
    assert hit_rate(25, 100, 0.0) == 0.25
    assert hit_rate(10**11, 10**13, 0.0) == pytest.approx(0.01, rel=1e-12)


def test_zipf_hit_rate_is_the_ratio_of_generalized_harmonic_numbers():
    # the 25 most popular of 100 rows at s = 1: H(25) / H(100) = 3.81596 / 5.18738
    assert hit_rate(25, 100, 1.0) == pytest.approx(exact_harmonic(25, 1.0) / exact_harmonic(100, 1.0), rel=1e-14)
    assert hit_rate(25, 100, 1.0) == pytest.approx(0.73562, abs=1e-5)


@pytest.mark.parametrize("n", [65, 1000, 123_457])
@pytest.mark.parametrize("s", [0.0, 0.5, 1.0, 1.05, 2.0, 3.5])
def test_euler_maclaurin_harmonic_matches_the_sum_beyond_the_exact_terms(n, s):
    assert harmonic(n, s) == pytest.approx(exact_harmonic(n, s), rel=1e-12)


def test_a_cache_of_no_rows_never_hits_and_of_every_row_always_does():
    assert (hit_rate(0, 100, 1.05), hit_rate(0.9, 100, 1.05), hit_rate(100, 100, 1.05), hit_rate(1e9, 100, 0.0)) == (0, 0, 1, 1)


@given(rows=st.integers(1, 10**13), a=st.floats(0, 1), b=st.floats(0, 1), s=st.floats(0, 4), t=st.floats(0, 4))
def test_hit_rate_is_a_probability_rising_with_the_cache_and_the_skew(rows, a, b, s, t):
    lo, hi = sorted((a, b))
    low, high = sorted((s, t))
    assert 0.0 <= hit_rate(lo * rows, rows, s) <= 1.0
    assert hit_rate(lo * rows, rows, s) <= hit_rate(hi * rows, rows, s) + 1e-12
    assert hit_rate(lo * rows, rows, low) <= hit_rate(lo * rows, rows, high) + 1e-12


def test_cached_tables_live_behind_the_cache_in_host_ddr(tmp_path):
    # 2e-4 of 1e6 B of HBM = 200 B of cache for the busiest GPU's 800 B: a quarter of its rows
    place = placement(TINY, cached(tmp_path, "{hbm_fraction: 2.0e-4, skew: 0}"))
    cache = place["cache"]
    assert (place["need_bytes_per_gpu"], cache["need_bytes"], cache["hbm_bytes"]) == (800, 800, 200)
    assert [(t["tier"], t["stored_bytes"]) for t in cache["backing"]] == [("host_ddr", 800), ("ssd", 0)]
    assert [t["stored_bytes"] for t in place["tiers"]] == [0, 0, 0]
    (group,) = cache["groups"]
    assert (group["table"], group["cached_rows_fraction"], group["hit_rate"]) == ("t", 0.25, 0.25)


def test_cached_lookups_hit_hbm_and_misses_are_fetched_from_ddr_into_the_cache(tmp_path):
    doc = estimate(TINY, cached(tmp_path, "{hbm_fraction: 2.0e-4, skew: 0}"))
    # per lookup of an 8-byte row, hit rate 1/4: one 32-byte HBM read, and 3/4 x (a 64-byte DDR line
    # read across PCIe + a 32-byte HBM write): 32 + 0.75 x 32 = 56 B at 1e9, 0.75 x 64 = 48 B at 1e8
    # = 5.36e-7 s; 120 lookups, plus ids, lengths and pooled outputs 960 B / 1e9
    assert terms(doc)["embedding_fwd"] == pytest.approx(120 * (56 / 1e9 + 48 / 1e8) + 960 / 1e9)
    assert amounts(doc)["embedding_fwd"] == pytest.approx(120 * 104 + 960)


def test_cached_updates_stay_in_hbm_and_evicted_rows_are_written_back(tmp_path):
    doc = estimate(TINY, cached(tmp_path, "{hbm_fraction: 2.0e-4, skew: 0}"))
    # per distinct row updated (UNIQUE, ~70.06 of the 120 ids): the row read and written in HBM,
    # 2 x 32 B at 1e9, and 3/4 of a dirty 64-byte line written back at DDR's update rate
    # min(1e8, 2 x 1e8) = 1e8 (sgd: no state to fetch)
    assert terms(doc)["embedding_bwd"] == pytest.approx(UNIQUE * (64 / 1e9 + 48 / 1e8) + 960 / 1e9)


def test_the_optimizer_state_is_fetched_on_a_miss_in_the_backward(tmp_path):
    sgd = estimate(TINY, cached(tmp_path, "{hbm_fraction: 2.0e-4, skew: 0}"))
    adagrad = estimate(TINY, cached(tmp_path, "{hbm_fraction: 2.0e-4, skew: 0}", optimizer="rowwise-adagrad"))
    # the table is 100 x 12 B (4 B of state), so 200 / 1200 of its rows fit: 16 whole rows, hit rate
    # 0.16. The 4-byte state per distinct row updated: read and written in one HBM sector, 2 x 32 B, and on 0.84
    # of the lookups written into it, 32 B, at 1e9; 0.84 of a 64-byte line fetched and written back
    # at 1e8; the weights as with sgd at 0.84 misses
    miss = 0.84
    weights = 32 * 2 / 1e9 + miss * 64 / 1e8
    state = 32 * (2 + miss) / 1e9 + miss * 2 * 64 / 1e8
    assert adagrad["placement"]["cache"]["groups"][0]["hit_rate"] == pytest.approx(0.16, rel=1e-15)
    assert terms(adagrad)["embedding_bwd"] == pytest.approx(UNIQUE * (weights + state) + 960 / 1e9)
    assert terms(adagrad)["embedding_bwd"] > terms(sgd)["embedding_bwd"]


def test_skew_raises_the_hit_rate_and_shortens_the_lookups(tmp_path):
    uniform = estimate(TINY, cached(tmp_path, "{hbm_fraction: 2.0e-4, skew: 0}"))
    skewed = estimate(TINY, cached(tmp_path, "{hbm_fraction: 2.0e-4, skew: 1}"))
    hit = exact_harmonic(25, 1.0) / exact_harmonic(100, 1.0)
    assert skewed["placement"]["cache"]["groups"][0]["hit_rate"] == pytest.approx(hit, rel=1e-12)
    assert terms(skewed)["embedding_fwd"] == pytest.approx(120 * ((32 + (1 - hit) * 32) / 1e9 + (1 - hit) * 64 / 1e8) + 960 / 1e9)
    assert terms(skewed)["embedding_fwd"] < terms(uniform)["embedding_fwd"]


TWO_GROUPS = """\
hwspec: 1
kind: workload
name: two
batch: {per_gpu: 10}
compute_dtype: fp16
bottom_mlp: [4, 8, 2]
top_mlp: [10, 3, 1]
interaction: cat
embeddings:
  precision: fp32
  optimizer: sgd
  index_dtype: int32
  hbm_share: 0.5
  tables:
    - {name: hot, count: 2, rows: 100, dim: 2, pooling: 3, sharding: table-wise, cache: {hbm_fraction: 0.1, skew: 0}}
    - {name: plain, count: 2, rows: 100, dim: 2, pooling: 3, sharding: table-wise}
communication: {forward: fp32, backward: fp32, allreduce: fp32}
"""


def test_a_table_group_may_have_a_cache_of_its_own_and_the_others_fill_hbm_less_the_cache(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text(TWO_GROUPS)
    place = placement(dataclasses.replace(TINY, hbm_capacity=2000), load_workload(path))
    # HBM for tables: 0.5 x 2000 = 1000 B, less the cache 0.1 x 2000 = 200 B: the plain table's 800 B fit
    assert [t["stored_bytes"] for t in place["tiers"]] == [800, 0, 0]
    # the hot table's 800 B in DDR behind 200 B of cache: a quarter of its rows
    assert place["cache"]["hbm_bytes"] == 200 and place["cache"]["backing"][0]["stored_bytes"] == 800
    assert place["cache"]["groups"][0]["cached_rows_fraction"] == 0.25
    assert place["need_bytes_per_gpu"] == 1600


def test_without_a_cache_the_placement_is_unchanged(tmp_path):
    place = placement(TINY, tiny(tmp_path))
    assert "cache" not in place and [t["stored_bytes"] for t in place["tiers"]] == [800, 0, 0]


def test_the_text_report_shows_each_groups_hit_rate(tmp_path):
    report = text_report(estimate(TINY, cached(tmp_path, "{hbm_fraction: 2.0e-4, skew: 0}")))
    assert "  every table is cached (below)" in report
    assert "Embedding cache in HBM: 200 B in front of 800 B of cached tables, behind it in host_ddr 0.1 GB/s" in report
    assert "  t                  0.0002     0          25%       25%" in report


def test_a_cache_with_cpu_host_placement_is_a_located_e110(tmp_path):
    path = tmp_path / "host.yaml"
    path.write_text(TWO_GROUPS.replace("  hbm_share: 0.5\n", "  hbm_share: 0.5\n  placement: cpu-host\n"))
    with pytest.raises(HwspecError) as exc:
        load_workload(path)
    (d,) = exc.value.diagnostics
    assert (d.code, d.line, d.col) == ("E110", 16, 89)
    assert d.message == ("embeddings.tables[0].cache: the software cache is in the GPUs' HBM, but the tables are "
                         "looked up on the CPU hosts (placement: cpu-host)")


def test_a_cache_larger_than_the_tables_hbm_share_is_a_located_e110(tmp_path):
    with pytest.raises(HwspecError) as exc:
        cached(tmp_path, "{hbm_fraction: 0.6, skew: 1.05}")
    (d,) = exc.value.diagnostics
    assert (d.code, d.line, d.col) == ("E110", 14, 25)
    assert d.message == "embeddings.cache.hbm_fraction: the cache takes 0.6 of HBM, more than the tables' embeddings.hbm_share 0.5"
