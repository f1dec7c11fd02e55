"""Loading a platform file: YAML -> expansion -> spec model -> parts -> resolved `Platform`.

Every problem found on the way is collected; `load_platform` raises one `HwspecError` with
all of them, each pointing at the line and column where it is written.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwspec import content
from hwspec.diagnostics import Code, Diagnostic, HwspecError, Location, Severity, display_path, os_reason, real_path
from hwspec.model.node import UNKNOWN_PART, Platform
from hwspec.model.parts import PART_KINDS, Catalogue, Parts, PrebuiltFile, part_from_document, prebuilt_file
from hwspec.model.resolve_node import resolve_node
from hwspec.source.expand import Expanded, expand
from hwspec.source.loader import SourceDoc, load_yaml_file
from hwspec.spec.translate import DataPath, dotted, nearest, validation_diagnostics

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hwspec.spec.models import NodeSpec

IDENTITY_KINDS: dict[str, str] = {"cpus": "CpuIdentity", "gpus": "GpuIdentity", "nics": "NicIdentity"}
"""Catalogue section -> the spec model of what an entry with `part: unknown` may say of itself."""


def spec_model(name: str) -> type[BaseModel]:
    """The pydantic model `name` of `hwspec.spec.models`, imported on first use (commands that
    validate nothing, `hwspec --help` among them, never import pydantic)."""
    from hwspec.spec import models

    return getattr(models, name)


def read_document(path: Path) -> tuple[SourceDoc, Expanded]:
    """Load a platform or parts file and expand it (repeat blocks, annotated values)."""
    doc = load_yaml_file(path)
    return doc, expand(doc)


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
    from pydantic import ValidationError

    doc, expanded = read_document(path)
    model = spec_model("PartsCatalogue")
    try:
        catalogue = model.model_validate(expanded.data)
    except ValidationError as exc:
        raise HwspecError(validation_diagnostics(
            exc, model, expanded.data, doc.file,
            lambda p: doc.locate(expanded.written_path(p)),
            locate_key=lambda p: doc.locate_key(expanded.written_path(p)))) from None
    parts: Parts = {}
    for kind in PART_KINDS:
        for name, part in getattr(catalogue, kind).items():
            parts.setdefault(kind, {})[name] = part_from_document(kind, name, part, doc, expanded)
    return parts


def load_parts_file(path: Path) -> Catalogue:
    """The parts of one parts file (`kind: parts`), validated as `load_catalogue` validates each
    file of a parts directory. Raises HwspecError with every problem found."""
    parts = _load_parts_file(Path(path))
    return Catalogue([({kind: frozenset(names) for kind, names in parts.items()}, lambda: parts)])


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
                    files.append(({kind: frozenset(names) for kind, names in parts.items()}, functools.partial(dict, parts)))
            except HwspecError as exc:
                errors.extend(exc.diagnostics)
    if errors:
        raise HwspecError(errors)
    return Catalogue(files)


@functools.lru_cache(maxsize=64)
def _prebuilt_file(path: Path, stamp: tuple[int, int] | None) -> PrebuiltFile | None:
    return prebuilt_file(path)


def _prebuilt_parts(found: PrebuiltFile) -> Parts:
    """A built-in file's parts from its prebuilt record, or validated from its YAML when the
    record is malformed."""
    try:
        return found.parts()
    except (KeyError, TypeError, ValueError):
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


def _deep_merge(base: Any, override: Any) -> Any:
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = _deep_merge(base.get(key), value) if key in base else value
        return merged
    return override


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
    from pydantic import ValidationError

    from hwspec.spec.models import NodeSpec

    def locate(p: DataPath) -> Location:
        return doc.locate(expanded.written_path(p))

    def locate_key(p: DataPath) -> Location:
        return doc.locate_key(expanded.written_path(p))

    errors: list[Diagnostic] = []

    def error(p: DataPath, code: Code, message: str, hint: str | None = None) -> None:
        pos = locate(p)
        errors.append(Diagnostic(doc.file, pos.line, pos.col, Severity.ERROR, code, message, hint))

    # References and part names are checked on the raw data, so that they are reported
    # together with type errors elsewhere in the file.
    _check_references(expanded.data, error)
    _check_part_names(expanded.data, catalogue, error)
    try:
        spec = NodeSpec.model_validate(expanded.data)
    except ValidationError as exc:
        errors.extend(validation_diagnostics(exc, NodeSpec, expanded.data, doc.file, locate, locate_key=locate_key))
        raise HwspecError(errors) from None
    if errors:
        raise HwspecError(errors)
    parts = _resolve_parts(spec, catalogue, locate, doc.file, errors)
    _check_c2c_parts(spec, parts, error)
    if errors:
        raise HwspecError(errors)
    return resolve_node(spec, parts, doc, expanded)


def _check_c2c_parts(spec: NodeSpec, parts: dict[str, Any], error) -> None:
    """A GPU attached over NVLink-C2C needs a part that has C2C links (`c2c:` in the part)."""
    for index, gpu in enumerate(spec.gpus):
        part = parts.get(gpu.id)
        if gpu.c2c is not None and part is not None and getattr(part, "c2c", None) is None:
            error(("gpus", index, "c2c"), Code.GPU_PART_WITHOUT_C2C,
                  f"{dotted(('gpus', index))}: '{gpu.id}' is attached over NVLink-C2C, but its part '{gpu.part}' has no C2C links",
                  "add 'c2c: {links: .., link_bandwidth: ..}' to the GPU part, or drop the GPU's 'c2c:'")


PART_SECTIONS = (("sockets", "cpus", "CPU"), ("gpus", "gpus", "GPU"), ("nics", "nics", "NIC"),
                 ("pcie", "pcie_switches", "PCIe switch"))
"""Platform section, catalogue kind, and what its parts are called. A bridge (`pcie`) names a part optionally."""


def _entries(data: Any, section: str) -> list[tuple[int, dict]]:
    items = data.get(section) if isinstance(data, dict) else None
    return [(i, e) for i, e in enumerate(items) if isinstance(e, dict)] if isinstance(items, list) else []


def _check_part_names(data: Any, catalogue: Catalogue, error) -> None:
    for section, kind, label in PART_SECTIONS:
        for index, entry in _entries(data, section):
            name = entry.get("part")
            if isinstance(name, str) and name != UNKNOWN_PART and catalogue.get(kind, name) is None:
                guess = nearest(name, catalogue.names(kind))
                known = ", ".join(catalogue.names(kind)) or "none"
                error((section, index, "part"), Code.UNKNOWN_PART, f"{dotted((section, index))}: unknown {label} part '{name}'",
                      (f"did you mean '{guess}'? " if guess else "") + f"known {label} parts: {known}")


def _resolve_parts(spec: NodeSpec, catalogue: Catalogue, locate, file: str, errors: list[Diagnostic]) -> dict[str, Any]:
    """Part model per entry id, with the entry's `override` merged in."""
    from pydantic import ValidationError

    resolved: dict[str, Any] = {}
    for section, kind, _ in PART_SECTIONS:
        for index, entry in enumerate(getattr(spec, section)):
            here = (section, index)
            if entry.part is None:
                continue  # a bridge without a part
            if entry.part == UNKNOWN_PART:
                identity = spec_model(IDENTITY_KINDS[kind])
                try:
                    resolved[entry.id] = identity.model_validate(entry.override or {})
                except ValidationError as exc:
                    errors.extend(validation_diagnostics(exc, identity, entry.override or {}, file, locate,
                                                         prefix=here + ("override",)))
                continue
            part = catalogue.get(kind, entry.part)
            assert part is not None  # load_node has raised the unknown parts _check_part_names found
            if not getattr(entry, "override", None):
                resolved[entry.id] = part.model
                continue
            merged = _deep_merge(part.raw, entry.override)
            model = spec_model(PART_KINDS[kind])
            try:
                resolved[entry.id] = model.model_validate(merged)
            except ValidationError as exc:
                overridden = set(_paths(entry.override))

                def locate_merged(p: DataPath, _here=here, _part=part, _overridden=overridden) -> Location:
                    inner = p[len(_here) + 1:]
                    if any(inner[:n] in _overridden for n in range(len(inner), 0, -1)):
                        return locate(_here + ("override",) + inner)
                    return _part.locate(inner)

                errors.extend(validation_diagnostics(exc, model, merged, file, locate_merged, prefix=here + ("override",)))
    return resolved


