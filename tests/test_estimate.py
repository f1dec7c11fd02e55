"""The workload estimate, term by term, on hand-computed tiny cases.

The platform is a `Figures` record with round numbers (2 nodes x 2 GPUs); the workload is a
tiny DLRM written as YAML. Every expected number below is worked out by hand in the comment
beside it, from the formulas in docs/estimates.md.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hwspec.diagnostics import HwspecError
from hwspec.model.workload import load_workload
from hwspec.perf.estimate import busiest, estimate, inter_node_share, placement, touched
from hwspec.perf.platform_figures import Figures

TINY = Figures(
    name="tiny", title="tiny", file="tiny.yaml", kind="cluster", gpus=4, gpus_per_node=2, nodes=2, sockets_per_node=1,
    gpu_model="toy", peak_flop_per_s={"fp16": 1e12, "fp32": 5e11},
    hbm_capacity=1e6, hbm_bandwidth=1e9, ddr_capacity=1e7, ddr_bandwidth=1e8, ssd_capacity=1e8, ssd_bandwidth=1e7,
    pcie_host_bandwidth=2e8, pcie_host_shared_bandwidth=1e8, nvlink_bandwidth=1e9,
    nic_bandwidth=1e8, injection_bandwidth=1e8, ingestion_bandwidth=5e7, transport="rocev2", gpudirect=True,
    collectives_scope="hierarchical",
    algbw={"all_to_all": 1e8, "all_reduce": 5e7, "reduce_scatter": 2e8, "all_gather": 2e8},
    busbw={},
)

BASE = """\
hwspec: 1
kind: workload
name: tiny
batch: {{per_gpu: 10}}
compute_dtype: {dtype}
bottom_mlp: [4, 8, 2]
top_mlp: [6, 3, 1]
interaction: {interaction}
embeddings:
  precision: fp32
  optimizer: {optimizer}
  index_dtype: int32
  hbm_share: 0.5
  tables:
    - {{name: t, count: 2, rows: 100, dim: 2, pooling: 3, sharding: {sharding}, column_shards: 2}}
