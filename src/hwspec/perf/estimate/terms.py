"""Every bound term of a workload on a platform, assembled: `_terms` takes the embedding terms
(`lookups`), the MLP terms, the exchanges (`exchanges`), the dense AllReduce and the input and
host-link terms built here (host-to-device copy, `pooled_host_transfer`, staging without
GPUDirect, `ingestion_term`). `table_terms` is the same computation for one table on its own,
as a per-shard planner costs it (no second formula).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hwspec.model.workload import DENSE_INPUT_BYTES, DTYPE_BYTES, LABEL_BYTES, LENGTH_BYTES, Table, Workload
from hwspec.perf.estimate.exchanges import (
    _collective,
    _gpu_exchange_terms,
    _host_exchange_terms,
    crossing_bytes,
    input_alltoall_bytes,
    inter_node_share,
    table_row_wise_exchange,
)
from hwspec.perf.estimate.lookups import _embedding_terms
from hwspec.perf.estimate.placement import host_figures, host_workload, placement
from hwspec.perf.estimate.shards import Shards, table_wise_shards
from hwspec.perf.estimate.term import Term, _term, _work_term
from hwspec.perf.platform_figures import Figures
from hwspec.perf.tables import gbps, number
from hwspec.spec.workload import AUTO


def ingestion_term(figures: Figures, inputs: float) -> Term:
    """Input ingestion over the network. Where the collectives' NICs are the ingestion NICs
    (Zion: CPU NICs, no backend network), both are charged to one resource, the collective
    network, and ingestion moves at the GPU's full share of those NICs between the collectives;
    otherwise it has its own NICs and its own resource at the ingestion share."""
    if figures.ingestion_on_collective_nics:
        return _term("ingestion", inputs, "bytes", figures.nic_bandwidth,
                     f"the collectives' NICs, per GPU {gbps(figures.nic_bandwidth)}",
                     "shares the NICs with the collectives: charged in series with them", resource="network")
    return _term("ingestion", inputs, "bytes", figures.ingestion_bandwidth,
                 f"ingestion share per GPU {gbps(figures.ingestion_bandwidth)}" if figures.ingestion_bandwidth
                 else "no ingestion bandwidth stated: not bounded")


def pooled_host_transfer(figures: Figures, workload: Workload, inputs: float) -> Term:
    """cpu-host placement: every GPU receives its local batch's pooled embeddings from the host
    (b x sum(count x dim) x forward dtype, host to device) and sends their gradients back (x
    backward dtype, device to host). PCIe is full duplex: the forward direction also carries the
    `inputs` copy, so this term adds max(inputs + forward, backward) - inputs bytes' time."""
    if workload.placement != "cpu-host":
        return _work_term("pooled_host_transfer", 0.0, 0.0, "embeddings on the GPUs: none", "")
    pcie = figures.pcie_host_shared_bandwidth
    width = sum(t.count * t.dim for t in workload.tables) * workload.local_batch(figures.gpus)
    forward, backward = width * DTYPE_BYTES[workload.comm_forward], width * DTYPE_BYTES[workload.comm_backward]
    seconds = (max(inputs + forward, backward) - inputs) / pcie if pcie > 0 else 0.0
    return _work_term("pooled_host_transfer", forward + backward, seconds, f"PCIe host link, each direction {gbps(pcie)}",
                      "pooled embeddings host to device, their gradients device to host (full duplex)")


