"""The expected iteration beside the bounds: calibrated rates, NCCL's latency model per
collective call, launch overheads, and the GPU waiting for the pooled-embedding AlltoAlls.

Hand computations use tests/test_estimate.py's TINY platform (2 nodes x 2 GPUs, NVLink, RoCE)
and tiny workload; constants are hwspec.perf.calibration's (docs/estimates.md lists them)."""

from __future__ import annotations

import dataclasses
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwspec.model.workload import load_workload
from hwspec.perf import calibration as cal
from hwspec.perf import nccl_tuning as nt
from hwspec.perf.estimate import (
    achievable,
    achieved_algbw,
    alltoall_latency,
    bottom_mlp_share,
    collective_seconds,
    estimate,
    text_report,
)
from hwspec.perf.platform_figures import figures
from hwspec.pipeline import load_any
from hwspec.topology import topology_of
from tests.examples import pinned
from tests.test_estimate import BASE, TINY, terms, tiny


def test_a_call_of_no_bytes_takes_the_least_latency_and_a_large_one_ring_simple():
    # 0 bytes: latency only. NCCL 2.20.3 on TINY (4 ranks, 2 nodes, NVLink, no LL128 on an unknown GPU):
    # Tree/LL 6.8 + 2 (1 x 0.6 + 1 x 5.0) = 18.0 us beats Ring/LL's 6.6 + 2 x 1.0 + 4 x 2.7 = 19.4 us
    assert collective_seconds(TINY, "all_reduce", 0.0, 0.0) == (pytest.approx(18.0e-6), "Tree/LL")
    # 1 s of Ring/Simple transfer: 1 s + 71.2 us x 1.9 (plateau) beats Tree's 1 / (0.92 x 3/4 x 0.9) s
    assert collective_seconds(TINY, "all_reduce", 1e9, 1.0) == (pytest.approx(1.0 + 71.2e-6 * 1.9), "Ring/Simple")


def test_achievable_rates_are_the_calibrated_fractions_of_the_datasheet_ones():
    fig = achievable(TINY)
    assert fig.hbm_bandwidth == pytest.approx(0.89e9)                  # 1e9 x 0.89
    assert fig.peak_flop_per_s["fp16"] == pytest.approx(0.69e12)       # 1e12 x 0.69
    assert fig.pcie_host_shared_bandwidth == pytest.approx(0.76e8)     # 1e8 x 0.76
    # collectives on a RoCE cluster with NVLink (not an A100): min(0.82 NVLink, 0.96 RDMA) = 0.82
    assert fig.algbw["all_to_all"] == pytest.approx(0.82e8)
    assert fig.ingestion_bandwidth == pytest.approx(5e7 * 0.6)        # ingestion streams over TCP
    a100 = achievable(dataclasses.replace(TINY, gpu_model="A100-SXM4-40GB", transport="tcp"))
    assert a100.algbw["all_reduce"] == pytest.approx(5e7 * 0.6)        # min(0.69 NVLink3, 0.60 TCP)


def test_expected_lookup_is_the_bound_at_achieved_hbm_plus_one_fused_kernel(tmp_path):
    doc = estimate(TINY, tiny(tmp_path))
    rows = {r["id"]: r for r in doc["expected"]["terms"]}
    # the bound moves 4800 B at 1e9 B/s = 4.8 us; at 0.89e9: 5.3933 us, + 1 launch of 0.9 us
    assert terms(doc)["embedding_fwd"] == pytest.approx(4.8e-6)
    assert rows["embedding_fwd"]["seconds"] == pytest.approx(4.8e-6 / 0.89 + 0.9e-6)
    # MLP forward: 4 layers -> 2 x 4 + 1 (interaction) = 9 kernels; backward 3 x 4 + 1 = 13
    assert (rows["mlp_fwd"]["kernels"], rows["mlp_bwd"]["kernels"]) == (9, 13)


def test_the_gpu_waits_for_the_pooled_embedding_alltoalls(tmp_path):
    exp = estimate(TINY, tiny(tmp_path))["expected"]
    rows = {r["id"]: r["seconds"] for r in exp["terms"]}
    assert exp["critical_path_seconds"] == pytest.approx(
        exp["resources_seconds"]["gpu"] + rows["embedding_alltoall_fwd"] + rows["embedding_alltoall_bwd"]
        - bottom_mlp_share(tiny(tmp_path)) * (rows["mlp_fwd"] + rows["mlp_bwd"]))
    assert exp["iteration_seconds"] == max(exp["critical_path_seconds"], *exp["resources_seconds"].values())