communication: {{forward: {forward}, backward: fp32, allreduce: fp32}}
"""


def tiny(tmp_path: Path, **changes: str):
    values = {"dtype": "fp16", "interaction": "cat", "optimizer": "sgd", "sharding": "table-wise", "forward": "fp32"} | changes
    path = tmp_path / "tiny.yaml"
    path.write_text(BASE.format(**values))
    return load_workload(path)


UNIQUE = 100 * (1 - 0.99 ** 120)
"""Distinct rows among the busiest GPU's B x pooling = 120 uniform ids over a 100-row table:
R (1 - (1 - 1/R)^k), about 70.06; the update reads and writes each of them once."""
BWD_BYTES = 2 * 32 * UNIQUE + 960
"""The busiest GPU's update (sgd, table-wise): each distinct row read and written in a 32-byte
sector, + ids 480 B, lengths 160 B and output gradients 320 B: about 5444 B."""


def terms(doc) -> dict[str, float]:
    return {t["id"]: t["seconds"] for t in doc["terms"]}


def amounts(doc) -> dict[str, float]:
    return {t["id"]: t.get("amount_bytes", t.get("amount_flop")) for t in doc["terms"]}


def test_table_wise_terms_match_the_hand_computation(tmp_path):
    doc = estimate(TINY, tiny(tmp_path))
    # n = 4 GPUs, local batch b = 10, global batch B = 40
    assert (doc["local_batch"], doc["global_batch"]) == (10, 40)
    a, t = amounts(doc), terms(doc)
    # 2 whole tables on 4 GPUs: the busiest GPU holds one and looks it up for the global batch.
    # B x pooling = 120 rows of dim 2 x 4 B = 8 B, each read as one 32-byte HBM sector: 3840 B;
    # ids 120 x 4 B = 480 B; lengths 40 x 4 B = 160 B; pooled outputs 40 x 2 x 4 B = 320 B.
    # 3840 + 480 + 160 + 320 = 4800 B at HBM 1e9 B/s
    assert a["embedding_fwd"] == 4800 and t["embedding_fwd"] == pytest.approx(4.8e-6)
    # backward (sgd, no state): the UNIQUE (~70.06) distinct rows of the 120 ids read and written
    # once each, 2 x 32 B, ids and lengths again 640, output gradients 320: BWD_BYTES (~5444 B)
    assert a["embedding_bwd"] == pytest.approx(BWD_BYTES) and t["embedding_bwd"] == pytest.approx(BWD_BYTES / 1e9)
    assert doc["table_wise_balance"] == {"shards": 2, "busiest_over_average": 2.0}  # 1 table vs 0.5 on average
    # MLP forward: 2 x (4x8 + 8x2 + 6x3 + 3x1) = 138 FLOP per sample, x 10 = 1380 FLOP at 1e12 FLOP/s
    assert a["mlp_fwd"] == 1380 and t["mlp_fwd"] == pytest.approx(1.38e-9)
    assert a["mlp_bwd"] == 2760 and t["mlp_bwd"] == pytest.approx(2.76e-9)
    # input AlltoAll: each GPU sends b x count x (pooling x 4-byte ids + 4-byte length) = 10 x 2 x 16
    # = 320 B, but the busiest receiver (one whole table) gets B x 16 = 640 B: 640 B at 1e8
    assert a["input_alltoall"] == 640 and t["input_alltoall"] == pytest.approx(6.4e-6)
    # pooled embeddings: the busiest sender's B x dim x 4 bytes = 40 x 2 x 4 = 320 B each way at algbw 1e8
    assert a["embedding_alltoall_fwd"] == 320 and t["embedding_alltoall_fwd"] == pytest.approx(3.2e-6)
    assert a["embedding_alltoall_bwd"] == 320 and t["embedding_alltoall_bwd"] == pytest.approx(3.2e-6)
    # AllReduce: weights and biases (32+8)+(16+2)+(18+3)+(3+1) = 83 x 4 B = 332 B at 5e7
    assert a["dense_allreduce"] == 332 and t["dense_allreduce"] == pytest.approx(6.64e-6)
    # input bytes: b x (4 dense x 4 B + 4 B label + 2 tables x 16 B) = 10 x 52 = 520 B
    assert a["host_to_device"] == 520 and t["host_to_device"] == pytest.approx(5.2e-6)  # PCIe shared 1e8
    assert a["ingestion"] == 520 and t["ingestion"] == pytest.approx(1.04e-5)  # ingestion 5e7
    assert t["host_staging"] == 0  # GPUDirect RDMA: nothing bounces through host memory


def test_overlap_takes_the_busiest_resource_and_serial_the_sum(tmp_path):
    doc = estimate(TINY, tiny(tmp_path))
    resources = doc["resources_seconds"]
    gpu = 4.8e-6 + BWD_BYTES / 1e9 + 1.38e-9 + 2.76e-9  # ~1.0248e-5
    assert resources["gpu"] == pytest.approx(gpu)
    assert resources["network"] == pytest.approx(6.4e-6 + 3.2e-6 + 3.2e-6 + 6.64e-6)  # 1.944e-5
    assert resources["pcie"] == pytest.approx(5.2e-6)
    assert resources["ingestion"] == pytest.approx(1.04e-5)
    assert doc["overlapped_seconds"] == pytest.approx(1.944e-5)
    assert doc["serial_seconds"] == pytest.approx(gpu + 1.944e-5 + 5.2e-6 + 1.04e-5)
    assert doc["qps_overlapped"] == pytest.approx(40 / 1.944e-5)
    assert doc["qps_serial"] == pytest.approx(40 / (gpu + 3.504e-5))
    assert doc["bottleneck"]["resource"] == "network" and doc["bottleneck"]["term"] == "dense_allreduce"


def test_tables_spill_from_hbm_to_host_ddr_across_pcie(tmp_path):
    small = dataclasses.replace(TINY, hbm_capacity=200)
    doc = estimate(small, tiny(tmp_path))
    # the busiest GPU holds one table: 100 rows x 8 B = 800 B; HBM holds 50% of 200 = 100 B
    tiers = {t["tier"]: t for t in doc["placement"]["tiers"]}
    assert doc["placement"]["need_bytes_per_gpu"] == 800
    assert (tiers["hbm"]["stored_bytes"], tiers["host_ddr"]["stored_bytes"], tiers["ssd"]["stored_bytes"]) == (100, 700, 0)
    assert tiers["host_ddr"]["bandwidth_bytes_per_s"] == 1e8  # min(DDR share 1e8, PCIe shared 1e8)
    # 120 row reads of 8 B: 1/8 from HBM in 32-byte sectors, 7/8 from DDR in 64-byte lines:
    # 120 x (0.125 x 32 / 1e9 + 0.875 x 64 / 1e8) = 6.768e-5 s, plus ids, lengths and pooled
    # outputs in HBM, 960 B / 1e9 = 9.6e-7 s
    assert terms(doc)["embedding_fwd"] == pytest.approx(6.864e-5)
    assert amounts(doc)["embedding_fwd"] == pytest.approx(120 * (0.125 * 32 + 0.875 * 64) + 960)  # 8160 B


def test_host_ddr_updates_read_and_write_in_both_pcie_directions(tmp_path):
    """D5: PCIe is full duplex: an update's reads come up and its writes go down at once."""
    ddr_only = dataclasses.replace(TINY, hbm_capacity=0, ddr_bandwidth=1e9)
    doc = estimate(ddr_only, tiny(tmp_path))
    ddr = doc["placement"]["tiers"][1]
    assert (ddr["fraction"], ddr["bandwidth_bytes_per_s"], ddr["update_bandwidth_bytes_per_s"]) == (1.0, 1e8, 2e8)
    # the UNIQUE distinct rows of 8 B, read and written in 64-byte lines: UNIQUE x 2 x 64 B (~8968 B)
    # at 2 x 1e8 (not 1e8: the writes go the other way); ids, lengths, output gradients 960 B / 1e9
    assert terms(doc)["embedding_bwd"] == pytest.approx(UNIQUE * 128 / 2e8 + 9.6e-7)
    # with DDR slower than both PCIe directions, DDR bounds the update: UNIQUE x 128 B / 1e8
    slow = estimate(dataclasses.replace(ddr_only, ddr_bandwidth=1e8), tiny(tmp_path))
    assert terms(slow)["embedding_bwd"] == pytest.approx(UNIQUE * 128 / 1e8 + 9.6e-7)


