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

The writers, one job each: `sockets` (CPUs, NUMA nodes, memory), `pcie` (bridges and links),
`gpus` (GPUs and their NVLink fabric) and `nics` (NICs and `backend:`), sharing a
`context.DraftContext`; this module puts their sections together in the spec's order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hwspec.live.draft.context import DraftContext, Entry, file_text
from hwspec.live.draft.gpus import GpusWriter
from hwspec.live.draft.nics import NicsWriter
from hwspec.live.draft.pcie import PcieWriter
from hwspec.live.draft.sockets import SocketsWriter
from hwspec.live.observed import Machine
from hwspec.live.repeat import fold
from hwspec.source.dumper import dump_yaml
from hwspec.text import comment

if TYPE_CHECKING:
    from hwspec.model.parts import Catalogue

ID_SAFE = re.compile(r"[^a-z0-9_-]+")


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


def _name(text: str) -> str:
    name = ID_SAFE.sub("-", text.lower()).strip("-_")
    if not name or not name[0].isalpha():
        name = "node-" + name
    return name[:64]


def draft_platform(machine: Machine, catalogue: Catalogue, name: str) -> Draft:
    """The draft platform for `machine` (dict in writing order) with notes for the user."""
    name = _name(name)
    ctx = DraftContext(machine, catalogue)
    pcie = PcieWriter(ctx)
    gpu_writer = GpusWriter(ctx, pcie)
    spec: dict[str, Any] = {"hwspec": 1, "kind": "node", "name": name,
                            "title": f"{name} (imported from a live node)",
                            "source": ctx.source()}
    spec["sources"] = {f"input{i}": f"{file_text(file)}: {what}" for i, (file, what) in enumerate(machine.sources)}
    spec["sockets"] = SocketsWriter(ctx).entries()
    bridges = pcie.bridges()
    gpus, baseboard, nvlink = gpu_writer.entries()
    nics, backend = NicsWriter(ctx, pcie).entries()
    gpu_writer.nvlink_domains()
    gpu_writer.nvlinks_down()
    pcie.virtual_bridges(bridges)
    pcie.max_oversubscription(bridges, [*gpus, *nics])
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
    return Draft(spec, flat, ctx.notes)


def _expanded_equal(folded: Entry, flat: Entry) -> bool:
    """Whether `folded` (with repeat blocks) means what `flat` means: both expanded by the
    loader's own expansion, scalars compared as text."""
    from hwspec.source.expand import expand
    from hwspec.source.loader import load_yaml_text

    def norm(x: object) -> object:
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


def draft_text(machine: Machine, catalogue: Catalogue, name: str) -> tuple[str, list[str]]:
    """The draft as YAML text (repeat blocks checked by expansion) and the notes."""
    text, draft = draft_document(machine, catalogue, name)
    return text, draft.notes


def draft_document(machine: Machine, catalogue: Catalogue, name: str) -> tuple[str, Draft]:
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
