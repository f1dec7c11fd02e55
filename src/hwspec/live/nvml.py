"""NVIDIA GPUs as NVML reports them: model, NVLink state and remote ends, NVLink domain.

Two halves, so that a capture replays exactly what the live machine said:

    query()                  asks NVML (`pynvml` from nvidia-ml-py, imported only here and only
                             when called) and returns its answers as JSON-able data, or None
                             with the reason when NVML is absent (no package, no driver)
    apply(data, file, m)     folds such answers (live, or `nvml.json` of a capture) into a
                             Machine read from sysfs: GPUs are matched by bus id

The answers, `{"nvml": 1, "gpus": [...]}`, one GPU per line as `dump` writes them:

    {"bus": "0000:07:00.0", "name": "NVIDIA H100 80GB HBM3",
     "nvlinks": [{"link": 0, "active": true, "remote": "0000:d5:00.0"}, ...],
     "fabric": {"cluster_uuid": "...", "clique_id": 1, "state": "Completed"} | null}

A capture is hostile input: every value is checked for its type and shape, anything else is
a located warning and left out. No GPU work is done: NVML only reads the driver's state.
"""

from __future__ import annotations

import json
from typing import Any

from hwspec.diagnostics import Location, Severity
from hwspec.live.observed import MAX_GPUS, Machine, NvlinkDomain, NvlinkPort
from hwspec.live.smi_xml import normalise_bus_id

NVML_FILE = "nvml.json"
"""Where `hwspec capture` saves NVML's answers, at the top of the captured tree."""
MAX_LINKS = 64
"""More NVLinks than any GPU has (18 on H100 and B200)."""
FABRIC_STATES = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}
"""NVML_GPU_FABRIC_STATE_* as `nvidia-smi -q` names them."""


def query() -> tuple[dict[str, Any] | None, str | None]:
    """NVML's answers about every GPU, or (None, why) when NVML cannot be asked."""
    try:
        import pynvml  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return None, "nvidia-ml-py is not installed: NVLink state not read (pip install nvidia-ml-py)"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return None, f"NVML cannot be initialised ({exc}): NVLink state not read"
    try:
        return {"nvml": 1, "gpus": [_gpu(pynvml, pynvml.nvmlDeviceGetHandleByIndex(i))
                                    for i in range(min(pynvml.nvmlDeviceGetCount(), MAX_GPUS))]}, None
    except pynvml.NVMLError as exc:
        return None, f"NVML failed ({exc}): NVLink state not read"
    finally:
        pynvml.nvmlShutdown()


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _gpu(nvml: Any, handle: Any) -> dict[str, Any]:
    links = []
    for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            active = nvml.nvmlDeviceGetNvLinkState(handle, link) == nvml.NVML_FEATURE_ENABLED
        except nvml.NVMLError:
            continue  # a link the GPU does not have (NOT_SUPPORTED, INVALID_ARGUMENT)
        remote = None
        if active:
            try:
                remote = normalise_bus_id(_text(nvml.nvmlDeviceGetNvLinkRemotePciInfo_v2(handle, link).busId))
            except nvml.NVMLError:
                remote = None
        links.append({"link": link, "active": active, "remote": remote})
    gpu: dict[str, Any] = {"bus": normalise_bus_id(_text(nvml.nvmlDeviceGetPciInfo_v3(handle).busId)),
           "name": _text(nvml.nvmlDeviceGetName(handle)), "nvlinks": links}
    if hasattr(nvml, "nvmlDeviceGetGpuFabricInfo"):  # an older binding cannot ask: the fabric stays unknown
        gpu["fabric"] = _fabric(nvml, handle)
    return gpu


def _fabric(nvml: Any, handle: Any) -> dict[str, Any] | None:
    try:
        info = nvml.nvmlDeviceGetGpuFabricInfo(handle)
    except nvml.NVMLError:  # NOT_SUPPORTED: a GPU outside a multi-node NVLink domain
        return None
    uuid = bytes(info.clusterUuid).hex()
    if not uuid.strip("0"):
        return None
    return {"cluster_uuid": f"{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:32]}",
            "clique_id": int(info.cliqueId), "state": FABRIC_STATES.get(int(info.state))}


def dump(data: dict[str, Any]) -> str:
    """`data` as `nvml.json`: one GPU per line, so that a finding can point at its GPU's line."""
    gpus = ",\n".join(json.dumps(gpu, sort_keys=True) for gpu in data["gpus"])
    return '{"nvml": 1, "gpus": [\n' + gpus + "\n]}\n"


