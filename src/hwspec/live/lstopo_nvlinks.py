"""hwloc's NVLink matrix (`NVLinkBandwidth`) -> `Machine.nvlinks`.

hwloc's NVML backend (2.1 and later, `topology-nvml.c`) writes one matrix of every GPU's active
NVLinks. Its objects are the GPUs' NVML OS devices (`OSDev:802`), then the other ends of their
links: an NVSwitch (its PCI device, `PCIDev:449`, subtype NVSwitch) or, on POWER8/POWER9, the CPU
side object above the GPU (a `Package`). Objects of several types make it a
`<distances2hetero>`, whose `<indexes>` name each object `Type:gp_index`; a matrix of GPUs alone
(no switch, no CPU end) is a `<distances2 type="OSDev" indexing="gp">`, whose `<indexes>` are the
bare gp_indexes. Either way hwloc's exporter (`topology-xml.c`, `EXPORT_ARRAY`) writes ten
indexes or values per element, so a matrix of more than ten objects has several `<indexes>` and
its values several `<u64values>`, read in order as one list each (as hwloc's importer does). The
values are row-major MB/s per direction: for each pair, hwloc's per-link figure summed over the
links between the two, 20,000 for NVLink 1 and 25,000 for NVLink 2 to 4 (links of other versions
are left out), the same both ways. The diagonal (hwloc's artificial 1,000,000, or 0 in some
releases) is not a link.

A GPU's links are all of one version, so its per-link figure is the one that divides every
entry of its row; where both do (every entry a multiple of 100,000: five NVLink 1 links to one
peer, more than the four a P100, the only NVLink 1 GPU, has), 25,000. GPU-GPU entries become
GPU pairs, GPU-NVSwitch entries NVSwitch links and GPU-Package entries links to the GPU's own
CPU, as NCCL's dump gives them (`tclass="0x068001"`); a link to a Package other than the one
holding the GPU's NUMA node contradicts the tree (NCCL would join it to the GPU's own CPU) and
is left out with an I104 warning.
A matrix that cannot be read gives located I103 warnings; reading it is linear in its size, in
time and in memory: its values are counted and checked in their text, then held in an array
of 4 bytes a value (8 where one is 2**32 or more: at most 4 times the 2 characters a value takes
at least), never as a text and an object apiece (which cost 40 times the input).
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from hwspec.diagnostics import Code
from hwspec.live.observed import CPU, NVSWITCH, ElementReader, Machine, NvLink, is_decimal
from hwspec.live.topo_matrix import MAX_GPU_LINKS
from hwspec.live.xmlread import Element

NVLINK_MATRIX = "NVLinkBandwidth"
NVLINK_VERSION = {25_000: "NVLink 2-4", 20_000: "NVLink 1"}
"""hwloc's figure for one NVLink in MB/s and the NVLink versions it stands for, in the order ties
are broken in."""
LINK_MBPS = tuple(NVLINK_VERSION)
HWLOC_LINK_MBPS = {"nvlink1": 20_000, "nvlink2": 25_000, "nvlink3": 25_000, "nvlink4": 25_000}
"""A GPU part's fabric kind -> the MB/s hwloc counts each of its links at (whatever the part's own
`link_bandwidth`: an NVLink 3 bridge of 14 GB/s counts 25,000). Other kinds hwloc leaves out."""


U64_MAX = 2**64 - 1
CHUNK = 1 << 16
"""Characters of a `<u64values>` text split at once (to the next blank): a value is taken apart
a chunk at a time, so no list of every value's text is ever made."""
_SPACE = re.compile(r"\s")
_SUSPECT = re.compile(r"[^\s0-9]|[0-9]{20}")
"""What a value of at most 20 decimal digits below 2**64 has none of, but for the 20-digit ones,
which are looked at one by one."""
_TOKEN = re.compile(r"\S+")
_TEN_DIGITS = re.compile(r"[0-9]{10}")


def _chunks(text: str) -> Iterator[str]:
    """`text` in pieces of about CHUNK characters, each cut at a blank (a value is never split)."""
    start = 0
    while start < len(text):
        blank = _SPACE.search(text, min(start + CHUNK, len(text)))
        end = blank.start() if blank is not None else len(text)
        yield text[start:end]
        start = end + 1


def _is_u64(token: str) -> bool:
    return is_decimal(token) and int(token) <= U64_MAX


def _not_u64(rows: list[Element]) -> tuple[int, str, Element] | None:
    """How many values of `rows` are not 64-bit numbers (hwloc's u64: decimal, at most 20
    digits, below 2**64), the first and its element; None when every one is. Each text is
    searched once at C speed; only one with something suspect is looked at value by value."""
    number, first = 0, None
    for row in rows:
        if _SUSPECT.search(row.text) is None:
            continue
        for match in _TOKEN.finditer(row.text):
            if not _is_u64(match.group()):
                number += 1
                first = first or (match.group()[:40], row)
    return None if first is None else (number, *first)


