"""The collective terms of the embedding exchanges: the input AlltoAll's buffer for the busiest
receiver (`input_alltoall_bytes`), the pooled embeddings by sharding (table/column-wise
AlltoAll, row-wise ReduceScatter / AllGather, table-row-wise intra-node reduction then a
cross-node AlltoAll: `table_row_wise_exchange`, `cross_node_alltoall_algbw`), summed per term
(`pooled_term`, `_gpu_exchange_terms`); what of them crosses nodes (`inter_node_share`,
`crossing_bytes`), and with `cpu-host` placement the same exchanges host to host
(`_host_exchange_terms`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hwspec.model.workload import DTYPE_BYTES, LENGTH_BYTES, Workload
from hwspec.perf.estimate.shards import Shards, column_shards, ids_bytes, twrw_nodes, twrw_share, with_table_row_wise
from hwspec.perf.estimate.term import TERMS, Call, Term, _term
from hwspec.perf.platform_figures import Figures
from hwspec.perf.tables import gbps, gib, number


def _collective(figures: Figures, name: str) -> float:
    return figures.algbw.get(name, 0.0)


def inter_node_share(figures: Figures, collective: str) -> float:
    """Fraction of a rank's buffer S that crosses nodes under the hierarchical algorithm:
    AlltoAll (n-G)/n; AllReduce 2(N-1)/(N G); AllGather and ReduceScatter (N-1)/(N G)."""
    n, g, nodes = figures.gpus, figures.gpus_per_node, figures.nodes
    if nodes <= 1:
        return 0.0
    if collective == "all_to_all":
        return (n - g) / n
    factor = 2 if collective == "all_reduce" else 1
    return factor * (nodes - 1) / (nodes * g)


def input_alltoall_bytes(figures: Figures, workload: Workload, shards: Shards) -> tuple[float, str]:
    """The input AlltoAll's buffer S for the busiest rank and what it is. Every GPU sends the ids
    and lengths of its local batch to the shards' owners; the busiest receiver gets, for the
    global batch, the ids of its table- and column-wise shards (`Shards.ids_bytes_per_sample`)
    beside 1/G of the ids of the busiest node's table-row-wise tables (`with_table_row_wise`),
    1/n of the ids of every row-wise table, and a length per sample of each. The collective ends
    when the larger of the busiest receiver's and a sender's bytes has moved."""
    n = figures.gpus
    _, g = twrw_nodes(figures)
    b, big_b = workload.local_batch(n), workload.global_batch(n)
    s_idx = DTYPE_BYTES[workload.index_dtype]
    mp = workload.sharded("table-wise", "row-wise", "column-wise", "table-row-wise")
    sent = b * math.fsum(t.count * column_shards(t) * ids_bytes(workload, t) for t in mp)
    tw_average = math.fsum(t.count * column_shards(t) * ids_bytes(workload, t)
                           for t in workload.sharded("table-wise", "column-wise")) / n
    twrw = twrw_share(figures, workload, lambda t, k: t.pooling * s_idx / (k * g) + LENGTH_BYTES)
    received = big_b * (with_table_row_wise((shards.ids_bytes_per_sample, tw_average), twrw) + math.fsum(
        t.count * (t.pooling * s_idx / n + LENGTH_BYTES) for t in workload.sharded("row-wise")))
    if not sent:
        return 0.0, ""
    if received > sent:
        return received, f"the busiest receiver: {number(received / sent)}x what each GPU sends"
    return sent, "what each GPU sends (no receiver gets more)"


def cross_node_alltoall_algbw(figures: Figures) -> float:
    """algbw of an AlltoAll among the N GPUs of one local rank, one per node (TorchRec's
    table-row-wise cross-node group): each sends (N-1)/N of its buffer over its NIC share, so
    S / t = N B_inj / (N-1); 0 on one node (nothing crosses) or with no injection bandwidth."""
    nodes = figures.nodes
    if nodes <= 1 or figures.injection_bandwidth <= 0:
        return 0.0
    return nodes * figures.injection_bandwidth / (nodes - 1)


def intra_node_algbw(figures: Figures, collective: str) -> float:
    """The node's intra-node algbw bound for `collective` (`Figures.intra_algbw`); a Figures
    record without it (built by hand) falls back to its `algbw`, which on a node is the same and
    on a cluster is never faster."""
    return figures.intra_algbw.get(collective) or figures.algbw.get(collective, 0.0)


@dataclass(frozen=True)
class TableRowWiseExchange:
    """The busiest node's pooled-embedding exchange per GPU, bytes per element of the wire dtype:
    `intra` the intra-node ReduceScatter's (forward) or AllGather's (backward) buffer, B x D;
    `cross` the cross-node AlltoAll's, B/G x D (D = the busiest node's sum of dims)."""

    intra: float
    cross: float


def table_row_wise_exchange(figures: Figures, workload: Workload) -> TableRowWiseExchange:
    """`TableRowWiseExchange` of the table-row-wise tables (zero without any): TorchRec's
    TwRwPooledEmbeddingDist reduce-scatters the node's B x D partial sums within the node (each
    GPU keeps B/G samples: its local rank's samples of every node), then AlltoAlls them among the
    N GPUs of that local rank, sending B/G x D; backward an AlltoAll then an AllGather."""
    nodes, g = twrw_nodes(figures)
    big_b = workload.global_batch(figures.gpus)
    dims = twrw_share(figures, workload, lambda t, k: float(t.dim))[0]
    return TableRowWiseExchange(big_b * dims, big_b / g * dims if nodes > 1 else 0.0)


def pooled_term(tid: str, parts: list[tuple[str, float, float, str, str, str]], default_bound: str) -> Term:
    """A pooled-embedding term from its collectives, each (what, buffer bytes S, algbw, what
    bounds it, collective, scope: `Call.scope`): they run one after another, so the seconds add
    (a part with S or algbw 0 is left out); the term's rate is the effective one, its amount the
    sum of the buffers, its `calls` one per part."""
    used = [part for part in parts if part[1] > 0 and part[2] > 0]
    seconds = math.fsum(nbytes / rate for _, nbytes, rate, *_ in used)
    amount = math.fsum(nbytes for _, nbytes, *_ in used)
    label, resource = next((label, res) for i, label, res in TERMS if i == tid)
    calls = tuple(Call(collective, nbytes, nbytes / rate, scope) for _, nbytes, rate, _, collective, scope in used)
    return Term(tid, label, resource, seconds, amount, "bytes", amount / seconds if seconds else 0.0,
                "; ".join(bound for _, _, _, bound, *_ in used) or default_bound,
                "; ".join(f"{what} of {gib(int(nbytes))} at {gbps(rate)}" for what, nbytes, rate, *_ in used),
                calls)


@dataclass(frozen=True)
class Crossing:
    """Bytes per rank of each embedding exchange's buffers that cross nodes under the
    hierarchical algorithm (`inter_node_share`): the input ids, the pooled embeddings forward
    and their gradients backward."""

    input: float
    forward: float
    backward: float


def crossing_bytes(figures: Figures, workload: Workload, ids: float, shards: Shards, twrw: TableRowWiseExchange) -> Crossing:
    """`Crossing` of the exchanges on `figures`' ranks: the input AlltoAll's buffer `ids` and the
    table/column-wise AlltoAll's at the AlltoAll's share, row-wise tables' ReduceScatter forward
    and AllGather backward at theirs, the table-row-wise cross-node AlltoAll's (N-1)/N."""
    big_b, nodes = workload.global_batch(figures.gpus), figures.nodes
    a2a = inter_node_share(figures, "all_to_all")
    rw_dims = sum(t.count * t.dim for t in workload.sharded("row-wise"))

    def pooled(s_comm: float, reduction: str) -> float:
        return s_comm * (big_b * shards.dims * a2a + big_b * rw_dims * inter_node_share(figures, reduction)
                         + twrw.cross * (nodes - 1) / nodes)

    return Crossing(ids * a2a, pooled(DTYPE_BYTES[workload.comm_forward], "reduce_scatter"),
                    pooled(DTYPE_BYTES[workload.comm_backward], "all_gather"))


