"""NCCL's cost model for one collective call: its latency under each (algorithm, protocol)
(`protocol_latency`, `alltoall_latency`), NCCL's choice of the cheapest (`collective_seconds`),
and the calls a network term issues per iteration (`collectives_per_iteration`).
"""

from __future__ import annotations

import math

from hwspec.perf import calibration as cal
from hwspec.perf.estimate.term import Term
from hwspec.perf.platform_figures import Figures
from hwspec.spec.workload import Workload


def protocol_latency(figures: Figures, collective: str, protocol: cal.Protocol) -> float:
    """Latency of one collective under one NCCL (algorithm, protocol), seconds, as NCCL's cost
    model computes it: Ring: base + (steps - inter) x intra-node step + inter x network step,
    steps = 2(n-1), inter = 2(N-1) for AllReduce (x 1.9 for Ring/Simple across nodes), n-1 and
    N-1 for AllGather and ReduceScatter; Tree (AllReduce): base + 2((G-1) x intra-node step +
    log2(N) x network step). AlltoAll: `alltoall_latency`."""
    n, nodes, g = figures.gpus, figures.nodes, figures.gpus_per_node
    intra = protocol.nvlink if figures.nvlink_bandwidth > 0 else protocol.pcie
    if collective == "all_to_all":
        return alltoall_latency(figures, protocol)
    if protocol.algorithm == "Tree":
        return protocol.base + 2 * ((g - 1) * intra + math.log2(nodes) * protocol.net)
    steps, inter = (2 * (n - 1), 2 * (nodes - 1)) if collective == "all_reduce" else (n - 1, nodes - 1)
    latency = protocol.base + (steps - inter) * intra + inter * protocol.net
    plateau = collective == "all_reduce" and nodes > 1 and protocol.protocol == "Simple"
    return latency * (cal.value("nccl_multinode_allreduce_factor") if plateau else 1.0)


def alltoall_latency(figures: Figures, protocol: cal.Protocol) -> float:
    """Latency of one AlltoAll, seconds: base + one step over the slowest link a peer is reached
    by (the network's on a cluster, else NVLink's or PCIe's). NCCL runs an AlltoAll as grouped
    sends and receives to every peer in one kernel (src/enqueue.cc: p2p rounds, up to
    NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8 per batch, batches spread over the p2p channels, which
    run at once), so the peers' transfers overlap instead of following each other as a ring's
    n-1 steps do. nccl-tests alltoall_perf on 8 GPUs over NVLink measures 10.6 us at 128 bytes
    (`alltoall_latency_8_nvlink`) against base + NVLink step = 11.8 us for Ring/Simple."""
    if figures.nodes > 1:
        return protocol.base + protocol.net
    return protocol.base + (protocol.nvlink if figures.nvlink_bandwidth > 0 else protocol.pcie)


def collective_seconds(figures: Figures, collective: str, bandwidth_seconds: float) -> tuple[float, str]:
    """Time of one collective call whose Ring/Simple transfer takes `bandwidth_seconds` at the
    achieved algbw: NCCL's choice, the (algorithm, protocol) with the least latency +
    bandwidth_seconds / its bandwidth fraction, and its name."""
    if figures.gpus <= 1:
        return bandwidth_seconds, "none"
    options = [(protocol_latency(figures, collective, p) + bandwidth_seconds / p.bandwidth, f"{p.algorithm}/{p.protocol}")
               for p in cal.NCCL_PROTOCOLS if p.algorithm == "Ring" or collective == "all_reduce"]
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
