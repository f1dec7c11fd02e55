"""Reading one input file: size limits, decoding, and the choice of parser by content."""

from __future__ import annotations

from pathlib import Path

from hwspec.diagnostics import Code, Location, Severity, display_path, os_reason
from hwspec.live import smi_nvlink
from hwspec.live.observed import MAX_INPUT_BYTES, Machine, refuse_oversized


def read_bytes(path: Path, machine: Machine) -> bytes | None:
    """The file's bytes, or None after recording why it cannot be read (I100)."""
    where = Location(display_path(path), 0, 0)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        machine.problem(where, Severity.ERROR, Code.INPUT_UNREADABLE, f"cannot read: {os_reason(exc)}")
        return None
    if len(data) > MAX_INPUT_BYTES:
        machine.problem(where, Severity.ERROR, Code.INPUT_UNREADABLE, f"larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB: not a node topology")
        return None
    return data


def sniff(data: bytes) -> str | None:
    """The format of `data` from its first tags or words, or None."""
    head = data[:4096].lstrip()
    if b"<nvidia_smi_log" in head:
        return "smi-xml"
    if b"<topology" in head:
        return "lstopo"
    if b"<system" in head or head.startswith(b"<"):
        return "nccl"
    text = head.decode("utf-8", "replace")
    listing = smi_nvlink.sniff(text)
    if listing is not None:
        return listing
    if "GPU0" in text or "Legend" in text or "CPU Affinity" in text:
        return "topo-m"
    return None


def read_input(path: Path, fmt: str | None = None) -> Machine:
    """Parse one input file (format by content unless `fmt`); problems are in `.problems`."""
    import importlib

    machine = Machine()
    file = display_path(path)
    data = read_bytes(Path(path), machine)
    if data is None:
        return machine
    fmt = fmt or sniff(data)
    if fmt is None:
        machine.problem(Location(file, 1), Severity.ERROR, Code.INPUT_SYNTAX,
                        "not an input hwspec reads: expected an NCCL topology dump (<system>), hwloc XML "
                        "(<topology>), 'nvidia-smi topo -m' output, 'nvidia-smi -q -x' output (<nvidia_smi_log>) or "
                        "'nvidia-smi nvlink -R' / '-s' output",
                        "produce one with NCCL_TOPO_DUMP_FILE, 'lstopo --of xml', 'nvidia-smi topo -m', 'nvidia-smi -q -x' "
                        "or 'nvidia-smi nvlink -R'")
        return machine
    module = importlib.import_module({"nccl": "hwspec.live.nccl", "lstopo": "hwspec.live.lstopo",
                                      "topo-m": "hwspec.live.topo_matrix", "smi-xml": "hwspec.live.smi_xml",
                                      "nvlink-remote": "hwspec.live.smi_nvlink", "nvlink-status": "hwspec.live.smi_nvlink"}[fmt])
    module.parse(data, file, machine)
    refuse_oversized(machine, file)
    machine.problems.sort(key=lambda d: (d.line, d.col))
    return machine
