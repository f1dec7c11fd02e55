"""The busiest GPU's share of indivisible work. `busiest` bounds the largest per-GPU sum of
indivisible items whatever the placement; `table_wise_shards` applies it to the table- and
column-wise shards (`Shards`), `per_node` and `with_table_row_wise` to table-row-wise tables,
which live whole on one node and row-wise over its GPUs, or as HugeCTR's `hier_auto` places them,
hot ones split over several nodes (`twrw_parts`, `twrw_share`, `twrw_nodes`, `twrw_notes`). The per-row
and per-sample sizes of a shard (`shard_row`, `ids_bytes`, `column_shards`) live here too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from hwspec.model.workload import DTYPE_BYTES, LENGTH_BYTES, OPTIMIZER_STATE_BYTES, Table, Workload
from hwspec.perf.hier_auto import Placed, hier_auto_plan
from hwspec.perf.platform_figures import Figures


def busiest(groups: list[tuple[float, int]], n: int) -> float:
    """A lower bound on the largest per-GPU sum when, for each (weight, count), `count`
    indivisible items of `weight` are placed on `n` GPUs, whatever the placement: the average,
    the largest item, the n-th plus the (n+1)-th largest (two of the n+1 largest share a GPU), and
    (k+1) x the (kn+1)-th largest for every k (some GPU holds k+1 of the kn+1 largest).
    `busiest([(1.0, 200)], 128) == 2.0`; a greedy largest-first placement comes close to it."""
    items = sorted(((w, c) for w, c in groups if w > 0 and c > 0), reverse=True)
    if not items or n < 1:
        return 0.0
    bound = max(math.fsum(w * c for w, c in items) / n, items[0][0])
    end = 0
    weights_at: list[tuple[int, float]] = []  # (last rank, weight) of each group, ranks from 1
    for w, c in items:
        end += c
        weights_at.append((end, w))
        k = (end - 1) // n
        bound = max(bound, (k + 1) * w)

    def kth(rank: int) -> float:
        return next((w for last, w in weights_at if last >= rank), 0.0)

    return max(bound, kth(n) + kth(n + 1))


@dataclass(frozen=True)
class Shards:
    """The busiest GPU's share of the table- and column-wise tables (indivisible shards), each
    figure a `busiest` bound on its own; `imbalance` is the lookup bound over the average."""

    lookup_bytes_per_sample: float    # forward: sum of pooling x dim x bytes of its shards
    ids_bytes_per_sample: float       # input it receives: sum of pooling x id bytes + a length per shard
    storage_bytes: float
    dims: float                        # pooled-embedding elements it sends per sample
    shards: int
    imbalance: float


def column_shards(table: Table) -> int:
    """Indivisible shards per table: its column shards when column-wise, else 1."""
    return table.column_shards if table.sharding == "column-wise" else 1


def shard_row(workload: Workload, table: Table) -> tuple[float, float, float]:
    """(dim, weight bytes, optimizer-state bytes) of one row of one shard of `table`."""
    k = column_shards(table)
    dim = table.dim / k
    state = OPTIMIZER_STATE_BYTES[workload.optimizer](dim) if k > 1 else table.state_bytes_per_row
    return dim, dim * DTYPE_BYTES[table.precision], state


def ids_bytes(workload: Workload, table: Table) -> float:
    """Input bytes of one table per sample: pooling ids and one length."""
    return table.pooling * DTYPE_BYTES[workload.index_dtype] + LENGTH_BYTES


def table_wise_shards(workload: Workload, n: int) -> Shards:
    """The busiest-GPU bounds of the table-wise tables and column-wise shards on `n` GPUs."""
    fwd, ids, storage, dims = [], [], [], []
    shards = 0
    for t in workload.sharded("table-wise", "column-wise"):
        dim, weights, state = shard_row(workload, t)
        count = t.count * column_shards(t)
        shards += count
        fwd.append((t.pooling * weights, count))
        ids.append((ids_bytes(workload, t), count))
        storage.append((t.rows * (weights + state), count))
        dims.append((dim, count))
    lookup = busiest(fwd, n)
    average = math.fsum(w * c for w, c in fwd) / n if n else 0.0
    return Shards(lookup, busiest(ids, n), busiest(storage, n), busiest(dims, n), shards,
                  lookup / average if average else 1.0)


def per_node(groups: list[tuple[float, int]], nodes: int) -> tuple[float, float]:
    """(busiest, average) per GPU of table-row-wise tables: each of `count` tables of `weight`
    (one GPU's share of it: the table is row-wise over its node's G GPUs) lives whole on one of
    `nodes` nodes, so the busiest node is `busiest` over nodes, and the average is over nodes."""
    return busiest(groups, nodes), (math.fsum(w * c for w, c in groups) / nodes if nodes else 0.0)


def with_table_row_wise(table_wise: tuple[float, float], table_row_wise: tuple[float, float]) -> float:
    """The busiest GPU's share of table-wise work (busiest, average over GPUs) beside
    table-row-wise work (busiest, average): a planner may keep the busiest of each apart, so
    only max(either busiest, the sum of the averages) is certain. One of them alone: its busiest."""
    return max(table_wise[0], table_row_wise[0], table_wise[1] + table_row_wise[1])


def twrw_nodes(figures: Figures) -> tuple[int, int]:
    """(N, G) of the table-row-wise plan: nodes a table may live on, GPUs its rows spread over."""
    return figures.nodes, figures.gpus_per_node


def _hier_auto(figures: Figures, workload: Workload) -> tuple[list[Table], Placed] | None:
    """Every table of `workload` one by one (groups expanded) and `hier_auto`'s plan of its
    table-row-wise ones on the cluster's nodes (its data-parallel tables enter only its default
    plan's cost); None without `embeddings.hier_auto` or on one node."""
    nodes, _ = twrw_nodes(figures)
    if workload.hier_auto_table_cost is None or nodes <= 1:
        return None
    tables = [t for t in workload.tables for _ in range(t.count)]
    planned = [j for j, t in enumerate(tables) if t.sharding == "table-row-wise"]
    return tables, hier_auto_plan([t.pooling for t in tables], planned, nodes, workload.hier_auto_table_cost)


