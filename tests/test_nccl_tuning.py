"""NCCL's cost model (`hwspec.perf.nccl_tuning`) against hand computations from tuning.cc, one
test per cap and refinement, for each release modelled (2.7.5, commit 01afd20a; 2.20.3, commit
b6475625). Bandwidths in GB/s and latencies in us as tuning.cc writes them."""

from __future__ import annotations

import dataclasses

import pytest

from hwspec.perf import nccl_tuning as nt
from hwspec.perf.estimate import collective_seconds, estimate
from tests.test_estimate import TINY, tiny

A100_16 = nt.Comm(ranks=128, nodes=16, compute_capability=80, nvlink=True)
A100_1 = nt.Comm(ranks=8, nodes=1, compute_capability=80, nvlink=True)
H100_16 = nt.Comm(ranks=128, nodes=16, compute_capability=90, nvlink=True)
H100_1 = nt.Comm(ranks=8, nodes=1, compute_capability=90, nvlink=True)
V2_7, V2_20 = nt.NCCL_2_7, nt.NCCL_2_20


def bus(release, comm, algorithm, protocol, ring_bus, collective="all_reduce"):
    return nt.bus_bandwidth(release, comm, collective, algorithm, protocol, ring_bus)


# ---------------------------------------------------------------- 2.7.5


def test_2_7_caps_every_bus_bandwidth_at_235_on_sm80_only():
    assert bus(V2_7, A100_1, "Ring", "Simple", 300.0) == 235.0
    assert bus(V2_7, dataclasses.replace(A100_1, compute_capability=90), "Ring", "Simple", 300.0) == 300.0


def test_2_7_caps_tree_at_max_tree_bw_by_nodes_and_protocol():
    # more than 2 nodes: sm80 LL128 105, else 80; at most 2 nodes: 130 and 110 (before LL128's own factor)
    assert bus(V2_7, A100_16, "Tree", "Simple", 200.0) == 80.0            # min(200 x 0.9, 80)
    assert bus(V2_7, A100_16, "Tree", "LL128", 200.0) == pytest.approx(105 * 0.915)
    two = dataclasses.replace(A100_16, ranks=16, nodes=2)
    assert bus(V2_7, two, "Tree", "Simple", 200.0) == 110.0
    assert bus(V2_7, two, "Tree", "LL128", 200.0) == pytest.approx(130 * 0.915)
    assert bus(V2_7, two, "Tree", "Simple", 100.0) == pytest.approx(90.0)  # 100 x 0.9 under the cap


def test_2_7_tree_ll128_is_seven_ninths_within_a_node():
    # one node: min(min(150 x 0.9, 130) x 7/9, 16.7 x 32 x 7/9) = 130 x 7/9
    assert bus(V2_7, A100_1, "Tree", "LL128", 150.0) == pytest.approx(130 * 7 / 9)


def test_2_7_ll128_is_capped_per_channel():
    # Ring/LL128 AllReduce: min(bus x 0.92, 16.7 x channels); 4 channels: 66.8
    few = dataclasses.replace(A100_1, channels=4)
    assert bus(V2_7, few, "Ring", "LL128", 200.0) == pytest.approx(66.8)
    assert bus(V2_7, few, "Ring", "LL128", 50.0) == pytest.approx(46.0)
    # AllGather's per-channel LL128 cap is 18.3
    assert bus(V2_7, few, "Ring", "LL128", 200.0, "all_gather") == pytest.approx(73.2)


def test_2_7_ll_is_a_quarter_or_a_third_and_tree_ll_over_3_8():
    assert bus(V2_7, A100_1, "Ring", "LL", 200.0) == pytest.approx(50.0)                        # AllReduce: 1/4
    assert bus(V2_7, A100_1, "Ring", "LL", 200.0, "all_gather") == pytest.approx(200 / 3)       # one node: 1/3
    assert bus(V2_7, A100_16, "Ring", "LL", 200.0, "all_gather") == pytest.approx(50.0)         # nodes: 1/4
    assert bus(V2_7, A100_16, "Tree", "LL", 200.0) == pytest.approx(80 / 3.8)


