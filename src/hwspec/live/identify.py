"""Which catalogue part an observed device is, from what the input says of it and nothing else.

A part is named only when exactly one catalogue part fits the observed facts; otherwise import
writes `part: unknown` and `candidates` names the parts that could not be told apart. The facts,
in the order they narrow the choice:

- PCI vendor/device ids (always required; a device the input gives no ids for is unknown);
- GPUs: CUDA `sm` (NVIDIA), the gfx target `gcn` and the compute-unit count RCCL writes as
  `sm` (AMD; MI250X and MI250 share a device id and differ only there); NICs: the transport
  and the observed port speed (ConnectX-6 100G and 200G share a device id);
- a part whose `pci_device` is itself marked `assumed:` (a board that borrows another part's
  id, e.g. an A100 in an OAM slot) gives way to the part whose id is sourced;
- the model name the driver reports (NVML's product name), where the input gives one and it
  equals exactly one remaining part's `model_name`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hwspec.live.observed import Gpu

if TYPE_CHECKING:
    from hwspec.model.parts import Catalogue
    from hwspec.spec.models import GpuPart


@dataclass(frozen=True)
class Identified:
    """`part` is a catalogue name or None; `candidates` are the parts the facts left tied
    (empty when no part has the observed ids)."""

    part: str | None
    candidates: tuple[str, ...] = ()


def ids_assumed(catalogue: Catalogue, kind: str, name: str) -> bool:
    """Whether the catalogue part's `pci_device` carries an `assumed:` note."""
    part = catalogue.parts.get(kind, {}).get(name)
    if part is None:
        return False
    note = part.note(("pci_device",))
    return bool(note and note.assumed)


def choose(catalogue: Catalogue, kind: str, names: list[str], model_name: str | None) -> Identified:
    """The one part among `names` (all fitting the observed ids and kind-specific facts), by the
    sourced-ids and model-name rules above; else None with the tied candidates."""
    if len(names) > 1:
        sourced = [n for n in names if not ids_assumed(catalogue, kind, n)]
        names = sourced or names
    if len(names) > 1 and model_name:
        parts = catalogue.parts.get(kind, {})
        named = [n for n in names if parts[n].model.model_name.casefold() == model_name.strip().casefold()]
        names = named or names
    if len(names) == 1:
        return Identified(names[0])
    return Identified(None, tuple(sorted(names)))


def gpu_fits(part: GpuPart, gpu: Gpu) -> bool:
    """Whether a GPU part fits the observed GPU's ids, `sm` and `gcn`. RCCL writes an AMD GPU's
    compute units as `sm`; it is compared with the part's `compute_units` where both are known."""
    if not gpu.vendor or (part.pci_vendor, part.pci_device) != (gpu.vendor, gpu.device):
        return False
    if gpu.gcn is not None and part.gcn != gpu.gcn:
        return False
    if gpu.sm is None:
        return True
    if part.vendor == "nvidia":
        return part.sm == gpu.sm
    if part.vendor == "amd" and part.compute_units is not None:
        return part.compute_units == gpu.sm
    return True


def candidates_note(where: str, what: str, candidates: tuple[str, ...]) -> str:
    """The draft's note for a device the input does not tell apart between catalogue parts."""
    return (f"{where}: {what} fits catalogue parts {', '.join(candidates)}, which the input does not tell apart: "
            "left 'part: unknown' (name the part, or import nvidia-smi -q -x with the other inputs)")