def parse(data: bytes, file: str, machine: Machine) -> None:
    """Fold the saved answers `data` (the text of `file`) into `machine` (see `apply`)."""
    from hwspec import jsonbound

    try:
        text = data.decode("utf-8")
        jsonbound.check(text)  # numbers and nesting bounded before json converts them
        answers = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError, jsonbound.BoundError) as exc:
        line, col = ((exc.lineno, exc.colno) if isinstance(exc, json.JSONDecodeError) else
                     jsonbound.line_col(text, exc.offset) if isinstance(exc, jsonbound.BoundError) else (1, 1))
        machine.problem(Location(file, line, col), Severity.ERROR, "I101", f"not NVML's answers as 'hwspec capture' saves them: {exc}")
        return
    apply(answers, file, machine, text.splitlines())


def apply(answers: Any, file: str, machine: Machine, lines: list[str] | None = None) -> None:
    """Give the machine's GPUs (by bus id) NVML's name, NVLink state, active links by remote
    bus id (resolved to GPUs or NVSwitches by `smi_nvlink.resolve_nvlinks`) and NVLink domain.
    `lines` (the saved file's) locate each GPU at its line."""
    from hwspec.live.smi_nvlink import resolve_nvlinks

    machine.sources.append((file, "NVML"))
    if not isinstance(answers, dict) or answers.get("nvml") != 1 or not isinstance(answers.get("gpus"), list):
        machine.problem(Location(file, 1), Severity.ERROR, "I101", 'not NVML\'s answers: expected {"nvml": 1, "gpus": [...]}')
        return
    for index, entry in enumerate(answers["gpus"][:MAX_GPUS]):
        bus = normalise_bus_id(entry.get("bus", "")) if isinstance(entry, dict) and isinstance(entry.get("bus"), str) else None
        where = Location(file, _line_of(lines, bus, index))
        gpu = machine.gpus.get(bus or "")
        if gpu is None:
            machine.problem(where, Severity.WARNING, "I103", f"NVML's GPU {index} ({bus or 'no bus id'}) is not a GPU in sysfs: left out")
            continue
        if isinstance(entry.get("name"), str) and entry["name"]:
            gpu.model_name = entry["name"][:200]
        _links(entry.get("nvlinks"), gpu.key, where, machine)
        if "fabric" in entry:
            machine.listed.add("fabric")  # NVML was asked: a GPU without a domain is in none
        fabric = entry.get("fabric")
        if isinstance(fabric, dict) and isinstance(fabric.get("cluster_uuid"), str):
            clique = fabric.get("clique_id")
            gpu.fabric = NvlinkDomain(fabric["cluster_uuid"][:64], clique if isinstance(clique, int) else None,
                                      fabric.get("state") if isinstance(fabric.get("state"), str) else None, where)
    if any(isinstance(e, dict) and e.get("nvlinks") for e in answers["gpus"]):
        resolve_nvlinks(machine)
        machine.listed.add("nvlinks")


def _links(links: Any, gpu: str, where: Location, machine: Machine) -> None:
    if not isinstance(links, list):
        return
    state: dict[int, bool] = {}
    for link in links[:MAX_LINKS]:
        number = link.get("link") if isinstance(link, dict) else None
        if not isinstance(number, int) or not 0 <= number < MAX_LINKS or not isinstance(link.get("active"), bool):
            machine.problem(where, Severity.WARNING, "I103", f"{gpu}: an NVLink entry without a link number and state: left out")
            continue
        state[number] = link["active"]
        remote = normalise_bus_id(link["remote"]) if isinstance(link.get("remote"), str) else None
        if link["active"] and remote is not None:
            machine.nvlink_ports.append(NvlinkPort(gpu, number, remote, 0, where))
    machine.gpus[gpu].nvlink_state = state


def _line_of(lines: list[str] | None, bus: str | None, index: int) -> int:
    """The line of GPU `index`'s entry: the first giving its bus id as `"bus"` (another GPU's
    line names it as an NVLink's remote end), else (as `dump` writes) line index + 2."""
    if lines is None:
        return 1
    if bus is not None:
        for number, line in enumerate(lines, 1):
            if f'"bus": "{bus}"' in line.lower():
                return number
    return min(index + 2, len(lines)) if lines else 1