def test_2_7_ring_and_tree_latencies():
    # Ring/Simple AllReduce on 16 x 8: 8.4 + (254 - 30) x 3.4 + 30 x 9.6 = 1058 us
    assert nt.latency(V2_7, A100_16, "all_reduce", "Ring", "Simple") == pytest.approx(1058.0)
    # Ring/LL across nodes: the intra step x 1.8: 3.6 + 224 x 0.47 x 1.8 + 30 x 2.7 = 274.104 us
    assert nt.latency(V2_7, A100_16, "all_reduce", "Ring", "LL") == pytest.approx(274.104)
    # Tree/LL128: 4.4 + 2 (7 x 1.2 + 4 x 8.5) = 89.2 us
    assert nt.latency(V2_7, A100_16, "all_reduce", "Tree", "LL128") == pytest.approx(89.2)


def test_2_7_model_a_bucket_on_zionex_16_is_tree_ll128_at_its_cap():
    # A 25 MiB fp32 bucket on 16 ZionEX nodes, ring busBw 200 GB/s: Tree/LL128 runs at
    # 105 x 0.915 x 0.5 = 48.04 GB/s x its size correction (log2(26214400 / 64) = 18: 0.8),
    # 89.2 us + 26214400 / (1000 x 38.43) us = 771.3 us
    nbytes = 25 * 2**20
    seconds = nt.call_seconds(V2_7, A100_16, "all_reduce", "Tree", "LL128", nbytes, 200.0)
    assert seconds == pytest.approx((89.2 + nbytes / (1000 * 105 * 0.915 * 0.5 * 0.8)) * 1e-6)
    # Ring/Simple: (1058 x 1.9 plateau) + 26214400 / (1000 x 200 x 128/254) = 2010.2 + 260.1 us
    ring = nt.call_seconds(V2_7, A100_16, "all_reduce", "Ring", "Simple", nbytes, 200.0)
    assert ring == pytest.approx((1058 * 1.9 + nbytes / (1000 * 200 * 128 / 254)) * 1e-6)
    assert nt.choose(V2_7, A100_16, "all_reduce", nbytes, 200.0) == (pytest.approx(seconds), "Tree/LL128")


def test_2_7_enables_ll128_only_on_sm70_or_sm80_over_nvlink_with_gpudirect_across_nodes():
    assert nt.enabled(V2_7, A100_16, "all_reduce", "Ring", "LL128")
    assert not nt.enabled(V2_7, H100_16, "all_reduce", "Ring", "LL128")
    assert not nt.enabled(V2_7, dataclasses.replace(A100_16, gpudirect=False), "all_reduce", "Tree", "LL128")
    assert not nt.enabled(V2_7, dataclasses.replace(A100_1, nvlink=False), "all_reduce", "Ring", "LL128")
    assert not nt.enabled(V2_7, A100_16, "all_gather", "Tree", "Simple")  # Tree is AllReduce only


# ---------------------------------------------------------------- 2.20.3


def test_2_20_caps_tree_per_channel_by_generation_and_nodes():
    few = dataclasses.replace(H100_16, channels=2)
    # Hopper on more than 2 nodes: min(bus x 0.92, 2 x 36.0)
    assert bus(V2_20, few, "Tree", "Simple", 200.0) == pytest.approx(72.0)
    assert bus(V2_20, few, "Tree", "Simple", 50.0) == pytest.approx(46.0)
    # Ampere on one node: 2 x 24.0
    assert bus(V2_20, dataclasses.replace(A100_1, channels=2), "Tree", "Simple", 200.0) == pytest.approx(48.0)
    # no 235 cap any more
    assert bus(V2_20, A100_1, "Ring", "Simple", 300.0) == 300.0


def test_2_20_tree_ll128_is_seven_ninths_within_a_node_and_120_of_128_across():
    assert bus(V2_20, H100_1, "Tree", "LL128", 300.0) == pytest.approx(300 * 0.92 * 7 / 9)
    assert bus(V2_20, H100_16, "Tree", "LL128", 300.0) == pytest.approx(300 * 0.92 * 120 / 128)
    # and per channel: Hopper, more than 2 nodes: 29.0 x channels
    assert bus(V2_20, dataclasses.replace(H100_16, channels=4), "Tree", "LL128", 300.0) == pytest.approx(116.0)


def test_2_20_ring_ll128_is_0_92_or_0_7_with_one_gpu_per_node_and_capped_per_channel():
    assert bus(V2_20, H100_1, "Ring", "LL128", 300.0) == pytest.approx(276.0)
    one_per_node = nt.Comm(ranks=4, nodes=4, compute_capability=90, nvlink=True)
    assert bus(V2_20, one_per_node, "Ring", "LL128", 40.0) == pytest.approx(28.0)
    assert bus(V2_20, dataclasses.replace(H100_1, channels=4), "Ring", "LL128", 300.0) == pytest.approx(4 * 36.7)


