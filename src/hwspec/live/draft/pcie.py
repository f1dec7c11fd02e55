"""The PCIe tree of a draft: the root ports and switches on the way to a GPU or NIC, and the
links every device trains at (as the input gives them, else guessed and marked `assumed`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from hwspec.live.draft.context import DraftContext, Entry, note_assumed
from hwspec.live.observed import NCCL_EMPTY_SPEED_GEN, NUMA_PREFIX, Bridge, Link, Nic
from hwspec.model.node import PcieLink

if TYPE_CHECKING:
    from hwspec.spec.models import PcieLink as PartLink

Written = tuple[Entry | None, Entry | None, tuple[int, int] | None]
"""A device's `pcie.link` to write (None: the part's), its part's `pcie` override (None: none) and
the (gen, width) it trains at (None: unknown)."""


class PcieWriter:
    """Writes the bridges of the draft and the links of its devices (`device_link`), recording
    each one's trained (gen, width) in `ctx.links`."""

    def __init__(self, ctx: DraftContext):
        self.ctx, self.m = ctx, ctx.machine

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

    def bridges(self) -> list[Entry]:
        """Root ports (bridges on a NUMA node) and switches on the way to a GPU or NIC."""
        counters = {"rp": 0, "sw": 0}
        out = []
        for key in self.wanted():
            bridge = self.m.bridges[key]
            prefix = "rp" if bridge.parent.startswith(NUMA_PREFIX) else "sw"
            ident = f"{prefix}{counters[prefix]}"
            counters[prefix] += 1
            self.ctx.ids[key] = ident
            assumed: list[str] = []
            entry: dict[str, Any] = {"id": ident}
            if prefix == "rp":
                entry["kind"] = "root-port"
            entry.update(self.switch_identity(bridge))
            entry["upstream"] = self.ctx.upstream(bridge.parent, key)
            entry["bus"] = self.ctx.bus(bridge.bus)
            link = bridge.link
            gen, width = (link.gen, link.width) if link else (None, None)
            if link is not None and (link.width_zero or link.speed_unstated):
                entry["link"] = self.as_nccl_reads(link, self.fastest_gen_below(key), assumed)
                trained = entry["link"].get("physical", {}).get("value", entry["link"])  # hwspec's figures: the physical link
                self.ctx.links[ident] = (trained["gen"], trained["width"])
            else:
                if gen is None or width is None:
                    gen, width = self._guess_link(link, key, assumed)
                entry["link"] = {"gen": gen, "width": width}
                self.ctx.links[ident] = (gen, width)
            note_assumed(entry, assumed)
            out.append(entry)
        return out

    def switch_identity(self, bridge: Bridge) -> Entry:
        """`part` and `pci` of a bridge from the ids the input shows: the catalogue switch part
        whose vendor/device they are (the family entry where several chips share the id), and
        the observed ids the part does not imply (all of them without a part). Nothing when the
        input gives no ids."""
        if not (bridge.vendor and bridge.device):
            return {}
        catalogue = self.ctx.parts("pcie_switches")
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

    def fastest_gen_below(self, key: str) -> int | None:
        """The fastest PCIe generation the input gives a device or bridge below bridge `key`."""
        gens = [d.link.gen for d in (*self.m.gpus.values(), *self.m.nics.values(), *self.m.bridges.values())
                if d.link and d.link.gen and key in self.m.ancestors(d.key)]
        return max(gens, default=None)

    @staticmethod
    def as_nccl_reads(link: Link, physical_gen: int | None, assumed: list[str]) -> dict[str, Any]:
        """A bridge link the input states at width 0 or with an empty speed (a VM's host bridge, a
        device under the root complex) as NCCL reads it, so that nccl-topo.xml gives NCCL what its
        own dump does: the width as stated (0, which NCCL reads as x16) and the speed as stated, an
        empty one as Gen3 (`NCCL_EMPTY_SPEED_GEN`); with a `physical` link for hwspec's own figures
        where width 0 leaves none (x16 at the generation given, or the fastest below)."""
        gen = link.gen or NCCL_EMPTY_SPEED_GEN
        if link.gen is None:
            assumed.append(f"the input gives this link no speed (link_speed=\"\"): Gen{gen}, as NCCL reads it")
        written: dict[str, Any] = {"gen": gen, "width": 0 if link.width_zero else link.width or 16}
        if link.width_zero:
            fast = link.gen or physical_gen or gen
            written["physical"] = {"value": {"gen": fast, "width": 16}, "assumed": (
                f"the machine reports width 0 for this bridge (a VM's; NCCL reads it as x16): Gen{fast} x16 assumed")}
        return written

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

    def sandboxed_link(self, nic: Nic, assumed: list[str]) -> tuple[Entry, None, tuple[int, int]]:
        """(pcie.link to write, no part override, the (gen, width) it trains at) of a NIC whose
        function a sandbox shows as a bridge (`Nic.shown_as`): its own link is taken as x16 at the
        GPUs' fastest generation (Gen4 without GPUs), as a bridge's is guessed. Where the input
        gives the bridge function a link (NCCL's `link_speed=""`, `link_width="0"`), that is what
        NCCL reads for the NIC: written as presented (`as_nccl_reads`), the guess as `physical`."""
        gens = [g.link.gen for g in self.m.gpus.values() if g.link and g.link.gen]
        gen = max(gens, default=4)
        if nic.link is None:
            assumed.append(f"the input shows this NIC's function as class {nic.shown_as} without a link (a sandbox): "
                           f"taken as Gen{gen} x16, the GPUs' generation")
            return {"gen": gen, "width": 16}, None, (gen, 16)
        written = self.as_nccl_reads(nic.link, gen, assumed)
        written["physical"] = {"value": {"gen": gen, "width": 16}, "assumed": (
            f"the input shows this NIC's function as class {nic.shown_as} (a sandbox): its own link taken as Gen{gen} x16, "
            "the GPUs' generation")}
        return written, None, (gen, 16)

    @staticmethod
    def _link_not_above(bandwidth: float, assumed: list[str]) -> tuple[int, int]:
        """The fastest link no faster than `bandwidth`, a figure no PCIe link has exactly."""
        fitting = [(PcieLink(g, w).bandwidth, g, w) for g in range(1, 7) for w in (1, 2, 4, 8, 16, 32)
                   if PcieLink(g, w).bandwidth <= bandwidth]
        _, gen, width = max(fitting, default=(0.0, 1, 1))
        assumed.append(f"the input gives the link as {bandwidth / 1e9:.2f} GB/s, which no PCIe link is: "
                       f"taken as Gen{gen} x{width}, the fastest not above it")
        return gen, width

    def max_oversubscription(self, bridges: list[Entry], devices: list[Entry]) -> None:
        """Set `max_oversubscription` where the links below a bridge add up to more than 2x its uplink (HW103)."""
        below: dict[str, float] = {}
        for entry in (*bridges, *devices):
            link = self.ctx.links.get(entry["id"])
            parent = entry.get("upstream") or entry.get("pcie", {}).get("upstream")
            if isinstance(parent, dict):
                parent = parent["value"]
            if link and parent:
                below[parent] = below.get(parent, 0.0) + PcieLink(*link).bandwidth
        for entry in bridges:
            ratio = below.get(entry["id"], 0.0) / PcieLink(*self.ctx.links[entry["id"]]).bandwidth
            if ratio > 2:
                entry["max_oversubscription"] = math.ceil(ratio)

    def device_link(self, link: Link | None, part_link: PartLink | None, assumed: list[str], what: str) -> Written:
        """(pcie.link to write or None, part pcie override or None, the (gen, width) it trains at)
        for an observed device link. A width-0 link (a device passed through to a VM) is written
        as presented with the part's width as `physical`. Without a part (`part: unknown`) the
        link is what the input gives, and none (trained at None) where it gives none."""
        if part_link is None:
            return self._unknown_part_link(link, assumed)
        if link is not None and link.speed_unstated and link.gen is None:
            return self._unstated_speed_link(link, (part_link.generation, part_link.width), assumed, what)
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

    @staticmethod
    def _unstated_speed_link(link: Link, physical: tuple[int, int], assumed: list[str],
                             what: str) -> tuple[Entry, None, tuple[int, int]]:
        """A device link the input gives without a speed (NCCL's `link_speed=""`, often at width 0:
        a VM's device under the root complex): written as NCCL reads it, Gen3 at the stated width
        (0 stays 0, which NCCL reads as x16), so that nccl-topo.xml gives NCCL what its own dump
        does; `physical` is the part's (or x16 at Gen3 without one), assumed."""
        gen, width = NCCL_EMPTY_SPEED_GEN, 0 if link.width_zero else link.width or 16
        assumed.append(f"the input gives the {what}'s link no speed (link_speed=\"\"): Gen{gen}, as NCCL reads it")
        written = {"gen": gen, "width": width, "physical": {"value": {"gen": physical[0], "width": physical[1]}, "assumed": (
            f"the input gives no speed for the {what}'s link: Gen{physical[0]} x{physical[1]} assumed")}}
        return written, None, physical

    def _unknown_part_link(self, link: Link | None, assumed: list[str]) -> tuple[Entry | None, None, tuple[int, int] | None]:
        """The link of a device whose part is unknown: as the input gives it (a hwloc bandwidth as
        its widest exact form); a VM's width 0 as presented; nothing where the input gives none."""
        if link is None:
            return None, None, None
        if link.speed_unstated and link.gen is None:
            written, _, trained = self._unstated_speed_link(link, (NCCL_EMPTY_SPEED_GEN, link.width or 16), assumed, "device")
            return written, None, trained
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

    def virtual_bridges(self, bridges: list[Entry]) -> None:
        """A bridge presented slower than a device below it is a VM's virtual one when it shows
        QEMU's default Gen1 x1, or when the machine is a VM (a device reports width 0): it gets
        `physical`, the fastest link below it. Other slower bridges
        stay as observed (a degraded link is for `validate` to report)."""
        in_vm = any(d.link is not None and d.link.width_zero for d in (*self.m.gpus.values(), *self.m.nics.values()))
        key_of = {ident: key for key, ident in self.ctx.ids.items()}
        for entry in reversed(bridges):  # bottom-up: a bridge below may be virtual too
            if not in_vm and (entry["link"]["gen"], entry["link"]["width"]) != (1, 1):
                continue
            below = [self.ctx.links[self.ctx.ids[d.key]] for d in (*self.m.gpus.values(), *self.m.nics.values(), *self.m.bridges.values())
                     if d.key in self.ctx.ids and self.ctx.ids[d.key] in self.ctx.links and key_of.get(entry["id"]) in self.m.ancestors(d.key)]
            gen, width = entry["link"]["gen"], entry["link"]["width"]
            fastest = max(below, default=(gen, width))
            if fastest[0] > gen:
                entry["link"]["physical"] = {"value": {"gen": fastest[0], "width": fastest[1]}, "assumed": (
                    f"the VM presents a virtual Gen{gen} x{width} bridge: taken to be the Gen{fastest[0]} x{fastest[1]} "
                    "of the links below")}
                self.ctx.links[entry["id"]] = fastest

    def bridges_above(self, key: str) -> list[str]:
        """The bridge `key` and the bridges above it, nearest first (cycle-safe; empty for a NUMA node)."""
        found: list[str] = []
        while key in self.m.bridges and key not in found:
            found.append(key)
            key = self.m.bridges[key].parent
        return found
