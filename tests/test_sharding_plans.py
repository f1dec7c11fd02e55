"""Table-row-wise sharding (the paper's "table-wise across nodes, then row-wise within a node",
TorchRec's TWRW), term by term on hand-computed tiny cases.

Platform: tests/test_estimate.py's TINY (2 nodes x 2 GPUs) with an intra-node ReduceScatter /
AllGather algbw of 0.4 GB/s; workload: its tiny DLRM, 2 tables of 100 rows, dim 2, pooling 3,
fp32, sgd, int32 ids, local batch 10. docs/estimates.md gives the formulas.
"""

from __future__ import annotations

import dataclasses

import pytest

from hwspec.perf.estimate import (
    Term,
    collectives_per_iteration,
    cross_node_alltoall_algbw,
    estimate,
    text_report,
    with_table_row_wise,
)
from tests.test_estimate import TINY, amounts, terms, tiny

TWO_NODES = dataclasses.replace(TINY, intra_algbw={"reduce_scatter": 4e8, "all_gather": 4e8})
ONE_NODE = dataclasses.replace(TINY, kind="node", gpus=4, gpus_per_node=4, nodes=1, collectives_scope="intra-node",
                               intra_algbw=dict(TINY.algbw))


def test_table_row_wise_terms_match_the_hand_computation(tmp_path):
    doc = estimate(TWO_NODES, tiny(tmp_path, sharding="table-row-wise"))
    a, t = amounts(doc), terms(doc)
    # B = 40. 2 tables on 2 nodes: one per node, row-wise over its G = 2 GPUs. A GPU stores half
    # a table: 100 rows x 8 B / 2 = 400 B.
    assert doc["placement"]["need_bytes_per_gpu"] == 400
    # A GPU looks up B/G = 20 samples' ids: 60 rows x one 32-byte sector = 1920 B, ids 60 x 4 = 240 B,
    # and writes a partial sum with a length for all B = 40 samples: 40 x (4 + 2 x 4) = 480 B. 2640 B at 1e9.
    assert a["embedding_fwd"] == 2640 and t["embedding_fwd"] == pytest.approx(2.64e-6)
    # backward: the 60 ids over the GPU's 50 rows touch 50 (1 - 0.98^60) (~35.1) distinct rows, each
    # read and written in one sector, 2 x 32 B; ids 240, lengths and output gradients 480 (~2967 B)
    backward = 2 * 32 * 50 * (1 - 0.98 ** 60) + 720
    assert a["embedding_bwd"] == pytest.approx(backward) and t["embedding_bwd"] == pytest.approx(backward / 1e9)
    # input: each GPU sends 10 x 2 x (3 x 4 + 4) = 320 B; the busiest receiver gets, for 40
    # samples, 1/2 of its node's table's ids and a length: 40 x (3 x 4 / 2 + 4) = 400 B, at 0.1 GB/s
    assert a["input_alltoall"] == 400 and t["input_alltoall"] == pytest.approx(4e-6)
    # forward: ReduceScatter of the node's 40 x 2 x 4 = 320 B partial sums at 0.4 GB/s (0.8 us),
    # then AlltoAll of B/G x 2 x 4 = 160 B among the 2 GPUs of a local rank at N B_inj/(N-1) =
    # 2 x 0.1 / 1 = 0.2 GB/s (0.8 us): 480 B in 1.6 us. Backward: AlltoAll then AllGather, the same.
    for tid in ("embedding_alltoall_fwd", "embedding_alltoall_bwd"):
        assert a[tid] == 480 and t[tid] == pytest.approx(1.6e-6)
    fwd = next(term for term in doc["terms"] if term["id"] == "embedding_alltoall_fwd")
    assert fwd["detail"] == ("table-row-wise: intra-node reduce_scatter of 320 B at 0.4 GB/s; "
                             "table-row-wise: cross-node AlltoAll of 160 B at 0.2 GB/s")
    assert doc["sharding_notes"] == []


def test_table_row_wise_without_gpudirect_stages_its_cross_node_alltoall_through_host_memory(tmp_path):
    doc = estimate(dataclasses.replace(TWO_NODES, gpudirect=False), tiny(tmp_path, sharding="table-row-wise"))
    # input 400 B x (n-G)/n = 1/2: 200 B; the cross-node AlltoAlls, 160 B forward + 160 B
    # backward, (N-1)/N = 1/2 of each crosses: 160 B; dense 332 B x 2(N-1)/(N G) = 1/2: 166 B.
    # 200 + 160 + 166 = 526 B at the shared PCIe 0.1 GB/s
    assert amounts(doc)["host_staging"] == pytest.approx(526) and terms(doc)["host_staging"] == pytest.approx(5.26e-6)


def test_on_one_node_table_row_wise_is_row_wise_and_says_so(tmp_path):
    row = estimate(ONE_NODE, tiny(tmp_path, sharding="row-wise"))
    twrw = estimate(ONE_NODE, tiny(tmp_path, sharding="table-row-wise"))
    assert amounts(twrw) == amounts(row) and terms(twrw) == pytest.approx(terms(row))
    assert twrw["placement"] == row["placement"]
    assert twrw["iteration_seconds_expected"] == pytest.approx(row["iteration_seconds_expected"])
    assert ([r["collectives"] for r in twrw["expected"]["terms"]] == [r["collectives"] for r in row["expected"]["terms"]])
    assert twrw["sharding_notes"] == ["table-row-wise on one node is row-wise: 2 table(s) row-wise over its 4 GPUs"]
    assert "Sharding: table-row-wise on one node is row-wise: 2 table(s) row-wise over its 4 GPUs\n" in text_report(twrw)


