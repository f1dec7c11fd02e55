"""Intent rules: what the platform declares matches what it describes."""

from __future__ import annotations

from collections.abc import Iterator

from hwspec.rules import Context, Finding, rule

from ._common import POLICY_DOC, id_list, refused_names, unknown_nccl_names


@rule("HW601", "declared-counts",
      hint="describe every socket and GPU the node has, or correct declares")
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


@rule("HW701", "nccl-variable-known", severity="warning",
      hint="check the name against NCCL's environment variables; remove it, or keep it for a newer NCCL")
def nccl_variable_known(ctx: Context) -> Iterator[Finding]:
    """Every NCCL_* name under `environment:` is a variable NCCL reads.

    NCCL ignores variables it does not know, silently: a misspelt NCCL_IB_QPS_PER_CONECTION
    changes nothing, and the setting the vendor documents is not in effect.
    """
    yield from unknown_nccl_names(ctx)


@rule("HW702", "environment-policy", waivable=False,
      hint="set what loads code or names files in the job's own environment, not in the platform file")
def environment_policy(ctx: Context) -> Iterator[Finding]:
    """Every name under `environment:` is a tunable: nothing that loads code, names a file or changes where the job connects.

    launch.env and nccl.conf are sourced and read as root on every node, and a platform file
    comes from whoever opened the pull request: LD_PRELOAD, PATH, PYTHONPATH, BASH_ENV, any
    *_PLUGIN or *_LIB would run its code; NCCL_TOPO_FILE, NCCL_DEBUG_FILE, any *_FILE, *_PATH,
    *_DIR or *_DUMP* would make NCCL read or overwrite a file it names; PET_RDZV_ENDPOINT,
    MASTER_ADDR, NCCL_COMM_ID, CUDA_VISIBLE_DEVICES, HWSPEC_*, any *_ADDR or *_PORT would move
    the rendezvous or the ranks. A tunable is an NCCL_* or RCCL_* name outside those classes,
    or a reviewed setting listed below; any other name is refused as unreviewed. The operator,
    not the platform file, grants more: `--allow-env NAME` on the command line. This rule
    cannot be switched off under `rules:` (E304), and generate refuses the same names.
    """
    yield from refused_names(ctx)


environment_policy.__doc__ = (environment_policy.__doc__ or "").rstrip() + POLICY_DOC
