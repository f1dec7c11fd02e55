"""Roofline parameters and the performance-model views built from them.

`roofline.json` is hwspec's own document (see `hwspec.perf.roofline`); `torchrec-topology.json` and
`calculon-system.json` convert it to what TorchRec's planner and Calculon read. JSON has no
comments, so provenance goes into a `_generated` key holding the header lines.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hwspec.generate.engine import GenContext, generator
from hwspec.perf import roofline as rf
from hwspec.perf.calculon import calculon_system
from hwspec.perf.torchrec import torchrec_topology

_INVISIBLE = re.compile("[\x7f-\x9f\u2028\u2029]")
"""Characters json.dumps leaves raw with ensure_ascii=False that terminals or JavaScript read as
controls or line breaks (DEL, C1 controls, the Unicode line and paragraph separators)."""


def dump(document: Any) -> str:
    """Deterministic JSON: sorted keys, 2-space indent, strict (no NaN/Infinity), final newline.
    Text from the platform file stays readable UTF-8, but DEL, C1 controls and U+2028/U+2029 are
    written as \\u escapes (they can only occur inside strings, where an escape means the same)."""
    text = json.dumps(document, sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@generator("roofline")
def roofline_json(ctx: GenContext) -> dict[str, str]:
    document = {"_generated": ctx.header_lines(), **rf.roofline(ctx.topology)}
    return {"roofline.json": dump(document)}


def torchrec_intra_host_bw(per_direction_bytes_per_ms: float) -> float:
    """TorchRec's `intra_host_bw` from hwspec's per-direction intra-node figure: the GPU's
    total (both directions summed) bandwidth to the other GPUs of its node, bytes/ms.

    TorchRec's own default (`INTRA_NODE_BANDWIDTH`, 600 GiB/s) and its estimator annotation
    example ("600 GB/s (NVLink)") are an A100's NVLink total: 12 links x 25 GB/s x 2
    directions. Its estimators divide the bytes a rank sends by this figure, so a per-direction
    value would make every intra-node collective look twice as slow as TorchRec's calibration."""
    return 2 * per_direction_bytes_per_ms


_FACTORY_HARDWARE = {"hbm_cap": "hbm_cap_bytes", "ddr_cap": "ddr_cap_bytes", "intra_host_bw": "intra_host_bw",
                     "inter_host_bw": "inter_host_bw", "hbm_mem_bw": "hbm_mem_bw", "ddr_mem_bw": "ddr_mem_bw",
                     "hbm_to_ddr_mem_bw": "hbm_to_ddr_mem_bw"}
"""Topology kwarg -> TorchRec HardwareConfig field (torchrec.distributed.planner.types)."""

TORCHREC_USAGE = (
    "TorchRec >= 1.8: TopologyFactory.create_topology(trainer_config=TrainerConfig(**doc['factory']['trainer_config']), "
    "hardware_config=HardwareConfig(**doc['factory']['hardware_config']), kernel_config=KernelConfig(**doc['factory']['kernel_config'])) "
    "from torchrec.distributed.planner.types (use_hardware_based_bandwidth is true: without it the factory ignores "
    "every bandwidth here). Older TorchRec (>= 1.1.0 for hbm_to_ddr_mem_bw): Topology(**doc['topology_kwargs']), "
    "which TorchRec >= 1.8 accepts with a warning that asks for the factory.")


def torchrec_document(view: dict[str, Any]) -> dict[str, Any]:
    """torchrec-topology.json from a roofline TorchRec view (`hwspec.perf.torchrec.torchrec_topology`
    or `hwspec.perf.cluster_roofline.cluster_torchrec`, per-direction figures): `topology_kwargs` for
    `Topology(**kw)`, and the same values as the three configs `TopologyFactory.create_topology`
    takes (`factory`)."""
    kwargs = dict(view["topology_kwargs"])
    derivation = dict(view["_derivation"])
    if "intra_host_bw" in kwargs:
        kwargs["intra_host_bw"] = torchrec_intra_host_bw(kwargs["intra_host_bw"])
        derivation["intra_host_bw"] = ("per-GPU intra-node bandwidth, both directions summed (TorchRec's convention: "
                                       "an A100's 12 NVLinks are its 600 GB/s default): twice the intra-node "
                                       "collective busbw bound (NVLink, else PCIe) of roofline.json")
    trainer = {key: kwargs[key] for key in ("world_size", "local_world_size", "pod_size") if key in kwargs}
    hardware = {field: kwargs[key] for key, field in _FACTORY_HARDWARE.items() if key in kwargs}
    kernel = {"compute_device": kwargs["compute_device"], "use_hardware_based_bandwidth": True}
    return {
        "_units": ("hbm_cap, ddr_cap (and *_cap_bytes): bytes; every *_bw: bytes per millisecond (bytes/s / 1000, "
                   "SI bytes); intra_host_bw both directions summed, the others per direction"),
        "_usage": TORCHREC_USAGE,
        "_derivation": derivation,
        "topology_kwargs": kwargs,
        "factory": {"trainer_config": trainer, "hardware_config": hardware, "kernel_config": kernel},
    }


@generator("torchrec-topology")
def torchrec_topology_json(ctx: GenContext) -> dict[str, str]:
    """torchrec-topology.json (`torchrec_document`): Topology kwargs under `topology_kwargs`,
    the TopologyFactory configs under `factory`, notes beside them."""
    view = torchrec_topology(ctx.topology)
    if view is None:
        return {}
    return {"torchrec-topology.json": dump({"_generated": ctx.header_lines(), **torchrec_document(view)})}


@generator("calculon-system")
def calculon_system_json(ctx: GenContext) -> dict[str, str]:
    """Calculon's system JSON. Calculon's System reads its top-level keys by name (only network
    entries are checked for an exact key set), so `_generated` and `_notes` ride at the top level."""
    built = calculon_system(ctx.topology)
    if built is None:
        return {}
    system, notes = built
    return {"calculon-system.json": dump({"_generated": ctx.header_lines(), "_notes": notes, **system})}
