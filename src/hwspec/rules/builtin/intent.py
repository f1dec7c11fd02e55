"""Intent rules: what the platform declares matches what it describes."""

from __future__ import annotations

from collections.abc import Iterator

from hwspec.rules import Context, Finding, rule

from ._common import id_list, unknown_nccl_names


@rule("HW601", "declared-counts")
def declared_counts(ctx: Context) -> Iterator[Finding]:
    """The number of sockets and GPUs described equals `declares.sockets` and `declares.gpus`, when declared.

    Sockets are physical packages: a socket with several NUMA nodes counts once.

    `declares` records what the machine is known to have (from its datasheet or paper); a
    mismatch means an entry is missing, duplicated, or a repeat range is off by one.
    """
    p = ctx.platform
    for field, noun, ids in (("sockets", "socket", p.packages), ("gpus", "GPU", [g.id for g in p.gpus])):
        declared = getattr(p.declares, field)
        if declared is not None and declared != len(ids):
            yield ctx.finding(f"declares.{field} is {declared}, but {len(ids)} {noun}(s) are described "
                              f"({id_list(ids) or 'none'})",
                              at=(None, "declares", field), hint=f"correct the {field} list or the declared count")


@rule("HW701", "nccl-variable-known", severity="warning")
def nccl_variable_known(ctx: Context) -> Iterator[Finding]:
    """Every NCCL_* name under `environment:` is a variable NCCL reads.

    NCCL ignores variables it does not know, silently: a misspelt NCCL_IB_QPS_PER_CONECTION
    changes nothing, and the setting the vendor documents is not in effect.
    """
    yield from unknown_nccl_names(ctx)