class Values:
    """The `count` values of `rows` (each a 64-bit number: `_not_u64` found none that is not) in
    row-major order, in an array of 4 bytes a value where every one is below 2**32, else 8 (an
    array made once at its size: growing it would copy it), and the `<u64values>` element each
    came from (by the index of its first value)."""

    def __init__(self, rows: list[Element], count: int):
        wide = any(_TEN_DIGITS.search(row.text) for row in rows)  # 2**32 has 10 digits
        self.numbers = array("Q" if wide else "I", [0]) * count
        self.starts: list[int] = []
        self.rows = rows
        filled = 0
        for row in rows:
            self.starts.append(filled)
            for chunk in _chunks(row.text):
                values = array(self.numbers.typecode, map(int, chunk.split()))
                self.numbers[filled:filled + len(values)] = values
                filled += len(values)

    def element(self, index: int) -> Element:
        """The `<u64values>` element value `index` was read from."""
        return self.rows[bisect.bisect_right(self.starts, index) - 1]


@dataclass(frozen=True)
class End:
    """What one index of the matrix names: a GPU (`key`: its bus id), an NVSwitch (`key`: its
    bus id) or a CPU side object (`key`: how the warning names it, `Package 0`; `package`: its
    os_index when it is a Package)."""

    kind: str
    key: str
    package: int | None = None


