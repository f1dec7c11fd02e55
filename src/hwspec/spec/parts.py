"""Parts in the spec language: the catalogue's sections and the spec model of each, `part:
unknown`, and a platform entry's `override` of its part.

A platform entry names its part (`part: h100-sxm5-80gb`) and may override some of its values
(`override: {tdp: 600 W}`): the part's mapping with the override merged in is validated as the
part's model, each problem located where its value is written (the platform file for an
overridden value, the parts file for the rest).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from hwspec.diagnostics import Diagnostic
from hwspec.spec.translate import DataPath, Overlay, Where, validate

if TYPE_CHECKING:
    from pydantic import BaseModel

PART_KINDS: dict[str, str] = {"cpus": "CpuPart", "gpus": "GpuPart", "nics": "NicPart", "pcie_switches": "PcieSwitchPart"}
"""Catalogue section -> the name of the spec model of its parts in `hwspec.spec.models`."""

IDENTITY_KINDS: dict[str, str] = {"cpus": "CpuIdentity", "gpus": "GpuIdentity", "nics": "NicIdentity"}
"""Catalogue section -> the spec model of what an entry with `part: unknown` may say of itself."""


PART_SECTIONS = (("sockets", "cpus", "CPU"), ("gpus", "gpus", "GPU"), ("nics", "nics", "NIC"),
                 ("pcie", "pcie_switches", "PCIe switch"))
"""Platform section, catalogue kind, and what its parts are called. A bridge (`pcie`) names a part optionally."""


def spec_model(name: str) -> type[BaseModel]:
    """The pydantic model `name` of `hwspec.spec.models`, imported on first use (commands that
    validate nothing, `hwspec --help` among them, never import pydantic)."""
    from hwspec.spec import models

    model: type[BaseModel] = getattr(models, name)
    return model


def merged(base: Any, override: Any) -> Any:
    """`override` merged into `base`: mappings key by key, recursively; anything else replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        result = dict(base)
        for key, value in override.items():
            result[key] = merged(base.get(key), value) if key in base else value
        return result
    return override


def paths(data: Any, prefix: DataPath = ()) -> Iterator[DataPath]:
    """`prefix` and the path of every value inside `data` (its mappings' keys, its lists' indices)."""
    yield prefix
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield from paths(value, prefix + (key,))


def unknown_part(kind: str, override: dict[str, Any] | None, where: Where, prefix: DataPath) -> tuple[BaseModel | None, list[Diagnostic]]:
    """What an entry of catalogue section `kind` with `part: unknown` says of itself (its
    `override`, located by `where`; `prefix` is its path in the platform file), validated as
    the section's identity model."""
    return validate(spec_model(IDENTITY_KINDS[kind]), override or {}, where, prefix)


def overridden_part(kind: str, part: dict[str, Any], part_where: Where, override: dict[str, Any], where: Where,
                    prefix: DataPath) -> tuple[BaseModel | None, list[Diagnostic]]:
    """The part mapping `part` (of catalogue section `kind`, located by `part_where`) with an
    entry's `override` (located by `where`; `prefix` is its path in the platform file) merged
    in, validated as the section's part model."""
    return validate(spec_model(PART_KINDS[kind]), merged(part, override), Overlay(where, part_where, set(paths(override))), prefix)
