"""Observed machine -> a readable draft platform file (`hwspec import`).

A thin layer over `observed.Machine`: it only decides how the spec language says what was
observed. Parts are recognised from the catalogue by PCI vendor/device id (GPUs, NICs; a NIC's
observed speed too, where the input gives one) or CPUID vendor/family/model (CPUs); a device
the input does not identify as a catalogue part is `part: unknown` with exactly what the input
gives as `override:`, a bus id the input does not give is `bus: unknown`, and host memory the
input does not give is `capacity: unknown`/`bandwidth: unknown` (`validate` warns HW603 with what
to fill in). A NIC name no input gives (an RDMA device, a network interface) is left out, never
a placeholder: NCCL finds an unnamed NIC itself, and HW603 names an unknown interface.
Regular runs of entries become `repeat` blocks (`hwspec.live.repeat`), checked by expanding the
draft again. The draft names its inputs in `sources:`/`source:`.

Input files are hostile: any text from them (file names, device and model names, attribute
values) reaches the draft only as a YAML string that loads back as exactly that string (`hwspec.source.dumper.dump_yaml`),
or, in a `# note:` comment, as one line of printable text (`hwspec.text.comment`). Reloading the
draft therefore gives exactly the keys written here; a text the spec refuses (a device name
with a line break, a `${...}` outside a repeat block) is reported by `validate` at its line.
File names, being provenance only, are shown `visible` so that the draft still loads.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hwspec.cpulist import format_cpu_list as cpu_list
from hwspec.live.identify import candidates_note, choose, gpu_fits
from hwspec.live.observed import NUMA_PREFIX, NVSWITCH, Link, Machine, Nic, NicPort
from hwspec.live.repeat import fold
from hwspec.model.node import PcieLink
from hwspec.source.dumper import dump_yaml
from hwspec.spec.units import format_bytes
from hwspec.text import comment, visible

RDMA_NAME = re.compile(r"(mlx\d+_|ib|rdma|bnxt_re|efa|irdma|qedr|hfi1?_|rxe|siw|erdma|ionic)", re.IGNORECASE)
"""Names RDMA devices have (`ibv_devices`); other net names are network interfaces."""
CXI_NAME = re.compile(r"cxi[0-9]+")
"""The device names HPE's cxi driver gives Slingshot NICs (libfabric's cxi provider)."""
EFA_IDS = ("0x1d0f", frozenset({"0xefa0", "0xefa1", "0xefa2", "0xefa3"}))
"""Amazon's PCI vendor id and the device ids of its EFA functions (pci.ids; ENA, 0xec20, is plain Ethernet)."""


def libfabric_transport(nic: Nic, name: str | None) -> str | None:
    """`slingshot` or `efa` where the input shows a libfabric NIC (a cxi device name, an EFA PCI
    id), whatever NCCL's `<net>` says of its class; None for every other NIC."""
    if name is not None and CXI_NAME.fullmatch(name):
        return "slingshot"
    vendor, devices = EFA_IDS
    if nic.vendor == vendor and nic.device in devices:
        return "efa"
    return None


ID_SAFE = re.compile(r"[^a-z0-9_-]+")
UNKNOWN = "unknown"
GPU_VENDORS = {"0x10de": "nvidia", "0x1002": "amd", "0x8086": "intel"}
"""PCI vendor ids of the spec's GPU vendors; another id is `other`."""
SPEC_ARCH = {"x86_64": "x86_64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64", "ppc64": "ppc64"}
"""CPU architecture names as inputs write them -> the spec's."""


@dataclass
class Draft:
    """The draft platform as a dict in writing order, plus notes for the user."""

    spec: dict[str, Any]
    flat: dict[str, Any]
    """The same platform without repeat blocks: what `spec` must expand to."""
    notes: list[str] = field(default_factory=list)

    def contents(self) -> str:
        """What the draft describes, as the import summary says it: NUMA nodes, GPUs and NIC
        entries it contains (not those of the input that it leaves out)."""
        sockets = self.flat.get("sockets", [])
        numa = sum(len(s.get("numa_nodes", [])) or 1 for s in sockets)
        return (f"{numa} NUMA node(s), {len(self.flat.get('gpus', []))} GPU(s), "
                f"{len(self.flat.get('nics', []))} NIC(s)")


def _cpu_name(name: str) -> str:
    """A CPU model name as comparable text: "Intel(R) Xeon(R) Platinum 8174 CPU @ 3.10GHz" and
    "Intel Xeon Platinum 8174" give the same, "AMD EPYC 7V12 48-Core Processor" is "amd epyc 7v12"."""
    name = re.sub(r"\((R|TM)\)|\bCPU @.*$|\b\d+-Core\b|\bProcessor\b", " ", name, flags=re.IGNORECASE)
    return " ".join(name.lower().split())


def _file_text(file: str) -> str:
    """An input's name as the draft's `source:`/`sources:` text: `visible` (one printable line,
    a non-UTF-8 byte as `\\xNN`), and `${` written `$\\x7b`, which the loader would otherwise read
    as an expression outside a repeat block."""
    return visible(file).replace("${", "$\\x7b")


def _name(text: str) -> str:
    name = ID_SAFE.sub("-", text.lower()).strip("-_")
    if not name or not name[0].isalpha():
        name = "node-" + name
    return name[:64]


def _serving(entries: list[dict], gpu_ids: list[str]) -> list[tuple[dict, tuple[str, ...]]]:
    """Which GPUs the backend NICs under one bridge serve, from placement alone (NCCL dumps and
    lstopo show no pairing): each NIC serves every GPU under the bridge, which is what the
    placement says (a p5's four EFA devices beside one GPU; a DGX switch's two NICs beside two
    GPUs: pairing them by position would be a guess, and NCCL's own NIC order is no pairing). The
    summed NIC share per GPU is the same either way. NICs with no GPU beside them serve none."""
    if not gpu_ids:
        return []
    if len(gpu_ids) == 1:
        return [(entry, (gpu_ids[0],)) for entry in entries]
    return [(entry, tuple(gpu_ids)) for entry in entries]


_PORT_KEYS = ("device", "interface", "port")
"""What a drafted per-port entry holds of its own; the rest is the card's."""


