"""The expected iteration (`expected`): every term at achieved rates (`achievable`), each
collective call at NCCL's cost model (`nccl`), a launch overhead per kernel
(`kernels_per_iteration`), and the critical path of the GPU's work and the exchanges it waits for
(`PIPELINE`, `critical_path`; the bottom MLP hides part of them: `bottom_mlp_share`). Never
shorter than the overlapped bound.
"""

from __future__ import annotations

import math
from typing import Any

from hwspec.model.workload import DTYPE_BYTES, Workload, mlp_layers
from hwspec.perf import calibration as cal
from hwspec.perf.estimate.achievable import achievable, achieved_hbm_bandwidth
from hwspec.perf.estimate.lookups import LookupWork, embedding_work
from hwspec.perf.estimate.nccl import calls, collective_seconds, release, scoped
from hwspec.perf.estimate.term import RESOURCES, Term
from hwspec.perf.estimate.terms import _terms
from hwspec.perf.platform_figures import Figures


def kernels_per_iteration(workload: Workload, term: Term) -> int:
    """Kernels a GPU term launches per iteration: forward a GEMM and an activation per MLP layer
    and the interaction, backward two GEMMs (input and weight gradients) and an activation
    gradient per layer and the interaction's gradient; one fused lookup kernel forward and one
    fused update backward (FBGEMM's batched tables, the paper's kernel fusion), and the dense
    tables' optimizer step."""
    layers = len(workload.bottom_mlp) - 1 + len(workload.top_mlp) - 1
    if term.amount <= 0 or term.resource != "gpu":  # cpu-host lookups run on the CPUs
        return 0
    return {"mlp_fwd": 2 * layers + 1, "mlp_bwd": 3 * layers + 1, "embedding_fwd": 1,
            "embedding_bwd": 1 + (1 if workload.sharded("data-parallel") else 0)}.get(term.id, 0)


PIPELINE = ("embedding_alltoall_fwd", "embedding_alltoall_bwd", "pooled_host_transfer")
"""Terms on the GPU's critical path besides its own: the pooled embeddings must arrive before
the interaction, and their gradients before the embedding update (with cpu-host placement also
across PCIe, and the host's lookups and updates: the whole `host` resource). The input AlltoAll
of batch i+1 overlaps batch i's top MLP when the workload is pipelined (`pipeline: true`, the
paper's pipelining; otherwise it is on the path too) and the dense AllReduce overlaps the
backward pass, so they only load the network, except where the AllReduce starts after the
backward pass (`allreduce_overlap: embedding_update`, GPU placement): then the GPU waits for
its part not hidden behind the embedding update (`critical_path`)."""


