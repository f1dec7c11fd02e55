"""NVIDIA GPUs as NVML reports them: model, NVLink state and remote ends, NVLink domain.

Two halves, so that a capture replays exactly what the live machine said:

    query()                  asks NVML through nvidia-ml-py's binding (`pynvml`, imported only
                             here and only when called) and returns its answers as JSON-able
                             data with notes on what could not be read, or None when NVML
                             cannot be asked at all (no package, an unsupported binding, no driver)
    apply(data, file, m)     folds such answers (live, or `nvml.json` of a capture) into a
                             Machine read from sysfs: GPUs are matched by bus id

The answers, `{"nvml": 1, "gpus": [...]}`, one GPU per line as `dump` writes them:

    {"bus": "0000:07:00.0", "name": "NVIDIA H100 80GB HBM3",
     "nvlinks": [{"link": 0, "active": true, "remote": "0000:d5:00.0"}, ...],
     "fabric": {"cluster_uuid": "...", "clique_id": 1, "state": "Completed"} | null,
     "unknown": {"fabric": "why"}}

A fact NVML did not give for a GPU is left out of its entry (`nvlinks` or `fabric` absent)
and `unknown` says why: it is not known, never taken as "none". `"fabric": null` is a GPU NVML
was asked about that is in no NVLink domain (NOT_SUPPORTED: no multi-node fabric).

The binding is called with the signatures nvidia-ml-py defines (SUPPORTED_BINDING): the fabric
query fills a struct passed by reference (nvml.h's layout, `GpuFabricInfo`) and returns a status; the NVLink remote end is
`nvmlDeviceGetNvLinkRemotePciInfo` (the binding calls the C `_v2` itself); the link count is
the binding's `NVML_NVLINK_MAX_LINKS`. Any failure of one query, NVMLError or not, makes that
fact unknown for that GPU with a note; a failure to start NVML or list its GPUs makes NVML's
answers absent with a note. Nothing here raises.

A capture is hostile input: every value is checked for its type and shape, anything else is
a located warning and left out. No GPU work is done: NVML only reads the driver's state.
"""

from __future__ import annotations

import ctypes
import json
import re
from dataclasses import dataclass
from typing import Any

from hwspec.diagnostics import Code, Location, Severity
from hwspec.live.observed import MAX_GPUS, Machine, NvlinkDomain, NvlinkPort
from hwspec.live.smi_xml import normalise_bus_id

NVML_FILE = "nvml.json"
"""Where `hwspec capture` saves NVML's answers, at the top of the captured tree."""
MAX_LINKS = 64
"""More NVLinks than any GPU has (18 on H100 and B200; the binding's NVML_NVLINK_MAX_LINKS is
18 up to 12.x, 36 from 13.x)."""
FABRIC_STATES = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}
"""NVML_GPU_FABRIC_STATE_* as `nvidia-smi -q` names them."""
SUPPORTED_BINDING = ((12, 535, 77), (14, 0, 0))
"""The nvidia-ml-py releases hwspec calls: from the first made for the R535 driver (Hopper's
NVLink fabric) up to, not including, 14 (CUDA 14 removes the deprecated calls 13.x still has).
The test extra installs the newest, CI's oldest-dependency run the oldest."""


class GpuFabricInfo(ctypes.Structure):
    """nvml.h's `nvmlGpuFabricInfo_t`, which `nvmlDeviceGetGpuFabricInfo` fills through the
    pointer it is given: a 16-byte cluster UUID, the registration status, the clique id and
    the state (an unsigned char). Defined here, not taken from the binding: every 12.x release
    declares `clusterUuid` as 80 chars (and 13.580 as 80 bytes), which shifts `cliqueId` and
    `state` past what the library writes."""

    _fields_ = [("clusterUuid", ctypes.c_ubyte * 16), ("status", ctypes.c_int), ("cliqueId", ctypes.c_uint),
                ("state", ctypes.c_ubyte)]


NOT_PRESENT = ("NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_INVALID_ARGUMENT")
"""What NVML answers for a link number the GPU does not have."""