class NvlinkMatrix(ElementReader):
    """Reads NVLinkBandwidth matrices into `machine`, given hwloc's objects by `gp_index`."""

    def __init__(self, file: str, machine: Machine, objects: dict[str, Element]):
        super().__init__(file, machine)
        self.objects = objects
        self.read = False

    def matrix(self, e: Element) -> None:
        """Read one `<distances2hetero>` or `<distances2>`: its NVLinks into the machine, or
        warnings saying why not."""
        if e.attrs.get("name") != NVLINK_MATRIX:
            return
        if self.read:
            self.warn(e, f"a second {NVLINK_MATRIX} matrix: ignored (the first is read)", Code.INPUT_IGNORED)
            return
        tokens = self.tokens(e)
        if tokens is None:
            return
        n = len(tokens)
        declared = e.attrs.get("nbobjs", "")
        if not is_decimal(declared) or int(declared) != n:
            self.warn(e, f"the {NVLINK_MATRIX} matrix has nbobjs=\"{declared[:20]}\" but {n} indexes: its NVLinks are not read")
            return
        rows = [c for c in e.children if c.tag == "u64values"]
        count = sum(sum(len(chunk.split()) for chunk in _chunks(c.text)) for c in rows)
        if count != n * n:
            self.warn(e, f"the {NVLINK_MATRIX} matrix of {n} objects has {count} values, not {n * n}: its NVLinks are not read")
            return
        bad = _not_u64(rows)
        if bad is not None:
            number, first, where = bad
            self.warn(where, f"{number} value(s) of the {NVLINK_MATRIX} matrix are not numbers of at most 20 digits "
                      f"(\"{first[:20]}\"): its NVLinks are not read")
            return
        ends = self.ends(tokens)
        if not any(end is not None and end.kind == "gpu" for end in ends):
            return
        self.read = True
        self.m.listed.update(("nvlinks", "cpu-nvlinks"))  # hwloc's matrix has the CPU ends of NVLinks too
        named = {end.key for end in ends if end is not None and end.kind == "gpu"}
        for key, gpu in self.m.gpus.items():
            if key not in named:
                gpu.unknown.add("nvlinks")
        values = Values(rows, count)
        for i, end in enumerate(ends):
            if end is not None and end.kind == "gpu":
                self.gpu_row(end, i, ends, values)

    def tokens(self, e: Element) -> list[tuple[str, Element]] | None:
        """Each object the matrix names, `Type:gp_index`, with the `<indexes>` element naming it,
        over all its `<indexes>` in order; None (after a warning) where they cannot be read. A
        homogeneous `<distances2>` gives its objects' type once (`type=`) and bare gp_indexes."""
        elements = [c for c in e.children if c.tag == "indexes"]
        if not elements:
            self.warn(e, f"the {NVLINK_MATRIX} matrix has no <indexes>: its NVLinks are not read")
            return None
        if e.tag == "distances2hetero":
            return [(token, c) for c in elements for token in c.text.split()]
        kind, indexing = e.attrs.get("type", ""), e.attrs.get("indexing", "")
        if not kind or indexing != "gp":
            self.warn(e, f"the {NVLINK_MATRIX} matrix has type=\"{kind[:20]}\" indexing=\"{indexing[:20]}\", not a type "
                      "indexed by gp_index (hwloc's form of a matrix of GPUs alone): its NVLinks are not read")
            return None
        return [(f"{kind}:{token}", c) for c in elements for token in c.text.split()]

    def ends(self, tokens: list[tuple[str, Element]]) -> list[End | None]:
        """What each index names; None (after a warning) for one that names nothing hwspec reads."""
        out: list[End | None] = []
        seen: set[tuple[str, str]] = set()
        for token, element in tokens:
            end = self.end(element, token)
            if end is not None and (end.kind, end.key) in seen:
                self.warn(element, f"{NVLINK_MATRIX} index {token[:40]} names {end.key} again: its row is ignored")
                end = None
            if end is not None:
                seen.add((end.kind, end.key))
            out.append(end)
        return out

    def end(self, at: Element, token: str) -> End | None:
        kind, _, gp_index = token.partition(":")
        obj = self.objects.get(gp_index)
        if obj is None or obj.attrs.get("type") != kind:
            self.warn(at, f"{NVLINK_MATRIX} index {token[:40]} names no object of the file: its row is ignored")
            return None
        if kind == "OSDev":
            bus = (obj.parent.attrs.get("pci_busid", "") if obj.parent is not None else "").lower()
            if bus in self.m.gpus:
                return End("gpu", bus)
        elif kind == "PCIDev":
            bus = obj.attrs.get("pci_busid", "").lower()
            if bus in self.m.nvswitches:
                return End("switch", bus)
            if bus in self.m.gpus:
                return End("gpu", bus)
        elif "cpuset" in obj.attrs:
            index = obj.attrs.get("os_index")
            numbered = index is not None and is_decimal(index)
            return End("cpu", f"{kind} {index}" if numbered else token,
                       int(index) if numbered and kind == "Package" and index is not None else None)
        self.warn(at, f"{NVLINK_MATRIX} index {token[:40]} is neither a GPU, an NVSwitch nor a CPU: its row is ignored")
        return None

    def gpu_row(self, gpu: End, i: int, ends: list[End | None], values: Values) -> None:
        """The NVLinks of GPU `gpu`, row `i` of the matrix."""
        n = len(ends)
        numbers = values.numbers
        row = [(j, numbers[i * n + j]) for j in range(n) if j != i and ends[j] is not None and numbers[i * n + j]]
        fits = {f: sum(1 for _, v in row if v % f == 0) for f in LINK_MBPS}
        per_link = max(LINK_MBPS, key=lambda f: fits[f])  # max keeps the first of a tie: 25,000
        for j, value in row:
            other = ends[j]
            assert other is not None
            element = values.element(i * n + j)
            back = numbers[j * n + i]
            if back != value and (other.kind != "gpu" or i < j):
                self.warn(element, f"{NVLINK_MATRIX}: {value} MB/s from {gpu.key} to {other.key}, but {back} back: "
                          "hwloc writes the same both ways", Code.INPUT_CONTRADICTION)
            count, rest = divmod(value, per_link)
            if rest or count > MAX_GPU_LINKS:
                if not rest:
                    why = f"{count} links, more than the {MAX_GPU_LINKS} a GPU has"
                elif fits[per_link]:
                    why = f"not a whole number of the {NVLINK_VERSION[per_link]} links ({per_link} MB/s each) its other entries count"
                else:
                    why = "not a whole number of links at hwloc's " + " or ".join(
                        f"{mbps} MB/s ({NVLINK_VERSION[mbps]})" for mbps in sorted(NVLINK_VERSION))
                self.warn(element, f"{NVLINK_MATRIX}: {value} MB/s from {gpu.key} to {other.key} is {why}: ignored")
                continue
            where = self.at(element)
            if other.kind == "gpu":
                self.m.nvlinks.append(NvLink(gpu.key, other.key, count, where, per_link=per_link * 1e6))
            elif other.kind == "switch":
                self.m.nvlinks.append(NvLink(gpu.key, NVSWITCH, count, where, other.key, per_link * 1e6))
            else:
                own = self.own_package(gpu.key)
                if other.package is not None and own is not None and other.package != own:
                    self.warn(element, f"{NVLINK_MATRIX}: {count} NVLink(s) from GPU {gpu.key} to {other.key}, but the GPU "
                              f"sits under Package {own}: NCCL joins such links to the GPU's own CPU, so they are left out",
                              Code.INPUT_CONTRADICTION)
                    continue
                self.m.nvlinks.append(NvLink(gpu.key, CPU, count, where, per_link=per_link * 1e6))

    def own_package(self, gpu_key: str) -> int | None:
        """The Package holding the NUMA node the GPU sits under, when the file says."""
        numa = self.m.numa_of(gpu_key)
        node = self.m.numa.get(numa) if numa is not None else None
        return node.package if node is not None else None