def test_text_report_shows_the_expected_iteration(tmp_path):
    doc = estimate(TINY, tiny(tmp_path))
    line = next(x for x in text_report(doc).splitlines() if x.startswith("Expected: "))
    assert "samples/s (achieved rates, latencies, launches; bound by the " in line


@settings(max_examples=pinned(40), deadline=None)
@given(sharding=st.sampled_from(["table-wise", "row-wise", "column-wise", "data-parallel", "table-row-wise"]),
       per_gpu=st.integers(1, 4096), gpus_per_node=st.integers(1, 8), nodes=st.integers(1, 4),
       transport=st.sampled_from(["tcp", "rocev2", "infiniband"]), nvlink=st.sampled_from([0.0, 1e9]),
       gpudirect=st.booleans(), model=st.sampled_from(["toy", "A100-SXM4-40GB"]))
def test_qps_expected_is_never_above_the_overlapped_bound(sharding, per_gpu, gpus_per_node, nodes, transport,
                                                          nvlink, gpudirect, model):
    figures = dataclasses.replace(TINY, gpus=gpus_per_node * nodes, gpus_per_node=gpus_per_node, nodes=nodes,
                                  transport=transport, nvlink_bandwidth=nvlink, gpudirect=gpudirect, gpu_model=model,
                                  hbm_capacity=1e9)
    text = BASE.format(dtype="fp16", interaction="cat", optimizer="sgd", sharding=sharding, forward="fp32")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tiny.yaml"
        path.write_text(text.replace("per_gpu: 10", f"per_gpu: {per_gpu}"))
        doc = estimate(figures, load_workload(path))
    assert doc["qps_expected"] <= doc["qps_overlapped"]
    assert doc["iteration_seconds_expected"] >= doc["overlapped_seconds"]


def test_every_calibration_constant_names_its_source():
    for name, constant in cal.CALIBRATION.items():
        assert constant.source and constant.measured, name
        assert constant.value > 0, name
        if constant.unit == "fraction":
            assert constant.value <= 1, name
    assert "| `hbm_efficiency` | 0.89 |" in cal.markdown_table()


def test_an_alltoall_posts_its_sends_at_once_so_its_latency_does_not_grow_with_the_ranks():
    # NCCL's grouped p2p: base + one step of the slowest link a peer is reached by.
    # Across nodes, NCCL 2.20.3: 8.4 + 14.0 = 22.4 us (Ring/Simple; 2.7.5: 8.4 + 9.6 = 18 us),
    # on TINY's 4 ranks and on 16 nodes of 8 alike
    assert alltoall_latency(TINY, "Simple") == pytest.approx(22.4e-6)
    assert alltoall_latency(TINY, "Simple", nt.NCCL_2_7) == pytest.approx(18.0e-6)
    big = dataclasses.replace(TINY, gpus=128, gpus_per_node=8, nodes=16)
    assert alltoall_latency(big, "Simple") == pytest.approx(22.4e-6)
    # one node of 8 on NVLink: 8.4 + 3.4 = 11.8 us (nccl-tests measures 10.6 us at 128 B on 8 H20s)
    node = dataclasses.replace(TINY, gpus=8, gpus_per_node=8, nodes=1)
    assert alltoall_latency(node, "Simple") == pytest.approx(11.8e-6)


def test_each_hierarchical_phase_runs_at_its_own_links_efficiency():
    # network-bound AlltoAll: 1 / max(1e-9 / 0.82, 1e-8 / 0.96) = 0.96e8 (RDMA's, not NVLink's 0.82)
    network_bound = dataclasses.replace(TINY, collective_phases={"all_to_all": {"intra": 1e-9, "inter": 1e-8}})
    assert achieved_algbw(network_bound, "all_to_all") == pytest.approx(0.96e8)
    # NVLink-bound: 1 / max(1e-8 / 0.82, 1e-9 / 0.96) = 0.82e8
    nvlink_bound = dataclasses.replace(TINY, collective_phases={"all_to_all": {"intra": 1e-8, "inter": 1e-9}})
    assert achieved_algbw(nvlink_bound, "all_to_all") == pytest.approx(0.82e8)
    # close phases: the slower after derating binds: 1 / max(0.9e-8 / 0.82, 1e-8 / 0.96) = 1 / 1.0976e-8
    close = dataclasses.replace(TINY, collective_phases={"all_to_all": {"intra": 0.9e-8, "inter": 1e-8}})
    assert achieved_algbw(close, "all_to_all") == pytest.approx(0.82 / 0.9e-8)
    # without phases (a record built by hand) the lower of the two: 1e8 x 0.82
    assert achieved_algbw(TINY, "all_to_all") == pytest.approx(0.82e8)