def test_tables_spill_to_ssd_after_ddr(tmp_path):
    doc = placement(dataclasses.replace(TINY, hbm_capacity=200, ddr_capacity=100), tiny(tmp_path))
    assert [t["stored_bytes"] for t in doc["tiers"]] == [100, 100, 600]
    assert doc["tiers"][2]["bandwidth_bytes_per_s"] == 1e7  # min(SSD 1e7, PCIe shared 1e8)


def test_tables_that_do_not_fit_are_a_located_error(tmp_path):
    with pytest.raises(HwspecError) as exc:
        estimate(dataclasses.replace(TINY, hbm_capacity=200, ddr_capacity=100, ssd_capacity=100), tiny(tmp_path))
    (d,) = exc.value.diagnostics
    assert (d.code, d.line, d.col) == ("E401", 15, 5)
    assert d.message == ("the embedding tables need 800 B per GPU on tiny (4 GPUs), "
                         "but HBM (50% of it), host DDR and SSD hold 300 B")


def test_compute_dtype_without_a_peak_is_a_located_error(tmp_path):
    with pytest.raises(HwspecError) as exc:
        estimate(TINY, tiny(tmp_path, dtype="bf16"))
    (d,) = exc.value.diagnostics
    assert (d.code, d.line, d.col) == ("E402", 5, 16)
    assert d.message == "compute_dtype 'bf16' has no peak on tiny's GPUs (toy)"
    assert d.hint == "peaks known: fp16, fp32"


