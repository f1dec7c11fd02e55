"""`nvidia-smi topo -m` text -> Machine.

The matrix names GPUs (`GPU0`...) and NICs (`NIC0`... with a "NIC Legend" giving `mlx5_0`, or
the RDMA names as columns in drivers before ~470), and says for each pair how they connect:
`NV#` (# bonded NVLinks; on NVSwitch boards every pair shows the GPU's links to the switches),
`PIX` (at most one PCIe bridge), `PXB` (several bridges, no host bridge), `PHB` (through a
host bridge), `NODE` (between host bridges of one NUMA node), `SYS` (across the CPU
interconnect; `SOC` in old drivers), `X` (self). GPU rows add `CPU Affinity`,
`NUMA Affinity` and (drivers 535+) `GPU NUMA ID`. Cells are tab-separated; headers may carry
ANSI underline codes. There are no bus ids: devices keep their names as keys, and the PCIe
tree is reconstructed from the path types (one switch per PIX group, one above per PXB group),
so that a draft from this input alone has a tree to hang devices on (with placeholder bus ids).
"""

from __future__ import annotations

import re

from hwspec.diagnostics import Code, Location, Severity
from hwspec.live.observed import (
    MAX_CPUS,
    MAX_GPUS,
    MAX_NICS,
    NUMA_PREFIX,
    NVSWITCH,
    Bridge,
    Gpu,
    Machine,
    Nic,
    NicPort,
    NumaNode,
    NvLink,
    is_decimal,
    too_many_digits,
)

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_GPU = re.compile(r"GPU(\d{1,6})")
_NV = re.compile(r"NV(\d{1,6})")
_CPU_LIST = re.compile(r"\d{1,7}(-\d{1,7})?(,\d{1,7}(-\d{1,7})?)*")  # bounded numbers: int() never sees a long one
_LEGEND = re.compile(r"\s*(NIC\d+)\s*:\s*(\S+)\s*$")
PATH_TYPES = ("PIX", "PXB", "PHB", "NODE", "SYS", "SOC")
MAX_LINES = 10_000
MAX_GPU_LINKS = 18
"""The most NVLinks one NVIDIA GPU has (H100, B200): a GPU showing more in total goes through NVSwitches."""


def parse_cpu_list(text: str) -> tuple[int, ...] | None:
    """'0-3,8' -> (0, 1, 2, 3, 8); None when not a CPU list, or when it holds more than
    MAX_CPUS CPUs in all: its size is added up from the ranges before any is expanded (4.8 KB
    of repeated wide ranges would otherwise expand to gigabytes)."""
    if not _CPU_LIST.fullmatch(text):
        return None
    ranges = []
    total = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        first, last = int(lo), int(hi or lo)
        total += last - first + 1
        if last < first or total > MAX_CPUS:
            return None
        ranges.append(range(first, last + 1))
    return tuple(cpu for cpus in ranges for cpu in cpus)


def _cells(line: str) -> list[str]:
    if "\t" in line:
        return [c.strip() for c in line.split("\t")]
    return [c.strip() for c in re.split(r" {2,}", line)]


