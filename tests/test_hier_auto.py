"""HugeCTR's hier_auto split search (`hwspec.perf.hier_auto`), on hand-worked cases and on the
MLPerf DLRM-DCNv2 configs the validation rows ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwspec.model.workload import load_workload
from hwspec.perf.estimate.shards import busiest
from hwspec.perf.hier_auto import hier_auto_plan

ROOT = Path(__file__).resolve().parent.parent


def test_the_hottest_table_is_split_when_that_lowers_the_busiest_nodes_cost():
    # hotness 8, 2, 1 on 2 nodes, table cost 1. Default (every table on both nodes): 11/2 + 3 = 8.5.
    # Round 0, whole: 8 -> node 0 (9), 2 -> node 1 (3), 1 -> node 1 (5): 9.
    # Round 1, table 0 in two: 4 -> node 0, 4 -> node 1 (5, 5), 2 -> node 0 (8), 1 -> node 1 (7): 8, the least.
    # Round 2, table 1 in two (table 0 cannot split again): 4, 4, then 1, 1, 1: 9. Round 3, table 2
    # in two: 4 + 1 + 0.5 + 3 = 8.5 on each node. Nothing can split further.
    assert list(hier_auto_plan([8.0, 2.0, 1.0], [0, 1, 2], 2, 1.0).splits) == [2, 1, 1]
    # and round 1's placement: table 0 on both nodes, table 1 beside it on node 0, table 2 on node 1
    assert hier_auto_plan([8.0, 2.0, 1.0], [0, 1, 2], 2, 1.0).nodes == ((0, 1), (0, 2))


def test_a_tie_with_the_default_plan_keeps_the_default_as_hugectrs_stable_sort_does():
    # hotness 1, 1 on 2 nodes, no table cost: the default (each table on both nodes) costs 2/2 = 1,
    # round 0 (one table per node) 1 as well; HugeCTR lists the default first and sorts stably
    assert list(hier_auto_plan([1.0, 1.0], [0, 1], 2, 0.0).splits) == [2, 2]


def test_tables_not_planned_and_one_node_are_never_split():
    assert list(hier_auto_plan([8.0, 2.0, 1.0], [1, 2], 2, 1.0).splits) == [1, 1, 1]  # table 0 data-parallel
    assert list(hier_auto_plan([8.0, 2.0], [0, 1], 1, 1.0).splits) == [1, 1]


MLPERF = {"dlrm-dcnv2-mlperf-b135168": ("v3.0, no data-parallel tables", {8: {"cat_20": 2}, 16: {"cat_20": 4}}),
          "dlrm-dcnv2-mlperf-b135168-v31": ("DP threshold 0.0125", {8: {"cat_20": 4},
                                                                    16: {"cat_20": 4, "cat_21": 2}})}


@pytest.mark.parametrize("name", sorted(MLPERF))
@pytest.mark.parametrize("nodes", [8, 16])
def test_the_mlperf_configs_split_the_100_hot_table_and_at_16_nodes_the_27_hot_one(name, nodes):
    # table cost 67 / 4 (MEM_COMM_BW_RATIO=67, mem_comm_work_ratio 8 / 2); multi-hot sizes 3, 2, 1, ...,
    # 100 (cat_20), 27 (cat_21). 16 nodes, v3.1: cat_20 in four (25 each), cat_21 in two (13.5),
    # the other ten whole, one shard per node: 25 + 16.75 = 41.75, below round 2's 43.75
    # (cat_20 in four only: cat_21's node 27 + 16.75) and round 4's 42.5 (cat_20 in eight, cat_21 in two).
    workload = load_workload(ROOT / "workloads" / f"{name}.yaml")
    assert workload.hier_auto_table_cost == 67 / 4
    tables = list(workload.tables)
    planned = [i for i, t in enumerate(tables) if t.sharding == "table-row-wise"]
    splits = list(hier_auto_plan([t.pooling for t in tables], planned, nodes, 67 / 4).splits)
    assert {t.name: k for t, k in zip(tables, splits) if k > 1} == MLPERF[name][1][nodes]


def test_at_16_nodes_v30s_plan_puts_three_shards_on_a_node_where_the_busiest_bound_says_two():
    # 29 shards (26 tables, cat_20 in four) on 16 nodes: some node holds 2, which is all `busiest`
    # can say; the planner's greedy fills the nodes beside the hot shards with three small tables each
    workload = load_workload(ROOT / "workloads" / "dlrm-dcnv2-mlperf-b135168.yaml")
    plan = hier_auto_plan([t.pooling for t in workload.tables], list(range(26)), 16, 67 / 4)
    assert max(len(node) for node in plan.nodes) == 3 and sum(len(node) for node in plan.nodes) == 29
    assert busiest([(1.0, 29)], 16) == 2.0
