"""References inside a node platform file: ids are unique in one namespace, and every key that
names an entry (`upstream: sw0`, `gpu: gpu3`) names one of the right kind.

The checks run on the expanded data before the models validate it, so that they are reported
together with type errors elsewhere in the file; an entry too malformed to read is left to the
models. Which keys are references is data (`REFERENCES`), not code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from hwspec.diagnostics import Code, Diagnostic, Severity
from hwspec.spec.translate import DataPath, Where, dotted, nearest

ID_SECTIONS: tuple[tuple[str, str, tuple[str, str] | None], ...] = (
    ("sockets", "socket", ("numa_nodes", "socket")),
    ("pcie", "bridge", None),
    ("gpus", "gpu", None),
    ("nics", "nic", ("ports", "nic port")),
    ("ssds", "ssd", None),
)
"""Top-level sections whose entries have ids, in the order they are read (the first entry to
use an id keeps it): (section, the kind of entry, (the key of the sub-entries with ids of their
own, the kind each is) or None). A socket with NUMA nodes is a `package`: devices hang off its
NUMA nodes, each of kind `socket`. The baseboard's NVSwitches (`nvswitch`) are read last."""

UPSTREAM = ("socket", "bridge")

REFERENCES: tuple[tuple[DataPath, tuple[str, ...], str], ...] = (
    (("pcie", "*", "upstream"), UPSTREAM, "a socket or PCIe bridge"),
    (("gpus", "*", "pcie", "upstream"), UPSTREAM, "a socket or PCIe bridge"),
    (("nics", "*", "pcie", "upstream"), UPSTREAM, "a socket or PCIe bridge"),
    (("ssds", "*", "pcie", "upstream"), UPSTREAM, "a socket or PCIe bridge"),
    (("nics", "*", "gpu"), ("gpu",), "a GPU"),
    (("nics", "*", "gpus", "*"), ("gpu",), "a GPU"),
    (("nics", "*", "ports", "*", "gpu"), ("gpu",), "a GPU"),
    (("nics", "*", "ports", "*", "gpus", "*"), ("gpu",), "a GPU"),
    (("sockets", "*", "memory", "shared_with"), ("gpu",), "a GPU"),
    (("sockets", "*", "numa_nodes", "*", "memory", "shared_with"), ("gpu",), "a GPU"),
    (("gpus", "*", "c2c", "socket"), ("socket",), "a socket"),
    (("cpu_interconnect", "links", "*", "*"), ("socket", "package"), "a socket"),
    (("nvlink", "topology", "*", "gpus", "*"), ("gpu",), "a GPU"),
    (("baseboard", "nvswitches", "*", "gpus", "*"), ("gpu",), "a GPU"),
    (("nvlink", "cpu_links", "*", "gpu"), ("gpu",), "a GPU"),
    (("nvlink", "cpu_links", "*", "socket"), ("socket",), "a socket"),
)
"""Every key that names an entry: (its path, `*` for any index of a list; the kinds of entry it
may name; what it names, in words)."""

Error = Callable[[DataPath, Code, str, str | None], None]


def reference_diagnostics(data: Any, where: Where) -> list[Diagnostic]:
    """E202 for every id used twice, E201 for every reference that names no entry of the right
    kind, E204 for every GPU without a slot where the NVLink topology places GPUs by slot; each
    located by `where` (paths in `data`, the expanded document)."""
    found: list[Diagnostic] = []

    def error(path: DataPath, code: Code, message: str, hint: str | None = None) -> None:
        pos = where.value(path)
        found.append(Diagnostic(where.file, pos.line, pos.col, Severity.ERROR, code, message, hint))

    if not isinstance(data, dict):
        return found
    kinds = _ids(data, error)
    for pattern, allowed, what in REFERENCES:
        for path, value in matches(data, pattern):
            _expect(value, allowed, path, what, kinds, error)
    _check_slots(data, error)
    return found


def matches(data: Any, pattern: DataPath, at: DataPath = ()) -> Iterator[tuple[DataPath, Any]]:
    """(path, value) of every place in `data` that `pattern` names: a key of a mapping that has
    it, `*` every index of a list, in the order they are written."""
    if not pattern:
        yield at, data
        return
    step, rest = pattern[0], pattern[1:]
    if step == "*":
        for index, item in enumerate(data if isinstance(data, list) else ()):
            yield from matches(item, rest, at + (index,))
    elif isinstance(data, dict) and step in data:
        yield from matches(data[step], rest, at + (step,))


def _ids(data: dict[str, Any], error: Error) -> dict[str, str]:
    """The kind of entry each id names; E202 where an id is used again (that entry, and its
    sub-entries, are not registered). The message names the entry that has the id first; a
    top-level entry's names the top-level entry that has it (the socket, not its NUMA node)."""
    seen: dict[str, DataPath] = {}
    kinds: dict[str, str] = {}

    def register(ident: Any, at: DataPath, kind: str, top: bool = False) -> bool:
        if not isinstance(ident, str):
            return False
        if ident in seen:
            first = seen[ident][:2] if top else seen[ident][:-1]
            error(at, Code.DUPLICATE_ID, f"duplicate id '{ident}' (also used by {dotted(first)})", None)
            return False
        seen[ident], kinds[ident] = at, kind
        return True

    for section, kind, sub in ID_SECTIONS:
        for (_, index), entry in matches(data, (section, "*")):
            if not isinstance(entry, dict) or not register(entry.get("id"), (section, index, "id"), kind, top=True) or sub is None:
                continue
            key, sub_kind = sub
            if not isinstance(entry.get(key), list):
                continue
            if sub_kind == "socket":
                kinds[entry["id"]] = "package"
            for j, sub_entry in enumerate(entry[key]):
                register(sub_entry.get("id") if isinstance(sub_entry, dict) else None, (section, index, key, j, "id"), sub_kind)
    for path, switch in matches(data, ("baseboard", "nvswitches", "*")):
        register(switch.get("id") if isinstance(switch, dict) else None, path + ("id",), "nvswitch")
    return kinds


def _expect(value: Any, allowed: tuple[str, ...], where: DataPath, what: str, kinds: dict[str, str], error: Error) -> None:
    """E201 at `where` unless `value` (when a string) names an entry of an `allowed` kind."""
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


def _check_slots(data: dict[str, Any], error: Error) -> None:
    """E204 for every GPU without a `slot` where `nvlink.topology` names a wiring (not a list of
    pairs, not `nvswitch`): such a wiring places GPUs by baseboard slot."""
    nvlink = data.get("nvlink")
    topology = nvlink.get("topology") if isinstance(nvlink, dict) else None
    if not isinstance(topology, str) or topology == "nvswitch":
        return
    for path, gpu in matches(data, ("gpus", "*")):
        if isinstance(gpu, dict) and gpu.get("slot") is None:
            error(path + ("id",), Code.GPU_WITHOUT_SLOT,
                  f"{dotted(path)}: '{gpu.get('id')}' has no slot, but nvlink topology "
                  f"'{topology}' places GPUs by baseboard slot", "give every GPU a 'slot:'")