def binding_version() -> tuple[int, ...] | None:
    """nvidia-ml-py's release as numbers, or None when it is not installed as that package
    (another module named `pynvml`)."""
    from importlib import metadata

    try:
        text = metadata.version("nvidia-ml-py")
    except metadata.PackageNotFoundError:
        return None
    numbers = []
    for part in text.split(".")[:3]:
        digits = "".join(c for c in part[:8] if c.isdigit())
        numbers.append(int(digits) if digits else 0)
    return tuple(numbers)


def query() -> tuple[dict[str, Any] | None, list[str]]:
    """NVML's answers about every GPU (see the module docstring) and notes on what could not
    be read, or (None, notes) when NVML cannot be asked. Never raises."""
    try:
        import pynvml  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return None, ["nvidia-ml-py is not installed: NVLink state not read (pip install nvidia-ml-py)"]
    except Exception as exc:  # a broken install: the module itself fails
        return None, [f"nvidia-ml-py cannot be imported ({_why(exc)}): NVLink state not read"]
    version = binding_version()
    low, high = SUPPORTED_BINDING
    if version is None or not low <= version < high:
        found = "not nvidia-ml-py's" if version is None else ".".join(map(str, version))
        return None, [f"the NVML binding is {found}, hwspec calls nvidia-ml-py >={'.'.join(map(str, low))},"
                      f"<{high[0]}: NVLink state not read"]
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return None, [f"NVML cannot be initialised ({_why(exc)}): NVLink state not read"]
    notes: list[str] = []
    try:
        count = pynvml.nvmlDeviceGetCount()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(min(int(count), MAX_GPUS))]
    except Exception as exc:
        return None, [f"NVML cannot list the GPUs ({_why(exc)}): NVLink state not read"]
    else:
        gpus = [gpu for index, handle in enumerate(handles) if (gpu := _gpu(pynvml, handle, index, notes)) is not None]
        return {"nvml": 1, "gpus": gpus}, notes
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # nothing is left to read: shutting down only frees the library's state
            pass


def _why(exc: BaseException) -> str:
    """An exception in one short line: its class and message, printable and bounded (an
    NVMLError's message asks the library, which may fail in turn: then the class alone)."""
    try:
        text = " ".join(str(exc).split())[:200]
    except Exception:
        text = ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _is(nvml: Any, exc: BaseException, *names: str) -> bool:
    """Whether `exc` is an NVMLError with one of the NVML_ERROR_* `names`."""
    codes = {getattr(nvml, name, None) for name in names} - {None}
    return isinstance(exc, nvml.NVMLError) and getattr(exc, "value", None) in codes


def _gpu(nvml: Any, handle: Any, index: int, notes: list[str]) -> dict[str, Any] | None:
    """One GPU's answers; None (with a note) when not even its bus id can be read."""
    try:
        bus = normalise_bus_id(_text(nvml.nvmlDeviceGetPciInfo_v3(handle).busId))
    except Exception as exc:
        notes.append(f"NVML's GPU {index}: its PCI bus id cannot be read ({_why(exc)}): left out")
        return None
    gpu: dict[str, Any] = {"bus": bus}
    unknown: dict[str, str] = {}
    try:
        gpu["name"] = _text(nvml.nvmlDeviceGetName(handle))
    except Exception as exc:
        unknown["name"] = _why(exc)
    try:
        gpu["nvlinks"] = _links(nvml, handle)
    except Exception as exc:
        unknown["nvlinks"] = _why(exc)
    if hasattr(nvml, "nvmlDeviceGetGpuFabricInfo"):  # an older binding cannot ask: the fabric stays unknown
        try:
            gpu["fabric"] = _fabric(nvml, handle)
        except Exception as exc:
            unknown["fabric"] = _why(exc)
    if unknown:  # `apply` notes them, live or replayed
        gpu["unknown"] = unknown
    return gpu


def _links(nvml: Any, handle: Any) -> list[dict[str, Any]]:
    """Every NVLink the GPU has, active or not, with the remote end's bus id of each active
    one. A link number NVML says the GPU lacks (NOT_PRESENT) is skipped; any other failure
    makes the GPU's links unknown (it raises)."""
    links = []
    for link in range(min(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)), MAX_LINKS)):
        try:
            active = nvml.nvmlDeviceGetNvLinkState(handle, link) == nvml.NVML_FEATURE_ENABLED
        except nvml.NVMLError as exc:
            if not _is(nvml, exc, *NOT_PRESENT):
                raise
            continue
        remote = normalise_bus_id(_text(nvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link).busId)) if active else None
        links.append({"link": link, "active": active, "remote": remote})
    return links