@pytest.mark.parametrize("platform", ["dgx-h100-8", "zionex-16"])
def test_a_clusters_phases_are_the_ones_its_collective_bounds_come_from(platform):
    f = figures(topology_of(load_any(Path(__file__).resolve().parent.parent / "platforms" / f"{platform}.yaml")[0]))
    assert set(f.collective_phases) == set(f.algbw)
    for name, phases in f.collective_phases.items():
        assert 1 / max(phases.values()) == pytest.approx(f.algbw[name])


def test_the_pooled_embedding_alltoalls_hide_behind_the_bottom_mlp(tmp_path):
    # bottom 4-8-2: 2 x (4x8 + 8x2) = 96 FLOPs; top 6-3-1: 2 x (6x3 + 3x1) = 42; cat: none -> 96/138
    assert bottom_mlp_share(tiny(tmp_path)) == pytest.approx(96 / 138)
    slow_mlp = dataclasses.replace(TINY, peak_flop_per_s={"fp16": 1e6, "fp32": 5e5})
    exp = estimate(slow_mlp, tiny(tmp_path))["expected"]
    rows = {r["id"]: r["seconds"] for r in exp["terms"]}
    # the bottom MLP now outlasts both exchanges: they add nothing to the GPU's work
    assert 96 / 138 * rows["mlp_fwd"] > rows["embedding_alltoall_fwd"]
    assert exp["critical_path_seconds"] == pytest.approx(exp["resources_seconds"]["gpu"])


def test_table_row_wise_reductions_pay_a_nodes_latency_and_the_cross_node_alltoall_one_gpu_per_node(tmp_path):
    # TINY: 2 nodes x 2 GPUs. The intra-node ReduceScatter runs among a node's 2 GPUs (one node,
    # NVLink: NCCL 2.20.3 Ring/LL 6.6 + 1 x 0.6 = 7.2 us), the cross-node AlltoAll among 2 GPUs, one
    # per node (8.4 + 14.0 = 22.4 us for Simple): neither pays a 4-rank ring's steps.
    from hwspec.perf.estimate.nccl import scoped
    node, cross = scoped(TINY, "node"), scoped(TINY, "cross")
    assert (node.gpus, node.nodes, cross.gpus, cross.nodes, cross.gpus_per_node) == (2, 1, 2, 2, 1)
    assert collective_seconds(node, "reduce_scatter", 0.0, 0.0) == (pytest.approx(7.2e-6), "Ring/LL")
    assert collective_seconds(cross, "all_to_all", 0.0, 0.0)[0] == pytest.approx((6.6 + 2.7) * 1e-6)  # Ring/LL
    doc = estimate(TINY, tiny(tmp_path, sharding="table-row-wise"))
    row = next(r for r in doc["expected"]["terms"] if r["id"] == "embedding_alltoall_fwd")
    assert set(row["algorithms"]) == {"reduce_scatter (node)", "all_to_all (cross)"}


def test_the_embedding_update_waits_for_the_busiest_gpus_id_sort_and_reduction(tmp_path):
    # TINY, table-wise: 2 tables of pooling 3 on 4 GPUs, global batch 40: the busiest GPU holds one
    # table and sorts 40 x 3 = 120 int32 ids, each 1555e9 / 19.6e9 = 79.34 bytes of HBM time (CUB on
    # an A100, Onesweep's paper) at TINY's 1e9 B/s: 9.52 us on top of the update; then de-duplicates
    # and reduces them (test below): 1680.5 B at 0.89e9 B/s
    doc = estimate(TINY, tiny(tmp_path))
    row = next(r for r in doc["expected"]["terms"] if r["id"] == "embedding_bwd")
    unique = 100 * (1 - 0.99**120)
    reduction = 120 * 4 + unique * 8 + (120 - 40) * 2 * 4
    assert row["fixed_seconds"] == pytest.approx(120 * 1555e9 / 19.6e9 / 1e9 + reduction / 0.89e9)
    assert row["seconds"] == pytest.approx(row["bandwidth_seconds"] + row["launch_seconds"] + row["fixed_seconds"])
    charged = {r["id"] for r in doc["expected"]["terms"] if r["fixed_seconds"] > 0}
    assert charged == {"embedding_bwd", "mlp_fwd", "mlp_bwd"}


