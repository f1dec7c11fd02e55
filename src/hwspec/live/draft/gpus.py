"""The GPUs of a draft and their NVLink fabric: `gpus:`, `baseboard:` and `nvlink:`, and notes on
what a node platform cannot say (NVLink domains, inactive links)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from hwspec.diagnostics import Location
from hwspec.live.draft.context import UNKNOWN, DraftContext, Entry, note_assumed
from hwspec.live.draft.pcie import PcieWriter
from hwspec.live.identify import candidates_note, choose, gpu_fits
from hwspec.live.lstopo_nvlinks import HWLOC_LINK_MBPS
from hwspec.live.observed import CPU, NUMA_PREFIX, NVSWITCH, Gpu

if TYPE_CHECKING:
    from hwspec.spec.models import GpuPart

Counts = dict[tuple[str, str], tuple[int, Location]]
"""NVLinks by (GPU key, target key): how many, and where the input shows them (`Machine.nvlink_counts`)."""

GPU_VENDORS = {"0x10de": "nvidia", "0x1002": "amd", "0x8086": "intel"}
"""PCI vendor ids of the spec's GPU vendors; another id is `other`."""


class GpusWriter:
    """Writes the GPUs (part by PCI ids and NVLink count), the baseboard and NVLink fabric they
    show, and notes on their NVLink domains and inactive links."""

    def __init__(self, ctx: DraftContext, pcie: PcieWriter):
        self.ctx, self.m, self.pcie = ctx, ctx.machine, pcie

    def entries(self) -> tuple[list[Entry], Entry | None, Entry | None]:
        """The GPU entries (`gpu0`... in bus order: the CUDA order), and the `baseboard:` and
        `nvlink:` sections their NVLinks show (None where they show none)."""
        gpus = self.m.gpus_in_order()
        catalogue = self.ctx.parts("gpus")
        counts = self.m.nvlink_counts()
        per_gpu: Counter[str] = Counter()
        for (gpu_key, _target), (count, _where) in counts.items():
            per_gpu[gpu_key] += count
        out = []
        for index, gpu in enumerate(gpus):
            ident = f"gpu{index}"
            self.ctx.ids[gpu.key] = ident
            assumed: list[str] = []
            entry: dict[str, Any] = {"id": ident}
            candidates = [n for n, p in catalogue.items() if gpu_fits(p, gpu)]
            links_needed = per_gpu.get(gpu.key, 0)
            fitting = [n for n in candidates if catalogue[n].fabric.links >= links_needed]
            chosen = choose(self.ctx.catalogue, "gpus", fitting or candidates, gpu.model_name)
            override: dict[str, Any] = {}
            if chosen.part:
                part = chosen.part
                spec_part = catalogue[part]
                exact = not self.board_drawable()  # without listed switches, 'nvswitch' uses all of the part's links
                if links_needed > spec_part.fabric.links or (exact and any(t == NVSWITCH for (g, t) in counts if g == gpu.key)
                                                             and links_needed != spec_part.fabric.links):
                    override["fabric"] = {"links": links_needed}
                part_link = spec_part.pcie
                self.per_link_note(ident, gpu.key, part, spec_part.fabric.kind)
            else:
                part, part_link = UNKNOWN, None
                override = self.gpu_identity(gpu, links_needed)
                if chosen.candidates:
                    self.ctx.notes.append(candidates_note(ident, f"the GPU {gpu.vendor}:{gpu.device}", chosen.candidates))
                    self.shared_identity(override, [catalogue[n] for n in chosen.candidates], chosen.candidates, assumed)
            entry["part"] = part
            link, pcie_override, trained = self.pcie.device_link(gpu.link, part_link, assumed, "GPU")
            if pcie_override:
                override["pcie"] = pcie_override
            if override:
                entry["override"] = override
            entry["pcie"] = {"upstream": self.ctx.upstream(gpu.parent, gpu.key), "bus": self.ctx.bus(gpu.bus)}
            if link:
                entry["pcie"]["link"] = link
            if trained:
                self.ctx.links[ident] = trained
            note_assumed(entry, assumed)
            out.append(entry)
        baseboard, nvlink = self.fabric(gpus, out, counts)
        return out, baseboard, nvlink

    def per_link_note(self, ident: str, gpu_key: str, part: str, kind: str) -> None:
        """A note where the input counted the GPU's NVLinks from a bandwidth (hwloc's matrix) at a
        per-link figure other than the one hwloc gives the part's NVLink version: the count is then
        the input's bandwidth over the wrong figure."""
        expected = HWLOC_LINK_MBPS.get(kind)
        for figure in sorted({link.per_link for link in self.m.nvlinks if link.gpu == gpu_key and link.per_link}):
            if expected is None or figure != expected * 1e6:
                known = f"{expected} MB/s" if expected else "a figure hwloc does not have"
                self.ctx.notes.append(f"{ident}: the input's NVLinks were counted at {figure / 1e6:g} MB/s each, but hwloc counts "
                                      f"the links of {part} ({kind}) at {known}: check the NVLink counts")

    def gpu_identity(self, gpu: Gpu, links: int) -> Entry:
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

    @staticmethod
    def shared_identity(override: Entry, parts: list[GpuPart], names: tuple[str, ...], assumed: list[str]) -> None:
        """Complete the identity of a GPU left `part: unknown` between catalogue parts of its
        device id with what those parts all agree on and the input does not give: CUDA's `sm`
        (NCCL's `<gpu sm>`), an AMD GPU's `gcn` and `hip_arch` (RCCL's `gcn` and `arch`, which it
        does not detect). Each such value is noted in `assumed` with the parts it comes from."""
        keys = ("sm",) if override.get("vendor") == "nvidia" else ("gcn", "hip_arch") if override.get("vendor") == "amd" else ()
        for key in keys:
            values = {getattr(part, key) for part in parts}
            if key in override or len(values) != 1 or next(iter(values)) in (None, 0):
                continue
            override[key] = next(iter(values))
            assumed.append(f"{key} {override[key]}: what the catalogue's parts of its device id ({', '.join(names)}) all have")

    def fabric(self, gpus: list[Gpu], entries: list[Entry], counts: Counts) -> tuple[Entry | None, Entry | None]:
        """(`baseboard:`, `nvlink:`) from the NVLink `counts` the input shows: an HGX board for links to
        NVSwitches, else the GPU pairs as a named pattern or a list; GPU `entries` get their slots.
        NVLinks to a CPU (POWER8/POWER9) become `nvlink.cpu_links`, beside the GPU fabric (an empty
        `topology` list where the GPUs have no NVLinks between them)."""
        to_cpu = [(gpu, count) for gpu in gpus if (count := counts.get((gpu.key, CPU), (0, None))[0])]
        baseboard, nvlink = self.gpu_fabric(gpus, entries, {k: v for k, v in counts.items() if k[1] != CPU})
        if to_cpu:
            nvlink = nvlink or {"topology": [], "source": f"observed: {self.ctx.source()}"}
            source = nvlink.pop("source")
            nvlink["cpu_links"] = [{"gpu": self.ctx.ids[gpu.key], "socket": self.socket_id(gpu.key), "links": count}
                                   for gpu, count in to_cpu]
            nvlink["source"] = source
        return baseboard, nvlink

    def socket_id(self, gpu_key: str) -> str:
        """The spec id of the socket (NUMA node) the GPU hangs off: NCCL joins a GPU's NVLinks to a
        CPU to that one. The first socket where the input gives none, as `DraftContext.upstream` does."""
        for parent in self.m.ancestors(gpu_key):
            if parent in self.ctx.ids and parent.startswith(NUMA_PREFIX):
                return self.ctx.ids[parent]
        return next(iter(self.ctx.ids.values()))

    def gpu_fabric(self, gpus: list[Gpu], entries: list[Entry], counts: Counts) -> tuple[Entry | None, Entry | None]:
        """(`baseboard:`, `nvlink:`) of the GPU-to-GPU and GPU-to-NVSwitch `counts`."""
        if not counts:
            self.unlinked_nvswitches()
            return None, None
        source = f"observed: {self.ctx.source()}"
        if any(t == NVSWITCH for (_g, t) in counts):
            if any(t != NVSWITCH for (_g, t) in counts):
                self.ctx.notes.append("GPU-to-GPU NVLinks beside NVSwitch links are left out of the draft")
            return self.nvswitch_board(gpus, entries), {"topology": "nvswitch", "source": source}
        index = {g.key: i for i, g in enumerate(gpus)}
        pairs: dict[tuple[int, int], int] = {}
        for (a, b), (count, where) in counts.items():
            if a not in index or b not in index:
                continue
            back = counts.get((b, a), (0, None))[0]
            if back != count:
                self.ctx.notes.append(f"{where}: NVLink count {count} from {a} to {b} but {back} back: the smaller is used")
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
        for (i, j) in pairs:
            degree[i] += 1
            degree[j] += 1
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
        for (i, j), c in pairs.items():
            bandwidth[i] += c
            bandwidth[j] += c
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
        self.ctx.notes.append(f"{len(buses)} NVSwitch chip(s) in the input ({shown}) but no NVLink of any GPU to them: "
                          "the NVLink fabric is left out of the draft (describe 'baseboard:' and 'nvlink:' from the "
                          "board's documentation, or import an NCCL topology dump, which gives each GPU's links)")

    def nvlink_domains(self) -> None:
        """A note naming the multi-node NVLink domain (cluster UUID and clique, as the fabric
        manager reports them) each group of GPUs is in: a node platform has no field for it."""
        members: dict[tuple[str, int | None], list[str]] = {}
        for gpu in self.m.gpus_in_order():
            if gpu.fabric is not None:
                members.setdefault((gpu.fabric.cluster_uuid, gpu.fabric.clique_id), []).append(self.ctx.ids[gpu.key])
        for (uuid, clique), gpu_ids in members.items():
            clique_text = f", clique {clique}" if clique is not None else ""
            self.ctx.notes.append(f"{', '.join(gpu_ids)} are in the multi-node NVLink domain {uuid}{clique_text} "
                              "(the fabric manager's registration, as NVML or nvidia-smi -q reports it): "
                              "the domain is the cluster's, not described in a node platform")

    def nvlinks_down(self) -> None:
        """A note per GPU with inactive NVLinks (`nvidia-smi nvlink -s`): the draft describes the
        links in use, and a link down may be a fault or one the board leaves unwired."""
        for gpu in self.m.gpus_in_order():
            down = sorted(link for link, active in (gpu.nvlink_state or {}).items() if not active)
            if down:
                active = len(gpu.nvlink_state or {}) - len(down)
                self.ctx.notes.append(f"{self.ctx.ids[gpu.key]}: NVLink{'s' if len(down) > 1 else ''} {', '.join(map(str, down))} "
                                  f"inactive, {active} active "
                                  "(nvidia-smi nvlink -s): the draft describes the active ones")

    def switch_shapes(self) -> dict[str | None, dict[str, int]]:
        """NVSwitch bus id (None: unnamed) -> {GPU key: links to it}, switches by bus id."""
        shapes: dict[str | None, dict[str, int]] = {}
        for gpu_key, links in self.m.nvswitch_links().items():
            for bus, count in links.items():
                shapes.setdefault(bus, {})[gpu_key] = count
        return dict(sorted(shapes.items(), key=lambda kv: (kv[0] is None, kv[0] or "")))

    def board_drawable(self) -> bool:
        """Whether each NVSwitch has the same number of links from every GPU linked to it (an
        HGX board: all GPUs to every switch; a DGX-2: each board's GPUs to its own switches)."""
        shapes = self.switch_shapes()
        return bool(shapes) and all(len(set(per_gpu.values())) == 1 for per_gpu in shapes.values())

    def nvswitch_board(self, gpus: list[Gpu], entries: list[Entry]) -> Entry | None:
        """An HGX-style board with the NVSwitch chips the input names, when each switch has the
        same links from every GPU linked to it; a switch only some GPUs are linked to lists them
        (`gpus:`). Else None."""
        if not self.board_drawable():
            self.ctx.notes.append("the GPUs have different numbers of links to one NVSwitch: the board's switches are left out")
            return None
        for i, entry in enumerate(entries):
            items = list(entry.items())
            entry.clear()
            entry.update(items[:2] + [("slot", i)] + items[2:])
        every = set(self.m.gpus)
        switches = []
        for i, (bus, per_gpu) in enumerate(self.switch_shapes().items()):
            switch: dict[str, Any] = {"id": f"nvs{i}"}
            if bus:
                switch["bus"] = bus
            switch["links_per_gpu"] = next(iter(per_gpu.values()))
            if set(per_gpu) != every:
                switch["gpus"] = [self.ctx.ids[g.key] for g in gpus if g.key in per_gpu]
            switches.append(switch)
        return {"kind": "hgx", "slots": len(gpus), "wiring": "nvswitch", "nvswitches": switches,
                "source": f"observed: {self.ctx.source()}",
                "assumed": "the input shows NVSwitch chips and each GPU's links to them: the board is taken to be an HGX baseboard"}
