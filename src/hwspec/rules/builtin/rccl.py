"""RCCL generation rule: what rccl-topo.xml cannot say, reported during `validate`.

The generator states its limits once (`hwspec.formats.nccl_tree.rccl_limits`); this rule reports
that list as located findings and the generator refuses with the same list, so `validate` clean
means `generate` succeeds for AMD nodes too.
"""

from __future__ import annotations

from collections.abc import Iterator

from hwspec.formats.nccl_tree import rccl_limits
from hwspec.rules import Context, Finding, rule

from ._common import limit_findings


@rule("HW911", "rccl-topo-writable", waivable=False,
      hint="give each AMD GPU its part's gcn, hip_arch and compute_units (or an override: with them), and xGMI pairs")
def rccl_topo_writable(ctx: Context) -> Iterator[Finding]:
    """An AMD node can be written as RCCL's topology file: AMD GPUs only, each with gcn, hip_arch and compute_units (its part's, or an unknown part's `override:`), xGMI pairs (no switch), devices under a CPU socket of a known x86 vendor, every attribute RCCL requires known (on x86 a CPU's vendor, on Intel and AMD its family and model), at most 1024 elements and 32 children per element.

    RCCL reads `<gpu sm gcn arch>` and point-to-point `<xgmi>` links, and refuses or misreads a
    file without them; hwspec refuses to write such a file rather than have RCCL guess on every node.
    Each element of the file about to be written is asked RCCL's own rules of one element (the
    check the written file passes), so a file this rule passes is one the generator writes."""
    yield from limit_findings(ctx, rccl_limits(ctx.topology))
