"""The parts catalogue, in one module: where a platform's parts come from, loading them, looking
them up, and the built-in catalogue in the form it was validated to.

    catalogue_for(platform_file, extra)      the catalogue a platform file sees: the two below
    parts_directories(platform_file, extra)  the built-in catalogue, the `parts/` beside the file, `extra`
    load_catalogue(directories)              their parts files as one `Catalogue` (later files win)
    load_parts_file(path)                    one parts file (`kind: parts`) as a `Catalogue`
    Catalogue.names(kind), .get(kind, name)  the lookups a platform's load makes; `.parts` every part
    Part.entry()                             a part as a parts file writes it

A `Part` is one entry of a parts file: its kind and name, the entry as written (after
`expand`), its validated spec model, the file:line:col of each of its values and its
`source`/`assumed` notes. Loading raises `HwspecError` with every problem found, each located.

The built-in catalogue (`data/parts/*.yaml`, package data) is validated when hwspec is built,
not on every run: `data/parts.jsonl` (`prebuilt_path`) records, for each built-in file, the
SHA-256 of its bytes and its parts as they validated (every field's value and which fields the
file wrote, the positions, the notes), and the SHA-256 of those records. It is JSON Lines,
bounded (`hwspec.jsonbound`) before `json.loads` reads it: data, never code; a part's line is
parsed when a part of its file is first asked for. A run makes a part's model from its record
with pydantic's `model_construct`, which validates nothing. A built-in file is used in its
prebuilt form only when its bytes hash to the recorded hash and its records to theirs;
otherwise, or when a record is not of the shape a build writes, it is validated from its YAML,
as a site's parts file is. `python -m hwspec.model.build_parts` writes the file (the writer
lives there: it runs at build time only); tests/test_prebuilt_parts.py holds it to the YAML.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwspec import content
from hwspec.diagnostics import Code, Diagnostic, HwspecError, Location, Severity, display_path, os_reason, real_path
from hwspec.source.expand import Provenance, read_document
from hwspec.source.loader import read_regular_file
from hwspec.spec.checks import PART_NAME, UNKNOWN
from hwspec.spec.parts import PART_KINDS, paths, spec_model
from hwspec.spec.translate import validate_document

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hwspec.source.expand import Expanded
    from hwspec.source.loader import SourceDoc

DataPath = tuple[str | int, ...]

Parts = dict[str, dict[str, "Part"]]
"""Parts by kind, then name."""

PartIndex = Mapping[str, frozenset[str]]
"""The part names a parts file defines, by kind."""

PREBUILT_FORMAT = 2
"""The layout of `data/parts.jsonl`; a file of another format is not used. (2: each file's
records carry their SHA-256.)"""


# ---------------------------------------------------------------- parts and catalogues


class Part:
    """A catalogue entry.

    `raw` is the entry as written (after `expand`: what an `override:` is merged over); `model`
    its validated spec model (a `CpuPart`, `GpuPart`, `NicPart` or `PcieSwitchPart`);
    `positions` maps each path into `raw` (the entry itself is `()`) to the (line, col) in
    `file` where that value is written; `notes` maps paths into `raw` to their provenance."""

    def __init__(self, kind: str, name: str, raw: dict[str, Any], model: Any, file: str,
                 positions: Mapping[DataPath, tuple[int, int]], notes: Mapping[DataPath, Provenance]):
        self.kind, self.name, self.raw, self.model, self.file = kind, name, raw, model, file
        self.positions, self.notes = positions, notes

    def locate(self, path: DataPath) -> Location:
        """Where the value at `path` (inside the entry) is written, else its longest written prefix."""
        for end in range(len(path), -1, -1):
            at = self.positions.get(path[:end])
            if at is not None:
                return Location(self.file, *at)
        return Location(self.file, 1, 1)

    def value(self, path: DataPath) -> Location:
        """`locate`: a part is a `hwspec.spec.translate.Where` (what an `override:` is merged over)."""
        return self.locate(path)

    def key(self, path: DataPath) -> Location:
        """Where the key at `path` is written: at its value, as an override's keys are located."""
        return self.locate(path)

    def note(self, path: DataPath = ()) -> Provenance | None:
        """The `source`/`assumed` note of the value at `path` (the entry itself: `()`), if it has one."""
        return self.notes.get(path)

    def entry(self) -> dict[str, Any]:
        """The part as a parts file writes it: a copy of `raw` with each value's note put back
        where the file wrote it (`{value: ..., source: ...}`; a mapping's note is already among
        its keys). A parts file of such entries loads to the same parts (tests/test_parts_bundle.py)."""
        entry = copy.deepcopy(self.raw)
        for path, note in self.notes.items():
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


