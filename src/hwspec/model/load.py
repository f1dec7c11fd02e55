"""Loading a platform file, one way: the source layer reads and expands it
(`hwspec.source.expand.read_document`), the spec layer validates it
(`hwspec.spec.validate.validate_node`), the parts catalogue gives its parts, and
`resolve_node` builds the resolved `Platform`.

Every problem found on the way is collected; `load_platform` raises one `HwspecError` with
all of them, each pointing at the line and column where it is written.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwspec import content
from hwspec.diagnostics import Code, Diagnostic, HwspecError, Severity, display_path, os_reason, real_path
from hwspec.model.node import CataloguePart, Platform
from hwspec.model.parts import Catalogue, Part, Parts, PrebuiltFile, part_from_document, prebuilt_file
from hwspec.model.resolve_node import resolve_node
from hwspec.source.expand import Expanded, read_document
from hwspec.source.loader import SourceDoc
from hwspec.spec.checks import UNKNOWN
from hwspec.spec.parts import PART_KINDS, PART_SECTIONS, overridden_part, spec_model, unknown_part
from hwspec.spec.translate import DataPath, Written, dotted, validate_document
from hwspec.spec.validate import validate_node

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hwspec.spec.models import NodeSpec



def _stamp(path: Path) -> tuple[int, int] | None:
    """The file's version as far as caches go: modification time and size."""
    try:
        stat = path.stat()
    except OSError:
        return None  # the loader reports the unreadable file
    return stat.st_mtime_ns, stat.st_size


def _load_parts_file(path: Path) -> Parts:
    """A parts file's parts by kind and name, validated from its YAML; parsed once per version of the file."""
    return _parse_parts_file(path, _stamp(path))


@functools.lru_cache(maxsize=64)
def _parse_parts_file(path: Path, stamp: tuple[int, int] | None) -> Parts:
    doc, expanded = read_document(path)
    catalogue = validate_document(spec_model("PartsCatalogue"), doc, expanded)
    parts: Parts = {}
    for kind in PART_KINDS:
        for name, part in getattr(catalogue, kind).items():
            parts.setdefault(kind, {})[name] = part_from_document(kind, name, part, doc, expanded)
    return parts


def load_parts_file(path: Path) -> Catalogue:
    """The parts of one parts file (`kind: parts`), validated as `load_catalogue` validates each
    file of a parts directory. Raises HwspecError with every problem found."""
    parts = _load_parts_file(Path(path))
    return Catalogue([(_index(parts), lambda: parts)])


def load_catalogue(directories: Iterable[Path]) -> Catalogue:
    """The parts files in `directories` (builtin first, then the platform's own). A site's are
    loaded and validated here, whatever the platform uses of them. The built-in ones (package
    data) were validated when hwspec was built: each is read in that form (`hwspec.model.parts`),
    its parts made when one of them is first asked for (`Catalogue`); a built-in file that
    differs from what was validated is validated here like a site's. Raises HwspecError with
    every problem found."""
    builtin = real_path(content.builtin_dir("parts"))
    files: list[tuple[Mapping[str, frozenset[str]], Callable[[], Parts]]] = []
    errors: list[Diagnostic] = []
    for directory in directories:
        try:
            paths = parts_files(directory)
        except HwspecError as exc:
            errors.extend(exc.diagnostics)
            continue
        prebuilt = real_path(directory) == builtin
        for path in paths:
            try:
                found = _prebuilt_file(path, _stamp(path)) if prebuilt else None
                if found is not None:
                    files.append((found.index, functools.partial(_prebuilt_parts, found)))
                else:  # a site's file, or a built-in one changed since it was validated: validated now
                    parts = _load_parts_file(path)
                    files.append((_index(parts), functools.partial(dict, parts)))
            except HwspecError as exc:
                errors.extend(exc.diagnostics)
    if errors:
        raise HwspecError(errors)
    return Catalogue(files)


def _index(parts: Parts) -> dict[str, frozenset[str]]:
    """The names of a file's parts by kind, as `Catalogue` looks them up."""
    return {kind: frozenset(names) for kind, names in parts.items()}


@functools.lru_cache(maxsize=64)
def _prebuilt_file(path: Path, stamp: tuple[int, int] | None) -> PrebuiltFile | None:
    return prebuilt_file(path)


def _prebuilt_parts(found: PrebuiltFile) -> Parts:
    """A built-in file's parts from its prebuilt record, or validated from its YAML when the
    record is malformed."""
    try:
        return found.parts()
    except ValueError:  # a record not of the shape a build writes: what PrebuiltFile.parts raises
        return _load_parts_file(found.path)


def parts_files(directory: Path) -> list[Path]:
    """The `*.yaml` files in the parts `directory` (symlinks resolved), sorted. Raises
    HwspecError (E100, with the OS's reason) when the directory cannot be listed; a file
    that cannot be read is left for its load to report."""
    directory = real_path(directory)
    try:
        with os.scandir(directory) as entries:
            names = [entry.name for entry in entries if entry.name.endswith(".yaml")]
    except OSError as exc:
        message = f"cannot read parts directory: {os_reason(exc)}"
        raise HwspecError([Diagnostic(display_path(directory), 1, 1, Severity.ERROR, Code.CANNOT_READ_FILE, message)]) from None
    return [directory / name for name in sorted(names)]


def parts_directories(platform_file: Path, extra: Iterable[Path] = ()) -> list[Path]:
    """The built-in catalogue, then `parts/` beside the platform file, then `extra`."""
    dirs = [content.builtin_dir("parts")]
    local = real_path(platform_file).parent / "parts"
    if os.path.isdir(local) and real_path(local) != dirs[0]:  # builtin_dir is resolved
        dirs.append(local)
    dirs.extend(Path(d) for d in extra)
    return dirs


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
    return load_node(doc, expanded, load_catalogue(parts_directories(path, parts_dirs)))


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
    return tuple(CataloguePart(kind, name, part_entry(part)) for kind, name, part in found if part is not None)


def part_entry(part: Part) -> dict[str, Any]:
    """A part as a parts file writes it: its entry with each value's note put back where the
    file wrote it (`{value: ..., source: ...}`; a mapping's note is already among its keys)."""
    entry = copy.deepcopy(part.raw)
    for path, note in part.notes.items():
        if not path:
            continue
        *parents, last = path
        holder: Any = entry
        for key in parents:
            holder = holder[key]
        if isinstance(holder[last], dict):
            continue
        wrapped = {"value": holder[last]}
        wrapped.update({key: text for key, text in (("source", note.source), ("assumed", note.assumed)) if text})
        holder[last] = wrapped
    return entry


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
