"""`nvidia-smi nvlink -R` and `nvidia-smi nvlink -s` text -> Machine.

`nvidia-smi -q -x` lists no per-link NVLink state or remote ids (drivers 570-615); these do.
Both print a header per GPU, in nvidia-smi's order (by bus id), then one line per link:

    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)
             Link 0: Remote Device 00000000:D5:00.0: Link 6     (-R, --remotelinkinfo)
             Link 4: <inactive>                                  (-s, --status)
             Link 6: 26.562 GB/s                                 (-s)

`-R` lists the active links only, and numbers them 0, 1, ... in its own order (a GPU whose
links 4 and 5 are inactive shows its link 6 as "Link 4"); the remote link number is the
remote's own. So the two outputs are never joined by link number: `-R` gives which device
each active link reaches, `-s` which links are inactive. The remote is named by bus id only:
whether it is a GPU or an NVSwitch is known once another input gives the GPUs' bus ids
(`resolve_nvlinks`, after merging). Both outputs (or the two concatenated) are read by this one
reader; GPUs are keyed `GPUn` by nvidia-smi's index, as `topo -m` keys them. Text is hostile:
every line is checked against the shape nvidia-smi writes, anything else is a located warning,
and a line is matched in time linear in its length.
"""

from __future__ import annotations

import re

from hwspec.diagnostics import Code, Location, Severity
from hwspec.live.observed import CPU, MAX_GPUS, NVSWITCH, Gpu, Machine, NvLink, NvlinkPort
from hwspec.live.smi_xml import normalise_bus_id

GPU_HEADER = re.compile(r"GPU (\d{1,4}): ")
LINK_LINE = re.compile(r"Link (\d{1,4}): ")
REMOTE = re.compile(r"Remote Device ([0-9A-Fa-f:.]{1,24}): Link (\d{1,4})")
SPEED = re.compile(r"\d{1,5}(\.\d{1,6})? GB/s")
INACTIVE = "<inactive>"
UUID_MARK = " (UUID: "
MAX_LINES = 20_000
"""More lines than 64 GPUs' links in both outputs, with room for blank lines."""
MAX_LINKS = 64
"""The most NVLinks one GPU has is 18 (H100, B200): a link number beyond this is not one."""
COMMANDS = ("nvidia-smi nvlink -R", "nvidia-smi nvlink -s")