def expected(figures: Figures, workload: Workload) -> dict[str, Any]:
    """The expected iteration: every term on `achievable(figures)`, each collective call at NCCL's
    cost model (`collective_seconds`: its latency, and a protocol's bandwidth fraction) and a
    launch overhead per kernel; the resources overlap as the bound's
    do, except that the GPU waits for the pooled-embedding AlltoAlls (`PIPELINE`), so the
    iteration is max(GPU + those AlltoAlls, every resource). Never shorter than the overlapped
    bound: every rate is at most the bound's and every added time is >= 0."""
    derated, place, _ = _terms(achievable(figures), workload)
    update = embedding_work(figures, workload, place, backward=True)
    sort = sort_seconds(figures, workload, update)
    fixed = {"embedding_bwd": sort + reduction_seconds(figures, workload, update),
             **elementwise_seconds(figures, workload)}
    launch = cal.value("kernel_launch_overhead")
    rel = release(workload)
    rows: list[dict[str, Any]] = []
    for term in derated:
        made = calls(workload, term, figures.nodes)
        counts: dict[str, int] = {}
        communication, algorithms = 0.0, dict[str, str]()
        for call in made:
            seconds, algorithm = collective_seconds(scoped(figures, call.scope), call.collective, call.nbytes,
                                                    call.seconds, rel)
            label = call.collective if call.scope == "all" or figures.nodes <= 1 else f"{call.collective} ({call.scope})"
            counts[label] = counts.get(label, 0) + 1
            algorithms[label] = algorithm
            communication += seconds
        calls_made = len(made)
        hbm = math.fsum(collective_hbm_bytes(call.collective, call.nbytes, scoped(figures, call.scope).gpus)
                        for call in made)
        latency = communication - term.seconds if calls_made else 0.0
        kernels = kernels_per_iteration(workload, term)
        extra = fixed.get(term.id, 0.0) if term.amount > 0 else 0.0
        rows.append({"id": term.id, "resource": term.resource, "bandwidth_seconds": term.seconds,
                     "latency_seconds": latency, "kernels": kernels, "launch_seconds": kernels * launch,
                     "fixed_seconds": extra, "collectives": counts, "algorithms": algorithms, "hbm_bytes": hbm,
                     "seconds": term.seconds + latency + kernels * launch + extra})
    shape = gemm_shape_factor(figures, workload)
    for row in rows:
        if row["id"] in ("mlp_fwd", "mlp_bwd") and row["bandwidth_seconds"] > 0:
            extra = row["bandwidth_seconds"] * (shape - 1)
            row["bandwidth_seconds"] += extra
            row["seconds"] += extra
    resources = {r: math.fsum(row["seconds"] for row in rows if row["resource"] == r) for r in RESOURCES}
    contention = nccl_hbm_seconds(figures, workload, rows, sort)
    dense_update = dense_update_seconds(figures, workload)
    resources["gpu"] += contention + dense_update
    critical = critical_path(workload, rows, resources, sort)
    iteration = max(critical, *resources.values())
    return {"terms": rows, "resources_seconds": resources, "critical_path_seconds": critical,
            "nccl_hbm_seconds": contention, "dense_update_seconds": dense_update, "sort_seconds": sort,
            "iteration_seconds": iteration,
            "bound_by": ("critical path (GPU + pooled-embedding AlltoAlls)" if workload.placement == "gpu" else
                         "critical path (GPU + host lookups + pooled-embedding exchanges)") if iteration == critical
                        else RESOURCES[max(RESOURCES, key=lambda r: resources[r])],
            "method": ("terms at calibrated achieved rates (hwspec.perf.calibration), each collective call at NCCL's "
                       "latency/bandwidth model (the best algorithm and protocol), + launch overhead per kernel; "
                       "iteration = max(GPU + host + pooled-embedding exchanges not hidden behind the bottom MLP "
                       "(+ input AlltoAll unless pipelined), each resource)")}


def gemms(workload: Workload, batch: float) -> list[float]:
    """FLOPs of each forward GEMM of the MLPs and the interaction for `batch` samples (the
    backward runs two of each size: input and weight gradients): 2 b in out per MLP layer; per
    DCNv2 cross layer 2 b N r twice (low rank) or 2 b N^2; `dot` one batched GEMM of its FLOPs."""
    sizes = [2 * batch * i * o for i, o in (*mlp_layers(workload.bottom_mlp), *mlp_layers(workload.top_mlp))]
    if workload.interaction == "dcnv2":
        n, r = workload.concatenated_width, workload.cross_low_rank
        sizes += [2 * batch * n * r] * (2 * workload.cross_layers) if r else [2 * batch * n * n] * workload.cross_layers
    elif workload.interaction == "dot":
        sizes.append(batch * workload.interaction_flops_per_sample)
    return [f for f in sizes if f > 0]


def gemm_shape_factor(figures: Figures, workload: Workload) -> float:
    """The MLP terms' time at each GEMM's own size's efficiency (`cal.gemm_efficiency_at`) over
    their time at the generation's large-GEMM efficiency (`achievable`'s): >= 1 where the local
    batch makes GEMMs smaller than the measured n = 8192 one. 1 without GEMMs."""
    sizes = gemms(workload, workload.local_batch(figures.gpus))
    total = math.fsum(sizes)
    if total <= 0:
        return 1.0
    cc = figures.compute_capability
    at_size = math.fsum(f / cal.gemm_efficiency_at(cc, f) for f in sizes)
    return at_size / (total / cal.gemm_efficiency(cc))