def twrw_parts(figures: Figures, workload: Workload) -> list[tuple[Table, int, int]]:
    """The table-row-wise tables as (group, k, tables): `tables` of the group's tables each split
    over k nodes (`hier_auto`'s splits; else k = 1, the table on one node)."""
    plan = _hier_auto(figures, workload)
    if plan is None:
        return [(t, 1, t.count) for t in workload.sharded("table-row-wise")]
    tables, placed = plan
    parts: list[tuple[Table, int, int]] = []
    for group in workload.sharded("table-row-wise"):
        ks = [k for t, k in zip(tables, placed.splits) if t is group]
        parts += [(group, k, ks.count(k)) for k in sorted(set(ks))]
    return parts


def twrw_share(figures: Figures, workload: Workload, weight: Callable[[Table, int], float]) -> tuple[float, float]:
    """(busiest, average) per GPU of the table-row-wise tables' `weight(table, k)`, one GPU's
    share of one shard of a table split over k nodes (row-wise over those k G GPUs; k = 1: the
    table on one node, 1/G of it per GPU). With `embeddings.hier_auto` the plan places every
    shard, so the busiest is the most loaded node's sum of its shards' weights; without it the
    tables may go anywhere and the busiest is `per_node`'s bound."""
    nodes, _ = twrw_nodes(figures)
    plan = _hier_auto(figures, workload)
    if plan is None:
        return per_node([(weight(t, 1), t.count) for t in workload.sharded("table-row-wise")], nodes)
    tables, placed = plan
    loads = [math.fsum(weight(tables[j], placed.splits[j]) for j in node) for node in placed.nodes]
    return max(loads, default=0.0), math.fsum(loads) / nodes


def twrw_notes(figures: Figures, workload: Workload) -> list[str]:
    """What the estimate says about a table-row-wise plan the platform shapes: on one node it is
    row-wise; with fewer tables than nodes some nodes hold none (neither is refused)."""
    tables = sum(t.count for t in workload.sharded("table-row-wise"))
    nodes, g = twrw_nodes(figures)
    if not tables:
        return []
    if nodes == 1:
        return [f"table-row-wise on one node is row-wise: {tables} table(s) row-wise over its {g} GPUs"]
    split = [f"{c} x {t.name} over {k} nodes" if c > 1 else f"{t.name} over {k} nodes"
             for t, k, c in twrw_parts(figures, workload) if k > 1]
    if split:
        return [f"hier_auto splits {', '.join(split)}, row-wise over their {g} GPUs each"]
    if tables < nodes:
        return [f"table-row-wise: {tables} table(s) on {nodes} nodes, so {nodes - tables} node(s) hold none "
                f"and the busiest node serves a whole table on its {g} GPUs"]
    return []