def sniff(text: str) -> str | None:
    """`nvlink-remote` or `nvlink-status` when `text` (the head of a file) is that output."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or GPU_HEADER.match(lines[0]) is None:
        return None
    for line in lines[1:]:
        match = LINK_LINE.match(line)
        if match is not None:
            rest = line[match.end():]
            return "nvlink-remote" if rest.startswith("Remote Device") else "nvlink-status"
    return None


def parse(data: bytes, file: str, machine: Machine) -> None:
    """Read `nvidia-smi nvlink -R` or `-s` output `data` (named `file` in diagnostics) into `machine`."""
    text = data.decode("utf-8", "replace")
    kinds = {"remote" if "Remote Device" in text else "", "status" if ("GB/s" in text or INACTIVE in text) else ""} - {""}
    machine.sources.append((file, " and ".join(c for c, k in zip(COMMANDS, ("remote", "status")) if k in kinds) or COMMANDS[0]))
    machine.link_listing = True
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        machine.problem(Location(file, MAX_LINES), Severity.ERROR, Code.INPUT_SYNTAX,
                        f"more than {MAX_LINES} lines: not 'nvidia-smi nvlink' output")
        return
    gpu: Gpu | None = None
    seen: set[tuple[str, str, int]] = set()
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        where = Location(file, number, len(raw) - len(raw.lstrip()) + 1)
        header = GPU_HEADER.match(line)
        if header is not None:
            gpu = _gpu(machine, int(header.group(1)), line[header.end():], where)
            continue
        link = LINK_LINE.match(line)
        if link is None or gpu is None:
            machine.problem(where, Severity.WARNING, Code.INPUT_VALUE,
                            f"'{line[:40]}' is not a 'GPU n: name' header or a 'Link n: ...' line of 'nvidia-smi nvlink'")
            continue
        _link(machine, gpu, int(link.group(1)), line[link.end():], where, seen)
    if not machine.gpus and not any(p.severity == Severity.ERROR for p in machine.problems):
        machine.problem(Location(file, 1), Severity.ERROR, Code.INPUT_SYNTAX, "no 'GPU n: name' line: not 'nvidia-smi nvlink' output",
                        "capture it with: nvidia-smi nvlink -R > nvlink-remote.txt (and nvidia-smi nvlink -s > nvlink-status.txt)")


def _gpu(machine: Machine, index: int, rest: str, where: Location) -> Gpu | None:
    if index >= MAX_GPUS:
        machine.problem(where, Severity.WARNING, Code.INPUT_VALUE, f"GPU {index}: more than the {MAX_GPUS} GPUs one node has: left out")
        return None
    key = f"GPU{index}"
    gpu = machine.gpus.get(key)
    if gpu is None:  # both outputs concatenated name each GPU twice
        name = rest.partition(UUID_MARK)[0].strip()
        gpu = machine.gpus[key] = Gpu(key, where, "", index=index, model_name=name[:200] or None)
    return gpu


def _link(machine: Machine, gpu: Gpu, link: int, rest: str, where: Location, seen: set[tuple[str, str, int]]) -> None:
    kind = "remote" if rest.startswith("Remote Device") else "status"
    if link >= MAX_LINKS:
        machine.problem(where, Severity.WARNING, Code.INPUT_VALUE, f"{gpu.key} link {link}: more links than a GPU has: left out")
        return
    if (gpu.key, kind, link) in seen:
        machine.problem(where, Severity.WARNING, Code.INPUT_CONTRADICTION, f"{gpu.key} link {link} is listed twice: the first is kept")
        return
    seen.add((gpu.key, kind, link))
    if kind == "status":
        if rest == INACTIVE or SPEED.fullmatch(rest):
            gpu.nvlink_state = {**(gpu.nvlink_state or {}), link: rest != INACTIVE}
        else:
            machine.problem(where, Severity.WARNING, Code.INPUT_VALUE,
                            f"{gpu.key} link {link}: '{rest[:40]}' is not a speed such as '26.562 GB/s' or <inactive>")
        return
    match = REMOTE.fullmatch(rest)
    bus = normalise_bus_id(match.group(1)) if match else None
    if match is None or bus is None:
        machine.problem(where, Severity.WARNING, Code.INPUT_VALUE,
                        f"{gpu.key} link {link}: '{rest[:60]}' is not 'Remote Device <bus id>: Link <n>': left out")
        return
    machine.nvlink_ports.append(NvlinkPort(gpu.key, link, bus, int(match.group(2)), where))


def resolve_nvlinks(machine: Machine) -> None:
    """Turn the links `nvidia-smi nvlink -R` lists (`machine.nvlink_ports`, by the remote's bus
    id) into NVLinks, once the inputs are merged: a remote that is one of the node's GPUs is
    that GPU, one of a POWER CPU's NVLink ports (class 0x068001 in sysfs, `cpu_link_ends`) the
    GPU's own CPU, any other remote an NVSwitch (NVLink's other peers). Without GPU bus ids (no other
    input gives them) the remote cannot be told GPU from NVSwitch, and the links are left out
    with one warning. The result replaces NVLinks from an input that could not name the
    NVSwitches (`topo -m`); against another input's counts, a difference is an I104 warning."""
    ports, machine.nvlink_ports = machine.nvlink_ports, []
    if not ports:
        return
    by_bus = {g.bus: g.key for g in machine.gpus.values() if g.bus}
    if not by_bus:
        machine.problem(ports[0].where, Severity.WARNING, Code.INPUT_VALUE,
                        "the GPUs' bus ids are unknown, so a link's remote device cannot be told GPU from NVSwitch: "
                        "NVLinks left out", "import nvidia-smi -q -x (or an NCCL dump, lstopo) with it")
        return
    links: list[NvLink] = []
    for port in ports:
        gpu = machine.gpus.get(port.gpu)
        if gpu is not None and gpu.bus == port.remote:
            machine.problem(port.where, Severity.WARNING, Code.INPUT_VALUE, f"GPU {port.gpu}: its link {port.link} reaches the GPU itself: left out")
            continue
        if port.remote in machine.cpu_link_ends:
            links.append(NvLink(port.gpu, CPU, 1, port.where))
            continue
        target = by_bus.get(port.remote)
        links.append(NvLink(port.gpu, target or NVSWITCH, 1, port.where, None if target else port.remote))
        if target is None:
            machine.nvswitches.setdefault(port.remote, port.where)
    had_switches = any(link.target == NVSWITCH for link in machine.nvlinks)
    if machine.nvlinks and (had_switches or not any(link.target == NVSWITCH for link in links)):
        _compare(machine, links)
        return
    machine.nvlinks[:] = links
    machine.listed.add("nvlinks")
    if any(what == "sysfs" for _, what in machine.sources):  # every function's class is known: a CPU's NVLink port too
        machine.listed.add("cpu-nvlinks")


def _compare(machine: Machine, links: list[NvLink]) -> None:
    """Another input's NVLinks stay; each (GPU, remote) count that differs is an I104 warning here."""
    mine = machine.nvlink_counts()
    theirs = Machine(nvlinks=links).nvlink_counts()
    for (gpu, target), (count, where) in theirs.items():
        have = mine.get((gpu, target))
        if have is None or have[0] != count:
            kept = have[0] if have else 0
            machine.problem(where, Severity.WARNING, Code.INPUT_CONTRADICTION,
                            f"NVLinks from {gpu} to {target}: {count} here, but {kept} in "
                            f"{have[1] if have else machine.nvlinks[0].where}; keeping {kept}")
