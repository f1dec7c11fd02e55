"""Roofline parameters and the performance-model views built from them.

`roofline.json` is hwspec's own document (see `hwspec.roofline`); `torchrec-topology.json` and
`calculon-system.json` convert it to what TorchRec's planner and Calculon read. JSON has no
comments, so provenance goes into a `_generated` key holding the header lines.
"""

from __future__ import annotations

import json
from typing import Any

from hwspec import roofline as rf
from hwspec.generate import GenContext, generator


def dump(document: Any) -> str:
    """Deterministic JSON: sorted keys, 2-space indent, strict (no NaN/Infinity), final newline."""
    return json.dumps(document, sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


@generator("roofline")
def roofline_json(ctx: GenContext) -> dict[str, str]:
    document = {"_generated": ctx.header_lines(), **rf.roofline(ctx.topology)}
    return {"roofline.json": dump(document)}


@generator("torchrec-topology")
def torchrec_topology_json(ctx: GenContext) -> dict[str, str]:
    """Kwargs for torchrec.distributed.planner.types.Topology, under `topology_kwargs` so the
    object can be splatted as is; notes sit beside it."""
    view = rf.torchrec_topology(ctx.topology)
    if view is None:
        return {}
    return {"torchrec-topology.json": dump({"_generated": ctx.header_lines(), **view})}


@generator("calculon-system")
def calculon_system_json(ctx: GenContext) -> dict[str, str]:
    """Calculon's system JSON. Calculon's System reads its top-level keys by name (only network
    entries are checked for an exact key set), so `_generated` and `_notes` ride at the top level."""
    built = rf.calculon_system(ctx.topology)
    if built is None:
        return {}
    system, notes = built
    return {"calculon-system.json": dump({"_generated": ctx.header_lines(), "_notes": notes, **system})}