def test_distinct_rows_are_the_expected_rows_touched_by_uniform_lookups():
    from hwspec.perf.estimate.lookups import distinct_rows
    assert distinct_rows(120, 100) == pytest.approx(100 * (1 - 0.99**120))   # 70.06 of 100 rows
    assert distinct_rows(1, 1e9) == pytest.approx(1.0)                       # one lookup, one row
    assert distinct_rows(1e6, 3) == pytest.approx(3.0)                       # a tiny table: every row
    assert distinct_rows(1e3, 4e7) == pytest.approx(1e3, rel=2e-5)           # a huge table: almost no repeat
    assert distinct_rows(0, 100) == 0 and distinct_rows(5, 0) == 0


def test_the_reduction_moves_the_run_length_encode_the_gather_and_hugectrs_gradient_buffer(tmp_path):
    # One TINY shard: 120 int32 ids over 100 rows (70.06 distinct), 40 bags, dim 2, fp32 gradients.
    # encode: 120 ids read x 4 B + 70.06 runs x (4 B id + 4 B offset); gather: the 80 ids beyond one
    # per bag (the bound reads each bag's gradient once) x 2 x 4 B; HugeCTR's fp32 buffer: each
    # distinct row's sum written and read back, 2 x 70.06 x 2 x 4 B
    from hwspec.perf.estimate.lookups import reduction_bytes
    w = tiny(tmp_path)
    unique = 100 * (1 - 0.99**120)
    assert reduction_bytes(w, 120, unique, 40, 2) == pytest.approx(480 + 8 * unique + 640)
    buffered = dataclasses.replace(w, gradient_buffer=True)
    assert reduction_bytes(buffered, 120, unique, 40, 2) == pytest.approx(480 + 8 * unique + 640 + 16 * unique)
    # a row-wise shard sees fewer ids than bags: no gather beyond the bound's one read per bag
    assert reduction_bytes(w, 30, 30, 40, 2) == pytest.approx(30 * 4 + 30 * 8)


def test_the_gradient_buffer_is_read_from_the_workload(tmp_path):
    path = tmp_path / "buffered.yaml"
    path.write_text(BASE.format(dtype="fp16", interaction="cat", optimizer="sgd", sharding="table-wise",
                                forward="fp32").replace("  hbm_share: 0.5\n", "  hbm_share: 0.5\n  gradient_buffer: true\n"))
    assert load_workload(path).gradient_buffer and not tiny(tmp_path).gradient_buffer


def test_elementwise_traffic_is_the_relu_masks_the_concatenation_and_the_cross_layers():
    from hwspec.perf.estimate.expected import elementwise_bytes_per_sample
    root = Path(__file__).resolve().parent.parent
    mlperf = load_workload(root / "workloads" / "dlrm-dcnv2-mlperf-b55296.yaml")
    # fp16; masks: 512 + 256 + 128 + 1024 + 1024 + 512 + 256 + 1 = 3713 elements each way;
    # N = 128 + 26 x 128 = 3456: concatenation 2N each way, 3 cross layers 4N forward, 6N backward
    assert elementwise_bytes_per_sample(mlperf) == (2 * (3713 + 2 * 3456 + 12 * 3456), 2 * (3713 + 2 * 3456 + 18 * 3456))


def test_elementwise_kernels_add_their_hbm_time_to_the_mlp_terms(tmp_path):
    # tiny (cat, fp16): masks 8 + 2 + 3 + 1 = 14, N = 2 + 2 x 2 = 6: (14 + 12) x 2 B = 52 B per sample
    # each way; local batch 10 at 0.89e9 B/s
    rows = {r["id"]: r for r in estimate(TINY, tiny(tmp_path))["expected"]["terms"]}
    assert rows["mlp_fwd"]["fixed_seconds"] == pytest.approx(520 / 0.89e9)
    assert rows["mlp_bwd"]["fixed_seconds"] == pytest.approx(520 / 0.89e9)