def _as_card(function: list[tuple[bool, dict]]) -> list[tuple[bool, dict]]:
    """The entries of one PCI function's ports as one card with `ports:` when it has several that
    agree on everything but their names and port numbers (one part, role, transport, link); else
    as they are (one entry per port)."""
    if len(function) < 2:
        return function
    shared = [{k: v for k, v in entry.items() if k not in _PORT_KEYS} for _, entry in function]
    if any(rest != shared[0] for rest in shared[1:]) or len({backend for backend, _ in function}) > 1:
        return function
    card = dict(shared[0])
    ports = [{"_port": entry.get("port", 1), **{k: entry[k] for k in ("device", "interface") if k in entry}}
             for _, entry in function]
    if len({p["_port"] for p in ports}) < len(ports):
        return function  # the input numbers two ports alike: kept apart
    items = list(card.items())
    at = [k for k, _ in items].index("pcie")
    card = dict(items[:at] + [("ports", ports)] + items[at:])
    return [(function[0][0], card)]


def _merge_functions(pairs: list[tuple[Nic, dict]]) -> list[tuple[Nic, dict]]:
    """Single-port NIC entries that are functions of one PCI device (bus ids alike but for the
    function digit) with the same PCI ids, under the same bridge, agreeing on everything but their
    names, drafted as one card with `ports:`: a multi-function device has one PCIe link (a
    dual-port ConnectX shows each port as a function and mlx5 device of its own). Only a group
    holding function 0 is a device's own ports: SR-IOV virtual functions (another device id, no
    function 0 of theirs) stay apart. In input order otherwise."""
    groups: dict[tuple, list[tuple[Nic, dict]]] = {}
    order: list[tuple] = []
    for nic, entry in pairs:
        key: tuple = (nic.bus.rsplit(".", 1)[0], nic.parent, nic.vendor, nic.device) \
            if nic.bus and nic.vendor and nic.device and "ports" not in entry else ("alone", id(entry))
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append((nic, entry))
    out: list[tuple[Nic, dict]] = []
    for key in order:
        group = groups[key]
        # a device's own ports start at function 0 (virtual functions of an SR-IOV device do not)
        with_function_0 = any(nic.bus is not None and nic.bus.endswith(".0") for nic, _ in group)
        merged = _functions_as_card(group) if len(group) > 1 and with_function_0 else None
        out.extend([(group[0][0], merged)] if merged is not None else group)
    return out


def _functions_as_card(group: list[tuple[Nic, dict]]) -> dict | None:
    """One card for the functions in `group`, each a port (its bus where it is not the card's);
    None when they differ in more than their names (then they stay apart)."""
    def shared(entry: dict) -> dict:
        rest = {k: v for k, v in entry.items() if k not in (*_PORT_KEYS, "_key", "_link", "pcie")}
        return {**rest, "pcie": {k: v for k, v in entry["pcie"].items() if k != "bus"}}

    first = group[0][1]
    if any(shared(entry) != shared(first) or entry.get("port", 1) != 1 for _, entry in group):
        return None
    ports = []
    for number, (_nic, entry) in enumerate(group, 1):
        port = {"_port": number, **{k: entry[k] for k in ("device", "interface") if k in entry}}
        if entry["pcie"]["bus"] != first["pcie"]["bus"]:
            port["bus"] = entry["pcie"]["bus"]
        ports.append(port)
    items = [(k, v) for k, v in first.items() if k not in _PORT_KEYS]
    at = [k for k, _ in items].index("pcie")
    return dict(items[:at] + [("ports", ports)] + items[at:])


def _note(entry: dict, assumed: list[str]) -> None:
    if assumed:
        entry["assumed"] = "; ".join(dict.fromkeys(assumed))


