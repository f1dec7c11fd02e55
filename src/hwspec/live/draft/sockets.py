"""The `sockets:` of a draft: one entry per CPU package, its NUMA nodes, CPUs and memory as the input gives them."""

from __future__ import annotations

import re
from typing import Any

from hwspec.cpulist import format_cpu_list as cpu_list
from hwspec.live.draft.context import UNKNOWN, DraftContext, Entry, note_assumed
from hwspec.live.observed import NUMA_PREFIX, NumaNode
from hwspec.spec.units import format_bytes

SPEC_ARCH = {"x86_64": "x86_64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64", "ppc64": "ppc64"}
"""CPU architecture names as inputs write them -> the spec's."""


def _cpu_name(name: str) -> str:
    """A CPU model name as comparable text: "Intel(R) Xeon(R) Platinum 8174 CPU @ 3.10GHz" and
    "Intel Xeon Platinum 8174" give the same, "AMD EPYC 7V12 48-Core Processor" is "amd epyc 7v12"."""
    name = re.sub(r"\((R|TM)\)|\bCPU @.*$|\b\d+-Core\b|\bProcessor\b", " ", name, flags=re.IGNORECASE)
    return " ".join(name.lower().split())


class SocketsWriter:
    """Writes the sockets of the draft and gives each NUMA node its spec id."""

    def __init__(self, ctx: DraftContext):
        self.ctx, self.m = ctx, ctx.machine

    def entries(self) -> list[Entry]:
        """One entry per socket. NUMA nodes of one package (lstopo on a sub-NUMA-clustered or
        NPS machine) become the socket's `numa_nodes`; a NUMA node whose package is unknown is
        a socket of its own."""
        numa_ids = sorted(self.m.numa)
        if not numa_ids:
            # a CPU the input gives as numaid -1 (NCCL's dump of a VM without NUMA tables) stays -1, as NCCL writes it
            numa_ids = sorted({n for n in (self.m.numa_of(k) for k in (*self.m.gpus, *self.m.nics)) if n is not None and n >= 0}) \
                or [-1 if self.m.unknown_numa_cpu is not None else 0]
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
                self.ctx.ids[f"{NUMA_PREFIX}{group[0]}"] = entry["id"]
                entry.update(self.numa_fields(group[0], assumed))
            else:
                entry["numa_nodes"] = []
                for numa in group:
                    self.ctx.ids[f"{NUMA_PREFIX}{numa}"] = f"numa{numa}"
                    entry["numa_nodes"].append({"id": f"numa{numa}", **self.numa_fields(numa, assumed)})
            note_assumed(entry, assumed)
            out.append(entry)
        return out

    def cpu_part(self, node: NumaNode | None) -> Entry:
        """`part` for the CPU of NUMA node `node`: the catalogue CPU of its CPUID vendor/family/model
        (and of its model name where the input gives one: family/model name a core generation, not
        a SKU, so a Xeon 8174 is not the catalogue's 8280), else `unknown` with the identity the
        input gives as `override`."""
        cpus = self.ctx.parts("cpus")
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
        apus = {(p.pci_vendor, p.pci_device) for p in self.ctx.parts("gpus").values() if p.form_factor == "apu"}
        for index, gpu in enumerate(self.m.gpus_in_order()):
            if (gpu.vendor, gpu.device) in apus and f"{NUMA_PREFIX}{numa}" in self.m.ancestors(gpu.key):
                return f"gpu{index}"
        return None