def _gpu_exchange_terms(figures: Figures, workload: Workload, ids: float, ids_detail: str, shards: Shards,
                        twrw: TableRowWiseExchange) -> list[Term]:
    """The input AlltoAll (done when the busiest receiver is: `input_alltoall_bytes`) and the
    pooled embeddings among the GPUs: TW/CW by AlltoAll, finished when the busiest sender is
    (S = global batch x its dims), RW by ReduceScatter forward and AllGather backward (S = global
    batch x dims), TWRW by the same within the busiest node then an AlltoAll across nodes
    (`table_row_wise_exchange`)."""
    big_b = workload.global_batch(figures.gpus)
    a2a = _collective(figures, "all_to_all")
    a2a_name = f"all_to_all algbw {gbps(a2a)} ({figures.collectives_scope})"
    terms = [_term("input_alltoall", ids, "bytes", a2a, a2a_name, ids_detail)]
    rw_dims = sum(t.count * t.dim for t in workload.sharded("row-wise"))
    cross = cross_node_alltoall_algbw(figures)
    for tid, s_comm, rw_collective in (("embedding_alltoall_fwd", DTYPE_BYTES[workload.comm_forward], "reduce_scatter"),
                                       ("embedding_alltoall_bwd", DTYPE_BYTES[workload.comm_backward], "all_gather")):
        rw_rate, intra = _collective(figures, rw_collective), intra_node_algbw(figures, rw_collective)
        # TorchRec's output dists: one AlltoAll over every GPU for the table- and column-wise shards, one
        # ReduceScatter / AllGather over every GPU for the row-wise tables; the table-row-wise tables
        # within the node (its G GPUs), then among the N GPUs of each local rank (one per node)
        terms.append(pooled_term(tid, [
            ("table/column-wise: AlltoAll", big_b * shards.dims * s_comm, a2a, a2a_name, "all_to_all", "all"),
            (f"row-wise: {rw_collective}", big_b * rw_dims * s_comm, rw_rate, f"{rw_collective} algbw {gbps(rw_rate)}",
             rw_collective, "all"),
            (f"table-row-wise: intra-node {rw_collective}", twrw.intra * s_comm, intra,
             f"intra-node {rw_collective} algbw {gbps(intra)}", rw_collective, "node"),
            ("table-row-wise: cross-node AlltoAll", twrw.cross * s_comm, cross,
             f"cross-node all_to_all algbw {gbps(cross)} (N x NIC share / (N-1))", "all_to_all", "cross"),
        ], a2a_name))
    return terms


def _host_exchange_terms(hosts: Figures, crossing: Crossing) -> list[Term]:
    """cpu-host placement: the ids to the sockets that own the tables, and the pooled embeddings
    (gradients backward) between sockets, host to host. Within a node they move through host
    memory (not charged); across nodes the busiest socket's `crossing` bytes go over its share of
    the node's NICs (`host_figures`), the same share a hierarchical AlltoAll's algbw comes from."""
    rate = hosts.injection_bandwidth
    bound = f"a CPU socket's share of its node's NICs {gbps(rate)}"
    detail = "host to host across nodes (within a node through host memory, not charged)"
    return [_term("input_alltoall", crossing.input, "bytes", rate, bound, "ids to the sockets that own the tables; " + detail),
            _term("embedding_alltoall_fwd", crossing.forward, "bytes", rate, bound, detail),
            _term("embedding_alltoall_bwd", crossing.backward, "bytes", rate, bound, detail)]