def test_fewer_table_row_wise_tables_than_nodes_leave_nodes_idle_and_say_so(tmp_path):
    four_nodes = dataclasses.replace(TWO_NODES, gpus=8, nodes=4)
    doc = estimate(four_nodes, tiny(tmp_path, sharding="table-row-wise"))
    assert doc["sharding_notes"] == ["table-row-wise: 2 table(s) on 4 nodes, so 2 node(s) hold none "
                                     "and the busiest node serves a whole table on its 2 GPUs"]
    # B = 80; a GPU of a busy node looks up 40 samples' ids: 120 rows x 32 B = 3840, ids 480, and
    # 80 x (4 + 8) = 960 B of lengths and partial sums: 5280 B
    assert amounts(doc)["embedding_fwd"] == 5280
    # cross-node AlltoAll among 4 GPUs: 80/2 x 2 x 4 = 320 B at 4 x 0.1 / 3 GB/s; ReduceScatter
    # 80 x 2 x 4 = 640 B at 0.4 GB/s: 2.4 us + 1.6 us
    assert terms(doc)["embedding_alltoall_fwd"] == pytest.approx(320 * 3 / 4e8 + 640 / 4e8)


def test_cross_node_alltoall_algbw_is_n_nic_shares_over_n_minus_one():
    assert cross_node_alltoall_algbw(TWO_NODES) == pytest.approx(2e8)                           # 2 x 1e8 / 1
    assert cross_node_alltoall_algbw(dataclasses.replace(TINY, nodes=4)) == pytest.approx(4e8 / 3)  # 4 x 1e8 / 3
    assert cross_node_alltoall_algbw(ONE_NODE) == 0.0


def test_table_wise_beside_table_row_wise_is_the_larger_busiest_or_the_summed_averages():
    assert with_table_row_wise((2.0, 0.5), (0.0, 0.0)) == 2.0   # table-wise alone: its busiest
    assert with_table_row_wise((2.0, 0.5), (1.0, 1.0)) == 2.0   # busiest table-wise GPU, nothing else certain
    assert with_table_row_wise((1.0, 0.75), (1.0, 0.75)) == 1.5  # the averages add


def test_table_row_wise_issues_its_own_reduction_and_cross_node_alltoall(tmp_path):
    doc = estimate(TWO_NODES, tiny(tmp_path, sharding="table-row-wise"))
    rows = {r["id"]: r for r in doc["expected"]["terms"]}
    # each on its own communicator: the node's G GPUs, then one GPU per node
    assert rows["embedding_alltoall_fwd"]["collectives"] == {"reduce_scatter (node)": 1, "all_to_all (cross)": 1}
    assert rows["embedding_alltoall_bwd"]["collectives"] == {"all_to_all (cross)": 1, "all_gather (node)": 1}
    assert rows["input_alltoall"]["collectives"] == {"all_to_all": 1}
    assert rows["embedding_fwd"]["kernels"] == 1  # joins the one fused lookup
    pooled = Term("embedding_alltoall_fwd", "pooled", "network", 1.0, 1.0, "bytes", 1.0, "algbw")
    assert collectives_per_iteration(tiny(tmp_path, sharding="table-row-wise"), pooled, nodes=1) == {"reduce_scatter": 1}


def hier_auto(tmp_path, table_cost: float):
    """The tiny workload, table-row-wise, planned by HugeCTR's hier_auto with `table_cost`."""
    workload = tiny(tmp_path, sharding="table-row-wise")
    return dataclasses.replace(workload, hier_auto_table_cost=table_cost)


def test_hier_auto_splits_each_table_over_two_of_four_nodes_where_its_cost_says_so(tmp_path):
    four_nodes = dataclasses.replace(TWO_NODES, gpus=8, nodes=4)
    doc = estimate(four_nodes, hier_auto(tmp_path, table_cost=1.0))
    # 2 tables of hotness (pooling) 3 on 4 nodes, table cost 1: whole, the busiest node costs 3 + 1;
    # the hottest table split in two, still 3 + 1 (the other table's node); both split in two, one
    # half (1.5) per node: 1.5 + 1, below the default plan (every table on every node: 6/4 + 2 x 1)
    assert doc["sharding_notes"] == ["hier_auto splits 2 x t over 2 nodes, row-wise over their 2 GPUs each"]
    a = amounts(doc)
    # B = 8 GPUs x 10 = 80. A GPU holds 1/(2 x 2) of one table: 25 rows x 8 B; looks up B/4 = 20
    # samples' ids, 60 rows in 32-byte sectors 1920 B and ids 240 B, and writes 80 pooled partial
    # sums with lengths, 80 x (4 + 2 x 4) = 960 B: 3120 B
    assert doc["placement"]["need_bytes_per_gpu"] == 200
    assert a["embedding_fwd"] == 3120
    # the busiest receiver gets 80 x (3 x 4 / 4 + 4) = 560 B of ids (each GPU sends 10 x 2 x 16 = 320 B)
    assert a["input_alltoall"] == 560
    # without hier_auto the busiest node serves a whole table: 40 samples' ids per GPU, 120 rows
    # 3840 B, ids 480 B, pooled 960 B: 5280 B; the receiver 80 x (3 x 4 / 2 + 4) = 800 B
    plain = amounts(estimate(four_nodes, tiny(tmp_path, sharding="table-row-wise")))
    assert (plain["embedding_fwd"], plain["input_alltoall"]) == (5280, 800)


def test_hier_auto_has_nothing_to_split_over_on_one_node(tmp_path):
    doc = estimate(ONE_NODE, hier_auto(tmp_path, table_cost=1.0))
    assert amounts(doc) == amounts(estimate(ONE_NODE, tiny(tmp_path, sharding="table-row-wise")))
    assert doc["sharding_notes"] == ["table-row-wise on one node is row-wise: 2 table(s) row-wise over its 4 GPUs"]