def test_2_20_ll_is_capped_at_ll_max_bw():
    # one Hopper node: min(87.7, bus / 4); 16 nodes (Intel row): min(20.4, bus / 4)
    assert bus(V2_20, H100_1, "Ring", "LL", 400.0) == pytest.approx(87.7)
    assert bus(V2_20, H100_16, "Ring", "LL", 400.0) == pytest.approx(20.4)
    assert bus(V2_20, H100_16, "Tree", "LL", 400.0) == pytest.approx(20.4)     # min(min(368, 1152) / 3.8, 20.4)
    assert bus(V2_20, H100_1, "Ring", "LL", 200.0) == pytest.approx(50.0)


def test_2_20_latencies_count_2n_inter_steps_and_the_network_overhead():
    # Ring/Simple AllReduce on 16 x 8: 8.4 + (254 - 32) x max(3.4, 3 x 1.0) + 32 x 14.0 = 1211.2 us
    assert nt.latency(V2_20, H100_16, "all_reduce", "Ring", "Simple") == pytest.approx(1211.2)
    # Ring/LL: 6.6 + 222 x max(0.6, 1.0) + 32 x 2.7 = 315 us
    assert nt.latency(V2_20, H100_16, "all_reduce", "Ring", "LL") == pytest.approx(315.0)
    # one node: no network overhead, 14 steps: 8.4 + 14 x 3.4 = 56 us
    assert nt.latency(V2_20, H100_1, "all_reduce", "Ring", "Simple") == pytest.approx(56.0)
    # Tree/LL128 on 16 x 8: 14 + 2 (7 x 1.25 + 4 x 8.5) = 99.5 us
    assert nt.latency(V2_20, H100_16, "all_reduce", "Tree", "LL128") == pytest.approx(99.5)


def test_2_20_ring_plateau_is_1_4_from_sm80():
    nbytes = 32 * 128 * 64  # nBytes / (nChannels x nRanks) = 64: the plateau applies
    lat = 1211.2 * 1.4
    assert nt.call_seconds(V2_20, H100_16, "all_reduce", "Ring", "Simple", nbytes, 100.0) == pytest.approx(
        (lat + nbytes / (1000 * 100 * 128 / 254)) * 1e-6)
    smaller = nbytes - 1
    assert nt.call_seconds(V2_20, H100_16, "all_reduce", "Ring", "Simple", smaller, 100.0) == pytest.approx(
        (1211.2 + smaller / (1000 * 100 * 128 / 254)) * 1e-6)


def test_2_20_disables_ll128_on_blackwell():
    assert not nt.enabled(V2_20, dataclasses.replace(H100_1, compute_capability=100), "all_reduce", "Ring", "LL128")
    assert nt.enabled(V2_20, H100_1, "all_reduce", "Ring", "LL128")


def test_log2i_is_nccls_floor():
    assert [nt.log2i(n) for n in (0, 1, 2, 3, 4, 409600)] == [0, 0, 1, 1, 2, 18]


# ---------------------------------------------------------------- as the estimate uses it


def test_the_estimate_prices_a_call_with_the_workloads_release(tmp_path):
    # TINY: 4 ranks on 2 nodes, NVLink, compute capability 0 (unknown: no LL128). A 1 MB AllReduce at
    # 5e7 B/s achieved algbw (0.02 s of Ring/Simple transfer): ring busBw = 0.05 x 6/4 = 0.075 GB/s.
    # 2.20.3: Ring/Simple latency 8.4 + (6 - 4) x 3.4 + 4 x 14 = 71.2 us, x 1.9 (plateau, sm < 80)
    seconds, name = collective_seconds(TINY, "all_reduce", 1e6, 0.02, nt.NCCL_2_20)
    assert name == "Ring/Simple"
    assert seconds == pytest.approx(0.02 + 71.2e-6 * 1.9)
    # 2.7.5: 8.4 + 4 x 3.4 + 2 x 9.6 = 41.2 us x 1.9
    assert collective_seconds(TINY, "all_reduce", 1e6, 0.02, nt.NCCL_2_7) == (pytest.approx(0.02 + 41.2e-6 * 1.9),
                                                                              "Ring/Simple")
    doc = estimate(TINY, tiny(tmp_path))
    assert all(r["seconds"] >= r["bandwidth_seconds"] for r in doc["expected"]["terms"])
