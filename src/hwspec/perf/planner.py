"""The sharding planner: a sharding for every table group the workload leaves `auto`.

The paper (Mudigere et al., arXiv 2104.05158, "sharding") picks a plan that minimizes
communication plus load imbalance under each GPU's memory capacity; TorchRec's planner does the
same with its own estimator. hwspec's cost is its own estimate, so no formula is repeated here: a
candidate plan is the workload with that plan written in, and it costs

    (iteration_seconds_expected, serial_seconds) of `estimate_plan(figures, workload)`

(`hwspec.perf.estimate.estimate_plan`, which `estimate` hands to `plan`)
compared in that order. The expected iteration holds the paper's two terms: the busiest GPU's
lookups (load imbalance, with every tier's bandwidth when the tables spill to host DDR or SSD)
plus the pooled-embedding collectives on its critical path, and every collective on the network
at achieved rates with NCCL's latencies. The serial sum of the bound's terms breaks ties (when a
resource no plan changes, e.g. ingestion, bounds the iteration, the plan that moves the fewest
seconds of work wins). A plan whose tables do not fit HBM + host DDR + SSD per GPU (E401) is out.

Search, greedy one group at a time with the others held:
1. start from the cheapest single-kind plan (every planned group the same candidate), so the plan
   is never costlier than any of them;
2. visit the groups largest first (total storage, the order TorchRec's GreedyPerfPartitioner
   places its table- and column-wise sharding options in: `_group_and_sort_non_uniform_sharding_options`,
   torchrec/distributed/planner/partitioners.py, sorts by storage, descending), giving each the
   candidate that makes the whole plan cheapest (its current one on a tie); repeat until a pass
   changes nothing, at most `MAX_PASSES` passes. Every change lowers the cost, so it ends.

Candidates per group (`candidates`): table-wise, row-wise, table-row-wise (on more than one node;
on one it is row-wise), data-parallel, and column-wise with k shards for every power of two
2 <= k <= n that divides the dim. TorchRec keeps column shards at least 128 wide
(`MIN_CW_DIM`); hwspec lets the cost decide, since a narrow shard pays whole access units per row.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hwspec.diagnostics import Code, HwspecError
from hwspec.model.workload import Table, Workload
from hwspec.perf.platform_figures import Figures
from hwspec.perf.tables import ms
from hwspec.spec.workload import AUTO

Estimator = Callable[[Figures, Workload], dict[str, Any]]
"""`hwspec.perf.estimate.estimate_plan`: the estimate of a workload whose every group has its
sharding. `estimate` hands it to `plan` (the planner does not import the estimate, which imports it)."""

MAX_PASSES = 4
"""Passes over the groups before the planner stops improving (each pass visits every group)."""

Cost = tuple[float, float]
"""(expected iteration seconds, serial seconds) of a plan; `UNFIT` when its tables do not fit."""
UNFIT: Cost = (math.inf, math.inf)


@dataclass(frozen=True)
class Choice:
    """One candidate sharding of a table group: a kind and, for column-wise, its shard count; or
    a split of the group's identical tables (`split` > 0): the first `split` tables of that kind,
    the other `count - split` of kind `rest`."""

    kind: str
    column_shards: int = 1
    split: int = 0
    rest: str = ""

    @property
    def label(self) -> str:
        base = f"column-wise x{self.column_shards}" if self.kind == "column-wise" else self.kind
        return f"{base} ({self.split} tables) + {self.rest} (the rest)" if self.split else base

    def apply(self, table: Table) -> tuple[Table, ...]:
        """`table` sharded this way: one group, or two for a split (the second named
        `<name>~<rest>`, its tables the group's last)."""
        first = (dataclasses.replace(table, sharding=self.kind, column_shards=self.column_shards)
                 if self.kind == "column-wise" else dataclasses.replace(table, sharding=self.kind))
        if not self.split:
            return (first,)
        return (dataclasses.replace(first, count=self.split),
                dataclasses.replace(table, name=f"{table.name}~{self.rest}", sharding=self.rest, count=table.count - self.split))


MAX_SPLITS = 4
"""Split points the planner weighs per group: `n`, 2`n`, ... (at most this many) tables table-wise."""


def candidates(figures: Figures, table: Table) -> list[Choice]:
    """Every sharding the planner weighs for `table` on `figures`, in the order it prefers on a tie.
    A group of more identical tables than GPUs may also split (TorchRec's planner shards each
    table on its own, and gives model-I's 200 tables on 128 GPUs 128 table-wise, one per GPU, and
    72 table-row-wise): k = n, 2n, ... tables table-wise, the rest row-wise or (on several nodes)
    table-row-wise, after every unsplit candidate."""
    choices = [Choice("table-wise"), Choice("row-wise")]
    if figures.nodes > 1:
        choices.append(Choice("table-row-wise"))
    k = 2
    while k <= figures.gpus and k <= table.dim:
        if table.dim % k == 0:
            choices.append(Choice("column-wise", k))
        k *= 2
    choices.append(Choice("data-parallel"))
    n = figures.gpus
    rests = ["row-wise"] + (["table-row-wise"] if figures.nodes > 1 else [])
    if n > 1:
        for split in range(n, table.count, n)[:MAX_SPLITS]:
            choices += [Choice("table-wise", split=split, rest=rest) for rest in rests]
    return choices


def with_choices(workload: Workload, choices: dict[int, Choice]) -> Workload:
    """`workload` with table group i sharded as `choices[i]` (the others as they are; a split
    group becomes two, in place)."""
    tables = tuple(part for i, t in enumerate(workload.tables) for part in (choices[i].apply(t) if i in choices else (t,)))
    return dataclasses.replace(workload, tables=tables)


def plan_cost(figures: Figures, workload: Workload, estimate_plan: Estimator) -> Cost:
    """The planner's cost of a fully sharded `workload` (module docstring); `UNFIT` when its
    tables do not fit. Any other error (E402, no peak for the compute dtype) is raised."""
    try:
        doc = estimate_plan(figures, workload)
    except HwspecError as error:
        if all(d.code == Code.TABLES_DO_NOT_FIT for d in error.diagnostics):
            return UNFIT
        raise
    return doc["iteration_seconds_expected"], doc["serial_seconds"]


@dataclass(frozen=True)
class Planned:
    """A workload with every group's sharding written in, and `groups`, the estimate's `plan`:
    per table group in file order, what it is sharded as and why."""

    workload: Workload
    groups: list[dict[str, Any]]


def shards_per_table(figures: Figures, table: Table) -> int:
    """GPUs one table of `table`'s group is spread over (data-parallel: replicas)."""
    return {"table-wise": 1, "column-wise": table.column_shards, "table-row-wise": figures.gpus_per_node}.get(
        table.sharding, figures.gpus)


def _entry(figures: Figures, table: Table, why: str, cost: Cost | None = None,
           runner_up: tuple[Choice, Cost] | None = None) -> dict[str, Any]:
    return {"table": table.name, "count": table.count, "kind": table.sharding,
            "column_shards": table.column_shards if table.sharding == "column-wise" else None,
            "shards_per_table": shards_per_table(figures, table), "planned": cost is not None, "why": why,
            "cost_seconds": cost[0] if cost else None,
            "runner_up": {"kind": runner_up[0].label, "cost_seconds": runner_up[1][0]} if runner_up else None}


def largest_first(tables: Sequence[Table], indices: Iterable[int]) -> list[int]:
    """`indices` of `tables` in the order the planner visits them: total storage (all `count`
    tables), largest first, as TorchRec's partitioner places its sharding option groups; file order on ties."""
    return sorted(indices, key=lambda i: -tables[i].storage_bytes)


def plan(figures: Figures, workload: Workload, estimate_plan: Estimator) -> Planned:
    """Plan every `auto` table group of `workload` on `figures` (module docstring); groups with a
    stated sharding are kept. The plan is never costlier than any single-kind plan of the
    planned groups. Raises the E401 of the row-wise plan (the least per GPU) when nothing fits."""
    auto = [i for i, t in enumerate(workload.tables) if t.sharding == AUTO]
    if not auto:
        return Planned(workload, [_entry(figures, t, "stated in the workload") for t in workload.tables])
    options = [candidates(figures, workload.tables[i]) for i in auto]
    memo: dict[tuple[Choice, ...], Cost] = {}

    def cost(chosen: tuple[Choice, ...]) -> Cost:
        if chosen not in memo:
            memo[chosen] = plan_cost(figures, with_choices(workload, dict(zip(auto, chosen))), estimate_plan)
        return memo[chosen]

    def at(chosen: tuple[Choice, ...], j: int, choice: Choice) -> tuple[Choice, ...]:
        return chosen[:j] + (choice,) + chosen[j + 1:]

    seeds = [tuple(c for _ in auto) for c in options[0] if all(c in o for o in options)]
    current = min(seeds, key=cost)
    if cost(current) == UNFIT:
        estimate_plan(figures, with_choices(workload, dict.fromkeys(auto, Choice("row-wise"))))  # raises its E401

    def best_at(chosen: tuple[Choice, ...], j: int) -> tuple[Choice, ...]:
        """`chosen` with group j's cheapest candidate, its current one on a tie."""
        return min((at(chosen, j, c) for c in options[j]), key=lambda p: (cost(p), p[j] != chosen[j]))

    for _ in range(MAX_PASSES):
        before = current
        for j in largest_first([workload.tables[i] for i in auto], range(len(auto))):
            current = best_at(current, j)
        if current == before:
            break
    planned = with_choices(workload, dict(zip(auto, current)))
    groups = [_entry(figures, t, "stated in the workload") for t in workload.tables]
    for j, i in enumerate(auto):
        others = [(c, cost(at(current, j, c))) for c in options[j] if c != current[j]]
        fitting = [(c, k) for c, k in others if k != UNFIT]
        runner_up = min(fitting, key=lambda ck: ck[1]) if fitting else None
        parts = current[j].apply(workload.tables[i])
        reason = why(cost(current), runner_up, len(others) - len(fitting))
        groups[i] = (_entry(figures, parts[0], reason, cost(current), runner_up) if len(parts) == 1
                     else _split_entry(figures, workload.tables[i], parts, current[j], reason, cost(current), runner_up))
    return Planned(planned, groups)


def _split_entry(figures: Figures, table: Table, parts: tuple[Table, ...], choice: Choice, reason: str, cost: Cost,
                 runner_up: tuple[Choice, Cost] | None) -> dict[str, Any]:
    """The plan entry of a split group: its kind says both parts, `parts` has each one's entry."""
    entry = _entry(figures, dataclasses.replace(table, sharding=choice.kind), reason, cost, runner_up)
    entry["kind"] = " + ".join(f"{p.sharding} x{p.count}" for p in parts)
    entry["shards_per_table"] = None
    entry["parts"] = [_entry(figures, p, "part of the split", cost) for p in parts]
    return entry


def why(chosen: Cost, runner_up: tuple[Choice, Cost] | None, unfit: int) -> str:
    """Why a group got its sharding: the expected iteration against the runner-up's (the serial
    sums when those tie), and how many other candidates do not fit."""
    unfit_note = f"; {unfit} other candidate(s) do not fit" if unfit else ""
    if runner_up is None:
        return "the only candidate that fits" if unfit else "the only candidate"
    choice, cost = runner_up
    if cost[0] > chosen[0]:
        return (f"{ms(chosen[0])} ms expected per iteration, the runner-up {choice.label} {ms(cost[0])} ms"
                + unfit_note)
    return (f"ties with {choice.label} at {ms(chosen[0])} ms expected per iteration; "
            f"{ms(chosen[1])} ms of serial work against {ms(cost[1])} ms" + unfit_note)
