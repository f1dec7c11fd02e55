"""hwspec's per-table estimate against TorchRec's planner and estimator, on the same Topology.

TorchRec's EmbeddingShardingPlanner (with its EmbeddingPerfEstimator and
EmbeddingStorageEstimator) plans eight table-wise tables of model-I's shape on the Topology
built from hwspec's generated torchrec-topology.json; hwspec costs the same tables with
`table_terms` (the estimate's own terms, one table at a time). Each ratio hwspec / TorchRec is
systematic, caused by a stated difference of model (docs/estimates.md "Cross-check with
TorchRec"), and pinned within a band: the test fails when either side changes its model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hwspec.model.workload import load_workload
from hwspec.perf.estimate import table_terms
from hwspec.perf.platform_figures import figures
from hwspec.pipeline import load_any
from hwspec.topology import topology_of
from tests.consumers import ROOT, torchrec_planner_types

pytestmark = [pytest.mark.consumer, pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::FutureWarning")]

TABLES, ROWS, DIM, POOLING, BATCH_PER_GPU = 8, 18_000_000, 92, 70, 2048
"""Model-I's table shape (workloads/model-i.yaml), eight of its 200 tables, its local batch."""

WORKLOAD = f"""\
hwspec: 1
kind: workload
name: model-i-tables
batch: {{per_gpu: {BATCH_PER_GPU}}}
compute_dtype: fp16
bottom_mlp: [13, {DIM}]
top_mlp: [{DIM * (TABLES + 1)}, 1]
interaction: cat
embeddings:
  precision: fp16
  sharding: table-wise
  optimizer: rowwise-adagrad
  index_dtype: int64
  hbm_share: 0.8
  tables:
    - {{name: t, count: {TABLES}, rows: {ROWS}, dim: {DIM}, pooling: {POOLING}}}
communication: {{forward: fp16, backward: fp16, allreduce: fp32}}
"""
"""TorchRec's defaults stated: fp16 tables, pooled embeddings on the wire in the table's dtype
(no qcomm codec), int64 ids, FBGEMM's fused row-wise Adagrad."""

PLATFORMS = ("hgx-h100", "zionex", "zionex-16")
TORCHREC_TERMS = {"embedding_fwd": "fwd_compute", "embedding_bwd": "bwd_compute", "input_alltoall": "input_dist_comms",
                  "embedding_alltoall_fwd": "fwd_comms", "embedding_alltoall_bwd": "bwd_comms"}


@pytest.fixture(scope="module")
def torchrec_planner():
    types = torchrec_planner_types()
    from torchrec.distributed.planner import EmbeddingShardingPlanner

    return EmbeddingShardingPlanner, types


def torchrec_shard(torchrec_planner, platform: str):
    """(perf in seconds by field, storage in bytes) of the first table's one shard in the plan
    TorchRec's planner makes, table-wise on fused HBM kernels, on `platform`'s generated Topology."""
    import torch
    from torch.distributed.optim import _apply_optimizer_in_backward as apply_optimizer_in_backward
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.planner.enumerators import EmbeddingEnumerator
    from torchrec.distributed.planner.shard_estimators import EmbeddingPerfEstimator, EmbeddingStorageEstimator
    from torchrec.modules.embedding_configs import DataType, EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection
    from torchrec.optim import RowWiseAdagrad

    planner_class, types = torchrec_planner
    factory = json.loads((ROOT / "generated" / platform / "torchrec-topology.json").read_text())["factory"]
    topology = types.TopologyFactory.create_topology(
        trainer_config=types.TrainerConfig(**factory["trainer_config"]),
        hardware_config=types.HardwareConfig(**factory["hardware_config"]),
        kernel_config=types.KernelConfig(**factory["kernel_config"]))
    tables = [EmbeddingBagConfig(name=f"t{i}", embedding_dim=DIM, num_embeddings=ROWS, feature_names=[f"f{i}"],
                                 data_type=DataType.FP16) for i in range(TABLES)]
    constraints = {t.name: types.ParameterConstraints(sharding_types=["table_wise"], compute_kernels=["fused"],
                                                       pooling_factors=[float(POOLING)]) for t in tables}
    estimators = [EmbeddingPerfEstimator(topology, constraints=constraints),
                  EmbeddingStorageEstimator(topology, constraints=constraints)]
    planner = planner_class(topology=topology, batch_size=BATCH_PER_GPU, constraints=constraints,
                            enumerator=EmbeddingEnumerator(topology, BATCH_PER_GPU, constraints, estimator=estimators))
    module = EmbeddingBagCollection(tables=tables, device=torch.device("meta"))
    apply_optimizer_in_backward(RowWiseAdagrad, module.parameters(), {"lr": 0.01})
    planner.plan(module, [EmbeddingBagCollectionSharder()])
    option = next(o for o in planner._best_plan if o.name == "t0")
    (shard,) = option.shards
    fields = [*TORCHREC_TERMS.values(), "prefetch_compute"]
    seconds = {field: getattr(shard.perf, field) / 1000 for field in fields}  # TorchRec: ms
    return seconds, shard.storage


def hwspec_table(platform: str, tmp_path: Path):
    """(`table_terms` of the first table, bytes it stores) on `platform`."""
    path = tmp_path / "model-i-tables.yaml"
    path.write_text(WORKLOAD)
    workload = load_workload(path)
    topology = topology_of(load_any(ROOT / "platforms" / f"{platform}.yaml")[0])
    return table_terms(figures(topology), workload, workload.tables[0])