def test_mlp_width_errors_are_located_at_the_width_not_at_1_1(tmp_path):
    """The width range was a check of the whole file (reported at 1:1); a width written as a
    string was read as a number, which the JSON Schema refuses."""
    path = tmp_path / "tiny.yaml"
    path.write_text(BASE.format(dtype="fp16", interaction="cat", optimizer="sgd", sharding="table-wise", forward="fp32")
                    .replace("bottom_mlp: [4, 8, 2]", 'bottom_mlp: [4, "8", 0]').replace("top_mlp: [6, 3, 1]", "top_mlp: [6, 3, 2000000]"))
    with pytest.raises(HwspecError) as exc:
        load_workload(path)
    assert [d.format().split(": ", 1)[1] for d in exc.value.diagnostics] == [
        "error[E110]: bottom_mlp[1]: '8' is a string: write the number without quotes (8)",
        "error[E110]: bottom_mlp[2]: Input should be greater than or equal to 1, got 0",
        "error[E110]: top_mlp[2]: Input should be less than or equal to 1000000, got 2000000"]
    assert [(d.line, d.col) for d in exc.value.diagnostics] == [(6, 17), (6, 22), (7, 17)]


def test_row_wise_tables_reduce_scatter_forward_and_all_gather_backward(tmp_path):
    t = terms(estimate(TINY, tiny(tmp_path, sharding="row-wise")))
    # B x count x dim x 4 = 40 x 2 x 2 x 4 = 640 B at reduce_scatter / all_gather algbw 2e8
    assert t["embedding_alltoall_fwd"] == pytest.approx(3.2e-6)
    assert t["embedding_alltoall_bwd"] == pytest.approx(3.2e-6)
    # each GPU receives 1/4 of the global batch's ids of both tables and every sample's length:
    # B x 2 x (3 x 4 B / 4 + 4 B) = 40 x 2 x 7 = 560 B (more than the 320 B it sends) at 1e8
    assert t["input_alltoall"] == pytest.approx(5.6e-6)


def test_column_wise_tables_send_the_ids_to_every_column_shard(tmp_path):
    doc = estimate(TINY, tiny(tmp_path, sharding="column-wise"))
    assert amounts(doc)["input_alltoall"] == 640  # 2 shards x 320 B sent; each GPU receives 40 x 16 B
    # 4 shards of dim 1 on 4 GPUs, one each: 120 rows of 4 B read as 32-byte sectors 3840 B, ids 480 B,
    # lengths 160 B, pooled B x 1 x 4 = 160 B
    assert amounts(doc)["embedding_fwd"] == 4640
    assert amounts(doc)["embedding_alltoall_fwd"] == 160
    assert doc["table_wise_balance"] == {"shards": 4, "busiest_over_average": 1.0}


def test_data_parallel_tables_need_no_alltoall_but_allreduce_their_gradients(tmp_path):
    doc = estimate(TINY, tiny(tmp_path, sharding="data-parallel"))
    a = amounts(doc)
    assert a["input_alltoall"] == 0 and a["embedding_alltoall_fwd"] == 0 and a["embedding_alltoall_bwd"] == 0
    assert a["dense_allreduce"] == 332 + 2 * 100 * 2 * 4  # MLP + whole tables: 1932 B
    # per table, local batch 10: 30 ids over 100 rows touch 100 (1 - 0.99^30) (~26.0) distinct rows,
    # each read and written in 32-byte sectors, ids 120 B, lengths 40 B, output gradients 80 B; x 2
    # tables + the dense optimizer step over both
    per_table = 2 * 32 * 100 * (1 - 0.99 ** 30) + 240
    assert a["embedding_bwd"] == pytest.approx(2 * per_table + 2 * 1600)
    assert doc["placement"]["need_bytes_per_gpu"] == 1600  # whole tables on every GPU


def test_data_parallel_table_gradients_are_all_reduced_in_the_allreduce_dtype(tmp_path):
    path = tmp_path / "fp16.yaml"
    path.write_text(BASE.format(dtype="fp16", interaction="cat", optimizer="sgd", sharding="data-parallel", forward="fp32")
                    .replace("allreduce: fp32", "allreduce: fp16"))
    # HugeCTR's mixed precision: 83 MLP parameters and 2 tables x 100 rows x dim 2, 2 bytes each
    assert amounts(estimate(TINY, load_workload(path)))["dense_allreduce"] == 83 * 2 + 2 * 100 * 2 * 2