def _fabric(nvml: Any, handle: Any) -> dict[str, Any] | None:
    """The GPU's NVLink domain, or None when it is in none (NOT_SUPPORTED: no multi-node
    fabric on this GPU or node; or a zero cluster UUID). Any other failure raises."""
    info = GpuFabricInfo()
    try:
        nvml.nvmlDeviceGetGpuFabricInfo(handle, ctypes.byref(info))
    except nvml.NVMLError as exc:
        if _is(nvml, exc, "NVML_ERROR_NOT_SUPPORTED"):
            return None
        raise
    uuid = bytes(info.clusterUuid).hex()
    if not uuid.strip("0"):
        return None
    return {"cluster_uuid": f"{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:32]}",
            "clique_id": int(info.cliqueId), "state": FABRIC_STATES.get(int(info.state))}


def dump(data: dict[str, Any]) -> str:
    """`data` as `nvml.json`: one GPU per line, so that a finding can point at its GPU's line."""
    gpus = ",\n".join(json.dumps(gpu, sort_keys=True) for gpu in data["gpus"])
    return '{"nvml": 1, "gpus": [\n' + gpus + "\n]}\n"


def parse(data: bytes, file: str, machine: Machine) -> list[str]:
    """Fold the saved answers `data` (the text of `file`) into `machine` (see `apply`), and
    return `apply`'s notes."""
    from hwspec import jsonbound

    try:
        text = data.decode("utf-8")
        jsonbound.check(text)  # numbers and nesting bounded before json converts them
        answers = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError, jsonbound.BoundError) as exc:
        line, col = ((exc.lineno, exc.colno) if isinstance(exc, json.JSONDecodeError) else
                     jsonbound.line_col(text, exc.offset) if isinstance(exc, jsonbound.BoundError) else (1, 1))
        machine.problem(Location(file, line, col), Severity.ERROR, Code.INPUT_SYNTAX, f"not NVML's answers as 'hwspec capture' saves them: {exc}")
        return []
    return apply(answers, file, machine, SavedLines.of(text))


@dataclass(frozen=True)
class SavedLines:
    """Where a saved file's GPU entries are: the first line giving each bus id as `"bus"`
    (normalised, however the JSON writes it: `"\\u0030000:03:00.0"` is `0000:03:00.0`), and
    the file's line count. Found in one pass over the text, linear in its size."""

    bus: dict[str, int]
    count: int

    @classmethod
    def of(cls, text: str) -> SavedLines:
        found: dict[str, int] = {}
        line, last = 1, 0
        for match in _BUS_VALUE.finditer(text):
            line += text.count("\n", last, match.start())
            last = match.start()
            try:
                value = json.loads(match.group(1))
            except ValueError:
                continue
            bus = normalise_bus_id(value) if isinstance(value, str) else None
            if bus is not None:
                found.setdefault(bus, line)
        return cls(found, text.count("\n") + (1 if text and not text.endswith("\n") else 0))


_BUS_VALUE = re.compile(r'"bus"\s*:\s*("(?:[^"\\]|\\.)*+")')
"""A `"bus": "..."` pair of a saved file, its string as JSON writes it (escapes and all)."""


