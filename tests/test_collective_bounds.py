"""Collective bounds (issue 23, D1 and D2): the hierarchical phases overlap, a flat ring is never
better, and in-network reduction (NVLS in NVSwitches, SHARP in the backend switches) raises the
AllReduce bound only where the platform states the hardware. Every expected number is worked out
by hand in the test; GB/s = 1e9 bytes/s per direction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwspec import pipeline
from hwspec.perf import cluster_roofline as cr
from hwspec.perf import roofline as rf

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated"


def _hgx_h100_cluster(tmp_path: Path, nodes: int, sharp: bool) -> dict:
    """The cluster roofline of `nodes` HGX H100 nodes (8 x 400 Gb/s NDR per node) on one switch."""
    (tmp_path / "hgx-h100.yaml").write_text((ROOT / "platforms" / "hgx-h100.yaml").read_text())
    (tmp_path / "h100s.yaml").write_text(f"""hwspec: 1
kind: cluster
name: h100s
nodes:
  - {{platform: hgx-h100.yaml, count: {nodes}, hostname: "h${{i:02}}"}}
backend:
  transport: infiniband
  speed: 400 Gb/s
  topology: single-switch
  leaf: {{ports: {8 * nodes}}}
  sharp: {'true' if sharp else 'false'}
""")
    checked = pipeline.check(tmp_path / "h100s.yaml")
    assert not checked.failed(), [d.format() for d in checked.diagnostics]
    return cr.cluster_roofline(checked.topology)


def test_zionex_16_all_reduce_bound_is_the_slower_phase_not_the_sum():
    # G = 8 A100s per node at 300 GB/s NVLink, N = 16 nodes, 25 GB/s NIC per GPU, no in-network reduction:
    #   intra phases 2 x 7/8 / 300e9 = 5.833e-12 s/B; inter all-reduce of S/8: 2 x 15/16 / (8 x 25e9) = 9.375e-12 s/B
    #   algbw = 1 / 9.375e-12 = 106.67 GB/s (the sum gave 65.75); busbw = algbw x 2 x 127/128 = 211.67 GB/s
    collectives = json.loads((GENERATED / "zionex-16" / "roofline.json").read_text())["collectives"]
    assert collectives["all_reduce"]["algbw_bytes_per_s"] == pytest.approx(106.66667e9, rel=1e-7)
    assert collectives["all_reduce"]["busbw_bytes_per_s"] == pytest.approx(211.66667e9, rel=1e-7)
    assert collectives["all_reduce"]["algorithm"] == "Ring"
    # AllGather: max(7/8 / 300e9, 15/16 / (8 x 25e9)) = 4.6875e-12 s/B -> 213.33 GB/s (the sum gave 131.5)
    assert collectives["all_gather"]["algbw_bytes_per_s"] == pytest.approx(213.33333e9, rel=1e-7)
    assert collectives["reduce_scatter"] == collectives["all_gather"]
    # a flat ring: min(300, 8 x 25) = 200 GB/s busbw, algbw 200 / 1.984 = 100.8 GB/s: below the bound
    assert collectives["ring_busbw_bytes_per_s"] == 200e9


def test_zion_16_all_reduce_is_bound_by_its_shared_cpu_nics():
    # 4 x 100 Gb/s CPU NICs for 8 GPUs: 6.25 GB/s per GPU; inter 2 x 15/16 / (8 x 6.25e9) = 3.75e-11 s/B -> 26.67 GB/s;
    # intra (150 GB/s NVLink) 2 x 7/8 / 150e9 = 1.167e-11 s/B is faster; the sum gave 20.34 GB/s
    collectives = json.loads((GENERATED / "zion-16" / "roofline.json").read_text())["collectives"]
    assert collectives["all_reduce"]["algbw_bytes_per_s"] == pytest.approx(26.666667e9, rel=1e-7)


@pytest.mark.parametrize("nodes", [2, 4, 16, 100])
@pytest.mark.parametrize("gpus", [2, 4, 8, 72])
@pytest.mark.parametrize("intra, injection", [(300e9, 25e9), (450e9, 50e9), (150e9, 6.25e9), (40e9, 50e9)])
def test_the_hierarchical_bound_is_never_below_a_flat_ring_over_the_same_links(nodes, gpus, intra, injection):
    bounds = cr._hierarchical(nodes, gpus, intra, injection, bisection=float("inf"))
    ring = cr.ring_busbw(gpus, intra, injection)
    for name in ("all_reduce", "all_gather", "reduce_scatter"):
        assert bounds[name]["busbw_bytes_per_s"] >= ring * (1 - 1e-12), name


def test_nvls_all_reduce_on_one_hgx_h100_node():
    # 8 GPUs at 450 GB/s into third-generation NVSwitches: each GPU sends S + S/8 and receives S/8 + S,
    #   algbw = 450 x 8/9 = 400 GB/s, busbw = 400 x 2 x 7/8 = 700 GB/s (a ring: 450 busbw, 257.1 algbw).
    # Measured (NVIDIA/nccl-tests#212, NVIDIA/nccl#1442): NVLS ~480 busbw (~275 algbw), ring ~370 busbw.
    doc = json.loads((GENERATED / "hgx-h100" / "roofline.json").read_text())["intra_node_collectives"]
    assert doc["all_reduce"]["algorithm"] == "NVLS"
    assert doc["all_reduce"]["algbw_bytes_per_s"] == pytest.approx(400e9)
    assert doc["all_reduce"]["busbw_bytes_per_s"] == pytest.approx(700e9)
    assert doc["busbw_bound_bytes_per_s"] == 450e9  # the link bound TorchRec and Calculon read stays the ring's
    assert (doc["all_gather"]["algorithm"], doc["all_gather"]["busbw_bytes_per_s"]) == ("Ring", 450e9)


def test_without_a_stated_nvswitch_generation_there_is_no_nvls():
    bounds = rf.collective_bounds(8, [450e9] * 8, [64e9] * 8, True)
    assert bounds["all_reduce"]["algorithm"] == "Ring"
    assert bounds["all_reduce"]["algbw_bytes_per_s"] == pytest.approx(450e9 / 1.75)
    pcie_only = rf.collective_bounds(8, [450e9] * 8, [64e9] * 8, False, nvlink_sharp=True)
    assert pcie_only["all_reduce"]["algorithm"] == "Ring"  # NVLS needs the NVLink path


def test_sixteen_hgx_h100_nodes_without_sharp_are_bound_by_their_nics(tmp_path):
    # G = 8, N = 16, 50 GB/s NIC per GPU: inter 2 x 15/16 / (8 x 50e9) = 4.6875e-12 s/B; NVLS intra
    # (1 + 1/8) / 450e9 = 2.5e-12 s/B is faster, so NVLS does not raise the bound: Ring,
    #   algbw = 213.33 GB/s, busbw = 213.33 x 2 x 127/128 = 423.3 GB/s (the sum gave 116.6 / 231.4).
    # A flat ring: min(450, 8 x 50) = 400 GB/s busbw, the NIC line rate NVIDIA quotes for 8 x 400G nodes.
    collectives = _hgx_h100_cluster(tmp_path, 16, sharp=False)["collectives"]
    assert collectives["all_reduce"]["algorithm"] == "Ring"
    assert collectives["all_reduce"]["algbw_bytes_per_s"] == pytest.approx(213.33333e9, rel=1e-7)
    assert collectives["all_reduce"]["busbw_bytes_per_s"] == pytest.approx(423.33333e9, rel=1e-7)
    assert collectives["ring_busbw_bytes_per_s"] == 400e9
    assert collectives["in_network_reduction"] == {"nvls": True, "sharp": False}


def test_sharp_switches_reduce_the_inter_node_phase_and_nvls_the_intra_node_one(tmp_path):
    # With SHARP each GPU sends its S/8 into the network and gets it back reduced: 1 / (8 x 50e9) = 2.5e-12 s/B;
    # NVLS intra (1 + 1/8) / 450e9 = 2.5e-12 s/B: algbw 400 GB/s, busbw 400 x 2 x 127/128 = 793.75 GB/s (NCCL: NVLS
    # over SHARP). Without NVLS, intra 2 x 7/8 / 450e9 = 3.889e-12 s/B would bound it at 257.1 GB/s.
    collectives = _hgx_h100_cluster(tmp_path, 16, sharp=True)["collectives"]
    assert collectives["all_reduce"]["algorithm"] == "NVLS"
    assert collectives["all_reduce"]["algbw_bytes_per_s"] == pytest.approx(400e9)
    assert collectives["all_reduce"]["busbw_bytes_per_s"] == pytest.approx(793.75e9)
    # AllGather gains nothing: max(7/8 / 450e9, 15/16 / (8 x 50e9)) = 2.34375e-12 s/B -> 426.67 GB/s, as without SHARP
    assert collectives["all_gather"]["algbw_bytes_per_s"] == pytest.approx(426.66667e9, rel=1e-7)


@pytest.mark.parametrize("nodes, intra, injection, nvls, sharp, algorithm, per_byte", [
    # node-bound (G = 8, N = 4, 100 GB/s NVLink and NIC): plain intra 2 x 7/8 / 100e9 = 1.75e-11 s/B,
    # NVLS intra (1 + 1/8) / 100e9 = 1.125e-11; inter 2 x 3/4 / 800e9 = 1.875e-12, SHARP 1 / 800e9 = 1.25e-12
    (4, 100e9, 100e9, False, True, "Ring", 1.75e-11),          # SHARP shortens the faster phase only
    (4, 100e9, 100e9, True, False, "NVLSTree", 1.125e-11),
    (4, 100e9, 100e9, True, True, "NVLSTree", 1.125e-11),      # SHARP still does not raise it
    # NIC-bound (N = 16, 450 GB/s NVLink, 50 GB/s NIC): plain intra 2 x 7/8 / 450e9 = 3.889e-12, NVLS 1.125 / 450e9 = 2.5e-12;
    # inter 2 x 15/16 / 400e9 = 4.6875e-12, SHARP 1 / 400e9 = 2.5e-12
    (16, 450e9, 50e9, True, False, "Ring", 4.6875e-12),      # NVLS shortens the faster phase only
    (16, 450e9, 50e9, False, True, "CollNetDirect", 3.8889e-12),
    (16, 450e9, 50e9, True, True, "NVLS", 2.5e-12),          # both phases shortened: NVLS over SHARP
])
def test_the_algorithm_named_is_the_in_network_reduction_that_raises_the_bound(nodes, intra, injection, nvls, sharp,
                                                                                algorithm, per_byte):
    bounds = cr._hierarchical(nodes, 8, intra, injection, float("inf"), nvls=nvls, sharp=sharp)
    assert bounds["all_reduce"]["algorithm"] == algorithm
    assert bounds["all_reduce"]["algbw_bytes_per_s"] == pytest.approx(1 / per_byte, rel=1e-4)


def test_an_nvswitch_generation_without_nvswitches_is_a_located_error(tmp_path):
    text = (ROOT / "platforms" / "zionex.yaml").read_text().replace("  wiring: ", "  nvswitch_generation: 3\n  wiring: ", 1)
    (tmp_path / "zionex.yaml").write_text(text)
    checked = pipeline.check(tmp_path / "zionex.yaml")
    messages = [d.format() for d in checked.diagnostics if d.severity.name == "ERROR"]
    assert any("'nvswitch_generation' is for 'wiring: nvswitch'" in m for m in messages), messages