def test_quantized_forward_communication_halves_the_forward_alltoall(tmp_path):
    assert amounts(estimate(TINY, tiny(tmp_path, forward="fp16")))["embedding_alltoall_fwd"] == 160  # 320 B at fp32


def test_rowwise_adagrad_reads_and_writes_one_state_value_per_row(tmp_path):
    doc = estimate(TINY, tiny(tmp_path, optimizer="rowwise-adagrad"))
    # each distinct row, 2 x (row + state), each its own 32-byte sector, + ids, lengths, gradients 960 B
    assert amounts(doc)["embedding_bwd"] == pytest.approx(UNIQUE * 2 * (32 + 32) + 960)
    assert doc["placement"]["need_bytes_per_gpu"] == 100 * 12


def test_dot_interaction_adds_pairwise_dot_products(tmp_path):
    path = tmp_path / "dot.yaml"
    path.write_text(BASE.format(dtype="fp16", interaction="dot", optimizer="sgd", sharding="table-wise", forward="fp32")
                    .replace("top_mlp: [6, 3, 1]", "top_mlp: [5, 3, 1]"))
    doc = estimate(TINY, load_workload(path))
    # 3 features (2 tables + dense) of the bottom output width 2: 3 x 2 / 2 pairs x 2 x 2 = 12 FLOP;
    # MLPs 2 x (4x8 + 8x2 + 5x3 + 3x1) = 132 FLOP per sample
    assert amounts(doc)["mlp_fwd"] == 10 * (132 + 12)


def test_without_gpudirect_the_inter_node_collectives_cross_the_host_link(tmp_path):
    doc = estimate(dataclasses.replace(TINY, gpudirect=False), tiny(tmp_path))
    # (n-G)/n = 1/2 of the AlltoAlls (640 + 320 + 320 B), 2(N-1)/(N G) = 1/2 of the AllReduce (332 B)
    assert amounts(doc)["host_staging"] == pytest.approx(0.5 * 1280 + 0.5 * 332)
    assert terms(doc)["host_staging"] == pytest.approx(806 / 1e8)
    assert doc["resources_seconds"]["pcie"] == pytest.approx(5.2e-6 + 8.06e-6)


def test_inter_node_shares_follow_the_hierarchical_algorithm():
    assert inter_node_share(TINY, "all_to_all") == 0.5
    assert inter_node_share(TINY, "all_reduce") == 0.5
    assert inter_node_share(TINY, "reduce_scatter") == 0.25
    assert inter_node_share(dataclasses.replace(TINY, nodes=1, gpus=2), "all_to_all") == 0


def test_a_global_batch_is_split_over_the_gpus(tmp_path):
    path = tmp_path / "global.yaml"
    path.write_text(BASE.format(dtype="fp16", interaction="cat", optimizer="sgd", sharding="table-wise", forward="fp32")
                    .replace("batch: {per_gpu: 10}", "batch: {global: 40}"))
    doc = estimate(TINY, load_workload(path))
    assert (doc["local_batch"], doc["global_batch"]) == (10, 40)
    assert amounts(doc)["embedding_fwd"] == 4800


def test_a_platform_without_collective_bounds_has_no_communication_time(tmp_path):
    single = dataclasses.replace(TINY, gpus=1, gpus_per_node=1, nodes=1, algbw={})
    t = terms(estimate(single, tiny(tmp_path)))
    assert t["input_alltoall"] == t["embedding_alltoall_fwd"] == t["dense_allreduce"] == 0