def test_a_hopper_gpu_runs_at_hoppers_achieved_hbm_and_gemm_rates():
    hopper = achievable(dataclasses.replace(TINY, compute_capability=90))
    assert hopper.hbm_bandwidth == pytest.approx(0.90e9)
    assert hopper.peak_flop_per_s["fp16"] == pytest.approx(0.744e12)


def test_inter_iteration_overlap_hides_the_forward_exchange_behind_the_top_mlp_backward_too(tmp_path):
    # Without it the forward exchange hides only behind the bottom MLP's forward (its FLOP share s of
    # mlp_fwd); with it also behind the rest of mlp_bwd, the top MLP's backward: (1 - s) x mlp_bwd more.
    w = tiny(tmp_path)
    plain = estimate(TINY, w)["expected"]
    overlapped = estimate(TINY, dataclasses.replace(w, inter_iteration_overlap=True))["expected"]
    rows = {r["id"]: r["seconds"] for r in plain["terms"]}
    s = bottom_mlp_share(w)

    def exposed(hidden_fwd):
        return (max(0.0, rows["embedding_alltoall_fwd"] - hidden_fwd)
                + max(0.0, rows["embedding_alltoall_bwd"] - s * rows["mlp_bwd"]))

    # each run's GPU work: the more of the exchange hides, the more HBM its kernel takes beside it
    gpu, busier = plain["resources_seconds"]["gpu"], overlapped["resources_seconds"]["gpu"]
    assert busier > gpu
    assert plain["critical_path_seconds"] == pytest.approx(gpu + exposed(s * rows["mlp_fwd"]))
    assert overlapped["critical_path_seconds"] == pytest.approx(
        busier + exposed(s * rows["mlp_fwd"] + (1 - s) * rows["mlp_bwd"]))


def test_gemm_efficiency_follows_the_measured_sizes_of_the_generation():
    # Hopper: 179.13 TFLOPS at n = 1024 and 645.12 at 2048 of 989 (H100, torch 2.7); halfway in
    # log2(FLOPs) between 2 x 1024^3 and 2 x 2048^3 (3 doublings apart) is their mean
    mid = 2 * 1024**3 * 2 ** 1.5
    assert cal.gemm_efficiency_at(90, mid) == pytest.approx((179.13 + 645.12) / 2 / 989)
    assert cal.gemm_efficiency_at(90, 1e6) == pytest.approx(179.13 / 989)          # below: the smallest measured
    assert cal.gemm_efficiency_at(90, 1e15) == pytest.approx(cal.gemm_efficiency(90), abs=1e-3)  # above: n = 8192
    assert cal.gemm_efficiency_at(80, 2 * 2048**3) == pytest.approx(192.54 / 312)   # A800 at n = 2048


def test_the_mlp_terms_run_at_each_gemms_size(tmp_path):
    # tiny: local batch 10, layers 4x8, 8x2, 6x3, 3x1: every GEMM is far below n = 128 on an unknown
    # (Ampere) GPU, 0.343 of 312 TFLOPS: the MLP terms take 0.69 / 0.0011 times the large-GEMM time
    from hwspec.perf.estimate.expected import gemm_shape_factor
    factor = gemm_shape_factor(TINY, tiny(tmp_path))
    assert factor == pytest.approx(0.69 / (0.343 / 312), rel=1e-3)
    rows = {r["id"]: r for r in estimate(TINY, tiny(tmp_path))["expected"]["terms"]}
    assert rows["mlp_fwd"]["bandwidth_seconds"] == pytest.approx(terms(estimate(TINY, tiny(tmp_path)))["mlp_fwd"]
                                                                 / 0.69 * factor)


def test_a_collectives_hbm_bytes_are_twice_its_bus_bytes():
    from hwspec.perf.estimate.expected import collective_hbm_bytes
    assert collective_hbm_bytes("all_reduce", 100, 4) == pytest.approx(2 * 100 * 2 * 3 / 4)   # 300 B
    assert collective_hbm_bytes("all_to_all", 100, 4) == pytest.approx(2 * 100 * 3 / 4)       # 150 B
    assert collective_hbm_bytes("reduce_scatter", 100, 1) == 0                                # no peer