def sort_seconds(figures: Figures, workload: Workload, update: LookupWork) -> float:
    """The busiest GPU's id sort before the embedding update (`update`: its backward
    `embedding_work`), seconds: FBGEMM's and HugeCTR's backward radix-sorts the ids it looked up
    (to de-duplicate them and reduce their gradients per row) with CUB; each id costs
    `sort_bytes_per_key` (CUB on an A100, 32-bit keys) of HBM time at the datasheet rate, x key
    width / 4 bytes. The passes are set by the rows' bits (the sort's end bit), not the key
    width, so int64 ids cost twice int32's traffic, not four times. The de-duplication and
    segmented reduction after it are `reduction_seconds`. 0 with cpu-host placement (the CPUs
    update the tables)."""
    if workload.placement != "gpu" or figures.hbm_bandwidth <= 0:
        return 0.0
    return update.ids * cal.value("sort_bytes_per_key") * DTYPE_BYTES[workload.index_dtype] / 4 / figures.hbm_bandwidth


def reduction_seconds(figures: Figures, workload: Workload, update: LookupWork) -> float:
    """The busiest GPU's de-duplication and segmented gradient reduction between the id sort and
    the update (`update`: its backward `embedding_work`), seconds: its `reduction_bytes` (busiest
    over the shards, as the update's bytes) at the generation's achieved HBM rate
    (`cal.hbm_efficiency`). 0 with cpu-host placement (the CPUs update the tables)."""
    if workload.placement != "gpu" or figures.hbm_bandwidth <= 0:
        return 0.0
    return update.reduction_bytes / achieved_hbm_bandwidth(figures)


def elementwise_bytes_per_sample(workload: Workload) -> tuple[float, float]:
    """(forward, backward) HBM bytes per sample of the MLPs' and the interaction's elementwise
    work beside their GEMMs, activations s bytes each (the compute dtype's): per MLP layer the
    ReLU mask the GEMM's bias-ReLU epilogue writes forward and the dReLU epilogue reads backward
    (cuBLASLt RELU_AUX_BIAS / DRELU_BGRAD, as HugeCTR's fused FC layer runs them), `out` elements
    each way; `cat` and `dcnv2` concatenate the bottom MLP's output and the pooled embeddings
    (N = concatenated width read and written forward, the gradient split backward: 2N each way);
    per DCNv2 cross layer, x_{l+1} = x_0 * (u + b) + x_l over the GEMMs' output u in one fused
    kernel each way, the least any implementation moves: forward reads u, x_0, x_l and writes
    x_{l+1} (4N), backward reads the incoming gradient, x_0, u and the running gradient of x_0 and
    writes d(u) and that gradient (6N). `dot` adds nothing (its batched GEMM reads the features)."""
    s = DTYPE_BYTES[workload.compute_dtype]
    masks = sum(o for _, o in (*mlp_layers(workload.bottom_mlp), *mlp_layers(workload.top_mlp)))
    forward = backward = float(masks)
    if workload.interaction in ("cat", "dcnv2"):
        n = workload.concatenated_width
        forward += 2 * n + 4 * n * workload.cross_layers
        backward += 2 * n + 6 * n * workload.cross_layers
    return forward * s, backward * s


def elementwise_seconds(figures: Figures, workload: Workload) -> dict[str, float]:
    """`elementwise_bytes_per_sample` for the local batch at the generation's achieved HBM rate
    (`cal.hbm_efficiency`), by term: {"mlp_fwd": ..., "mlp_bwd": ...}; none without HBM."""
    if figures.hbm_bandwidth <= 0:
        return {}
    rate = achieved_hbm_bandwidth(figures)
    b = workload.local_batch(figures.gpus)
    forward, backward = elementwise_bytes_per_sample(workload)
    return {"mlp_fwd": b * forward / rate, "mlp_bwd": b * backward / rate}