def apply(answers: Any, file: str, machine: Machine, lines: SavedLines | None = None) -> list[str]:
    """Give the machine's GPUs (by bus id) NVML's name, NVLink state, active links by remote
    bus id (resolved to GPUs or NVSwitches by `smi_nvlink.resolve_nvlinks`) and NVLink domain.
    `lines` (the saved file's) locate each GPU at its line. Returns a note for each fact NVML
    could not give for a GPU (its `unknown`), which is then not compared."""
    from hwspec.live.smi_nvlink import resolve_nvlinks

    machine.sources.append((file, "NVML"))
    if not isinstance(answers, dict) or answers.get("nvml") != 1 or not isinstance(answers.get("gpus"), list):
        machine.problem(Location(file, 1), Severity.ERROR, Code.INPUT_SYNTAX, 'not NVML\'s answers: expected {"nvml": 1, "gpus": [...]}')
        return []
    notes = []
    unknown: dict[tuple[str, str], list[str]] = {}
    for index, entry in enumerate(answers["gpus"][:MAX_GPUS]):
        bus = normalise_bus_id(entry.get("bus", "")) if isinstance(entry, dict) and isinstance(entry.get("bus"), str) else None
        where = Location(file, _line_of(lines, bus, index))
        gpu = machine.gpus.get(bus or "")
        if gpu is None:
            machine.problem(where, Severity.WARNING, Code.INPUT_VALUE, f"NVML's GPU {index} ({bus or 'no bus id'}) is not a GPU in sysfs: left out")
            continue
        if isinstance(entry.get("name"), str) and entry["name"]:
            gpu.model_name = entry["name"][:200]
        if isinstance(entry.get("nvlinks"), list):
            _links_of(entry["nvlinks"], gpu.key, where, machine)
        else:
            gpu.unknown.add("nvlinks")  # NVML did not answer for this GPU's links: not compared
        if "fabric" in entry:
            machine.listed.add("fabric")  # NVML was asked: a GPU without a domain is in none
        elif isinstance(entry.get("unknown"), dict) and "fabric" in entry["unknown"]:
            gpu.unknown.add("fabric")  # asked, but NVML failed: not "in no domain"
        why = entry.get("unknown") if isinstance(entry.get("unknown"), dict) else {}
        for fact in sorted(gpu.unknown & {"nvlinks", "fabric"}):
            reason = why[fact] if isinstance(why.get(fact), str) else "no answer"
            unknown.setdefault((fact, str(reason)[:200]), []).append(gpu.key)
        fabric = entry.get("fabric")
        if isinstance(fabric, dict) and isinstance(fabric.get("cluster_uuid"), str):
            clique = fabric.get("clique_id")
            gpu.fabric = NvlinkDomain(fabric["cluster_uuid"][:64], clique if isinstance(clique, int) else None,
                                      fabric.get("state") if isinstance(fabric.get("state"), str) else None, where)
    for (fact, reason), gpus in unknown.items():
        notes.append(f"NVML gave no {'NVLink state' if fact == 'nvlinks' else 'NVLink domain'} of {', '.join(gpus)} "
                     f"({reason}): not compared")
    answered = {normalise_bus_id(e["bus"]) for e in answers["gpus"][:MAX_GPUS] if isinstance(e, dict) and isinstance(e.get("bus"), str)}
    for gpu in machine.gpus.values():
        if gpu.vendor == "0x10de" and gpu.key not in answered:  # NVML left it out: nothing of it is known
            gpu.unknown |= {"nvlinks", "fabric"}
            notes.append(f"{gpu.key}: not among NVML's GPUs: its NVLinks and NVLink domain are not compared")
    if any(isinstance(e, dict) and e.get("nvlinks") for e in answers["gpus"]):
        resolve_nvlinks(machine)
        machine.listed.add("nvlinks")
    return notes


def _links_of(links: list[Any], gpu: str, where: Location, machine: Machine) -> None:
    """Record a GPU's saved NVLink entries: its link state and its active links' remote ends."""
    state: dict[int, bool] = {}
    for link in links[:MAX_LINKS]:
        number = link.get("link") if isinstance(link, dict) else None
        if not isinstance(number, int) or not 0 <= number < MAX_LINKS or not isinstance(link.get("active"), bool):
            machine.problem(where, Severity.WARNING, Code.INPUT_VALUE, f"{gpu}: an NVLink entry without a link number and state: left out")
            continue
        state[number] = link["active"]
        remote = normalise_bus_id(link["remote"]) if isinstance(link.get("remote"), str) else None
        if link["active"] and remote is not None:
            machine.nvlink_ports.append(NvlinkPort(gpu, number, remote, 0, where))
    machine.gpus[gpu].nvlink_state = state


def _line_of(lines: SavedLines | None, bus: str | None, index: int) -> int:
    """The line of GPU `index`'s entry: the first giving its bus id as `"bus"` (another GPU's
    line names it as an NVLink's remote end), else (as `dump` writes) line index + 2."""
    if lines is None:
        return 1
    if bus is not None and bus in lines.bus:
        return lines.bus[bus]
    return min(index + 2, lines.count) if lines.count else 1
