"""Several inputs about one node -> one Machine.

The first input with a PCIe tree (NCCL dump or lstopo) is the base; the others fill in what it
lacks (lstopo adds DDR per NUMA node and interface names, `topo -m` adds NVLinks and CPU
affinity, `nvidia-smi -q -x` adds GPU models, board ids and NVLink domains) and are checked
against it: a contradiction is a located warning naming both inputs. Without a tree, `topo -m`
is the base (it has NICs and a reconstructed tree), then `nvidia-smi -q -x`; `nvidia-smi nvlink`
output (which NVLink reaches which bus id, which links are inactive) is merged last, its GPUs in
order, and its links resolved once every GPU bus id is known. Devices are
matched by bus id; `topo -m` GPUs (no bus ids) by order (GPUn is the n-th GPU by bus id, as
nvidia-smi numbers them), its NICs by name; `nvidia-smi -q -x` GPUs by bus id where the base
has them, else by that same order.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hwspec.diagnostics import Code, Location, Severity
from hwspec.live.inputs import read_input
from hwspec.live.observed import NVSWITCH, Gpu, Machine, NvLink, NvlinkPort
from hwspec.live.smi_nvlink import resolve_nvlinks


def read_inputs(paths: Iterable[Path], fmt: str | None = None) -> Machine:
    """Read and merge every input; all problems (located) are in `.problems`."""
    machines = [read_input(Path(p), fmt) for p in paths]
    if not machines:
        return Machine()
    ordered = sorted(machines, key=lambda m: (m.link_listing, not m.has_tree, m.flat_buses))
    base = ordered[0]
    for other in ordered[1:]:
        merge_into(base, other)
    resolve_nvlinks(base)
    return base


def _conflict(base: Machine, what: str, mine: object, theirs: object, where_mine: Location, where_theirs: Location) -> None:
    base.problem(where_theirs, Severity.WARNING, Code.INPUT_CONTRADICTION,
                 f"{what}: {theirs} here, but {mine} in {where_mine}; keeping {mine}")


def merge_into(base: Machine, other: Machine) -> None:
    """Fold `other` into `base` (see the module docstring)."""
    base.sources.extend(other.sources)
    base.listed |= other.listed
    base.problems.extend(other.problems)
    base.notes.extend(other.notes)
    base.unknown_numa_cpu = base.unknown_numa_cpu or other.unknown_numa_cpu
    for numa, node in other.numa.items():
        mine = base.numa.get(numa)
        if mine is None:
            base.numa[numa] = node
            continue
        for attr in ("cpus", "arch", "vendor", "family", "model", "model_name", "memory", "package"):
            value, theirs = getattr(mine, attr), getattr(node, attr)
            if value is None:
                setattr(mine, attr, theirs)
            elif theirs is not None and theirs != value and attr in ("cpus", "vendor", "family", "model"):
                _conflict(base, f"NUMA node {numa} {attr}", value if attr != "cpus" else len(value),
                          theirs if attr != "cpus" else len(theirs), mine.where, node.where)
    if other.link_listing:
        _merge_link_listing(base, other)
    elif other.has_tree:
        _merge_tree(base, other)
    elif other.flat_buses:
        _merge_gpu_facts(base, other)
    else:
        _merge_matrix(base, other)


def _merge_tree(base: Machine, other: Machine) -> None:
    for table in ("bridges", "gpus", "nics"):
        mine_all, theirs_all = getattr(base, table), getattr(other, table)
        for key, theirs in theirs_all.items():
            mine = mine_all.get(key)
            if mine is None:
                if base.node(theirs.parent) is not None or theirs.parent.startswith("numa:"):
                    mine_all[key] = theirs
                continue
            if mine.link is None or (mine.link.gen is None and theirs.link is not None):
                mine.link = theirs.link
            elif theirs.link is not None and theirs.link.bandwidth and mine.link.bandwidth \
                    and abs(theirs.link.bandwidth - mine.link.bandwidth) > 0.02 * mine.link.bandwidth:
                _conflict(base, f"{key} link", mine.link, theirs.link, mine.where, theirs.where)
            for attr in ("vendor", "device"):
                if getattr(mine, attr) is None:
                    setattr(mine, attr, getattr(theirs, attr))
            if table == "nics":
                if not mine.interfaces:
                    mine.interfaces = list(theirs.interfaces)
                if not mine.ports:
                    mine.ports = list(theirs.ports)
            if table == "gpus" and mine.model_name is None:
                mine.model_name = theirs.model_name
    if not base.nvlinks:
        base.nvlinks.extend(other.nvlinks)


def _gpus_by_order(base: Machine, other: Machine) -> tuple[list[Gpu], list[Gpu]]:
    """The two inputs' GPUs paired by order (an input that names GPUs by nvidia-smi's index,
    which is bus id order), with an I104 warning when their counts differ."""
    mine = base.gpus_in_order()
    theirs = sorted(other.gpus.values(), key=lambda g: g.index or 0)
    if len(mine) != len(theirs) and theirs:
        base.problem(theirs[0].where, Severity.WARNING, Code.INPUT_CONTRADICTION,
                     f"{len(theirs)} GPUs here, but {len(mine)} in {mine[0].where.file}: GPUs are matched by order")
    return mine, theirs


def _merge_matrix(base: Machine, other: Machine) -> None:
    """`topo -m` (devices by name, no tree) into a machine with a tree."""
    if not base.gpus:
        for attr in ("bridges", "gpus", "nics", "paths"):
            getattr(base, attr).update(getattr(other, attr))
        base.nvlinks.extend(other.nvlinks)
        return
    mine, theirs = _gpus_by_order(base, other)
    keys = {t.key: m.key for m, t in zip(mine, theirs)}
    for m, t in zip(mine, theirs):
        if m.cpus is None:
            m.cpus = t.cpus
        if m.numa is None:
            m.numa = t.numa
        tree_numa = base.numa_of(m.key)
        if t.numa is not None and tree_numa is not None and tree_numa != t.numa:
            _conflict(base, f"GPU{t.index} NUMA node", tree_numa, t.numa, m.where, t.where)
    links = [NvLink(keys[l.gpu], l.target if l.target == NVSWITCH else keys.get(l.target, ""), l.count, l.where)
             for l in other.nvlinks if l.gpu in keys and (l.target == NVSWITCH or l.target in keys)]
    if not base.nvlinks:
        base.nvlinks.extend(links)
    else:
        counts = base.nvlink_counts()
        for link in links:
            have = counts.get((link.gpu, link.target))
            switches = [s for s in (counts.get((g, NVSWITCH)) for g in (link.gpu, link.target)) if s]
            if link.target != NVSWITCH and len(switches) == 2:
                # an NVSwitch board: topo -m shows each pair the GPUs' links to the switches
                have = min(switches, key=lambda cw: cw[0])
            if link.target != NVSWITCH and (have is None or have[0] != link.count):
                _conflict(base, f"NVLinks from {link.gpu} to {link.target}", have[0] if have else 0, link.count,
                          have[1] if have else mine[0].where, link.where)
    by_name = {p.name: n for n in base.nics.values() for p in n.ports if p.name}
    for nic in other.nics.values():
        for port in nic.ports:
            if port.name in by_name and by_name[port.name].numa is None:
                by_name[port.name].numa = nic.numa
    base.paths.update({(keys.get(a, a), keys.get(b, b)): v for (a, b), v in other.paths.items()})


def _merge_gpu_facts(base: Machine, other: Machine) -> None:
    """`nvidia-smi -q -x` (GPUs with bus ids, no tree) into `base`: by bus id where the base has
    them, else in order. The base keeps its tree and keys; it gains the GPUs' bus ids, PCI
    ids, model names and NVLink domains, and a contradiction is an I104 warning."""
    if not base.gpus:
        base.gpus.update(other.gpus)
        base.flat_buses = base.flat_buses or not base.has_tree
        return
    theirs = sorted(other.gpus.values(), key=lambda g: g.index or 0)
    if any(g.bus for g in base.gpus.values()):
        by_bus = {g.bus: g for g in base.gpus.values() if g.bus}
        pairs = [(by_bus[t.bus], t) for t in theirs if t.bus in by_bus]
        for t in theirs:
            if t.bus not in by_bus:
                base.problem(t.where, Severity.WARNING, Code.INPUT_CONTRADICTION,
                             f"GPU {t.bus or t.key} is not in {next(iter(base.gpus.values())).where.file}: left out")
    else:
        mine = base.gpus_in_order()
        if len(mine) != len(theirs) and theirs:
            base.problem(theirs[0].where, Severity.WARNING, Code.INPUT_CONTRADICTION,
                         f"{len(theirs)} GPUs here, but {len(mine)} in {mine[0].where.file}: GPUs are matched by order")
        pairs = list(zip(mine, theirs))
        if any(t.bus for _, t in pairs):
            base.flat_buses = True  # bus ids without the bridges above them
    for m, t in pairs:
        if m.bus is None:
            m.bus = t.bus
        if m.vendor and t.vendor and (m.vendor, m.device) != (t.vendor, t.device):
            _conflict(base, f"GPU {t.bus or t.key} PCI id", f"{m.vendor}:{m.device}", f"{t.vendor}:{t.device}", m.where, t.where)
        elif m.vendor is None:
            m.vendor, m.device = t.vendor, t.device
        for attr in ("model_name", "subsystem_vendor", "subsystem_device", "current_link", "fabric"):
            if getattr(m, attr) is None:
                setattr(m, attr, getattr(t, attr))
        if m.link is None:
            m.link = t.link
        elif t.link is not None and m.link.gen and m.link.width and t.link.gen and t.link.width \
                and (m.link.gen, m.link.width) != (t.link.gen, t.link.width):
            _conflict(base, f"GPU {t.bus or t.key} link", m.link, t.link, m.where, t.where)
        numa = base.numa_of(m.key)
        if t.numa is not None and numa is not None and numa >= 0 and numa != t.numa:
            _conflict(base, f"GPU {t.bus or t.key} NUMA node", numa, t.numa, m.where, t.where)
        elif m.numa is None:
            m.numa = t.numa


def _merge_link_listing(base: Machine, other: Machine) -> None:
    """`nvidia-smi nvlink` output (GPUn by nvidia-smi's index, which is bus id order) into
    `base`: its GPUs' link states and its links by remote bus id, on the base's GPUs in order."""
    if not base.gpus:
        base.gpus.update(other.gpus)
        base.nvlink_ports.extend(other.nvlink_ports)
        base.link_listing = True
        return
    mine, theirs = _gpus_by_order(base, other)
    keys = {t.key: m.key for m, t in zip(mine, theirs)}
    for m, t in zip(mine, theirs):
        if t.nvlink_state is not None:
            m.nvlink_state = {**(m.nvlink_state or {}), **t.nvlink_state}
        if m.model_name is None:
            m.model_name = t.model_name
    base.nvlink_ports.extend(NvlinkPort(keys[p.gpu], p.link, p.remote, p.remote_link, p.where)
                             for p in other.nvlink_ports if p.gpu in keys)
