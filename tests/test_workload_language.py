"""The workload language of issue 23 (item 5): DCNv2 cross layers, id width and all-reduce dtype
stated, samples to converge -> time to train. Expected numbers are worked out by hand beside
each assertion; the tiny workload and platform are tests/test_estimate.py's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec.diagnostics import HwspecError
from hwspec.model.workload import load_workload
from hwspec.perf.estimate import estimate, text_report, time_to_train_seconds
from tests.test_estimate import BASE, TINY, amounts

ROOT = Path(__file__).resolve().parents[1]

DCNV2 = {"interaction": "dcnv2\ncross: {layers: 2, low_rank: 2}"}


def write(tmp_path: Path, text: str):
    path = tmp_path / "w.yaml"
    path.write_text(text)
    return path


def tiny_text(**changes: str) -> str:
    values = {"dtype": "fp16", "interaction": "cat", "optimizer": "sgd", "sharding": "table-wise", "forward": "fp32"} | changes
    return BASE.format(**values)


def errors(tmp_path: Path, text: str) -> list[tuple[str, int, int, str]]:
    with pytest.raises(HwspecError) as info:
        load_workload(write(tmp_path, text))
    return [(d.code, d.line, d.col, d.message) for d in info.value.diagnostics]


# ---------------------------------------------------------------- DCNv2


def test_low_rank_cross_layers_flops_and_parameters_match_the_hand_computation(tmp_path):
    w = load_workload(write(tmp_path, tiny_text(**DCNV2)))
    # N = bottom MLP output 2 + 2 tables x dim 2 = 6; rank r = 2. Per layer: V x 2Nr = 24,
    # W (V x) 2rN = 24, bias + product with x_0 + residual 3N = 18: 66 FLOP; 2 layers: 132
    assert w.interaction_output_width == 6 and w.interaction_flops_per_sample == 132
    # per layer V (r x N) 12 + W (N x r) 12 + bias 6 = 30; 2 layers: 60; MLPs 83 (58 bottom + 25 top)
    assert (w.interaction_parameters, w.mlp_parameters, w.dense_parameters) == (60, 83, 143)


def test_full_rank_cross_layer_is_an_n_by_n_matrix(tmp_path):
    w = load_workload(write(tmp_path, tiny_text(interaction="dcnv2\ncross: {layers: 1}")))
    # N = 6: W x 2N^2 = 72, plus 3N = 18: 90 FLOP; parameters N^2 + N = 42
    assert (w.interaction_flops_per_sample, w.interaction_parameters) == (90, 42)


def test_cross_layers_feed_the_mlp_terms_and_the_dense_allreduce(tmp_path):
    a = amounts(estimate(TINY, load_workload(write(tmp_path, tiny_text(**DCNV2)))))
    # local batch 10 x (MLPs 138 + cross layers 132) = 2700 FLOP forward, twice that backward
    assert (a["mlp_fwd"], a["mlp_bwd"]) == (2700, 5400)
    # (83 MLP + 60 cross) parameters x fp32 4 B = 572 B (332 B without the cross layers)
    assert a["dense_allreduce"] == 572


def test_dcnv2_without_a_cross_network_is_a_located_e110(tmp_path):
    assert errors(tmp_path, tiny_text(interaction="dcnv2")) == [
        ("E110", 8, 14, "interaction: dcnv2 needs its cross network, 'cross: {layers: L, low_rank: r}'")]


def test_a_cross_network_without_dcnv2_is_a_located_e110(tmp_path):
    assert errors(tmp_path, tiny_text(interaction="cat\ncross: {layers: 3, low_rank: 4}")) == [
        ("E110", 9, 8, "cross: a cross network belongs to interaction: dcnv2, not cat")]


def test_a_dcnv2_top_mlp_not_at_the_concatenated_width_is_e404(tmp_path):
    text = tiny_text(**DCNV2).replace("top_mlp: [6, 3, 1]", "top_mlp: [7, 3, 1]")
    assert errors(tmp_path, text) == [
        ("E404", 7, 11, "top_mlp[0]: the top MLP's input width is 7, but the dcnv2 interaction outputs 6 "
                        "(the bottom MLP's output plus every table's dim)")]


def test_mlperf_dlrm_dcnv2_matches_the_reference_by_hand():
    w = load_workload(ROOT / "workloads" / "dlrm-dcnv2-mlperf.yaml")
    # 26 tables of dim 128, 214 ids per sample (the multi-hot sizes' sum), 204,184,588 rows
    assert (len(w.tables), sum(t.pooling for t in w.tables), sum(t.rows for t in w.tables)) == (26, 214, 204_184_588)
    # N = 128 + 26 x 128 = 3456, r = 512; per layer 4 N r + 3 N = 7,077,888 + 10,368; x 3 layers
    assert w.interaction_output_width == 3456 and w.interaction_flops_per_sample == 21_264_768
    # bottom 2 (13x512 + 512x256 + 256x128) = 340,992; top 2 (3456x1024 + 1024x1024 + 1024x512
    # + 512x256 + 256x1) = 10,486,272
    assert w.mlp_flops_per_sample == 340_992 + 10_486_272
    # cross 3 (2 x 3456 x 512 + 3456) = 10,627,200; bottom 171,392; top 5,245,953
    assert (w.interaction_parameters, w.dense_parameters) == (10_627_200, 16_044_545)
    # fp32 weights and Adagrad state per element: 204,184,588 x 128 x 8 B
    assert sum(t.storage_bytes for t in w.tables) == 204_184_588 * 128 * 8
    # RCP mean 0.7933 epochs of 4,195,197,692 samples
    assert w.samples_to_converge == pytest.approx(0.7933 * 4_195_197_692)
    assert (w.batch_global, w.index_dtype, w.optimizer, w.comm_allreduce) == (65536, "int32", "adagrad", "fp32")


# ---------------------------------------------------------------- stated, not defaulted


def test_a_workload_without_its_id_width_is_told_where(tmp_path):
    assert errors(tmp_path, tiny_text().replace("  index_dtype: int32\n", "")) == [
        ("E111", 10, 3, "embeddings: missing required key 'index_dtype'")]


def test_a_workload_without_its_allreduce_dtype_is_told_where(tmp_path):
    text = tiny_text().replace(", allreduce: fp32}", "}")
    assert errors(tmp_path, text) == [("E111", 16, 16, "communication: missing required key 'allreduce'")]


# ---------------------------------------------------------------- time to train


def test_time_to_train_is_samples_over_any_qps():
    assert time_to_train_seconds(3e9, 5e6) == 600.0
    assert time_to_train_seconds(None, 5e6) is None and time_to_train_seconds(3e9, None) is None


def test_time_to_train_from_each_qps_bound(tmp_path):
    text = tiny_text() + "convergence: {epochs: 0.5, dataset_samples: 8000}\n"
    doc = estimate(TINY, load_workload(write(tmp_path, text)))
    # 0.5 x 8000 = 4000 samples; each QPS bound is global batch 40 / its seconds
    assert doc["samples_to_converge"] == 4000
    assert doc["time_to_train_seconds"]["overlapped"] == pytest.approx(4000 / doc["qps_overlapped"])
    assert doc["time_to_train_seconds"]["serial"] == pytest.approx(4000 / doc["qps_serial"])
    assert doc["time_to_train_seconds"]["serial"] == pytest.approx(100 * doc["serial_seconds"])  # 4000 / 40 iterations
    assert doc["time_to_train_seconds"]["expected"] == pytest.approx(100 * doc["iteration_seconds_expected"])
    assert "Time to train (0.000004 G samples): " in text_report(doc)


def test_without_convergence_there_is_no_time_to_train(tmp_path):
    doc = estimate(TINY, load_workload(write(tmp_path, tiny_text())))
    assert doc["time_to_train_seconds"] == {"overlapped": None, "serial": None, "expected": None}
    assert "Time to train" not in text_report(doc)


def test_convergence_given_two_ways_is_a_located_e110(tmp_path):
    text = tiny_text() + "convergence: {samples: 10, epochs: 0.5}\n"
    assert errors(tmp_path, text) == [
        ("E110", 17, 14, "convergence: give either 'samples', or 'epochs' and 'dataset_samples'")]