class Catalogue:
    """Parts by kind and name, from parts files (later ones win).

    Each file is given as the part names it defines by kind and a function that makes its
    parts (called when a part of the file is first asked for, at most once): a platform pays
    for the files whose parts it names. The function raises HwspecError (the file's problems)
    when the file does not validate."""

    def __init__(self, files: list[tuple[PartIndex, Callable[[], Parts]]]):
        self.files = [(index, functools.cache(make)) for index, make in files]
        """Each parts file in load order: the part names it defines by kind, and its parts."""

    def names(self, kind: str) -> list[str]:
        """The names of the parts of `kind` (`gpus`, `nics`, ...) in any file, sorted; no file's
        parts are made to answer."""
        return sorted({name for index, _ in self.files for name in index.get(kind, ())})

    def get(self, kind: str, name: str) -> Part | None:
        """Part `kind`.`name` as the last file that defines it defines it, or None; makes that
        file's parts (once) and no other's. Raises HwspecError when that file does not validate."""
        for index, parts in reversed(self.files):
            if name in index.get(kind, ()):
                return parts().get(kind, {}).get(name)
        return None

    @property
    def parts(self) -> Parts:
        """Every part by kind and name (every file loaded)."""
        merged: Parts = {}
        for _, parts in self.files:
            for kind, found in parts().items():
                merged.setdefault(kind, {}).update(found)
        return merged


# ---------------------------------------------------------------- where parts come from, and loading them


def catalogue_for(platform_file: Path, extra: Iterable[Path] = ()) -> Catalogue:
    """The catalogue the platform file `platform_file` sees: `load_catalogue` of its
    `parts_directories` (`extra`: `--parts`). Raises HwspecError with every problem found."""
    return load_catalogue(parts_directories(platform_file, extra))


def parts_directories(platform_file: Path, extra: Iterable[Path] = ()) -> list[Path]:
    """The parts directories a platform file sees, in load order (later ones win): the built-in
    catalogue, then `parts/` beside the platform file (symlinks resolved; when it exists and is
    not the built-in one), then `extra` (`--parts`)."""
    dirs = [content.builtin_dir("parts")]
    local = real_path(platform_file).parent / "parts"
    if os.path.isdir(local) and real_path(local) != dirs[0]:  # builtin_dir is resolved
        dirs.append(local)
    dirs.extend(Path(d) for d in extra)
    return dirs


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


def load_catalogue(directories: Iterable[Path]) -> Catalogue:
    """The parts files in `directories` (builtin first, then the platform's own: see
    `parts_directories`). A site's are loaded and validated here, whatever the platform uses of
    them. The built-in ones (package data) were validated when hwspec was built: each is read
    in that form (`prebuilt_file`), its parts made when one of them is first asked for; a
    built-in file that differs from what was validated is validated here like a site's. Raises
    HwspecError with every problem found."""
    builtin = real_path(content.builtin_dir("parts"))
    files: list[tuple[PartIndex, Callable[[], Parts]]] = []
    errors: list[Diagnostic] = []
    for directory in directories:
        try:
            found_paths = parts_files(directory)
        except HwspecError as exc:
            errors.extend(exc.diagnostics)
            continue
        prebuilt = real_path(directory) == builtin
        for path in found_paths:
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


def load_parts_file(path: Path) -> Catalogue:
    """The parts of one parts file (`kind: parts`), validated from its YAML as `load_catalogue`
    validates each file of a site's parts directory. Raises HwspecError with every problem found."""
    parts = _load_parts_file(Path(path))
    return Catalogue([(_index(parts), lambda: parts)])


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
            parts.setdefault(kind, {})[name] = _part_from_document(kind, name, part, doc, expanded)
    return parts