def _paths(data: Any, prefix: DataPath = ()) -> Iterable[DataPath]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield prefix + (key,)
            yield from _paths(value, prefix + (key,))


_SUB_ENTRIES: dict[str, tuple[tuple[str, str], ...]] = {"nics": (("ports", "nic port"),), "sockets": (("numa_nodes", "socket"),)}
"""Entries with ids of their own inside a section's entries: (list key, the kind of entry each is)."""


def _check_references(data: Any, error) -> None:
    """Unique ids in one namespace, and every reference naming an entry of the right kind.

    Works on the raw expanded data; entries too malformed to read are left to the type check."""
    seen: dict[str, DataPath] = {}
    kinds: dict[str, str] = {}
    for section, kind in (("sockets", "socket"), ("pcie", "bridge"), ("gpus", "gpu"), ("nics", "nic"), ("ssds", "ssd")):
        for index, entry in _entries(data, section):
            ident = entry.get("id")
            if not isinstance(ident, str):
                continue
            if ident in seen:
                error((section, index, "id"), Code.DUPLICATE_ID, f"duplicate id '{ident}' (also used by {dotted(seen[ident][:2])})")
                continue
            seen[ident] = (section, index, "id")
            kinds[ident] = kind
            for key, sub_kind in _SUB_ENTRIES.get(section, ()):
                if not isinstance(entry.get(key), list):
                    continue
                if sub_kind == "socket":
                    kinds[ident] = "package"  # devices hang off its NUMA nodes
                for j, sub_entry in enumerate(entry[key]):
                    sub = sub_entry.get("id") if isinstance(sub_entry, dict) else None
                    if not isinstance(sub, str):
                        continue
                    at: DataPath = (section, index, key, j, "id")
                    if sub in seen:
                        error(at, Code.DUPLICATE_ID, f"duplicate id '{sub}' (also used by {dotted(seen[sub][:-1])})")
                        continue
                    seen[sub], kinds[sub] = at, sub_kind

    board = data.get("baseboard") if isinstance(data.get("baseboard"), dict) else {}
    switches = board.get("nvswitches")
    for index, switch in enumerate(switches if isinstance(switches, list) else []):
        ident = switch.get("id") if isinstance(switch, dict) else None
        if not isinstance(ident, str):
            continue
        where = ("baseboard", "nvswitches", index, "id")
        if ident in seen:
            error(where, Code.DUPLICATE_ID, f"duplicate id '{ident}' (also used by {dotted(seen[ident][:-1])})")
            continue
        seen[ident], kinds[ident] = where, "nvswitch"

    def expect(value: Any, allowed: tuple[str, ...], where: DataPath, what: str) -> None:
        if not isinstance(value, str) or kinds.get(value) in allowed:
            return
        candidates = sorted(i for i, k in kinds.items() if k in allowed)
        if value in kinds:
            error(where, Code.BAD_REFERENCE, f"{dotted(where)}: '{value}' is a {kinds[value]}, not {what}",
                  "expected one of: " + ", ".join(candidates) if candidates else None)
            return
        guess = nearest(value, candidates)
        hint = ((f"did you mean '{guess}'? " if guess else "")
                + ("known: " + ", ".join(candidates) if candidates else f"there is no {what} in this file"))
        error(where, Code.BAD_REFERENCE, f"{dotted(where)}: '{value}' does not name {what}", hint)

    upstream_kinds = ("socket", "bridge")
    for index, bridge in _entries(data, "pcie"):
        expect(bridge.get("upstream"), upstream_kinds, ("pcie", index, "upstream"), "a socket or PCIe bridge")
    for section in ("gpus", "nics", "ssds"):
        for index, entry in _entries(data, section):
            attach = entry.get("pcie")
            if isinstance(attach, dict):
                expect(attach.get("upstream"), upstream_kinds, (section, index, "pcie", "upstream"),
                       "a socket or PCIe bridge")
    for index, nic in _entries(data, "nics"):
        expect(nic.get("gpu"), ("gpu",), ("nics", index, "gpu"), "a GPU")
        served = nic.get("gpus")
        for position, value in enumerate(served if isinstance(served, list) else []):
            expect(value, ("gpu",), ("nics", index, "gpus", position), "a GPU")
        for j, port in _entries(nic, "ports"):
            expect(port.get("gpu"), ("gpu",), ("nics", index, "ports", j, "gpu"), "a GPU")
            served = port.get("gpus")
            for position, value in enumerate(served if isinstance(served, list) else []):
                expect(value, ("gpu",), ("nics", index, "ports", j, "gpus", position), "a GPU")
    for index, socket in _entries(data, "sockets"):
        _expect_shared_gpu(socket, ("sockets", index), expect)
        for position, node in _entries(socket, "numa_nodes"):
            _expect_shared_gpu(node, ("sockets", index, "numa_nodes", position), expect)
    for index, gpu in _entries(data, "gpus"):
        c2c = gpu.get("c2c")
        if isinstance(c2c, dict):
            expect(c2c.get("socket"), ("socket",), ("gpus", index, "c2c", "socket"), "a socket")
    links = (data.get("cpu_interconnect") or {}).get("links") if isinstance(data.get("cpu_interconnect"), dict) else None
    if isinstance(links, list):
        for index, pair in enumerate(links):
            for side, value in enumerate(pair if isinstance(pair, list) else []):
                expect(value, ("socket", "package"), ("cpu_interconnect", "links", index, side), "a socket")
    nvlink = data.get("nvlink") if isinstance(data.get("nvlink"), dict) else {}
    topology = nvlink.get("topology")
    if isinstance(topology, list):
        for index, pair in enumerate(topology):
            gpus = pair.get("gpus") if isinstance(pair, dict) else None
            for side, value in enumerate(gpus if isinstance(gpus, list) else []):
                expect(value, ("gpu",), ("nvlink", "topology", index, "gpus", side), "a GPU")
    elif isinstance(topology, str) and topology != "nvswitch":
        for index, gpu in _entries(data, "gpus"):
            if gpu.get("slot") is None:
                error(("gpus", index, "id"), Code.GPU_WITHOUT_SLOT,
                      f"{dotted(('gpus', index))}: '{gpu.get('id')}' has no slot, but nvlink topology "
                      f"'{topology}' places GPUs by baseboard slot", "give every GPU a 'slot:'")


def _expect_shared_gpu(entry: dict, where: DataPath, expect) -> None:
    """A socket's (or NUMA node's) `memory.shared_with` names a GPU of this file."""
    memory = entry.get("memory")
    if isinstance(memory, dict) and "shared_with" in memory:
        expect(memory.get("shared_with"), ("gpu",), (*where, "memory", "shared_with"), "a GPU")