def parse(data: bytes, file: str, machine: Machine) -> None:
    """Read `nvidia-smi topo -m` output `data` (named `file` in diagnostics) into `machine`."""
    machine.sources.append((file, "nvidia-smi topo -m"))
    text = _ANSI.sub("", data.decode("utf-8", "replace"))
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        machine.problem(Location(file, MAX_LINES), Severity.ERROR, Code.INPUT_SYNTAX, f"more than {MAX_LINES} lines: not 'nvidia-smi topo -m' output")
        return
    header_at = next((i for i, line in enumerate(lines) if "GPU0" in _cells(line)[1:] or
                      (_cells(line) and _cells(line)[0] == "" and any(_GPU.fullmatch(c) for c in _cells(line)))), None)
    if header_at is None:
        machine.problem(Location(file, 1), Severity.ERROR, Code.INPUT_SYNTAX, "no header row with GPU0: not 'nvidia-smi topo -m' output",
                        "capture it with: nvidia-smi topo -m > topo.txt")
        return
    header = [c for c in _cells(lines[header_at]) if c]
    extras_at = next((i for i, c in enumerate(header)
                      if not (_GPU.fullmatch(c) or c.startswith("NIC") or (re.fullmatch(r"[A-Za-z0-9_.-]+", c) and " " not in c))),
                     len(header))
    devices, extras = header[:extras_at], header[extras_at:]
    for name in devices:
        if (problem := too_many_digits(name[3:] if name.startswith("GPU") else None, "a GPU column's index")) is not None:
            machine.problem(Location(file, header_at + 1), Severity.ERROR, Code.INPUT_SYNTAX, f"{problem}: not 'nvidia-smi topo -m' output")
            return
    gpu_columns = sum(1 for name in devices if _GPU.fullmatch(name))
    for count, limit, what in ((gpu_columns, MAX_GPUS, "GPU"), (len(devices) - gpu_columns, MAX_NICS, "NIC")):
        if count > limit:
            machine.problem(Location(file, header_at + 1), Severity.ERROR, Code.INPUT_SYNTAX,
                            f"the header has {count} {what} columns, more than the {limit} one node has: "
                            "not one node's 'nvidia-smi topo -m' output")
            return
    legend: dict[str, tuple[str, Location]] = {}
    for number, line in enumerate(lines, 1):
        match = _LEGEND.match(line)
        if match and number > header_at + 1:
            legend[match.group(1)] = (match.group(2), Location(file, number))
    rows: dict[str, tuple[list[str], Location]] = {}
    for number in range(header_at + 2, len(lines) + 1):
        cells = _cells(lines[number - 1])
        if not cells or not cells[0]:
            if rows and not any(cells):
                break  # the blank line before the legend
            continue
        name = cells[0]
        if name in devices:
            if name in rows:
                machine.problem(Location(file, number), Severity.WARNING, Code.INPUT_CONTRADICTION, f"row {name} repeats line {rows[name][1].line}")
                continue
            rows[name] = (cells[1:], Location(file, number))
        elif name.startswith("Legend"):
            break
    gpus: dict[str, Gpu] = {}
    nics: dict[str, Nic] = {}
    header_where = Location(file, header_at + 1)
    for name in devices:
        row, where = rows.get(name, ([], header_where))
        if name not in rows:
            machine.problem(header_where, Severity.WARNING, Code.INPUT_VALUE, f"column {name} has no row")
        gpu = _GPU.fullmatch(name)
        if gpu:
            gpus[name] = Gpu(name, where, "", index=int(gpu.group(1)))
        else:
            port_name, _ = legend.get(name, (name if not name.startswith("NIC") else None, where))
            nics[name] = Nic(name, where, "", ports=[NicPort(port_name, where)])
    for name, (row, where) in rows.items():
        relations, rest = row[:len(devices)], [c for c in row[len(devices):] if c]
        if len(relations) < len(devices):
            machine.problem(where, Severity.WARNING, Code.INPUT_VALUE,
                            f"row {name} has {len(relations)} cells for {len(devices)} devices: truncated?")
        for other, cell in zip(devices, relations):
            if other == name or cell in ("X", ""):
                continue
            nv = _NV.fullmatch(cell)
            if nv:
                if name in gpus and other in gpus:
                    machine.nvlinks.append(NvLink(name, other, int(nv.group(1)), where))
                continue
            if cell not in PATH_TYPES:
                machine.problem(where, Severity.WARNING, Code.INPUT_VALUE, f"{name} to {other}: '{cell[:20]}' is not a topo -m path type "
                                f"(X, NV#, {', '.join(PATH_TYPES)})")
                continue
            machine.paths[(name, other)] = ("SYS" if cell == "SOC" else cell, where)
        if name in gpus:
            values = dict(zip(extras, rest))
            device = gpus[name]
            cpus = values.get("CPU Affinity")
            if cpus and cpus != "N/A":
                device.cpus = parse_cpu_list(cpus)
                if device.cpus is None:
                    machine.problem(where, Severity.WARNING, Code.INPUT_VALUE, f"{name}: CPU Affinity '{cpus[:40]}' is not a CPU list")
            numa = values.get("NUMA Affinity", values.get("NUMA"))
            if (problem := too_many_digits(numa, f"{name}: NUMA Affinity")) is not None:
                machine.problem(where, Severity.ERROR, Code.INPUT_SYNTAX, f"{problem}: not 'nvidia-smi topo -m' output")
            elif numa and is_decimal(numa):
                device.numa = int(numa)
            elif numa and numa != "N/A":
                machine.problem(where, Severity.WARNING, Code.INPUT_VALUE, f"{name}: NUMA Affinity '{numa[:40]}' is not one NUMA node")
    _nvswitch(machine, gpus)
    machine.gpus.update(gpus)
    machine.nics.update(nics)
    machine.listed.add("rdma-nics")
    if len(gpus) > 1:  # NV# cells are between GPUs: one GPU's links to NVSwitches do not show
        machine.listed.add("nvlinks")
    _tree(machine, gpus, nics)


