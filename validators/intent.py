"""Intent rules: what the platform declares matches what it describes."""

from __future__ import annotations

from typing import Iterator

from hwspec.rules import Context, Finding, rule

from ._common import id_list


@rule("HW601", "declared-counts")
def declared_counts(ctx: Context) -> Iterator[Finding]:
    """The number of sockets and GPUs described equals `declares.sockets` and `declares.gpus`, when declared.

    `declares` records what the machine is known to have (from its datasheet or paper); a
    mismatch means an entry is missing, duplicated, or a repeat range is off by one.
    """
    p = ctx.platform
    for field, noun, items in (("sockets", "socket", p.sockets), ("gpus", "GPU", p.gpus)):
        declared = getattr(p.declares, field)
        if declared is not None and declared != len(items):
            yield ctx.finding(f"declares.{field} is {declared}, but {len(items)} {noun}(s) are described "
                              f"({id_list(i.id for i in items) or 'none'})",
                              at=(None, "declares", field), hint=f"correct the {field} list or the declared count")
