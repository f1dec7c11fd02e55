"""HugeCTR's `hier_auto` sharding plan: over how many nodes each model-parallel table is split.

HugeCTR's DLRM-DCNv2 planner (NVIDIA's MLPerf implementation, `sharding/planner.py` with
`sharding/__init__.py`'s `generate_plan`, `SHARDING_PLAN=hier_auto`) plans the tables over the
nodes, not the GPUs: a table placed on a node is row-wise over that node's GPUs, and a hot table
may be split over several nodes (row-wise over all their GPUs). Its search, restated:

- every table starts whole (one shard); each round places the shards hottest first (hotness = the
  table's multi-hot size, `pooling` here, over its split count), each on the node of least cost
  that does not yet hold a shard of that table; a node's cost is the sum of its shards' hotness
  plus `table_cost` per shard (the communication each shard adds: `--mem_comm_bw_ratio /
  --mem_comm_work_ratio`);
- after each round the hottest shard's table whose split can still double (split x 2 <= nodes)
  is split in two as often again, and the next round places the new shards;
- of the rounds (`ROUNDS`, HugeCTR's `max_search_iter`) and the default plan (every table on every
  node), the plan whose busiest node costs least is kept, with where each shard went; ties go to
  the earlier one.

HugeCTR also checks each node's memory (`--memory_cap_for_embedding`, 60 GB per GPU by default)
and splits a table that does not fit; hwspec leaves that to its own placement (E401), which no
shipped workload reaches. Ties between equally hot shards and equally loaded nodes are broken as
NumPy's sorts break them for the planner's short arrays (stable ascending by cost; hotness
descending with the later shard first).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

ROUNDS = 20
"""Placement rounds the planner tries (HugeCTR's Planner max_search_iter default)."""


@dataclass(frozen=True)
class Placed:
    """One plan: the busiest node's cost, each table's split count, and the tables of each node."""

    cost: float
    splits: tuple[int, ...]
    nodes: tuple[tuple[int, ...], ...]


def _place(hotness: Sequence[float], splits: list[int], planned: Sequence[int], nodes: int, table_cost: float) -> Placed:
    """The plan of one round: the shards of the `planned` tables (each split `splits[i]` ways,
    hotness[i] / splits[i] each) placed hottest first on the least costly node that has no shard
    of the same table (ties: the lower node)."""
    shards = [(hotness[i] / splits[i], position, i)
              for position, i in enumerate(j for j in planned for _ in range(splits[j]))]
    shards.sort(key=lambda s: (s[0], s[1]), reverse=True)
    cost = [0.0] * nodes
    held: list[list[int]] = [[] for _ in range(nodes)]
    for heat, _, table in shards:
        node = next(k for k in sorted(range(nodes), key=lambda k: cost[k]) if table not in held[k])
        held[node].append(table)
        cost[node] += heat + table_cost
    return Placed(max(cost), tuple(splits), tuple(tuple(tables) for tables in held))


def _split_hottest(hotness: Sequence[float], splits: list[int], planned: Sequence[int], nodes: int) -> bool:
    """Double the split of the table of the hottest shard that can still double; False if none can."""
    for i in sorted(planned, key=lambda j: hotness[j] / splits[j], reverse=True):
        if splits[i] * 2 <= nodes:
            splits[i] *= 2
            return True
    return False


def hier_auto_plan(hotness: Sequence[float], planned: Sequence[int], nodes: int, table_cost: float) -> Placed:
    """`hier_auto`'s plan on `nodes` nodes: `hotness` per table (its multi-hot size), `planned` the
    indices of the model-parallel tables it plans (the others, HugeCTR's data-parallel ones, count
    only in the default plan's cost). `splits[i]` is 1 for a table kept on one node, else a power of
    two <= nodes (the tables not planned: 1); `nodes[k]` lists the planned tables with a shard on
    node k. One node, or nothing to plan: every planned table whole on node 0. Planned once per
    distinct input: an estimate asks for the same plan for every term it prices."""
    return _plan(tuple(hotness), tuple(planned), nodes, table_cost)


@functools.lru_cache(maxsize=64)
def _plan(hotness: tuple[float, ...], planned: tuple[int, ...], nodes: int, table_cost: float) -> Placed:
    if nodes <= 1 or not planned:
        return Placed(0.0, (1,) * len(hotness), (planned,) + ((),) * max(nodes - 1, 0))
    best = Placed(math.fsum(hotness) / nodes + table_cost * len(hotness),
                  tuple(nodes if i in planned else 1 for i in range(len(hotness))), (planned,) * nodes)
    splits = [1] * len(hotness)
    for _ in range(ROUNDS):
        placed = _place(hotness, splits, planned, nodes, table_cost)
        if placed.cost < best.cost:
            best = placed
        if not _split_hottest(hotness, splits, planned, nodes):
            break
    return best