def _part_from_document(kind: str, name: str, model: Any, doc: SourceDoc, expanded: Expanded) -> Part:
    """The part `kind`.`name` of a loaded parts document, with `model` its validated spec model."""
    here = (kind, name)
    raw = expanded.data[kind][name]
    positions = {}
    for path in paths(raw):
        at = doc.locate(expanded.written_path(here + path))
        positions[path] = (at.line, at.col)
    notes = {path[2:]: note for path, note in expanded.provenance.items() if path[:2] == here}
    return Part(kind, name, raw, model, doc.file, positions, notes)


def _index(parts: Parts) -> dict[str, frozenset[str]]:
    """The names of a file's parts by kind, as `Catalogue` looks them up."""
    return {kind: frozenset(names) for kind, names in parts.items()}


@functools.lru_cache(maxsize=64)
def _prebuilt_file(path: Path, stamp: tuple[int, int] | None) -> PrebuiltFile | None:
    """`prebuilt_file`, once per version of the file."""
    return prebuilt_file(path)


def _prebuilt_parts(found: PrebuiltFile) -> Parts:
    """A built-in file's parts from its prebuilt record, or validated from its YAML when the
    record is malformed."""
    try:
        return found.parts()
    except ValueError:  # a record not of the shape a build writes: what PrebuiltFile.parts raises
        return _load_parts_file(found.path)


# ---------------------------------------------------------------- the prebuilt built-in catalogue


def prebuilt_path() -> Path:
    """`data/parts.jsonl`: the built-in catalogue as it validated, beside `data/parts/`."""
    return content.builtin_dir("parts").with_name("parts.jsonl")


def records_sha256(lines: list[bytes]) -> str:
    """The SHA-256 of a file's record lines, joined by line breaks as `data/parts.jsonl` holds them."""
    return hashlib.sha256(b"\n".join(lines)).hexdigest()


class PrebuiltFile:
    """A built-in parts file in its prebuilt form: the names it defines (`index`), and its
    parts made from their records (`parts`). Raises ValueError when its header entry is
    malformed or its records are not the ones it recorded (their SHA-256 differs: a record
    edited since the build is never used)."""

    def __init__(self, path: Path, entry: Any, lines: list[bytes]):
        self.path, self.lines = path, lines
        parts = entry.get("parts") if isinstance(entry, dict) else None
        if not isinstance(parts, dict) or not set(parts) <= set(PART_KINDS) or type(entry.get("line")) is not int:
            raise ValueError(f"{path.name}: no parts by kind")
        for names in parts.values():
            if not isinstance(names, list) or not all(_is_part_name(name) for name in names):
                raise ValueError(f"{path.name}: a part name is not one")
        self.first: int = entry["line"]
        self.order = [(kind, name) for kind, names in parts.items() for name in names]
        self.index = {kind: frozenset(names) for kind, names in parts.items()}
        records = lines[self.first - 1:self.first - 1 + len(self.order)] if self.first >= 2 else []
        if len(records) != len(self.order) or entry.get("records") != records_sha256(records):
            raise ValueError(f"{path.name}: its records are not the ones recorded")
        self._parts: Parts | None = None

    def parts(self) -> Parts:
        """The file's parts, made once (every catalogue of the run shares them); raises
        ValueError when a record is not as `build_parts.part_record` writes it."""
        if self._parts is None:
            self._parts = self._make()
        return self._parts

    def _make(self) -> Parts:
        file = display_path(self.path)
        made: Parts = {}
        for number, (kind, name) in enumerate(self.order, start=self.first):
            record = _record(self.lines[number - 1], kind, name)
            positions = {tuple(path): (line, col) for path, line, col in record["positions"]}
            notes = {tuple(path): Provenance(source, assumed) for path, source, assumed in record["notes"]}
            if () not in positions:
                raise ValueError(f"{self.path.name}: {kind}.{name} has no position")
            made.setdefault(kind, {})[name] = Part(kind, name, record["raw"], _construct(spec_model(PART_KINDS[kind]), record["model"]),
                                                   file, positions, notes)
        return made