class _Writer:
    def __init__(self, machine: Machine, catalogue, name: str):
        self.m, self.cat, self.name = machine, catalogue, name
        self.ids: dict[str, str] = {}  # machine key -> spec id
        self.notes: list[str] = list(machine.notes)
        self.links: dict[str, tuple[int, int]] = {}  # spec id -> (gen, width) of its upstream link

    def parts(self, kind: str) -> dict[str, Any]:
        return {name: part.model for name, part in sorted(self.cat.parts.get(kind, {}).items())}

    def source(self) -> str:
        return "hwspec import of " + ", ".join(f"{_file_text(file)} ({what})" for file, what in self.m.sources)

    @staticmethod
    def bus(bus: str | None) -> str:
        """The bus id the input gives, or `unknown` (`nvidia-smi topo -m` gives none): never an invented one."""
        return bus or UNKNOWN

    # ------------------------------------------------------------ sockets

    def sockets(self) -> list[dict]:
        """One entry per socket. NUMA nodes of one package (lstopo on a sub-NUMA-clustered or
        NPS machine) become the socket's `numa_nodes`; a NUMA node whose package is unknown is
        a socket of its own."""
        numa_ids = sorted(self.m.numa)
        if not numa_ids:
            numa_ids = sorted({n for n in (self.m.numa_of(k) for k in (*self.m.gpus, *self.m.nics)) if n is not None and n >= 0}) or [0]
        groups: list[list[int]] = [[n] for n in numa_ids]
        packages = [self.m.numa[n].package if n in self.m.numa else None for n in numa_ids]
        known = [p for p in packages if p is not None]
        if len(known) == len(packages) and len(set(known)) < len(known):
            by_package: dict[int, list[int]] = {}
            for numa, package in zip(numa_ids, known):
                by_package.setdefault(package, []).append(numa)
            groups = [by_package[p] for p in sorted(by_package)]
        out = []
        for position, group in enumerate(groups):
            assumed: list[str] = []
            entry: dict[str, Any] = {"id": f"cpu{position}"}
            # a CPU the input gives without a NUMA node (numaid -1) is the CPU of a one-socket draft
            unplaced = self.m.unknown_numa_cpu if len(groups) == 1 and not self.m.numa else None
            entry.update(self.cpu_part(self.m.numa.get(group[0]) or unplaced))
            if len(group) == 1:
                self.ids[f"{NUMA_PREFIX}{group[0]}"] = entry["id"]
                entry.update(self.numa_fields(group[0], assumed))
            else:
                entry["numa_nodes"] = []
                for numa in group:
                    self.ids[f"{NUMA_PREFIX}{numa}"] = f"numa{numa}"
                    entry["numa_nodes"].append({"id": f"numa{numa}", **self.numa_fields(numa, assumed)})
            _note(entry, assumed)
            out.append(entry)
        return out

    def cpu_part(self, node) -> dict[str, Any]:
        """`part` for the CPU of NUMA node `node`: the catalogue CPU of its CPUID vendor/family/model
        (and of its model name where the input gives one: family/model name a core generation, not
        a SKU, so a Xeon 8174 is not the catalogue's 8280), else `unknown` with the identity the
        input gives as `override`."""
        cpus = self.parts("cpus")
        arch = SPEC_ARCH.get(node.arch or "") if node is not None else None
        if arch is None and node is not None and node.vendor in ("intel", "amd"):
            arch = "x86_64"  # a CPUID vendor of GenuineIntel or AuthenticAMD is an x86 CPU's (NCCL's <cpu arch> needs it)
        matches = [n for n, p in cpus.items() if node is not None and node.family is not None and node.model is not None
                   and p.vendor == node.vendor and p.family == node.family and p.model == node.model
                   and (arch is None or p.arch == arch)
                   and (not node.model_name or _cpu_name(node.model_name) == _cpu_name(p.model_name))]
        if matches:
            return {"part": matches[0]}
        if node is None:
            return {"part": UNKNOWN}
        seen = {"vendor": node.vendor, "arch": arch, "model_name": node.model_name, "family": node.family, "model": node.model}
        override = {k: v for k, v in seen.items() if v is not None}
        return {"part": UNKNOWN, "override": override} if override else {"part": UNKNOWN}

    def numa_fields(self, numa: int, assumed: list[str]) -> dict[str, Any]:
        """`numa_node`, `cpus` and `memory` of one NUMA node. Memory is what the input says (lstopo's
        local memory) and `unknown` where it says nothing (an NCCL dump, topo -m; no input gives
        bandwidth): never a placeholder a consumer would take as the machine's (HW603 names them)."""
        node = self.m.numa.get(numa)
        fields: dict[str, Any] = {"numa_node": numa}
        if node is not None and node.cpus:
            fields["cpus"] = cpu_list(node.cpus)
        else:
            assumed.append("the input gives no CPU list: derived from the part")
        apu = self.apu_under(numa)
        if apu is not None:  # an APU's CPU cores use its HBM: no DDR of their own, no placeholder
            fields["memory"] = {"shared_with": apu}
            return fields
        capacity = node.memory if node is not None and node.memory else None
        fields["memory"] = {"capacity": format_bytes(capacity) if capacity is not None else UNKNOWN, "bandwidth": UNKNOWN}
        return fields

    def apu_under(self, numa: int) -> str | None:
        """The id `gpus()` gives the first GPU on NUMA node `numa` whose PCI ids name an APU part
        (MI300A): that NUMA node's memory is its HBM. None without one."""
        apus = {(p.pci_vendor, p.pci_device) for p in self.parts("gpus").values() if p.form_factor == "apu"}
        for index, gpu in enumerate(self.m.gpus_in_order()):
            if (gpu.vendor, gpu.device) in apus and f"{NUMA_PREFIX}{numa}" in self.m.ancestors(gpu.key):
                return f"gpu{index}"
        return None

    # ------------------------------------------------------------ PCIe tree

    def wanted(self) -> list[str]:
        """Bridge keys on the path from a NUMA node to a GPU or NIC, in tree order (by bus id)."""
        keep: set[str] = set()
        for key in (*self.m.gpus, *(k for k, n in self.m.nics.items() if n.bus is not None)):
            for parent in self.m.ancestors(key):
                if parent in self.m.bridges:
                    keep.add(parent)
        children: dict[str, list[str]] = {}
        for key in keep:
            children.setdefault(self.m.bridges[key].parent, []).append(key)
        ordered: list[str] = []

        def visit(parent: str) -> None:
            for key in sorted(children.get(parent, []), key=lambda k: self.m.bridges[k].bus or k):
                ordered.append(key)
                visit(key)

        roots = sorted({self.m.bridges[k].parent for k in keep if self.m.bridges[k].parent not in keep})
        for root in roots:
            visit(root)
        return ordered

    def upstream(self, parent: str) -> str | dict[str, str]:
        """The spec id of `parent`. Where the input gives no NUMA node (`numa:-1`: NCCL's
        numaid -1, hwloc's locality of several NUMA nodes) it is the first socket, written as an
        assumption (`{value, assumed}`), so that `diff` does not take it for a fact."""
        if parent in self.ids:
            return self.ids[parent]
        first = next(iter(self.ids.values()))
        return {"value": first, "assumed": f"the input gives no NUMA node here{f' ({parent})' if parent else ''}: attached to {first}"}

    def bridges(self) -> list[dict]:
        """Root ports (bridges on a NUMA node) and switches on the way to a GPU or NIC."""
        counters = {"rp": 0, "sw": 0}
        out = []
        for key in self.wanted():
            bridge = self.m.bridges[key]
            prefix = "rp" if bridge.parent.startswith(NUMA_PREFIX) else "sw"
            ident = f"{prefix}{counters[prefix]}"
            counters[prefix] += 1
            self.ids[key] = ident
            assumed: list[str] = []
            entry: dict[str, Any] = {"id": ident}
            if prefix == "rp":
                entry["kind"] = "root-port"
            entry.update(self.switch_identity(bridge))
            entry["upstream"] = self.upstream(bridge.parent)
            entry["bus"] = self.bus(bridge.bus)
            link = bridge.link
            gen, width = (link.gen, link.width) if link else (None, None)
            if gen is None or width is None:
                gen, width = self._guess_link(link, key, assumed)
            entry["link"] = {"gen": gen, "width": width}
            self.links[ident] = (gen, width)
            _note(entry, assumed)
            out.append(entry)
        return out

    def switch_identity(self, bridge) -> dict[str, Any]:
        """`part` and `pci` of a bridge from the ids the input shows: the catalogue switch part
        whose vendor/device they are (the family entry where several chips share the id), and
        the observed ids the part does not imply (all of them without a part). Nothing when the
        input gives no ids."""
        if not (bridge.vendor and bridge.device):
            return {}
        catalogue = self.parts("pcie_switches")
        matches = [n for n, p in catalogue.items() if (p.pci_vendor, p.pci_device) == (bridge.vendor, bridge.device)]
        families = [n for n in matches if catalogue[n].lanes is None]
        named = families if len(families) == 1 else matches if len(matches) == 1 else []
        fields: dict[str, Any] = {"part": named[0]} if named else {}
        ids = {} if named else {"vendor": bridge.vendor, "device": bridge.device}
        if bridge.subsystem_vendor and bridge.subsystem_device:
            ids.update(subsystem_vendor=bridge.subsystem_vendor, subsystem_device=bridge.subsystem_device)
        if ids:
            fields["pci"] = ids
        return fields

    def _guess_link(self, link: Link | None, key: str, assumed: list[str]) -> tuple[int, int]:
        """A bridge link the input does not give in full: the widest (gen, width) whose
        bandwidth it is exactly (hwloc), else x16 at the fastest generation of the devices below."""
        forms = link.forms() if link is not None and link.gen is None else []
        if forms:
            gen, width = forms[0]
            assumed.append(f"the input gives the link as {link.bandwidth / 1e9:.2f} GB/s only: taken as Gen{gen} x{width}"
                           if link is not None and link.bandwidth else f"taken as Gen{gen} x{width}")
            return gen, width
        if link is not None and link.bandwidth and link.gen is None:
            return self._link_not_above(link.bandwidth, assumed)
        gens = [d.link.gen for d in (*self.m.gpus.values(), *self.m.nics.values(), *self.m.bridges.values())
                if d.link and d.link.gen and key in self.m.ancestors(d.key)]
        gen = (link.gen if link and link.gen else None) or (max(gens) if gens else 4)
        width = link.width if link and link.width else 16
        assumed.append(f"the input does not give this link in full: taken as Gen{gen} x{width}")
        return gen, width

    def sandboxed_link(self, nic: Nic, assumed: list[str]) -> tuple[int, int]:
        """The link of a NIC whose function a sandbox shows as a bridge without a link (`Nic.shown_as`):
        x16 at the GPUs' fastest generation (Gen4 without GPUs), as a bridge's link is guessed."""
        gens = [g.link.gen for g in self.m.gpus.values() if g.link and g.link.gen]
        gen = max(gens, default=4)
        assumed.append(f"the input shows this NIC's function as class {nic.shown_as} without a link (a sandbox): "
                       f"taken as Gen{gen} x16, the GPUs' generation")
        return gen, 16

    @staticmethod
    def _link_not_above(bandwidth: float, assumed: list[str]) -> tuple[int, int]:
        """The fastest link no faster than `bandwidth`, a figure no PCIe link has exactly."""
        fitting = [(PcieLink(g, w).bandwidth, g, w) for g in range(1, 7) for w in (1, 2, 4, 8, 16, 32)
                   if PcieLink(g, w).bandwidth <= bandwidth]
        _, gen, width = max(fitting, default=(0.0, 1, 1))
        assumed.append(f"the input gives the link as {bandwidth / 1e9:.2f} GB/s, which no PCIe link is: "
                       f"taken as Gen{gen} x{width}, the fastest not above it")
        return gen, width

    def max_oversubscription(self, bridges: list[dict], devices: list[dict]) -> None:
        """Set `max_oversubscription` where the links below a bridge add up to more than 2x its uplink (HW103)."""
        below: dict[str, float] = {}
        for entry in (*bridges, *devices):
            link = self.links.get(entry["id"])
            parent = entry.get("upstream") or entry.get("pcie", {}).get("upstream")
            if isinstance(parent, dict):
                parent = parent["value"]
            if link and parent:
                below[parent] = below.get(parent, 0.0) + PcieLink(*link).bandwidth
        for entry in bridges:
            ratio = below.get(entry["id"], 0.0) / PcieLink(*self.links[entry["id"]]).bandwidth
            if ratio > 2:
                entry["max_oversubscription"] = math.ceil(ratio)

    def device_link(self, link: Link | None, part_link, assumed: list[str], what: str) -> tuple[dict | None, dict | None, tuple[int, int] | None]:
        """(pcie.link to write or None, part pcie override or None, the (gen, width) it trains at)
        for an observed device link. A width-0 link (a device passed through to a VM) is written
        as presented with the part's width as `physical`. Without a part (`part: unknown`) the
        link is what the input gives, and none (trained at None) where it gives none."""
        if part_link is None:
            return self._unknown_part_link(link, assumed)
        gen = link.gen if link and link.gen else None
        width = link.width if link and link.width else None
        if link is not None and link.bandwidth and gen is None:
            # hwloc: the exact (gen, width) of the bandwidth the part can train at, its own width first
            forms = sorted(link.forms(), key=lambda f: (f[0] > part_link.generation, f[1] != part_link.width, -f[1]))
            if forms:
                gen, width = forms[0]
            else:
                gen, width = self._link_not_above(link.bandwidth, assumed)
        if gen is None:
            gen = part_link.generation
            if link is None:
                assumed.append(f"the input gives no {what} link: the part's")
        if width is None:
            width = part_link.width
        override = None
        if gen > part_link.generation or width > part_link.width:
            override = {"gen": max(gen, part_link.generation), "width": max(width, part_link.width)}
            part_gen, part_width = override["gen"], override["width"]
        else:
            part_gen, part_width = part_link.generation, part_link.width
        if link is not None and link.width_zero:
            return {"gen": gen, "width": 0, "physical": {"value": {"gen": gen, "width": width}, "assumed": (
                f"the VM reports width 0 for the passed-through {what}: its part's x{width} assumed")}}, override, (gen, width)
        if (gen, width) == (part_gen, part_width):
            return None, override, (gen, width)
        return {"gen": gen, "width": width}, override, (gen, width)

    def _unknown_part_link(self, link: Link | None, assumed: list[str]) -> tuple[dict | None, None, tuple[int, int] | None]:
        """The link of a device whose part is unknown: as the input gives it (a hwloc bandwidth as
        its widest exact form); a VM's width 0 as presented; nothing where the input gives none."""
        if link is None:
            return None, None, None
        gen, width = link.gen, link.width
        if link.bandwidth and gen is None:
            forms = link.forms()
            gen, width = forms[0] if forms else self._link_not_above(link.bandwidth, assumed)
        if gen is None:
            return None, None, None
        if link.width_zero:
            return {"gen": gen, "width": 0, "physical": {"value": {"gen": gen, "width": 16}, "assumed": (
                "the VM reports width 0 for the passed-through device and its part is unknown: x16 assumed, "
                "as NCCL reads width 0")}}, None, (gen, 16)
        if not width:
            return None, None, None
        return {"gen": gen, "width": width}, None, (gen, width)

    def virtual_bridges(self, bridges: list[dict]) -> None:
        """A bridge presented slower than a device below it is a VM's virtual one when it shows
        QEMU's default Gen1 x1, or when the machine is a VM (a device reports width 0): it gets
        `physical`, the fastest link below it. Other slower bridges
        stay as observed (a degraded link is for `validate` to report)."""
        in_vm = any(d.link is not None and d.link.width_zero for d in (*self.m.gpus.values(), *self.m.nics.values()))
        key_of = {ident: key for key, ident in self.ids.items()}
        for entry in reversed(bridges):  # bottom-up: a bridge below may be virtual too
            if not in_vm and (entry["link"]["gen"], entry["link"]["width"]) != (1, 1):
                continue
            below = [self.links[self.ids[d.key]] for d in (*self.m.gpus.values(), *self.m.nics.values(), *self.m.bridges.values())
                     if d.key in self.ids and self.ids[d.key] in self.links and key_of.get(entry["id"]) in self.m.ancestors(d.key)]
            gen, width = entry["link"]["gen"], entry["link"]["width"]
            fastest = max(below, default=(gen, width))
            if fastest[0] > gen:
                entry["link"]["physical"] = {"value": {"gen": fastest[0], "width": fastest[1]}, "assumed": (
                    f"the VM presents a virtual Gen{gen} x{width} bridge: taken to be the Gen{fastest[0]} x{fastest[1]} "
                    "of the links below")}
                self.links[entry["id"]] = fastest

    # ------------------------------------------------------------ GPUs and fabric

    def gpus(self) -> tuple[list[dict], dict | None, dict | None]:
        gpus = self.m.gpus_in_order()
        catalogue = self.parts("gpus")
        counts = self.m.nvlink_counts()
        per_gpu: Counter[str] = Counter()
        for (gpu_key, _target), (count, _where) in counts.items():
            per_gpu[gpu_key] += count
        out = []
        self.gpu_ids = {}
        for index, gpu in enumerate(gpus):
            ident = f"gpu{index}"
            self.ids[gpu.key] = self.gpu_ids[gpu.key] = ident
            assumed: list[str] = []
            entry: dict[str, Any] = {"id": ident}
            candidates = [n for n, p in catalogue.items() if gpu_fits(p, gpu)]
            links_needed = per_gpu.get(gpu.key, 0)
            fitting = [n for n in candidates if catalogue[n].fabric.links >= links_needed]
            chosen = choose(self.cat, "gpus", fitting or candidates, gpu.model_name)
            override: dict[str, Any] = {}
            if chosen.part:
                part = chosen.part
                spec_part = catalogue[part]
                exact = not self.switches_uniform()  # without listed switches, 'nvswitch' uses all of the part's links
                if links_needed > spec_part.fabric.links or (exact and any(t == NVSWITCH for (g, t) in counts if g == gpu.key)
                                                             and links_needed != spec_part.fabric.links):
                    override["fabric"] = {"links": links_needed}
                part_link = spec_part.pcie
            else:
                part, part_link = UNKNOWN, None
                override = self.gpu_identity(gpu, links_needed)
                if chosen.candidates:
                    self.notes.append(candidates_note(ident, f"the GPU {gpu.vendor}:{gpu.device}", chosen.candidates))
            entry["part"] = part
            link, pcie_override, trained = self.device_link(gpu.link, part_link, assumed, "GPU")
            if pcie_override:
                override["pcie"] = pcie_override
            if override:
                entry["override"] = override
            entry["pcie"] = {"upstream": self.upstream(gpu.parent), "bus": self.bus(gpu.bus)}
            if link:
                entry["pcie"]["link"] = link
            if trained:
                self.links[ident] = trained
            _note(entry, assumed)
            out.append(entry)
        baseboard, nvlink = self.fabric(gpus, out, counts)
        return out, baseboard, nvlink

    def gpu_identity(self, gpu, links: int) -> dict[str, Any]:
        """The `override` of a GPU whose part is unknown: what the input gives of it. `topo -m`
        (nvidia-smi) shows NVIDIA GPUs without ids; AMD's dialect (RCCL's) is `gcn`, `arch` and `sm`
        holding the compute-unit count, not CUDA's compute capability."""
        by_nvidia_smi = any(what.startswith("nvidia-smi") for _, what in self.m.sources)
        vendor = GPU_VENDORS.get(gpu.vendor, "other") if gpu.vendor else "nvidia" if by_nvidia_smi else None
        if gpu.gcn:
            vendor = "amd"  # a gfx target is an AMD GPU's, whatever PCI ids the input leaves out: RCCL reads its file
        seen: dict[str, Any] = {"vendor": vendor, "model_name": gpu.model_name, "pci_vendor": gpu.vendor, "pci_device": gpu.device}
        if vendor == "amd":
            seen.update(gcn=gpu.gcn, hip_arch=gpu.arch if gpu.arch is not None and gpu.arch >= 0 else None,
                        compute_units=gpu.sm if gpu.sm is not None and gpu.sm >= 1 else None)
        else:
            seen["sm"] = gpu.sm
        if links:
            seen["fabric"] = {"kind": "xgmi", "links": links} if vendor == "amd" else {"links": links}
        return {k: v for k, v in seen.items() if v is not None}

    def fabric(self, gpus, entries: list[dict], counts) -> tuple[dict | None, dict | None]:
        if not counts:
            self.unlinked_nvswitches()
            return None, None
        source = f"observed: {self.source()}"
        if any(t == NVSWITCH for (_g, t) in counts):
            if any(t != NVSWITCH for (_g, t) in counts):
                self.notes.append("GPU-to-GPU NVLinks beside NVSwitch links are left out of the draft")
            return self.nvswitch_board(gpus, entries), {"topology": "nvswitch", "source": source}
        index = {g.key: i for i, g in enumerate(gpus)}
        pairs: dict[tuple[int, int], int] = {}
        for (a, b), (count, where) in counts.items():
            if a not in index or b not in index:
                continue
            back = counts.get((b, a), (0, None))[0]
            if back != count:
                self.notes.append(f"{where}: NVLink count {count} from {a} to {b} but {back} back: the smaller is used")
            key = (min(index[a], index[b]), max(index[a], index[b]))
            pairs[key] = min(count, back) if back else count
        pairs = {k: v for k, v in pairs.items() if v > 0}
        if not pairs:
            return None, None
        for i, entry in enumerate(entries):
            items = list(entry.items())
            entry.clear()
            entry.update(items[:2] + [("slot", i)] + items[2:])
        n = len(gpus)
        all_pairs = {(a, b) for a in range(n) for b in range(a + 1, n)}
        values = set(pairs.values())
        missing = sorted(all_pairs - set(pairs))
        degree: Counter[int] = Counter()
        for (a, b) in pairs:
            degree[a] += 1
            degree[b] += 1
        matching = len(missing) * 2 == n and len({x for p in missing for x in p}) == n
        board: dict[str, Any] = {"kind": "custom", "slots": n}
        nvlink: dict[str, Any]
        if len(values) == 1 and (not missing or matching):
            per_pair = values.pop()
            nvlink = {"topology": "fully-connected"}
            if per_pair != 1:
                nvlink["links_per_pair"] = per_pair
            if missing:
                nvlink["exclude"] = [list(p) for p in missing]
            board.update(ports_per_slot=n - 1, links_per_port=per_pair, wiring="fully-connected")
        else:
            nvlink = {"topology": [{"gpus": [f"gpu{a}", f"gpu{b}"], "links": c} for (a, b), c in sorted(pairs.items())]}
            board.update(ports_per_slot=max(degree.values()), links_per_port=max(pairs.values()),
                         wiring=[[a, b] for (a, b) in sorted(pairs)])
        if board.get("links_per_port") == 1:
            del board["links_per_port"]
        bandwidth: Counter[int] = Counter()
        for (a, b), c in pairs.items():
            bandwidth[a] += c
            bandwidth[b] += c
        if len({bandwidth[i] for i in range(n)}) > 1:
            nvlink["symmetric"] = False
        nvlink["source"] = source
        board["assumed"] = "the input shows the NVLinks in use, not the baseboard's wiring: taken to wire exactly these"
        return board, nvlink

    def unlinked_nvswitches(self) -> None:
        """A note for NVSwitch chips the input names without any GPU's NVLinks to them (lstopo
        of a DGX-2 lists its 12 switches as PCI functions): how many links each GPU has to which
        switch is not in the input, so no board or fabric is drafted for them."""
        if not self.m.nvswitches:
            return
        buses = sorted(self.m.nvswitches)
        shown = ", ".join(buses[:4]) + (f" and {len(buses) - 4} more" if len(buses) > 4 else "")
        self.notes.append(f"{len(buses)} NVSwitch chip(s) in the input ({shown}) but no NVLink of any GPU to them: "
                          "the NVLink fabric is left out of the draft (describe 'baseboard:' and 'nvlink:' from the "
                          "board's documentation, or import an NCCL topology dump, which gives each GPU's links)")

    def nvlink_domains(self) -> None:
        """A note naming the multi-node NVLink domain (cluster UUID and clique, as the fabric
        manager reports them) each group of GPUs is in: a node platform has no field for it."""
        members: dict[tuple[str, int | None], list[str]] = {}
        for gpu in self.m.gpus_in_order():
            if gpu.fabric is not None:
                members.setdefault((gpu.fabric.cluster_uuid, gpu.fabric.clique_id), []).append(self.gpu_ids[gpu.key])
        for (uuid, clique), gpu_ids in members.items():
            clique_text = f", clique {clique}" if clique is not None else ""
            self.notes.append(f"{', '.join(gpu_ids)} are in the multi-node NVLink domain {uuid}{clique_text} "
                              "(the fabric manager's registration, as NVML or nvidia-smi -q reports it): "
                              "the domain is the cluster's, not described in a node platform")

    def nvlinks_down(self) -> None:
        """A note per GPU with inactive NVLinks (`nvidia-smi nvlink -s`): the draft describes the
        links in use, and a link down may be a fault or one the board leaves unwired."""
        for gpu in self.m.gpus_in_order():
            down = sorted(link for link, active in (gpu.nvlink_state or {}).items() if not active)
            if down:
                active = len(gpu.nvlink_state or {}) - len(down)
                self.notes.append(f"{self.gpu_ids[gpu.key]}: NVLink{'s' if len(down) > 1 else ''} {', '.join(map(str, down))} "
                                  f"inactive, {active} active "
                                  "(nvidia-smi nvlink -s): the draft describes the active ones")

    def switches_uniform(self) -> bool:
        """Whether every GPU has links to the same NVSwitches, the same number to each."""
        per_gpu = self.m.nvswitch_links()
        shapes = {tuple(sorted(links.items(), key=lambda kv: kv[0] or "")) for links in per_gpu.values()}
        return len(shapes) == 1 and set(per_gpu) == set(self.m.gpus)

    def nvswitch_board(self, gpus, entries: list[dict]) -> dict | None:
        """An HGX-style board with the NVSwitch chips the input names, when every GPU has the
        same links to the same switches; else None."""
        if not self.switches_uniform():
            self.notes.append("the GPUs have different links to the NVSwitches: the board's switches are left out")
            return None
        per_gpu = self.m.nvswitch_links()
        shapes = {tuple(sorted(links.items(), key=lambda kv: kv[0] or "")) for links in per_gpu.values()}
        for i, entry in enumerate(entries):
            items = list(entry.items())
            entry.clear()
            entry.update(items[:2] + [("slot", i)] + items[2:])
        switches = []
        for i, (bus, links) in enumerate(shapes.pop()):
            switch: dict[str, Any] = {"id": f"nvs{i}"}
            if bus:
                switch["bus"] = bus
            switch["links_per_gpu"] = links
            switches.append(switch)
        return {"kind": "hgx", "slots": len(gpus), "wiring": "nvswitch", "nvswitches": switches,
                "source": f"observed: {self.source()}",
                "assumed": "the input shows NVSwitch chips and each GPU's links to them: the board is taken to be an HGX baseboard"}

    # ------------------------------------------------------------ NICs

    def nics(self) -> tuple[list[dict], dict | None]:
        catalogue = self.parts("nics")
        gpu_bridges = {self.m.gpus[k].parent for k in self.m.gpus}
        order = sorted(self.m.nics.values(), key=lambda n: (n.bus is None, n.bus or n.key))
        backend_entries: list[tuple[Nic, dict]] = []
        other_pairs: list[tuple[Nic, dict]] = []
        stated = [g.gdr for g in self.m.gpus.values() if g.gdr is not None]
        gpus_gdr = all(stated) if stated else None  # the GPUs' gdr as the input states it: backend.gpudirect below
        for nic in order:
            parent = self.busless_parent(nic) if nic.bus is None and self.m.has_tree else nic.parent
            near_gpu = nic.parent in gpu_bridges and nic.parent in self.m.bridges
            ports: list[NicPort | None] = [*nic.ports] or [None]
            function: list[tuple[bool, dict]] = []  # (backend, entry) of each port of this function
            for port in ports:
                assumed: list[str] = []
                name = port.name if port is not None else None
                gdr = port.gdr if port is not None else None
                if name is not None:
                    rdma_name = bool(RDMA_NAME.match(name))
                elif "rdma-nics" in self.m.listed:
                    rdma_name = False  # the inputs list every RDMA device, and this function has none
                else:  # a skeleton: NCCL lists the PCI device only
                    rdma_name = nic.fabric == "infiniband" or near_gpu or bool(gdr)
                libfabric = libfabric_transport(nic, name)
                rdma_name = rdma_name or libfabric is not None
                is_backend = bool(gdr) or rdma_name  # NCCL runs on every RDMA device, GPUDirect or not
                if libfabric is not None:
                    transport = libfabric
                elif not rdma_name:
                    transport = "tcp"
                elif nic.fabric == "infiniband":
                    transport = "infiniband"
                else:
                    transport = "rocev2"
                speed = port.speed if port is not None else None
                part, override = self.nic_part(nic, speed, transport, gdr)
                known = catalogue.get(part)
                if gdr is not None and known is not None and transport != "tcp" \
                        and (known.gpudirect != gdr or (gpus_gdr is not None and gpus_gdr != gdr)):
                    # the machine's gdr where it is not the part's or not the GPUs': written, and HW207 compares
                    override = {**(override or {}), "gpudirect": gdr}
                entry: dict[str, Any] = {"id": "", "part": part}
                if override:
                    entry["override"] = override
                entry["role"] = "backend" if is_backend else "ingestion" if transport == "tcp" else "frontend"
                entry["transport"] = transport
                # a name the input does not give is left out, never a placeholder: NCCL finds an
                # unnamed RDMA device by its bus id, and an unknown interface is HW603's
                if transport != "tcp" and name:
                    entry["device"] = name
                if interface := self.interface(nic, port, transport, name):
                    entry["interface"] = interface
                if port is not None and port.port != 1:
                    entry["port"] = port.port
                part_model = catalogue.get(part)
                link, pcie_override, trained = self.device_link(nic.link, part_model.pcie if part_model else None, assumed, "NIC")
                if nic.shown_as and link is None and trained is None:
                    trained = self.sandboxed_link(nic, assumed)
                    link = {"gen": trained[0], "width": trained[1]}
                if pcie_override:
                    entry.setdefault("override", {})["pcie"] = pcie_override
                upstream = self.upstream(parent)
                if parent != nic.parent:  # an assumed place, which diff does not take for a fact
                    moved = (f"the input shows it under the bridge {nic.parent} without a PCI device of its own: "
                             "attached to the bridge's CPU, as NCCL attaches a NIC that is no PCI device")
                    upstream = {"value": upstream["value"], "assumed": f"{upstream['assumed']}; {moved}"} \
                        if isinstance(upstream, dict) else {"value": upstream, "assumed": moved}
                entry["pcie"] = {"upstream": upstream, "bus": self.bus(nic.bus)}
                if link:
                    entry["pcie"]["link"] = link
                entry["_link"], entry["_key"] = trained, nic.key
                _note(entry, assumed)
                function.append((is_backend, entry))
            for is_backend, entry in _as_card(function):
                (backend_entries if is_backend else other_pairs).append((nic, entry))
        # the functions .0, .1, ... of one PCI device are its ports, on its one link (a ConnectX card)
        backend_entries = _merge_functions(backend_entries)
        other_entries = [entry for _, entry in _merge_functions(other_pairs)]
        # ids, GPU pairing (backend NICs and GPUs under the same bridge, in bus order)
        for i, (_nic, entry) in enumerate(backend_entries):
            entry["id"] = f"nic{i}"
        for i, entry in enumerate(other_entries):
            entry["id"] = f"fe{i}"
        for entry in (*(e for _, e in backend_entries), *other_entries):
            for position, port in enumerate(entry.get("ports", ())):
                number = port.pop("_port")
                port["id"] = f"{entry['id']}p{number}"
                port.update({k: port.pop(k) for k in ("device", "interface", "bus") if k in port})  # after the id
                if number != position + 1:
                    port["port"] = number
        for entry in (*(e for _, e in backend_entries), *other_entries):
            trained = entry.pop("_link")
            if trained:
                self.links[entry["id"]] = trained
            self.ids.setdefault(entry.pop("_key"), entry["id"])  # a function's first port names it
        # a backend NIC serves the GPUs below the lowest bridge above it that has any (the GPUs
        # NCCL finds nearest, PIX or PXB: a GPU and a NIC on two downstream ports of one PEX switch)
        gpus_by_bridge: dict[str, list[str]] = {}
        for gpu in self.m.gpus_in_order():
            for bridge in self.bridges_above(gpu.parent):
                gpus_by_bridge.setdefault(bridge, []).append(self.gpu_ids[gpu.key])
        by_bridge: dict[str, list[dict]] = {}
        for nic, entry in backend_entries:
            # on a NUMA node itself, a NIC is placed beside no GPU
            nearest = next((b for b in self.bridges_above(nic.parent) if b in gpus_by_bridge), None) if nic.bus else None
            if nearest is not None:
                by_bridge.setdefault(nearest, []).append(entry)
        served: dict[str, int] = {}
        for bridge, entries in by_bridge.items():
            for entry, gpu_ids in _serving(entries, gpus_by_bridge.get(bridge, [])):
                pairing = ("gpu", gpu_ids[0]) if len(gpu_ids) == 1 else ("gpus", list(gpu_ids))
                for target in entry.get("ports") or [entry]:
                    items = list(target.items())
                    keys = [k for k, _ in items]
                    at = keys.index("transport") + 1 if "transport" in keys else keys.index("id") + 1
                    target.clear()
                    target.update(items[:at] + [pairing] + items[at:])
                for gpu_id in gpu_ids:
                    served[gpu_id] = served.get(gpu_id, 0) + 1
        dedicated = (all("gpu" in p for _, e in backend_entries for p in e.get("ports") or [e])
                     and len(served) == len(self.m.gpus))
        backend: dict[str, Any] | None = None
        gdr_values = [g.gdr for g in self.m.gpus.values() if g.gdr is not None]
        if len(set(gdr_values)) > 1:  # one backend.gpudirect holds the GPUs' side: say which GPUs it overrides
            on = ", ".join(g.key for g in self.m.gpus_in_order() if g.gdr)
            self.notes.append(f"the input gives gdr 1 for GPU(s) {on} and gdr 0 for the others: backend.gpudirect "
                              "(one value for every GPU) is drafted false, so nccl-topo.xml writes gdr 0 for them all")
        if backend_entries or gdr_values:  # the input says whether GPUDirect works: the backend declares it, as it is
            transports = Counter(e["transport"] for _, e in backend_entries)
            if gdr_values:
                gpudirect = all(gdr_values)
            else:
                gpudirect = any(p.gdr for n, _ in backend_entries for p in n.ports)
            backend = {"transport": transports.most_common(1)[0][0] if transports else "tcp"}
            if backend_entries and dedicated:
                backend["nic_per_gpu"] = True
            if gpudirect:
                backend["gpudirect"] = True
            elif not gdr_values and not any(p.gdr is not None for n, _ in backend_entries for p in n.ports):
                backend["gpudirect"] = "detect"
                backend["assumed"] = "the input does not say whether GPUDirect RDMA works (no gdr attribute): left to NCCL's detection"
            backend["source"] = f"observed: {self.source()}"
        return [e for _, e in backend_entries] + other_entries, backend

    def busless_parent(self, nic: Nic) -> str:
        """Where a NIC without a PCI device in a PCIe tree (an NCCL `<nic>` directly under `<cpu>`,
        as NCCL writes a virtio NIC or Azure's eth0, or under a bridge a sandbox shows) is drafted:
        on its CPU, as NCCL attaches such a NIC, with `bus: unknown`. nccl-topo.xml leaves one
        outside the backend to NCCL's detection and writes a backend one under its `<cpu>`."""
        names = ", ".join(p.name for p in nic.ports if p.name) or "a NIC"
        numa = self.m.numa_of(nic.key)
        self.notes.append(f"{nic.where}: {names} has no PCI device in the input (virtual, fused, or hidden by a "
                          "sandbox): drafted with bus unknown on its CPU, where NCCL attaches it")
        return nic.parent if nic.parent.startswith(NUMA_PREFIX) or numa is None else f"{NUMA_PREFIX}{numa}"

    def bridges_above(self, key: str) -> list[str]:
        """The bridge `key` and the bridges above it, nearest first (cycle-safe; empty for a NUMA node)."""
        found: list[str] = []
        while key in self.m.bridges and key not in found:
            found.append(key)
            key = self.m.bridges[key].parent
        return found

    @staticmethod
    def interface(nic: Nic, port: NicPort | None, transport: str, name: str | None) -> str | None:
        """The network interface of one NIC port as the input names it, where the generated files
        would use it (a TCP NIC's net name; an lstopo interface of a RoCE or Slingshot NIC); else None."""
        if transport == "tcp" and name:
            return name
        if transport in ("rocev2", "tcp", "slingshot") and nic.interfaces:
            return nic.interfaces[min(len(nic.interfaces), (port.port if port else 1)) - 1]
        return None

    def nic_part(self, nic: Nic, speed: float | None, transport: str, gdr: bool | None) -> tuple[str, dict | None]:
        """(`part`, `override`) of one NIC port: the one catalogue NIC with the observed PCI
        vendor/device that runs the transport (at the observed speed, where the input gives one),
        as `identify.choose` settles ties; else `unknown` with what the input gives: the PCI ids,
        the speed, RDMA and GPUDirect (and a note naming the tied parts)."""
        if nic.vendor and nic.device:
            matches = [n for n, p in self.parts("nics").items() if (p.pci_vendor, p.pci_device) == (nic.vendor, nic.device)
                       and transport in p.transports and (speed is None or p.speed == speed)]
            chosen = choose(self.cat, "nics", matches, None)
            if chosen.part:
                return chosen.part, None
            note = candidates_note(f"{nic.where}", f"the NIC {nic.vendor}:{nic.device}", chosen.candidates)
            if chosen.candidates and note not in self.notes:  # once per function, not per port
                self.notes.append(note)
        seen: dict[str, Any] = {"pci_vendor": nic.vendor, "pci_device": nic.device,
                                "speed": None if speed is None else f"{speed * 8 / 1e9:g} Gb/s",
                                "rdma": True if transport != "tcp" else None, "gpudirect": gdr}
        return UNKNOWN, {k: v for k, v in seen.items() if v is not None} or None

    # ------------------------------------------------------------ the document

    def build(self) -> Draft:
        spec: dict[str, Any] = {"hwspec": 1, "kind": "node", "name": self.name,
                                "title": f"{self.name} (imported from a live node)",
                                "source": self.source()}
        spec["sources"] = {f"input{i}": f"{_file_text(file)}: {what}" for i, (file, what) in enumerate(self.m.sources)}
        spec["sockets"] = self.sockets()
        bridges = self.bridges()
        gpus, baseboard, nvlink = self.gpus()
        nics, backend = self.nics()
        self.nvlink_domains()
        self.nvlinks_down()
        self.virtual_bridges(bridges)
        self.max_oversubscription(bridges, [*gpus, *nics])
        roots = [b for b in bridges if b.get("kind") == "root-port"]
        switches = [b for b in bridges if b.get("kind") != "root-port"]
        backend_nics = [n for n in nics if n["role"] == "backend"]
        host_nics = [n for n in nics if n["role"] != "backend"]
        sections = [("sockets", [spec["sockets"]], "i"), ("pcie", [roots, switches], "i"), ("baseboard", baseboard, None),
                    ("gpus", [gpus], "g"), ("nvlink", nvlink, None),
                    ("nics", [backend_nics, host_nics], "g" if all("gpu" in n for n in backend_nics) else "i"),
                    ("backend", backend, None)]
        flat = dict(spec)
        for key, value, var in sections:
            if not value or (var and not any(value)):
                spec.pop(key, None)
                continue
            if var is None:
                spec[key] = flat[key] = value
                continue
            flat[key] = [entry for group in value for entry in group]
            spec[key] = [entry for i, group in enumerate(value) for entry in fold(group, var if i == 0 else "i")]
        return Draft(spec, flat, self.notes)