@pytest.fixture(scope="module", params=PLATFORMS)
def both(request, torchrec_planner, tmp_path_factory):
    """(platform, GPUs, hwspec's terms, its stored bytes, TorchRec's perf, its Storage)."""
    platform = request.param
    theirs, storage = torchrec_shard(torchrec_planner, platform)
    ours, stored = hwspec_table(platform, tmp_path_factory.mktemp(platform))
    gpus = json.loads((ROOT / "generated" / platform / "torchrec-topology.json").read_text())["topology_kwargs"]["world_size"]
    return platform, gpus, ours, stored, theirs, storage


def ratio(both, term: str) -> float:
    _, _, ours, _, theirs, _ = both
    return ours[term].seconds / theirs[TORCHREC_TERMS[term]]


# Bytes per looked-up row and per pooled sample of one table (fp16 rows of 92: 184 bytes).
ROW, ID, LENGTH, OUTPUT, STATE = DIM * 2, 8, 4, DIM * 2, 4
SECTOR = 32
ROW_IN_SECTORS, STATE_IN_SECTORS = math.ceil(ROW / SECTOR) * SECTOR, math.ceil(STATE / SECTOR) * SECTOR
BLOCK_PENALTY = 1.15
"""TorchRec's HALF_BLOCK_PENALTY for a table-wise dim in [64, 128) (compute_block_usage_penalty)."""
FORWARD_RATIO = ((ROW_IN_SECTORS + ID + (LENGTH + OUTPUT) / POOLING)
                 / ((ID + ROW + OUTPUT / POOLING) * BLOCK_PENALTY))
"""hwspec: rows in whole 32-byte sectors, ids, a length and the pooled output per sample; TorchRec:
ids, rows and output in bytes, times the block penalty: 0.906."""


def distinct_per_id(gpus: int) -> float:
    """Distinct rows per id among a table-wise table's k = B x pooling uniform ids (B = 2048 per GPU)
    over its R = 18 M rows, R (1 - (1 - 1/R)^k) / k: 0.969 on 8 GPUs, 0.627 on 128."""
    ids = BATCH_PER_GPU * gpus * POOLING
    return ROWS * (1 - (1 - 1 / ROWS) ** ids) / ids


def backward_ratio(gpus: int) -> float:
    """hwspec: each distinct row and its fp32 row-wise Adagrad state read and written back once (per
    id, `distinct_per_id` of them), ids, a length and the output gradient; TorchRec: twice its
    forward for every id (BWD_COMPUTE_MULTIPLIER): 0.993 on 8 GPUs, 0.651 on 128."""
    return ((distinct_per_id(gpus) * 2 * (ROW_IN_SECTORS + STATE_IN_SECTORS) + ID + (LENGTH + OUTPUT) / POOLING)
            / (2 * (ID + ROW + OUTPUT / POOLING) * BLOCK_PENALTY))

NODE_RATE_RATIO = 2 / (8 / 7)
"""On a node TorchRec moves a rank's AlltoAll buffer at intra_host_bw, both directions summed
(twice the busbw bound); hwspec at the AlltoAll's algbw, busbw x n/(n-1) on 8 GPUs: 1.75."""
CLUSTER_RATE_RATIO = (128 - 8) / 128
"""Across nodes TorchRec moves the whole buffer at the GPU's NIC (inter_host_bw); hwspec's
hierarchical algbw sends only the (n-G)/n that leaves the node over it: 15/16."""
IDS_WITH_LENGTHS = (POOLING * ID + LENGTH) / (POOLING * ID)
"""hwspec's input AlltoAll carries a length per sample beside the ids; TorchRec's only the ids."""
BAND = 0.02
"""A model change on either side of more than 2% in a term fails the test."""


def test_lookups_forward_are_10_percent_under_torchrecs_block_penalty_for_hwspecs_sector_rounding(both) -> None:
    assert ratio(both, "embedding_fwd") == pytest.approx(FORWARD_RATIO, rel=BAND)
    assert FORWARD_RATIO == pytest.approx(0.906, abs=0.001)


def test_update_backward_updates_each_distinct_row_once_where_torchrec_charges_every_id(both) -> None:
    platform, gpus, *_ = both
    assert ratio(both, "embedding_bwd") == pytest.approx(backward_ratio(gpus), rel=BAND), platform
    assert (backward_ratio(8), backward_ratio(128)) == pytest.approx((0.993, 0.651), abs=0.001)


def test_exchanges_take_1_75x_torchrecs_on_a_node_and_15_16_across_nodes(both) -> None:
    platform, gpus, *_ = both
    rate = CLUSTER_RATE_RATIO if gpus > 8 else NODE_RATE_RATIO
    assert ratio(both, "embedding_alltoall_fwd") == pytest.approx(rate, rel=BAND), platform
    assert ratio(both, "embedding_alltoall_bwd") == pytest.approx(rate, rel=BAND), platform
    assert ratio(both, "input_alltoall") == pytest.approx(rate * IDS_WITH_LENGTHS, rel=BAND), platform


def test_torchrec_prefetches_nothing_for_fused_hbm_tables_as_hwspec_charges_nothing(both) -> None:
    *_, theirs, storage = both
    assert theirs["prefetch_compute"] == 0.0
    assert (storage.ddr, storage.ssd) == (0, 0)


def test_storage_differs_by_the_optimizer_states_width_and_torchrecs_io_buffers(both) -> None:
    _, gpus, _, stored, _, storage = both
    global_batch = BATCH_PER_GPU * gpus
    assert stored == ROWS * (ROW + STATE)  # hwspec: weights and the fp32 row-wise Adagrad sum
    # TorchRec: the state in the table's dtype (1/dim of the fp16 weights), plus its input (ids)
    # and output (pooled) buffers for the global batch (calculate_pipeline_io_cost, no pipeline)
    assert storage.hbm == ROWS * (ROW + 2) + global_batch * (POOLING * ID + OUTPUT)