DENSE_STATE_BYTES = {"sgd": 0.0, "adagrad": 4.0, "rowwise-adagrad": 4.0}
"""fp32 optimizer state per dense parameter, bytes: Adagrad one sum per element (HugeCTR's
`AdaGradOptimizer`, `accum_tensor_` Float); SGD none. assumed: a workload whose tables train with
row-wise Adagrad (an embedding-only optimizer, FBGEMM's) trains its dense parameters with Adagrad."""


def dense_update_bytes_per_parameter(workload: Workload) -> float:
    """HBM bytes the dense optimizer step moves per dense parameter and iteration, from HugeCTR's
    kernels (NVIDIA-Merlin/HugeCTR `HugeCTR/src/optimizers/adagrad_optimizer.cu`,
    `ada_grad_update4_kernel`): the fp32 master weight read and written (8), the optimizer state
    read and written (2 x `DENSE_STATE_BYTES`), the weight gradient read in the compute dtype (s);
    with a compute dtype narrower than fp32 also the copy of the master weights into it that every
    iteration starts with (HugeCTR's `network_init`, `conv_weight_` in model_pipeline.cpp; PyTorch's
    autocast casts each weight the same way): 4 read + s written. Adagrad in fp16: 24 bytes."""
    s = DTYPE_BYTES[workload.compute_dtype]
    cast = 4 + s if s < 4 else 0.0
    return 8 + 2 * DENSE_STATE_BYTES[workload.optimizer] + s + cast


def dense_update_seconds(figures: Figures, workload: Workload) -> float:
    """The dense optimizer step on every GPU, seconds: `dense_parameters` x
    `dense_update_bytes_per_parameter` at the generation's achieved HBM rate (`cal.hbm_efficiency`).
    0 without HBM or without dense parameters."""
    if figures.hbm_bandwidth <= 0:
        return 0.0
    moved = workload.dense_parameters * dense_update_bytes_per_parameter(workload)
    return moved / achieved_hbm_bandwidth(figures)


def bottom_mlp_share(workload: Workload) -> float:
    """The bottom MLP's share of the MLP and interaction FLOPs (forward; backward is 2x each)."""
    total = workload.mlp_flops_per_sample + workload.interaction_flops_per_sample
    bottom = sum(2 * i * o for i, o in mlp_layers(workload.bottom_mlp))
    return bottom / total if total else 0.0


def hidden_seconds(workload: Workload, rows: list[dict[str, Any]], sort: float) -> dict[str, float]:
    """Seconds of each pooled-embedding exchange that run beside the GPU's own work: the bottom MLP
    needs no embedding, so the forward AlltoAll runs beside the bottom MLP's forward and the
    gradient AlltoAll beside its backward (HugeCTR's intra-iteration overlap, the paper's overlap
    of embedding communication with the bottom MLP); the bottom MLP's part of `mlp_fwd` /
    `mlp_bwd` is its FLOP share (`bottom_mlp_share`), launches included. With
    `inter_iteration_overlap` the forward exchange of iteration i+1 also runs beside iteration i's
    top-MLP backward (the rest of `mlp_bwd`; HugeCTR's train_inter_iteration_overlap does not do
    this: it prefetches only the next batch's data distribution, HugeCTR/src/pybind/model_pipeline.cpp). With
    `allreduce_overlap: embedding_update` the dense AllReduce runs beside the embedding update only:
    `embedding_bwd` less the id sort (`sort`), which HugeCTR runs earlier beside the MLPs
    (model_pipeline.cpp, create_train_pipeline_with_ebc: `network_exchange_wgrad` on the default
    stream after the network graph, `ebc_mp_local_reduce` and `ebc_mp_update` on the "mp" stream,
    `ebc_mp_backward_index_calculation` on the "dp" stream with no wait on the backward pass). Each
    is the time available to hide behind, which may exceed the exchange."""
    seconds = {row["id"]: row["seconds"] for row in rows}
    share = bottom_mlp_share(workload) if workload.placement == "gpu" else 0.0
    hidden = {"embedding_alltoall_fwd": share * seconds.get("mlp_fwd", 0.0),
              "embedding_alltoall_bwd": share * seconds.get("mlp_bwd", 0.0)}
    if workload.inter_iteration_overlap and workload.placement == "gpu":
        # the next iteration's forward exchange also runs beside this one's top-MLP backward
        hidden["embedding_alltoall_fwd"] += (1 - share) * seconds.get("mlp_bwd", 0.0)
    if workload.allreduce_overlap == "embedding_update":
        hidden["dense_allreduce"] = max(0.0, seconds.get("embedding_bwd", 0.0) - sort)
    return hidden


