"""Loading a platform file, one way: the source layer reads and expands it
(`hwspec.source.expand.read_document`), the spec layer validates it
(`hwspec.spec.validate.validate_node`), the parts catalogue (`hwspec.model.parts`, which
holds all of it: where parts come from, loading them, the prebuilt built-in ones) gives its
parts, an entry's `override:` is merged over its part here, and `resolve_node` builds the
resolved `Platform`.

Every problem found on the way is collected; `load_platform` raises one `HwspecError` with
all of them, each pointing at the line and column where it is written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from hwspec.diagnostics import Code, Diagnostic, HwspecError, Severity
from hwspec.model.node import CataloguePart, Platform
from hwspec.model.parts import Catalogue, catalogue_for
from hwspec.model.resolve_node import resolve_node
from hwspec.source.expand import Expanded, read_document
from hwspec.source.loader import SourceDoc
from hwspec.spec.checks import UNKNOWN
from hwspec.spec.parts import PART_KINDS, PART_SECTIONS, overridden_part, unknown_part
from hwspec.spec.translate import DataPath, Written, dotted
from hwspec.spec.validate import validate_node

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hwspec.spec.models import NodeSpec


def load_platform(path: Path | str, parts_dirs: Iterable[Path] = ()) -> Platform:
    """Load, validate and resolve the node platform in `path`.

    Raises HwspecError with every problem found (E1xx shape, E2xx references)."""
    path = Path(path)
    doc, expanded = read_document(path)
    kind = expanded.data.get("kind")
    if kind != "node":
        pos = doc.locate(("kind",))
        raise HwspecError([Diagnostic(doc.file, pos.line, pos.col, Severity.ERROR, Code.UNKNOWN_KIND,
                                      f"expected kind: node here, got {kind!r}", "platform files say 'kind: node' or 'kind: cluster'")])
    return load_node(doc, expanded, catalogue_for(path, parts_dirs))


def load_node(doc: SourceDoc, expanded: Expanded, catalogue: Catalogue) -> Platform:
    """Validate the node platform in `expanded` (the expanded `doc`) and resolve it with the
    parts of `catalogue`. Raises HwspecError with every problem found (E1xx shape, E2xx
    references and parts)."""
    spec = validate_node(doc, expanded, {kind: catalogue.names(kind) for kind in PART_KINDS})
    errors: list[Diagnostic] = []
    parts = _resolve_parts(spec, catalogue, doc, expanded, errors)
    errors += _c2c_diagnostics(spec, parts, Written(doc, expanded))
    if errors:
        raise HwspecError(errors)
    platform = resolve_node(spec, parts, doc, expanded)
    return dataclasses.replace(platform, catalogue_parts=_catalogue_parts(spec, catalogue))


def _catalogue_parts(spec: NodeSpec, catalogue: Catalogue) -> tuple[CataloguePart, ...]:
    """Every catalogue part the platform names, by kind and name, as `catalogue` defines it."""
    named = sorted({(kind, entry.part) for section, kind, _ in PART_SECTIONS for entry in getattr(spec, section)
                    if entry.part not in (None, UNKNOWN)})
    found = ((kind, name, catalogue.get(kind, name)) for kind, name in named)
    return tuple(CataloguePart(kind, name, part.entry()) for kind, name, part in found if part is not None)


def _c2c_diagnostics(spec: NodeSpec, parts: dict[str, BaseModel], where: Written) -> list[Diagnostic]:
    """E208 for a GPU attached over NVLink-C2C whose part has no C2C links (`c2c:` in the part)."""
    found: list[Diagnostic] = []
    for index, gpu in enumerate(spec.gpus):
        part = parts.get(gpu.id)
        if gpu.c2c is not None and part is not None and getattr(part, "c2c", None) is None:
            pos = where.value(("gpus", index, "c2c"))
            found.append(Diagnostic(where.file, pos.line, pos.col, Severity.ERROR, Code.GPU_PART_WITHOUT_C2C,
                                    f"{dotted(('gpus', index))}: '{gpu.id}' is attached over NVLink-C2C, but its part '{gpu.part}' has no C2C links",
                                    "add 'c2c: {links: .., link_bandwidth: ..}' to the GPU part, or drop the GPU's 'c2c:'"))
    return found


def _resolve_parts(spec: NodeSpec, catalogue: Catalogue, doc: SourceDoc, expanded: Expanded,
                   errors: list[Diagnostic]) -> dict[str, BaseModel]:
    """Part model per entry id, with the entry's `override` merged in; the problems of an
    override appended to `errors`."""
    resolved: dict[str, BaseModel] = {}
    for section, kind, _ in PART_SECTIONS:
        for index, entry in enumerate(getattr(spec, section)):
            here: DataPath = (section, index)
            if entry.part is None:
                continue  # a bridge without a part
            override = getattr(entry, "override", None)
            where = Written(doc, expanded, here + ("override",), keys=False)
            if entry.part == UNKNOWN:
                model, problems = unknown_part(kind, override, where, here + ("override",))
            else:
                part = catalogue.get(kind, entry.part)
                assert part is not None  # validate_node has raised the unknown parts
                if not override:
                    resolved[entry.id] = part.model
                    continue
                model, problems = overridden_part(kind, part.raw, part,
                                                  override, where, here + ("override",))
            errors.extend(problems)
            if model is not None:
                resolved[entry.id] = model
    return resolved