def test_comparison_names_the_term_that_changes_most_and_the_speedup(tmp_path):
    from hwspec.perf.compare import comparison

    workload = tiny(tmp_path)
    fast = dataclasses.replace(TINY, name="fast", algbw={k: 2 * v for k, v in TINY.algbw.items()})
    doc = comparison(TINY, fast, estimate(TINY, workload), estimate(fast, workload))
    # every collective twice as fast: network 1.944e-5 -> 9.72e-6 s, so ingestion (1.04e-5 s, just above
    # the GPU's 4.8e-6 + BWD_BYTES / 1e9 + 4.14e-9 ~ 1.0248e-5 s) now bounds
    assert doc["estimates"]["b"]["bottleneck"]["resource"] == "ingestion"
    assert doc["speedup_overlapped"] == pytest.approx(1.944e-5 / 1.04e-5)
    assert doc["changes_most"] == "dense_allreduce"  # 6.64e-6 -> 3.32e-6 s, the largest saving
    assert doc["term_changes"][0]["saved_seconds"] == pytest.approx(3.32e-6)
    # then the input AlltoAll (6.4e-6 -> 3.2e-6 s) and two savings of 1.6e-6 s, in id order
    assert [c["id"] for c in doc["term_changes"][1:4]] == ["input_alltoall", "embedding_alltoall_bwd", "embedding_alltoall_fwd"]


@pytest.mark.parametrize("groups, n, bound", [
    ([(1.0, 200)], 128, 2.0),       # 200 equal tables on 128 GPUs: some GPU holds 2
    ([(1.0, 1000)], 128, 8.0),      # ceil(1000 / 128)
    ([(1.0, 2)], 4, 1.0),           # fewer tables than GPUs: the largest table
    ([(3.0, 1), (1.0, 4)], 2, 3.5), # the average, above the largest item
    ([(4.0, 2), (3.0, 1)], 2, 7.0), # two of the 3 largest share a GPU: 4 + 3
    ([], 8, 0.0),
])
def test_busiest_gpu_bound_on_indivisible_shards(groups, n, bound):
    assert busiest(groups, n) == bound


def test_more_tables_than_gpus_but_not_a_multiple_load_the_busiest_gpu_more(tmp_path):
    path = tmp_path / "five.yaml"
    path.write_text(BASE.format(dtype="fp16", interaction="cat", optimizer="sgd", sharding="table-wise", forward="fp32")
                    .replace("count: 2,", "count: 5,").replace("top_mlp: [6,", "top_mlp: [12,"))
    doc = estimate(TINY, load_workload(path))
    # 5 tables on 4 GPUs: the busiest holds 2, the average 1.25
    assert doc["table_wise_balance"] == {"shards": 5, "busiest_over_average": 1.6}
    assert amounts(doc)["embedding_fwd"] == 2 * 4800  # two tables' lookups as in the table-wise case
    # D3: each GPU sends 10 x 5 x 16 = 800 B of ids; the busiest receives 2 tables' 40 x 16 B = 1280 B
    assert amounts(doc)["input_alltoall"] == 1280
    assert amounts(doc)["embedding_alltoall_fwd"] == 2 * 40 * 2 * 4


def test_input_alltoall_is_charged_to_the_busiest_receiver_not_the_average_sender(tmp_path):
    """D3: 200 tables on 128 GPUs: some GPU owns 2 tables and receives their ids for the global
    batch, 2 / (200 / 128) = 1.28x what each GPU sends (model-I's +28%)."""
    path = tmp_path / "many.yaml"
    path.write_text(BASE.format(dtype="fp16", interaction="cat", optimizer="sgd", sharding="table-wise", forward="fp32")
                    .replace("count: 2,", "count: 200,").replace("top_mlp: [6, 3, 1]", "top_mlp: [402, 3, 1]"))
    many = dataclasses.replace(TINY, gpus=128, gpus_per_node=8, nodes=16, hbm_capacity=1e9)
    doc = estimate(many, load_workload(path))
    # sent: b x 200 x 16 B = 32,000 B; received: B x 2 x 16 B = 1280 x 32 = 40,960 B
    assert amounts(doc)["input_alltoall"] == 40960
    detail = next(t["detail"] for t in doc["terms"] if t["id"] == "input_alltoall")
    assert detail == "the busiest receiver: 1.28x what each GPU sends"