def critical_path(workload: Workload, rows: list[dict[str, Any]], resources: dict[str, float],
                  sort: float) -> float:
    """The expected iteration's critical path, seconds: the GPU's and the host's work, and the
    exchanges it waits for (`PIPELINE`; the input AlltoAll too unless pipelined; the dense
    AllReduce too when it starts after the backward pass, `allreduce_overlap: embedding_update`),
    each less the part that runs beside the GPU's work (`hidden_seconds`, `sort` the id sort's
    seconds in `embedding_bwd`): max(exchange - hidden, 0)."""
    seconds = {row["id"]: row["seconds"] for row in rows}
    waits = PIPELINE if workload.pipeline else (*PIPELINE, "input_alltoall")
    if workload.allreduce_overlap == "embedding_update" and workload.placement == "gpu":
        waits = (*waits, "dense_allreduce")
    hidden = hidden_seconds(workload, rows, sort)
    exposed = math.fsum(max(0.0, seconds[tid] - hidden.get(tid, 0.0)) for tid in waits if tid in seconds)
    return resources["gpu"] + resources["host"] + exposed


def collective_hbm_bytes(collective: str, nbytes: float, ranks: int) -> float:
    """HBM bytes one GPU's NCCL kernel moves in a call of an `nbytes` buffer over `ranks` ranks:
    every byte it puts on the links is read from its HBM and every byte it takes off them written
    to it, so twice its bus bytes, nbytes x nccl-tests' bus factor (2(n-1)/n for AllReduce, (n-1)/n
    for the others; doc/PERFORMANCE.md). The least: a protocol that stages through FIFO buffers
    copies more."""
    if ranks <= 1:
        return 0.0
    factor = 2 * (ranks - 1) / ranks if collective == "all_reduce" else (ranks - 1) / ranks
    return 2 * nbytes * factor


def nccl_hbm_seconds(figures: Figures, workload: Workload, rows: list[dict[str, Any]], sort: float) -> float:
    """The GPU's HBM time that the NCCL kernels running beside its work take, seconds: each
    collective's `hbm_bytes` for the fraction of it that overlaps the GPU's kernels, at the
    generation's achieved HBM rate. The dense AllReduce overlaps the backward pass (all of it;
    with `allreduce_overlap: embedding_update` and GPU placement its `hidden_seconds` share),
    the input AlltoAll of batch i+1 this batch's work when pipelined, each pooled exchange its
    `hidden_seconds` share; the exposed rest runs while the GPU waits and takes nothing from it.
    With cpu-host placement only the AllReduce runs on the GPUs, beside the backward pass (the
    embedding update is the CPUs'). `sort`: the id sort's seconds in `embedding_bwd`, which does
    not run beside the AllReduce. Charged as if the overlapped
    kernels were bound by HBM (the lookups, the update, the elementwise kernels are; a GEMM beside
    them would lose less)."""
    if figures.hbm_bandwidth <= 0:
        return 0.0
    hidden = hidden_seconds(workload, rows, sort)
    moved = 0.0
    for row in rows:
        if row["resource"] != "network" or row["seconds"] <= 0:
            continue
        if row["id"] == "dense_allreduce" and (workload.allreduce_overlap == "backward" or workload.placement != "gpu"):
            fraction = 1.0
        elif workload.placement != "gpu":
            fraction = 0.0
        elif row["id"] == "input_alltoall":
            fraction = 1.0 if workload.pipeline else 0.0
        else:
            fraction = min(row["seconds"], hidden.get(row["id"], 0.0)) / row["seconds"]
        moved += fraction * row["hbm_bytes"]
    return moved / achieved_hbm_bandwidth(figures)