def _terms(figures: Figures, workload: Workload) -> tuple[list[Term], dict[str, Any], Shards]:
    """Every term of `workload` on `figures`, the placement and the table-wise shards. With
    `cpu-host` placement the embedding side (lookups, shards, ids and pooled exchanges) is
    computed by the same functions on the CPU sockets (`host_figures`)."""
    assert not workload.sharded(AUTO), "plan the workload first: hwspec.perf.planner.plan"
    n = figures.gpus
    b = workload.local_batch(n)
    dtype = workload.compute_dtype
    peak = figures.peak_flop_per_s.get(dtype, 0.0)
    place = placement(figures, workload)
    cpu_host = workload.placement == "cpu-host"
    ranks, ranked = (host_figures(figures), host_workload(workload, figures)) if cpu_host else (figures, workload)
    s_idx, s_ar = DTYPE_BYTES[workload.index_dtype], DTYPE_BYTES[workload.comm_allreduce]
    shards = table_wise_shards(ranked, ranks.gpus)
    terms = _embedding_terms(ranks, ranked, place, "host" if cpu_host else "gpu")

    # MLPs and interaction: 2 x in x out FLOPs per layer per sample forward, twice that backward.
    flops = b * (workload.mlp_flops_per_sample + workload.interaction_flops_per_sample)
    bound = f"{dtype} dense peak {number(peak / 1e12)} TFLOPS"
    terms.append(_term("mlp_fwd", flops, "flop", peak, bound))
    terms.append(_term("mlp_bwd", 2 * flops, "flop", peak, bound))

    ids, ids_detail = input_alltoall_bytes(ranks, ranked, shards)
    twrw = table_row_wise_exchange(ranks, ranked)
    crossing = crossing_bytes(ranks, ranked, ids, shards, twrw)
    terms += (_host_exchange_terms(ranks, crossing) if cpu_host
              else _gpu_exchange_terms(figures, workload, ids, ids_detail, shards, twrw))

    # Dense gradients: MLP and interaction (DCNv2 cross layers) weights and biases, and every data-parallel table.
    dense = workload.dense_parameters * s_ar + sum(t.count * t.rows * t.dim * s_ar for t in workload.sharded("data-parallel"))
    ar = _collective(figures, "all_reduce")
    terms.append(_term("dense_allreduce", dense, "bytes", ar, f"all_reduce algbw {gbps(ar)} ({figures.collectives_scope})"))

    # Input: dense features, labels, and (unless the CPUs take them: cpu-host) ids and lengths of the local batch.
    ids_in = 0.0 if cpu_host else sum(t.count * (t.pooling * s_idx + LENGTH_BYTES) for t in workload.tables)
    inputs = b * (workload.dense_features * DENSE_INPUT_BYTES + LABEL_BYTES + ids_in)
    terms.append(_term("host_to_device", inputs, "bytes", figures.pcie_host_shared_bandwidth,
                       f"host link (PCIe, or NVLink-C2C), all GPUs at once {gbps(figures.pcie_host_shared_bandwidth)}"))
    terms.append(pooled_host_transfer(figures, workload, inputs))

    # Without GPUDirect RDMA, the inter-node part of every GPU collective crosses the PCIe host link.
    staged = 0.0
    if not figures.gpudirect and figures.nodes > 1:
        gpu_side = 0.0 if cpu_host else crossing.input + crossing.forward + crossing.backward
        staged = gpu_side + dense * inter_node_share(figures, "all_reduce")
    terms.append(_term("host_staging", staged, "bytes", figures.pcie_host_shared_bandwidth,
                       "PCIe host link (no GPUDirect RDMA)" if staged else "GPUDirect RDMA: not staged",
                       "the inter-node share of the collectives above, bounced through host memory" if staged else ""))
    # cpu-host: the ids and the features are read by the hosts; ingestion is the same bytes either way.
    terms.append(ingestion_term(figures, inputs + (0.0 if not cpu_host else b * sum(
        t.count * (t.pooling * s_idx + LENGTH_BYTES) for t in workload.tables))))
    return terms, place, shards


TABLE_TERMS = ("embedding_fwd", "embedding_bwd", "input_alltoall", "embedding_alltoall_fwd", "embedding_alltoall_bwd")
"""The terms `table_terms` gives per table: the ones a sharding planner costs per shard."""


def table_terms(figures: Figures, workload: Workload, table: Table) -> tuple[dict[str, Term], float]:
    """One table of `table`'s group on its own, as a per-shard planner (TorchRec's) costs it:
    the `TABLE_TERMS` of the estimate of `workload` with that one table (count 1, its sharding)
    as its only table, and the bytes it stores per rank (weights and optimizer state). The
    terms are the estimate's own (`_terms`), not a second formula: a table-wise table is the
    busiest GPU's whole embedding work and the busiest receiver's whole exchange. Its tiers are
    where the table alone would be placed, which differs from the whole workload's only when
    the workload's tables spill out of HBM. Raises HwspecError as the estimate does (E401)."""
    one = dataclasses.replace(workload, tables=(dataclasses.replace(table, count=1),))
    terms, place, _ = _terms(figures, one)
    return {t.id: t for t in terms if t.id in TABLE_TERMS}, place["need_bytes_per_gpu"]