def test_ingestion_on_the_collectives_nics_is_charged_with_the_collectives(tmp_path):
    """D4: on Zion the collectives and ingestion share the CPU NICs: never both at full rate."""
    shared = dataclasses.replace(TINY, ingestion_on_collective_nics=True)
    doc = estimate(shared, tiny(tmp_path))
    ingestion = next(t for t in doc["terms"] if t["id"] == "ingestion")
    # 520 B of input at the GPU's full NIC share 1e8 = 5.2e-6 s, in series with the collectives
    assert (ingestion["resource"], ingestion["seconds"]) == ("network", pytest.approx(5.2e-6))
    assert doc["resources_seconds"]["network"] == pytest.approx(1.944e-5 + 5.2e-6)
    assert doc["resources_seconds"]["ingestion"] == 0
    assert doc["overlapped_seconds"] == pytest.approx(2.464e-5)


@pytest.mark.parametrize("nbytes, access, moved", [(8, 32, 32), (32, 32, 32), (33, 32, 64), (184, 64, 192),
                                                    (512, 4096, 4096), (0, 32, 0), (46.5, 32, 64)])
def test_a_row_is_moved_in_whole_access_units(nbytes, access, moved):
    """D7: model-I's 92 x fp16 = 184-byte rows move 192 B from host DDR (3 x 64-byte lines)."""
    assert touched(nbytes, access) == moved


def test_a_top_mlp_that_does_not_start_at_the_interaction_width_is_a_located_e404(tmp_path):
    """D6: cat of the bottom MLP's 2 and two tables of dim 2 is 6 wide; 7 is another model."""
    path = tmp_path / "tiny.yaml"
    path.write_text(BASE.format(dtype="fp16", interaction="cat", optimizer="sgd", sharding="table-wise", forward="fp32")
                    .replace("top_mlp: [6, 3, 1]", "top_mlp: [7, 3, 1]"))
    with pytest.raises(HwspecError) as exc:
        load_workload(path)
    (d,) = exc.value.diagnostics
    assert (d.code, d.line, d.col) == ("E404", 7, 11)
    assert d.message == ("top_mlp[0]: the top MLP's input width is 7, but the cat interaction outputs 6 "
                         "(the bottom MLP's output plus every table's dim)")
    assert d.hint == "start top_mlp with 6, or change the interaction or the tables"


def test_a_dot_interaction_outputs_the_bottom_width_plus_the_pairwise_dots(tmp_path):
    """D6: 3 features (2 tables + dense): 3 pairs, after the bottom MLP's 2: 5 wide, not 6."""
    with pytest.raises(HwspecError) as exc:
        tiny(tmp_path, interaction="dot")
    assert exc.value.diagnostics[0].message == (
        "top_mlp[0]: the top MLP's input width is 6, but the dot interaction outputs 5 "
        "(the bottom MLP's output plus 3 features' pairwise dots)")


def test_table_terms_are_one_table_of_the_group_alone_on_the_busiest_gpu(tmp_path: Path) -> None:
    from hwspec.perf.estimate import table_terms

    w = tiny(tmp_path)
    found, stored = table_terms(TINY, w, w.tables[0])
    seconds = {tid: term.seconds for tid, term in found.items()}
    # B = 4 x 10 = 40; one lookup: a 32-byte sector of the 8-byte row, 4-byte id; per sample a
    # 4-byte length and 8 bytes of output: 40 x (3 x (32 + 4) + 12) = 4800 bytes at 1e9
    assert seconds["embedding_fwd"] == pytest.approx(4800 / 1e9)
    # ids: 40 x (3 x 4 + 4) = 640 bytes; pooled: 40 x 2 x 4 = 320 bytes, both at algbw 1e8
    assert seconds["input_alltoall"] == pytest.approx(640 / 1e8)
    assert seconds["embedding_alltoall_fwd"] == pytest.approx(320 / 1e8)
    assert sorted(found) == sorted(("embedding_fwd", "embedding_bwd", "input_alltoall", "embedding_alltoall_fwd",
                                    "embedding_alltoall_bwd"))
    assert stored == 100 * 2 * 4  # 100 rows of 2 fp32, sgd keeps no state