def _nvswitch(machine: Machine, gpus: dict[str, Gpu]) -> None:
    """On an NVSwitch board topo -m shows NV# (the GPU's links to the switches) for every GPU
    pair. When every pair shows the same NV# and that adds up to more links per GPU than any
    GPU has, the links are read as # links from each GPU to the NVSwitches."""
    n = len(gpus)
    counts = {(l.gpu, l.target): l.count for l in machine.nvlinks}
    values = set(counts.values())
    if n < 3 or len(counts) != n * (n - 1) or len(values) != 1 or values.pop() * (n - 1) <= MAX_GPU_LINKS:
        return
    first: dict[str, NvLink] = {}
    for link in machine.nvlinks:
        first.setdefault(link.gpu, link)
    machine.nvlinks[:] = [NvLink(gpu, NVSWITCH, link.count, link.where) for gpu, link in first.items()]


def _device(machine: Machine, key: str) -> Gpu | Nic:
    """The GPU or NIC named `key` in the matrix (every matrix name is one of them)."""
    device = machine.gpus.get(key) or machine.nics.get(key)
    assert device is not None, key
    return device


def _tree(machine: Machine, gpus: dict[str, Gpu], nics: dict[str, Nic]) -> None:
    """Parents from the path types: a switch per PIX group, a switch above per PXB group."""
    names = list(gpus) + list(nics)
    parent = {n: n for n in names}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def groups(kinds: tuple[str, ...]) -> dict[str, list[str]]:
        for n in names:
            parent[n] = n
        for (a, b), (kind, _) in machine.paths.items():
            if kind in kinds and a in parent and b in parent:
                parent[find(a)] = find(b)
        out: dict[str, list[str]] = {}
        for n in names:
            out.setdefault(find(n), []).append(n)
        return out

    numa: dict[str, int] = {}
    for name, gpu in gpus.items():
        if gpu.numa is not None:
            numa[name] = gpu.numa
    for (a, b), (kind, _) in machine.paths.items():
        if kind in ("PIX", "PXB", "PHB", "NODE"):
            if a in numa and b not in numa:
                numa[b] = numa[a]
            elif b in numa and a not in numa:
                numa[a] = numa[b]
    for name, nic in nics.items():
        nic.numa = numa.get(name)
    for gpu in gpus.values():
        node = machine.numa.get(gpu.numa) if gpu.numa is not None else None
        if gpu.numa is not None and node is None:
            machine.numa[gpu.numa] = NumaNode(gpu.numa, gpu.where, cpus=gpu.cpus)
        elif node is not None and node.cpus != gpu.cpus:
            node.cpus = None  # GPUs of one node disagree: the node's CPU list is unknown
    top = {n: f"{NUMA_PREFIX}{numa[n]}" if n in numa else f"{NUMA_PREFIX}-1" for n in names}
    outer = [m for m in groups(("PIX", "PXB")).values() if len(m) > 1]
    for k, members in enumerate(outer):
        key = f"pxb{k}"
        machine.bridges[key] = Bridge(key, _device(machine, members[0]).where, top[members[0]])
        for m in members:
            top[m] = key
    for k, members in enumerate(m for m in groups(("PIX",)).values() if len(m) > 1):
        key = f"pix{k}"
        machine.bridges[key] = Bridge(key, _device(machine, members[0]).where, top[members[0]])
        for m in members:
            top[m] = key
    for name in names:
        _device(machine, name).parent = top[name]
    # a PXB bridge holding exactly one PIX bridge is the same switch seen twice: drop the upper one
    for key in [k for k in machine.bridges if k.startswith("pxb")]:
        below = [b for b in machine.bridges.values() if b.parent == key]
        direct = [d for d in (*gpus.values(), *nics.values()) if d.parent == key]
        if len(below) == 1 and not direct:
            below[0].parent = machine.bridges.pop(key).parent