def draft_platform(machine: Machine, catalogue, name: str) -> Draft:
    """The draft platform for `machine` (dict in writing order) with notes for the user."""
    return _Writer(machine, catalogue, _name(name)).build()


def _expanded_equal(folded: dict, flat: dict) -> bool:
    """Whether `folded` (with repeat blocks) means what `flat` means: both expanded by the
    loader's own expansion, scalars compared as text."""
    from hwspec.source.expand import expand
    from hwspec.source.loader import load_yaml_text

    def norm(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: norm(v) for k, v in x.items()}
        if isinstance(x, list):
            return [norm(v) for v in x]
        return str(x)

    try:
        data = [expand(load_yaml_text(dump_yaml(doc), "draft.yaml")).data for doc in (folded, flat)]
    except Exception:
        return False
    return norm(data[0]) == norm(data[1])


def draft_text(machine: Machine, catalogue, name: str) -> tuple[str, list[str]]:
    """The draft as YAML text (repeat blocks checked by expansion) and the notes."""
    text, draft = draft_document(machine, catalogue, name)
    return text, draft.notes


def draft_document(machine: Machine, catalogue, name: str) -> tuple[str, Draft]:
    """The draft as YAML text (repeat blocks checked by expansion) and the `Draft` it writes."""
    draft = draft_platform(machine, catalogue, name)
    spec = draft.spec
    if not _expanded_equal(spec, draft.flat):
        spec = draft.flat
    header = ["# Draft platform file written by 'hwspec import' from a live node.",
              "# Check every 'assumed:' note: those values are not in the inputs.",
              "# Then: hwspec validate THIS_FILE, and 'hwspec diff THIS_FILE --live' (or INPUT...) on each node."]
    header += [f"# note: {comment(n)}" for n in draft.notes]
    return "\n".join(header) + "\n" + dump_yaml(spec), draft
