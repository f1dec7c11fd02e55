"""What the writers of one draft share (`DraftContext`): the machine, the catalogue, the spec ids
given so far, the links the devices train at and the notes for the user; and the few helpers
every writer uses (`UNKNOWN`, `note_assumed`, `file_text`), and `Entry`, what they write."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, overload

from hwspec.live.observed import NUMA_PREFIX, Machine
from hwspec.live.repeat import Entry as Entry  # what every writer writes, and `fold` folds
from hwspec.spec.checks import UNKNOWN as UNKNOWN  # every writer's
from hwspec.text import visible

if TYPE_CHECKING:
    from hwspec.model.parts import Catalogue
    from hwspec.spec.models import CpuPart, GpuPart, NicPart, PcieSwitchPart


@dataclass
class DraftContext:
    """The state the writers of one draft fill in writing order (sockets, PCIe bridges, GPUs,
    NICs): `ids` maps a machine key (a GPU's, a NIC's, a bridge's) to the spec id written for it,
    `links` a spec id to the (gen, width) its upstream link trains at; `notes` (the
    machine's own first) are for the user."""

    machine: Machine
    catalogue: Catalogue
    """The parts catalogue the devices are recognised from."""
    ids: dict[str, str] = field(default_factory=dict)
    links: dict[str, tuple[int, int]] = field(default_factory=dict)
    notes: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.notes = list(self.machine.notes)

    @overload
    def parts(self, kind: Literal["cpus"]) -> dict[str, CpuPart]: ...

    @overload
    def parts(self, kind: Literal["gpus"]) -> dict[str, GpuPart]: ...

    @overload
    def parts(self, kind: Literal["nics"]) -> dict[str, NicPart]: ...

    @overload
    def parts(self, kind: Literal["pcie_switches"]) -> dict[str, PcieSwitchPart]: ...

    def parts(self, kind: str) -> dict[str, CpuPart] | dict[str, GpuPart] | dict[str, NicPart] | dict[str, PcieSwitchPart]:
        """The catalogue's parts of `kind` (`gpus`, `nics`, ...) by name, in name order: each
        part's validated spec model, of the class its kind validates with
        (`hwspec.spec.parts.PART_KINDS`)."""
        return {name: part.model for name, part in sorted(self.catalogue.parts.get(kind, {}).items())}

    def source(self) -> str:
        """The draft's `source:` text: the inputs it was made from, each with what it is."""
        return "hwspec import of " + ", ".join(f"{file_text(file)} ({what})" for file, what in self.machine.sources)

    @staticmethod
    def bus(bus: str | None) -> str:
        """The bus id the input gives, or `unknown` (`nvidia-smi topo -m` gives none): never an invented one."""
        return bus or UNKNOWN

    def upstream(self, parent: str, below: str | None = None) -> str | dict[str, str]:
        """The spec id of `parent`, above the entry of machine key `below`. Where the input gives
        no NUMA node (`numa:-1`: a root port's numa_node -1, NCCL's numaid -1, hwloc's locality of
        several NUMA nodes) it is the socket of the one NUMA node the devices at or below `below`
        say they are on (so their close CPUs are that socket's, as the machine shows them), else
        the first socket; either way written as an assumption (`{value, assumed}`), so that
        `diff` does not take it for a fact."""
        if parent in self.ids:
            return self.ids[parent]
        here = f"the input gives no NUMA node here{f' ({parent})' if parent else ''}"
        said = self.machine.numa_below(below) if below is not None else set()
        if len(said) == 1 and f"{NUMA_PREFIX}{min(said)}" in self.ids:
            socket = self.ids[f"{NUMA_PREFIX}{min(said)}"]
            return {"value": socket, "assumed": f"{here}: attached to {socket}, where the devices below it say they are"}
        first = next(iter(self.ids.values()))
        return {"value": first, "assumed": f"{here}: attached to {first}"}


def note_assumed(entry: Entry, assumed: list[str]) -> None:
    """Write `assumed` (each reason once) into `entry`, where there is any."""
    if assumed:
        entry["assumed"] = "; ".join(dict.fromkeys(assumed))


def file_text(file: str) -> str:
    """An input's name as the draft's `source:`/`sources:` text: `visible` (one printable line,
    a non-UTF-8 byte as `\\xNN`), and `${` written `$\\x7b`, which the loader would otherwise read
    as an expression outside a repeat block."""
    return visible(file).replace("${", "$\\x7b")
