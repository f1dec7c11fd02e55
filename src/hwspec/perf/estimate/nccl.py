"""NCCL's cost model for one collective call (`hwspec.perf.nccl_tuning`, the release the
workload names: `nccl:`): the communicator of a platform (`nccl_comm`), NCCL's choice of
(algorithm, protocol) and its time (`collective_seconds`), the AlltoAll's latency under a
protocol (`alltoall_latency`), and the calls a network term issues per iteration
(`collectives_per_iteration`).
"""

from __future__ import annotations

import dataclasses
import math

from hwspec.model.workload import Workload
from hwspec.perf import calibration as cal
from hwspec.perf import nccl_tuning as nt
from hwspec.perf.estimate.term import Call, Term
from hwspec.perf.platform_figures import Figures


def nccl_comm(figures: Figures) -> nt.Comm:
    """The communicator tuning.cc sees on `figures`: every GPU a rank, its nodes as NCCL counts
    them (an NVLink domain spanning trays is one: multi-node NVLink, `Figures.nvlink_units`), the
    GPUs' least compute capability, NVLink within the node, GPUDirect RDMA to the NICs."""
    return nt.Comm(ranks=figures.gpus, nodes=max(figures.nccl_nodes, 1),
                   compute_capability=figures.compute_capability,
                   nvlink=figures.nvlink_bandwidth > 0, gpudirect=figures.gpudirect)


def scoped(figures: Figures, scope: str) -> Figures:
    """`figures` as the communicator of a call's `scope` sees them (`Call.scope`): "node" the G
    GPUs of one node, "cross" one GPU on each of the N nodes; "all" unchanged."""
    if scope == "node" and figures.nodes > 1:
        return dataclasses.replace(figures, gpus=figures.gpus_per_node, nodes=1, nvlink_units=None)
    if scope == "cross" and figures.nodes > 1:
        return dataclasses.replace(figures, gpus=figures.nodes, gpus_per_node=1)
    return figures


def calls(workload: Workload, term: Term, nodes: int = 1) -> tuple[Call, ...]:
    """The collective calls of a network term: its own (`Term.calls`: the pooled embeddings'
    output dists, each on its communicator), else `collectives_per_iteration`'s, the term's bytes
    and seconds split evenly over them on every GPU."""
    if term.calls:
        return term.calls
    counts = collectives_per_iteration(workload, term, nodes)
    total = sum(counts.values())
    return tuple(Call(name, term.amount / total, term.seconds / total) for name, c in counts.items() for _ in range(c))


def release(workload: Workload) -> nt.Release:
    """The NCCL release the workload names (`nccl:`, 2.20.3 when it names none)."""
    return nt.RELEASES[workload.nccl]


def alltoall_latency(figures: Figures, protocol: str, rel: nt.Release = nt.NCCL_2_20) -> float:
    """Latency of one AlltoAll under a Ring protocol, seconds: base + one step over the slowest
    link a peer is reached by (the network's on a cluster, else NVLink's or PCIe's). NCCL runs an
    AlltoAll as grouped sends and receives to every peer in one kernel (src/enqueue.cc: p2p
    rounds, up to NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8 per batch, batches spread over the p2p
    channels, which run at once), so the peers' transfers overlap instead of following each
    other as a ring's n-1 steps do. nccl-tests alltoall_perf on 8 GPUs over NVLink measures
    10.6 us at 128 bytes against base + NVLink step = 11.8 us for Ring/Simple."""
    hw = "net" if figures.nccl_nodes > 1 else "nvlink" if figures.nvlink_bandwidth > 0 else "pci"
    key = ("Ring", protocol)
    return (rel.base_lat[key] + rel.hw_lat[hw][key]) * 1e-6


def collective_seconds(figures: Figures, collective: str, nbytes: float, bandwidth_seconds: float,
                       rel: nt.Release = nt.NCCL_2_20) -> tuple[float, str]:
    """Time of one call of `nbytes` whose Ring/Simple transfer takes `bandwidth_seconds` at the
    achieved algbw, and what runs it. AllReduce, AllGather, ReduceScatter: NCCL's choice
    (`nccl_tuning.choose`) with the ring's bus bandwidth = achieved algbw x nsteps / nranks.
    AlltoAll (grouped p2p, no NCCL algorithm): the Ring protocol of least `alltoall_latency` +
    transfer at that protocol's share of Simple's bandwidth under the release's refinements."""
    if figures.gpus <= 1:
        return bandwidth_seconds, "none"
    comm = nccl_comm(figures)
    algbw = nbytes / bandwidth_seconds / 1e9 if bandwidth_seconds > 0 else math.inf
    if collective != "all_to_all":
        bus = algbw * nt.ring_steps(collective, comm.ranks) / comm.ranks
        return nt.choose(rel, comm, collective, nbytes, bus)
    bus = algbw * (comm.ranks - 1) / comm.ranks
    simple = nt.bus_bandwidth(rel, comm, collective, "Ring", "Simple", bus)
    options = []
    for protocol in ("LL", "LL128", "Simple"):
        if not nt.enabled(rel, comm, collective, "Ring", protocol):
            continue
        if bandwidth_seconds <= 0:  # nothing to move, or no bound on moving it: latency only
            transfer = 0.0
        else:
            fraction = nt.bus_bandwidth(rel, comm, collective, "Ring", protocol, bus) / simple if simple > 0 else 1.0
            transfer = bandwidth_seconds / fraction if fraction > 0 else math.inf
        options.append((alltoall_latency(figures, protocol, rel) + transfer, f"Ring/{protocol}"))
    return min(options)


def collectives_per_iteration(workload: Workload, term: Term, nodes: int = 1) -> dict[str, int]:
    """The NCCL collectives a network term issues per iteration on `nodes` nodes: one AlltoAll per
    exchange (and a ReduceScatter / AllGather for row-wise tables); table-row-wise tables their
    own intra-node ReduceScatter / AllGather and, across nodes, their own AlltoAll (TorchRec's
    output dist per sharding type); the dense gradients in DDP buckets of 25 MiB."""
    if term.amount <= 0 or term.resource != "network" or term.id == "ingestion":
        return {}
    if term.id == "dense_allreduce":
        return {"all_reduce": math.ceil(term.amount / cal.value("allreduce_bucket_bytes"))}
    if term.id == "input_alltoall":
        return {"all_to_all": 1}
    counts = {}
    if workload.sharded("table-wise", "column-wise"):
        counts["all_to_all"] = 1
    reduction = "reduce_scatter" if term.id == "embedding_alltoall_fwd" else "all_gather"
    if workload.sharded("row-wise"):
        counts[reduction] = 1
    if workload.sharded("table-row-wise"):
        counts[reduction] = counts.get(reduction, 0) + 1
        if nodes > 1:
            counts["all_to_all"] = counts.get("all_to_all", 0) + 1
    return counts