def _record(line: bytes, kind: str, name: str) -> dict[str, Any]:
    """The record of part `kind`.`name` on `line`, of the shape `build_parts.part_record`
    writes: its JSON bounded before it is decoded (`hwspec.jsonbound`), every list and mapping
    checked before it is used. Raises ValueError otherwise."""
    from hwspec import jsonbound

    try:
        text = line.decode("utf-8")
        jsonbound.check(text)
        value = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:  # BoundError and JSONDecodeError are ValueErrors
        raise ValueError(f"{kind}.{name}: not a record: {exc}") from None
    if not (isinstance(value, list) and len(value) == 3 and value[:2] == [kind, name] and isinstance(value[2], dict)):
        raise ValueError(f"{kind}.{name}: the line is not [kind, name, record] of this part")
    record = value[2]
    positions, notes = record.get("positions"), record.get("notes")
    if not (isinstance(record.get("raw"), dict) and _is_model_record(record.get("model"))
            and isinstance(positions, list) and all(_is_entry(p, int, int) for p in positions)
            and isinstance(notes, list) and all(_is_entry(n, (str, type(None)), (str, type(None))) for n in notes)):
        raise ValueError(f"{kind}.{name}: the record is not of the shape a build writes")
    return record


def _is_entry(item: Any, second: type | tuple[type, ...], third: type | tuple[type, ...]) -> bool:
    """[path, a, b] with a path of keys and indices: a position's or a note's entry."""
    return (isinstance(item, list) and len(item) == 3 and isinstance(item[0], list)
            and all(type(key) in (str, int) for key in item[0]) and isinstance(item[1], second) and isinstance(item[2], third))


def _is_model_record(record: Any) -> bool:
    """{"written": [field names], "values": {field: value}}, as `build_parts.model_record` writes it."""
    return (isinstance(record, dict) and isinstance(record.get("values"), dict) and isinstance(record.get("written"), list)
            and all(isinstance(name, str) for name in record["written"]))


def _is_part_name(name: Any) -> bool:
    return isinstance(name, str) and len(name) <= 64 and PART_NAME.fullmatch(name) is not None and name != UNKNOWN


def _construct(model: type[BaseModel], record: dict[str, Any]) -> BaseModel:
    """The model instance `record` describes (`build_parts.model_record`), made without validation."""
    fields = model.model_fields
    if not _is_model_record(record):
        raise ValueError(f"{model.__name__}: not a model's record")
    values, written = record["values"], set(record["written"])
    if set(values) != set(fields) or not written <= set(fields):
        raise ValueError(f"{model.__name__}: the record's fields are not the model's")
    made = {}
    for name, value in values.items():
        nested = _model_class(fields[name].annotation)
        made[name] = _construct(nested, value) if nested is not None and value is not None else value
    return model.model_construct(written, **made)


def _model_class(annotation: Any) -> type[BaseModel] | None:
    """The model class a field holds (`HbmSpec`, `C2cCapability | None`), or None."""
    from pydantic import BaseModel

    union = isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union
    found = [a for a in (typing.get_args(annotation) if union else (annotation,)) if isinstance(a, type) and issubclass(a, BaseModel)]
    return found[0] if len(found) == 1 else None


def prebuilt_file(path: Path) -> PrebuiltFile | None:
    """Built-in parts file `path` in its prebuilt form, when `data/parts.jsonl` has a
    well-formed entry for exactly its bytes; None otherwise (then the YAML is validated)."""
    files, lines = _prebuilt()
    entry = files.get(path.name)
    if not isinstance(entry, dict):
        return None
    try:
        data = read_regular_file(path)
    except HwspecError:
        return None  # validating the file reports why it cannot be read
    if entry.get("sha256") != hashlib.sha256(data).hexdigest():
        return None
    try:
        return PrebuiltFile(path, entry, lines)
    except ValueError:
        return None


@functools.cache
def _prebuilt() -> tuple[dict[str, Any], list[bytes]]:
    """`data/parts.jsonl`'s header entries by file name, and its lines; nothing when it is
    missing, unreadable or not of `PREBUILT_FORMAT`."""
    from hwspec import jsonbound

    try:
        lines = read_regular_file(prebuilt_path()).split(b"\n")
        text = lines[0].decode("utf-8")
        jsonbound.check(text)  # nesting and numbers bounded before json decodes them
        header = json.loads(text)
    except (HwspecError, ValueError):  # UnicodeDecodeError, BoundError and JSONDecodeError are ValueErrors
        return {}, []
    if not isinstance(header, dict) or header.get("format") != PREBUILT_FORMAT or not isinstance(header.get("files"), dict):
        return {}, []
    return header["files"], lines