def test_nccl_kernels_take_hbm_from_the_gpu_work_they_run_beside(tmp_path):
    # The AllReduce overlaps the backward pass whole; the forward exchange only for the bottom MLP's
    # forward (96/138 of mlp_fwd's 1 ms: 0.696 of its 2 ms hide, so 0.348 of its bytes contend)
    from hwspec.perf.estimate.expected import nccl_hbm_seconds
    rows = [{"id": "dense_allreduce", "resource": "network", "seconds": 1e-3, "hbm_bytes": 1e6},
            {"id": "embedding_alltoall_fwd", "resource": "network", "seconds": 2e-3, "hbm_bytes": 4e6},
            {"id": "mlp_fwd", "resource": "gpu", "seconds": 1e-3, "hbm_bytes": 0.0},
            {"id": "mlp_bwd", "resource": "gpu", "seconds": 2e-3, "hbm_bytes": 0.0}]
    w = tiny(tmp_path)
    hidden = 96 / 138 * 1e-3 / 2e-3
    assert nccl_hbm_seconds(TINY, w, rows, sort=0.0) == pytest.approx((1e6 + hidden * 4e6) / 0.89e9)
    # with cpu-host placement the exchanges run host to host: only the AllReduce is charged
    assert nccl_hbm_seconds(TINY, dataclasses.replace(w, placement="cpu-host"), rows, sort=0.0) == pytest.approx(1e6 / 0.89e9)


def test_the_gpus_expected_work_includes_the_hbm_the_collectives_take(tmp_path):
    exp = estimate(TINY, tiny(tmp_path))["expected"]
    gpu_rows = math.fsum(r["seconds"] for r in exp["terms"] if r["resource"] == "gpu")
    assert exp["nccl_hbm_seconds"] > 0
    assert exp["resources_seconds"]["gpu"] == pytest.approx(
        gpu_rows + exp["nccl_hbm_seconds"] + exp["dense_update_seconds"])


def test_the_dense_optimizer_step_moves_master_weights_state_gradient_and_the_cast():
    from hwspec.perf.estimate.expected import dense_update_bytes_per_parameter
    root = Path(__file__).resolve().parent.parent
    mlperf = load_workload(root / "workloads" / "dlrm-dcnv2-mlperf-b55296.yaml")
    # Adagrad, fp16: fp32 weight 4 + 4, fp32 sum 4 + 4, fp16 gradient 2, cast 4 read + 2 written
    assert dense_update_bytes_per_parameter(mlperf) == 24
    assert dense_update_bytes_per_parameter(dataclasses.replace(mlperf, compute_dtype="fp32")) == 20
    assert dense_update_bytes_per_parameter(dataclasses.replace(mlperf, optimizer="sgd")) == 16


def test_every_gpu_runs_the_dense_optimizer_step_at_achieved_hbm(tmp_path):
    # tiny (sgd, fp16): 8 + 2 + 6 = 16 B per dense parameter at 0.89e9 B/s
    w = tiny(tmp_path)
    exp = estimate(TINY, w)["expected"]
    assert exp["dense_update_seconds"] == pytest.approx(w.dense_parameters * 16 / 0.89e9)


def test_an_allreduce_after_the_backward_pass_waits_beside_the_embedding_update_only(tmp_path):
    # HugeCTR: the AllReduce starts when the backward pass ends and runs beside the embedding's
    # local reduce and update (embedding_bwd less the id sort, which ran beside the MLPs)
    w = tiny(tmp_path)
    plain = estimate(TINY, w)["expected"]
    after = estimate(TINY, dataclasses.replace(w, allreduce_overlap="embedding_update"))["expected"]
    rows = {r["id"]: r["seconds"] for r in after["terms"]}
    beside = rows["embedding_bwd"] - after["sort_seconds"]
    exposed = max(0.0, rows["dense_allreduce"] - beside)
    s = bottom_mlp_share(w)
    pooled = (max(0.0, rows["embedding_alltoall_fwd"] - s * rows["mlp_fwd"])
              + max(0.0, rows["embedding_alltoall_bwd"] - s * rows["mlp_bwd"]))
    assert after["critical_path_seconds"] == pytest.approx(after["resources_seconds"]["gpu"] + pooled + exposed)
    assert exposed > 0  # tiny's AllReduce outlasts its update: the path is longer than DDP's overlap gives
    assert after["critical_path_seconds"] > plain["critical_path_seconds"]
