"""Loading a platform file, one way: the source layer reads and expands it
(`hwspec.source.expand.read_document`), the spec layer validates it
(`hwspec.spec.validate.validate_node`), the parts catalogue gives its parts, and
`resolve_node` builds the resolved `Platform`.

Every problem found on the way is collected; `load_platform` raises one `HwspecError` with
all of them, each pointing at the line and column where it is written.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwspec import content
from hwspec.diagnostics import Code, Diagnostic, HwspecError, Location, Severity, display_path, os_reason, real_path
from hwspec.model.node import Platform
from hwspec.model.resolve_node import resolve_node
from hwspec.source.expand import Expanded, read_document
from hwspec.source.loader import SourceDoc, read_regular_file
from hwspec.spec.checks import PART_NAME
from hwspec.spec.parts import PART_KINDS, PART_SECTIONS, UNKNOWN_PART, overridden_part, spec_model, unknown_part
from hwspec.spec.translate import DataPath, Written, dotted, validate_document
from hwspec.spec.validate import validate_node

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hwspec.spec.models import NodeSpec


class Part:
    """A catalogue entry: its validated model (a `CpuPart`, `GpuPart` or `NicPart`) and where it is written."""

    def __init__(self, kind: str, name: str, raw: dict[str, Any], model: Any, doc: SourceDoc, expanded: Expanded):
        self.kind, self.name, self.raw, self.model = kind, name, raw, model
        self.doc, self.expanded = doc, expanded

    def locate(self, path: DataPath) -> Location:
        return self.doc.locate(self.expanded.written_path((self.kind, self.name) + path))


class Catalogue:
    """Parts by kind and name, from parts files (later ones win).

    A built-in file is read with source positions and validated when a part of it is first
    asked for (`get`, `parts`): a platform pays for the files whose parts it names, not for the
    whole catalogue. Which file holds which names is read without positions first (`_part_names`);
    a file whose names cannot be read so is loaded at once, so its problems are reported then.
    Raises HwspecError (the file's problems) when a part of a file that does not validate is
    asked for."""

    def __init__(self, files: list[tuple[Path, dict[str, frozenset[str]]]]):
        self.files = files
        """Each parts file in load order, with the part names it defines by kind."""

    def names(self, kind: str) -> list[str]:
        return sorted({name for _, index in self.files for name in index.get(kind, ())})

    def get(self, kind: str, name: str) -> Part | None:
        for path, index in reversed(self.files):
            if name in index.get(kind, ()):
                return _load_parts_file(path).get(kind, {}).get(name)
        return None

    @property
    def parts(self) -> dict[str, dict[str, Part]]:
        """Every part by kind and name (every file loaded)."""
        merged: dict[str, dict[str, Part]] = {}
        for path, _ in self.files:
            for kind, parts in _load_parts_file(path).items():
                merged.setdefault(kind, {}).update(parts)
        return merged


def _stamp(path: Path) -> tuple[int, int] | None:
    """The file's version as far as caches go: modification time and size."""
    try:
        stat = path.stat()
    except OSError:
        return None  # the loader reports the unreadable file
    return stat.st_mtime_ns, stat.st_size


def _load_parts_file(path: Path) -> dict[str, dict[str, Part]]:
    """A parts file's parts by kind and name; parsed once per version of the file."""
    return _parse_parts_file(path, _stamp(path))


@functools.lru_cache(maxsize=64)
def _parse_parts_file(path: Path, stamp: tuple[int, int] | None) -> dict[str, dict[str, Part]]:
    doc, expanded = read_document(path)
    catalogue = validate_document(spec_model("PartsCatalogue"), doc, expanded)
    parts: dict[str, dict[str, Part]] = {}
    for kind in PART_KINDS:
        for name, model in getattr(catalogue, kind).items():
            parts.setdefault(kind, {})[name] = Part(kind, name, expanded.data[kind][name], model, doc, expanded)
    return parts


def load_parts_file(path: Path) -> Catalogue:
    """The parts of one parts file (`kind: parts`), validated as `load_catalogue` validates each
    file of a parts directory. Raises HwspecError with every problem found."""
    path = Path(path)
    parts = _load_parts_file(path)
    return Catalogue([(path, {kind: frozenset(names) for kind, names in parts.items()})])


def load_catalogue(directories: Iterable[Path]) -> Catalogue:
    """The parts files in `directories` (builtin first, then the platform's own). The built-in
    ones (package data, validated by hwspec's own tests) are each loaded when a part of it is
    asked for (`Catalogue`); a site's are loaded and validated here, whatever the platform uses
    of them. Raises HwspecError with every problem found."""
    builtin = real_path(content.builtin_dir("parts"))
    files: list[tuple[Path, dict[str, frozenset[str]]]] = []
    errors: list[Diagnostic] = []
    for directory in directories:
        try:
            paths = parts_files(directory)
        except HwspecError as exc:
            errors.extend(exc.diagnostics)
            continue
        lazy = real_path(directory) == builtin
        for path in paths:
            try:
                index = _part_names(path, _stamp(path)) if lazy else None
                if index is None:  # a site's file, or not plainly a parts file: loaded now, so that its problems say where
                    index = {kind: frozenset(parts) for kind, parts in _load_parts_file(path).items()}
                files.append((path, index))
            except HwspecError as exc:
                errors.extend(exc.diagnostics)
    if errors:
        raise HwspecError(errors)
    return Catalogue(files)


@functools.lru_cache(maxsize=64)
def _part_names(path: Path, stamp: tuple[int, int] | None) -> dict[str, frozenset[str]] | None:
    """The part names a parts file defines by kind, read without source positions (PyYAML's
    C loader); None when the file is not plainly a parts file of literal names (unreadable, a
    syntax error, another shape, a `repeat` or `${...}` among its names)."""
    import yaml

    try:
        data = yaml.load(read_regular_file(path), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, ValueError, HwspecError, yaml.YAMLError):
        return None
    if not isinstance(data, dict) or data.get("kind") != "parts" or not set(data) <= {"hwspec", "kind", *PART_KINDS}:
        return None
    index: dict[str, frozenset[str]] = {}
    for kind in PART_KINDS:
        section = data.get(kind) or {}
        if not isinstance(section, dict) or not all(
                isinstance(name, str) and len(name) <= 64 and PART_NAME.fullmatch(name) and name != UNKNOWN_PART for name in section):
            return None
        index[kind] = frozenset(section)
    return index


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
    return resolve_node(spec, parts, doc, expanded)


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
            if entry.part == UNKNOWN_PART:
                model, problems = unknown_part(kind, override, where, here + ("override",))
            else:
                part = catalogue.get(kind, entry.part)
                assert part is not None  # validate_node has raised the unknown parts
                if not override:
                    resolved[entry.id] = part.model
                    continue
                model, problems = overridden_part(kind, part.raw, Written(part.doc, part.expanded, (kind, part.name)),
                                                  override, where, here + ("override",))
            errors.extend(problems)
            if model is not None:
                resolved[entry.id] = model
    return resolved
