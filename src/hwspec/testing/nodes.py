"""Node platforms: `node_specs()` and the strategies built on it (`node_yaml`, `node_platforms`,
`with_environment`, `group_numa_nodes`, `present_virtually`), and loading drawn text.

    from hypothesis import given
    from hwspec.rules.engine import load_rules
    from hwspec.testing import check_node_text, node_yaml

    @given(node_yaml(max_gpus=8))
    def test_my_site_rule_accepts_valid_platforms(text):
        assert check_node_text(text, load_rules(["site_rules"])) == []

hypothesis is a test-only dependency: install `hwspec[test]` to use this module.

What is generated
-----------------
`node_specs()` draws VALID node platform files as plain dicts: exactly what a YAML file holds
(unit strings such as "200 Gb/s", no repeat blocks, no annotated values), built from parts of
the built-in catalogue:

* 1-8 sockets of one CPU part, each its own NUMA node (`numa_node` = position), with DDR;
  optionally a fully-connected CPU interconnect;
* a PCIe tree per GPU switch: every GPU sits on a "leaf" switch; above a leaf there may be a
  second switch level (a top switch over 1-4 leaves) and a root port, each chain hanging off a
  socket. Every bridge of a chain has one generation (3, 4 or 5; x16); a device whose part is
  newer than its chain states the link it trains at (`pcie.link`); with `virtual_links=True`,
  any bridge may be presented as a VM shows it (Gen1 x1) and any GPU or NIC with width 0, the
  trained link then written as `link.physical`; with `numa_nodes=True`, consecutive sockets
  may be grouped into one physical socket listing them as `numa_nodes` (CPU lists written out,
  so every binding is unchanged);
* 1-16 GPUs of one catalogue part; NVLink logical pattern `none`, `fully-connected` (when the
  part has the links, `links_per_pair` 1..what fits), fully-connected minus a perfect matching
  (`exclude`), `ring` (explicit pairs), `hybrid-cube-mesh` (8 GPUs, >= 6 links) or `nvswitch`;
  every pattern but `none`/`nvswitch` sits on a baseboard whose wiring (named or an explicit
  port list, possibly with extra ports) is a superset of it, with permuted slots; `nvswitch`
  may describe its switch chips (an `hgx` board, 1-6 switches, each GPU's links per switch
  within the part's budget);
* backend NICs in one of five modes: `per-gpu` (one RDMA NIC per GPU on the GPU's switch,
  `nic_per_gpu` and `gpudirect` declared), `several-per-gpu` (2-4 such NICs per GPU, as on AWS
  p5, each naming its GPU), `shared` (one RDMA NIC per leaf switch naming no GPU, no
  `nic_per_gpu`), `serving-leaf` (one RDMA NIC per leaf switch serving every GPU of the leaf,
  `gpus:` when there are several, as on AWS p4d; no `nic_per_gpu`), or `none` (Zion-like:
  collectives over TCP on host NICs, maybe no `backend:`).
  The NIC part fits the chain: a 200 Gb/s NIC never sits behind a Gen3 x16 link (15.75 GB/s);
  a shared NIC's traffic, which crosses every bridge up to the CPU, fits every uplink;
* 0..sockets ingestion/frontend TCP NICs and 0-2 SSDs, all on sockets;
* unique ids, bus ids (`0000:bb:00.0`, allocated depth-first so that GPU i and its NIC are
  the i-th GPU and i-th backend NIC by bus id), device and interface names; bridges whose
  children add up to more than 2x their uplink declare `max_oversubscription`; `declares`
  (any of sockets, gpus, memory) matches what is described.

Invariants (tested by hwspec's own tests/test_properties*.py): every drawn spec loads through
the real loader and passes every built-in rule with no finding at all (no error, warning or
info); its NCCL topology, launcher environment, roofline and Slurm outputs generate. Optional
keys at their defaults are left out, and every size is drawn first as a small integer, so a
failing example shrinks towards 1 socket, 1 GPU, one switch, no NVLink and no host NICs.

The other strategies build on it: `node_yaml()` (the YAML text), `node_platforms()` (resolved
`hwspec.model.node.Platform`s, loaded from that text by the real loader), `cluster_specs()` /
`clusters()` (a cluster over one generated node platform, through files, since a cluster names
its node platform by path), and `faulty_node_specs()` / `faulty_cluster_specs()`: single-fault
mutations of valid specs, each labelled with the rule that must catch it (`Fault`).
"""


from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeAlias, TypeVar, overload

from hypothesis import strategies as st

from hwspec.formats.nccl_topology import RCCL_MAX_CHILDREN
from hwspec.model.node import PcieLink
from hwspec.source.dumper import dump_yaml as source_dump_yaml
from hwspec.spec.units import format_bytes, parse_bytes
from hwspec.topology import topology_of

if TYPE_CHECKING:
    from hwspec.diagnostics import Diagnostic
    from hwspec.model.node import Platform
    from hwspec.model.parts import Catalogue
    from hwspec.rules.engine import Rule
    from hwspec.spec.models import CpuPart, GpuPart, NicPart
    from hwspec.spec.models import PcieLink as PartLink

P = ParamSpec("P")
R = TypeVar("R")

YamlDict: TypeAlias = dict[str, Any]
"""A mapping as a platform file's YAML holds it (the spec, a section, an entry): keys in writing
order, values text, numbers, booleans, lists and mappings."""


def takes_parameters_of(source: Callable[P, object]) -> Callable[[Callable[..., R]], Callable[P, R]]:
    """Give a strategy that forwards its keyword arguments to `source` the parameters of `source`,
    as `help()`, `inspect.signature`, editors and type checkers see them (not `**kwargs`)."""
    def give(wrapper: Callable[..., R]) -> Callable[P, R]:
        returns = inspect.signature(wrapper).return_annotation
        # a function object takes any attribute; typeshed does not declare __signature__, which inspect reads
        wrapper.__signature__ = inspect.signature(source).replace(return_annotation=returns)  # type: ignore[attr-defined]
        return wrapper
    return give

NVLINK_PATTERNS = ("none", "fully-connected", "ring", "nvswitch", "hybrid-cube-mesh", "fully-connected-minus-matching")
"""Logical GPU fabric patterns `node_specs(nvlink=...)` can draw (simplest first)."""

NIC_MODES = ("per-gpu", "shared", "none", "several-per-gpu", "serving-leaf")
"""Backend NIC layouts `node_specs(nic_modes=...)` can draw (see the module docstring)."""

_GENS = (4, 3, 5)  # shrinks towards Gen4, the common case
_MEMORY = ("256 GiB", "128 GiB", "384 GiB", "512 GiB", "1 TiB")
_DDR_BANDWIDTH = ("80 GB/s", "100 GB/s", "140.8 GB/s")
_FIRST_BUS = 0x10


# ------------------------------------------------------------------ catalogue and helpers


@cache
def _catalogue() -> Catalogue:
    from hwspec import content
    from hwspec.model.parts import load_catalogue

    return load_catalogue([content.builtin_dir("parts")])


@overload
def _parts(kind: Literal["cpus"]) -> dict[str, CpuPart]: ...


@overload
def _parts(kind: Literal["gpus"]) -> dict[str, GpuPart]: ...


@overload
def _parts(kind: Literal["nics"]) -> dict[str, NicPart]: ...


def _parts(kind: str) -> dict[str, CpuPart] | dict[str, GpuPart] | dict[str, NicPart]:
    """The built-in catalogue's parts of `kind` by name, in name order: each part's validated
    spec model, of the class its kind validates with (`hwspec.spec.parts.PART_KINDS`)."""
    return {name: part.model for name, part in sorted(_catalogue().parts.get(kind, {}).items())}


@cache
def _builtin_rules() -> tuple[Rule, ...]:
    from hwspec.pipeline import rule_directories
    from hwspec.rules.engine import load_rules

    return tuple(load_rules(rule_directories()))


def _bandwidth(gen: int, width: int) -> float:
    return PcieLink(gen, width).bandwidth


def _trained(part_link: PartLink, gen: int) -> tuple[int, int]:
    """(gen, width) a device of this part trains at below a bridge of generation `gen`."""
    return min(part_link.generation, gen), part_link.width


def _backend_nic_fits(nic: NicPart, gen: int, mode: str) -> bool:
    """Whether `nic` can be a backend NIC of `mode` in a chain of generation `gen`."""
    if not (nic.rdma and nic.gpudirect) or not {"rocev2", "infiniband"} & set(nic.transports):
        return False
    if _bandwidth(*_trained(nic.pcie, gen)) < nic.speed:
        return False  # HW401: the NIC's own link
    return mode not in ("shared", "serving-leaf") or _bandwidth(gen, 16) >= nic.speed  # HW401: every uplink to the CPU


def _host_nic_fits(nic: NicPart) -> bool:
    return "tcp" in nic.transports and _bandwidth(nic.pcie.generation, nic.pcie.width) >= nic.speed


def dump_yaml(spec: dict[str, Any]) -> str:
    """A platform dict as YAML text, keys in the dict's order: block style, with mappings and
    lists that hold only scalars in flow style (`link: {gen: 4, width: 16}`), as people write
    them. Every key and its scalar (or flow) value share a line, and every string loads back as
    itself through hwspec's loader, whatever it holds (`hwspec.source.dumper`: a NEL written
    raw by PyYAML would be read as a line break)."""
    return source_dump_yaml(spec)


def load_node_text(text: str | bytes, file: str = "node.yaml") -> Platform:
    """Load node platform YAML `text` through the real loader (source -> expand -> spec ->
    parts -> resolve) with the built-in parts catalogue. Raises HwspecError."""
    from hwspec.model.load import load_node
    from hwspec.source.expand import expand
    from hwspec.source.loader import load_yaml_text

    doc = load_yaml_text(text, file)
    return load_node(doc, expand(doc), _catalogue())


def check_node_text(text: str | bytes, rules: Sequence[Rule] | None = None, file: str = "node.yaml") -> list[Diagnostic]:
    """Every diagnostic for node platform YAML `text`: the loader's (when it does not load) or
    the node rules' (`rules`, default: the built-in ones). Empty means clean."""
    from hwspec.diagnostics import HwspecError
    from hwspec.rules.engine import run_rules

    try:
        platform = load_node_text(text, file)
    except HwspecError as exc:
        return list(exc.diagnostics)
    return run_rules(topology_of(platform), list(_builtin_rules() if rules is None else rules), scope="node")


# ------------------------------------------------------------------ node layout


@dataclass
class _Layout:
    """A drawn node spec plus what mutations need to know about it."""

    spec: YamlDict
    nic_mode: str
    pattern: str
    per_pair: int
    gpu_links: int
    leaves: list[str] = field(default_factory=list)  # bridge ids holding GPUs
    top_of: dict[str, str] = field(default_factory=dict)  # bridge/device id -> top-level bridge id
    socket_of: dict[str, str] = field(default_factory=dict)  # bridge/device id -> socket id
    gen_of: dict[str, int] = field(default_factory=dict)  # bridge id -> generation

    def index(self, section: str, ident: str) -> int:
        return next(i for i, e in enumerate(self.spec[section]) if e["id"] == ident)


MAX_NODE_CPUS = 896
"""Logical CPUs whose NCCL affinity mask (28 words of 8 hex digits, comma-separated) stays
under NCCL's 255-character attribute limit."""


def _patterns_for(n: int, links: int, kind: str = "nvlink3") -> list[str]:
    """The NVLink patterns `n` GPUs with `links` fabric links of `kind` can use (xGMI has no switch)."""
    fits = {
        "none": True,
        "fully-connected": n == 1 or links >= n - 1,
        "ring": n >= 2 and links >= (1 if n == 2 else 2),
        "nvswitch": links >= 1 and kind != "xgmi",
        "hybrid-cube-mesh": n == 8 and links >= 6,
        "fully-connected-minus-matching": n >= 4 and n % 2 == 0 and links >= n - 2,
    }
    return [p for p in NVLINK_PATTERNS if fits[p]]


def _check_choice(name: str, values: Iterable[str] | None, known: Sequence[str]) -> tuple[str, ...]:
    if values is None:
        return tuple(known)
    values = tuple(values)
    unknown = [v for v in values if v not in known]
    if unknown or not values:
        raise ValueError(f"{name}: expected some of {', '.join(known)}, got {values!r}")
    return values


def _rccl_writable(part: GpuPart) -> bool:
    """Whether an AMD part carries what RCCL's <gpu> needs (gcn, hip_arch, compute units); other vendors pass."""
    return part.vendor != "amd" or None not in (part.gcn, part.hip_arch, part.compute_units)


@st.composite
def _layouts(draw: st.DrawFn, /, *, min_sockets: int = 1, max_sockets: int = 8, min_gpus: int = 1, max_gpus: int = 16,
             gpu_parts: Iterable[str] | None = None, nvlink: Iterable[str] | None = None,
             nic_modes: Iterable[str] | None = None, name: str = "node") -> _Layout:
    """A valid node spec and what mutations need to know of it, drawn in the order the steps
    below are written (sizes and parts first, so that failures shrink towards small nodes)."""
    if not 1 <= min_sockets <= max_sockets:
        raise ValueError(f"need 1 <= min_sockets <= max_sockets, got {min_sockets}, {max_sockets}")
    if not 1 <= min_gpus <= max_gpus:
        raise ValueError(f"need 1 <= min_gpus <= max_gpus, got {min_gpus}, {max_gpus}")
    patterns_allowed = _check_choice("nvlink", nvlink, NVLINK_PATTERNS)
    modes_allowed = _check_choice("nic_modes", nic_modes, NIC_MODES)
    # Left out by default: APUs (MI300A), whose socket's memory is their HBM (one APU per socket,
    # `memory: {shared_with: ..}`), a layout these DDR-socket nodes do not draw; and AMD parts
    # that lack a fact RCCL's file needs (no published hip_arch: MI250), which HW911 refuses.
    gpu_names = _check_choice("gpu_parts", gpu_parts, tuple(n for n, p in _parts("gpus").items()
                                                            if p.form_factor != "apu" and _rccl_writable(p)))
    parts = draw(_sizes_and_parts(min_sockets, max_sockets, min_gpus, max_gpus, gpu_names, patterns_allowed))
    nics = draw(_backend_nic_choice(modes_allowed, parts.n_gpus))
    leaf_sizes, leaf_socket = draw(_leaves(parts.n_gpus, parts.n_sockets, nics))

    layout = _Layout(spec={}, nic_mode=nics.mode, pattern="none", per_pair=1, gpu_links=parts.gpu.fabric.links)
    tree = _PcieTree(layout, parts, nics)
    sockets = [f"cpu{i}" for i in range(parts.n_sockets)]
    for s, socket in enumerate(sockets):
        tree.draw_switches(draw, socket, [size for size, at in zip(leaf_sizes, leaf_socket) if at == s])
    host_nics, ssds = _host_devices(draw, tree, sockets)

    # The logical GPU fabric and the baseboard under it.
    gpu = parts.gpu
    pattern = draw(st.sampled_from([p for p in _patterns_for(parts.n_gpus, gpu.fabric.links, gpu.fabric.kind) if p in patterns_allowed]),
                   label="NVLink pattern")
    layout.pattern = pattern
    baseboard, nvlink_section = _fabric(draw, layout, tree.gpus, pattern, gpu.fabric.links)

    socket_entries, declares = _host_side(draw, sockets, parts)
    # a NIC serving a leaf's GPUs lines up with rails only when every leaf holds as many GPUs (HW801)
    rails_align = nics.mode != "serving-leaf" or len(set(leaf_sizes)) == 1
    backend = _backend(draw, nics.mode, nics.transport, rails_align)
    spec: YamlDict = {"hwspec": 1, "kind": "node", "name": name}
    if declares:
        spec["declares"] = declares
    spec["sockets"] = socket_entries
    if parts.n_sockets > 1 and draw(st.booleans(), label="CPU interconnect"):
        spec["cpu_interconnect"] = {"kind": "upi", "links": "fully-connected", "bandwidth": "20.8 GB/s"}
    spec["pcie"] = tree.bridges
    if baseboard:
        spec["baseboard"] = baseboard
    spec["gpus"] = tree.gpus
    if nvlink_section:
        spec["nvlink"] = nvlink_section
    if tree.backend_nics or host_nics:
        spec["nics"] = tree.backend_nics + host_nics
    if ssds:
        spec["ssds"] = ssds
    if backend:
        spec["backend"] = backend
    layout.spec = spec
    return layout


@dataclass(frozen=True)
class _Parts:
    """The sizes and parts of a drawn node: `n_gpus` GPUs of part `gpu_name` (`gpu`), `n_sockets`
    sockets of CPU part `cpu_part`."""

    n_gpus: int
    n_sockets: int
    cpu_part: str
    gpu_name: str
    gpu: GpuPart


@st.composite
def _sizes_and_parts(draw: st.DrawFn, min_sockets: int, max_sockets: int, min_gpus: int, max_gpus: int,
                     gpu_names: tuple[str, ...], patterns_allowed: tuple[str, ...]) -> _Parts:
    """Sizes first, as small integers (failures shrink to 1 socket and 1 GPU), then a CPU part
    whose CPUs NCCL's attributes can hold and a GPU part with the links for an allowed pattern."""
    gpu_catalogue, cpu_catalogue = _parts("gpus"), _parts("cpus")

    def fits(n: int, g: str) -> bool:
        return bool(set(patterns_allowed) & set(_patterns_for(n, gpu_catalogue[g].fabric.links, gpu_catalogue[g].fabric.kind)))

    feasible = [n for n in range(min_gpus, max_gpus + 1) if any(fits(n, g) for g in gpu_names)]
    if not feasible:
        raise ValueError(f"no GPU part of {gpu_names} carries NVLink patterns {patterns_allowed} "
                         f"with {min_gpus}-{max_gpus} GPUs")
    if len(feasible) == max_gpus - min_gpus + 1:
        n_gpus = draw(st.integers(min_gpus, max_gpus), label="GPUs")
    else:
        n_gpus = draw(st.sampled_from(feasible), label="GPUs")
    n_sockets = draw(st.integers(min_sockets, max_sockets), label="sockets")
    # NCCL's attribute values stay under 255 characters: a node's cpumap (9 characters per 32 CPUs)
    # fits for at most 896 logical CPUs, so large-core parts come with fewer sockets.
    cpu_fits = [c for c in sorted(cpu_catalogue)
                if n_sockets * cpu_catalogue[c].cores * cpu_catalogue[c].threads_per_core <= MAX_NODE_CPUS]
    cpu_part = draw(st.sampled_from(cpu_fits), label="CPU part")
    gpu_name = draw(st.sampled_from([g for g in gpu_names if fits(n_gpus, g)]), label="GPU part")
    return _Parts(n_gpus, n_sockets, cpu_part, gpu_name, gpu_catalogue[gpu_name])


@dataclass(frozen=True)
class _BackendNics:
    """The backend NICs of a drawn node: the `mode` (`NIC_MODES`), the NIC part (`nic_name`,
    `nic`; None for `none`), the PCIe generations the part fits (`gens`), its `transport` and
    the NICs per GPU."""

    mode: str
    nic_name: str | None
    nic: NicPart | None
    gens: list[int]
    transport: str | None
    per_gpu: int


@st.composite
def _backend_nic_choice(draw: st.DrawFn, modes_allowed: tuple[str, ...], n_gpus: int) -> _BackendNics:
    """The mode, then a part that fits it, then the generations that part fits."""
    nic_catalogue = _parts("nics")
    options: list[tuple[str, str | None]] = []
    for mode in modes_allowed:
        if mode == "none":
            options.append((mode, None))
        options.extend((mode, n) for n, nic in nic_catalogue.items()
                       if mode != "none" and any(_backend_nic_fits(nic, g, mode) for g in _GENS))
    mode, nic_name = draw(st.sampled_from(options), label="backend NICs")
    nic = nic_catalogue[nic_name] if nic_name else None
    gens = [g for g in _GENS if nic is None or _backend_nic_fits(nic, g, mode)]
    transport = None
    if nic is not None:
        transport = draw(st.sampled_from([t for t in ("rocev2", "infiniband") if t in nic.transports]), label="transport")
    # several NICs per GPU: as many as the bus ids allow (two per GPU on the largest nodes)
    per_gpu = draw(st.integers(2, 4 if n_gpus <= 8 else 2), label="NICs per GPU") if mode == "several-per-gpu" else 1
    return _BackendNics(mode, nic_name, nic, gens, transport, per_gpu)


@st.composite
def _leaves(draw: st.DrawFn, n_gpus: int, n_sockets: int, nics: _BackendNics) -> tuple[list[int], list[int]]:
    """(GPUs per leaf switch, the socket of each leaf): the GPUs in contiguous blocks."""
    cuts = sorted(draw(st.sets(st.integers(1, n_gpus - 1), max_size=n_gpus - 1), label="leaf cuts")) if n_gpus > 1 else []
    if nics.mode == "several-per-gpu":  # RCCL reads at most 32 children of one switch (HW911): split larger leaves
        cap = RCCL_MAX_CHILDREN // (nics.per_gpu + 1)
        cuts = sorted(set(cuts) | {c for a, b in zip([0, *cuts], [*cuts, n_gpus]) for c in range(a + cap, b, cap)})
    bounds = [0, *cuts, n_gpus]
    leaf_sizes = [b - a for a, b in zip(bounds, bounds[1:])]
    leaf_socket = [draw(st.integers(0, n_sockets - 1), label="leaf socket") for _ in leaf_sizes]
    return leaf_sizes, leaf_socket


class _PcieTree:
    """The PCIe tree being drawn: its bridges, the GPUs and backend NICs on its leaf switches,
    and bus ids allocated depth-first (GPU i and its NIC are the i-th of each by bus id); what
    mutations need to know is recorded in `layout`."""

    def __init__(self, layout: _Layout, parts: _Parts, nics: _BackendNics):
        self.layout, self.parts, self.nics = layout, parts, nics
        self.buses = iter(range(_FIRST_BUS, 0x100))
        self.bridges: list[YamlDict] = []
        self.gpus: list[YamlDict] = []
        self.backend_nics: list[YamlDict] = []
        self.counters = {"rp": 0, "top": 0, "sw": 0}

    def bus_id(self) -> str:
        return f"0000:{next(self.buses):02x}:00.0"

    def bridge(self, prefix: str, upstream: str, gen: int, socket: str, top: str | None, root_port: bool = False) -> YamlDict:
        ident = f"{prefix}{self.counters[prefix]}"
        self.counters[prefix] += 1
        entry: YamlDict = {"id": ident}
        if root_port:
            entry["kind"] = "root-port"
        entry.update(upstream=upstream, bus=self.bus_id(), link={"gen": gen, "width": 16})
        self.bridges.append(entry)
        self.layout.gen_of[ident], self.layout.socket_of[ident] = gen, socket
        self.layout.top_of[ident] = top or ident
        return entry

    def attach(self, upstream: str, part_link: PartLink, gen: int) -> YamlDict:
        pcie: YamlDict = {"upstream": upstream, "bus": self.bus_id()}
        trained = _trained(part_link, gen)
        if trained != (part_link.generation, part_link.width):
            pcie["link"] = {"gen": trained[0], "width": trained[1]}
        return pcie

    @staticmethod
    def oversubscribe(entry: YamlDict, children: list[tuple[int, int]]) -> None:
        ratio = sum(_bandwidth(*c) for c in children) / _bandwidth(entry["link"]["gen"], entry["link"]["width"])
        if ratio > 2:
            entry["max_oversubscription"] = math.ceil(ratio)

    def leaf(self, upstream: str, gen: int, size: int, socket: str, top: str | None) -> None:
        """A leaf switch with `size` GPUs and the backend NICs the mode puts beside them."""
        nics, gpu = self.nics, self.parts.gpu
        entry = self.bridge("sw", upstream, gen, socket, top)
        self.layout.leaves.append(entry["id"])
        children = []
        for _ in range(size):
            ident = f"gpu{len(self.gpus)}"
            self.gpus.append({"id": ident, "part": self.parts.gpu_name, "pcie": self.attach(entry["id"], gpu.pcie, gen)})
            self.layout.socket_of[ident], self.layout.top_of[ident] = socket, self.layout.top_of[entry["id"]]
            children.append(_trained(gpu.pcie, gen))
            for _ in range(nics.per_gpu if nics.mode in ("per-gpu", "several-per-gpu") else 0):
                assert nics.nic is not None and nics.nic_name is not None and nics.transport is not None  # drawn with the mode
                self.backend_nics.append(_backend_nic(len(self.backend_nics), nics.nic_name, nics.transport, [ident],
                                                      self.attach(entry["id"], nics.nic.pcie, gen)))
                children.append(_trained(nics.nic.pcie, gen))
        if nics.mode in ("shared", "serving-leaf"):
            assert nics.nic is not None and nics.nic_name is not None and nics.transport is not None  # drawn with the mode
            served = [g["id"] for g in self.gpus[len(self.gpus) - size:]] if nics.mode == "serving-leaf" else []
            self.backend_nics.append(_backend_nic(len(self.backend_nics), nics.nic_name, nics.transport, served,
                                                  self.attach(entry["id"], nics.nic.pcie, gen)))
            children.append(_trained(nics.nic.pcie, gen))
        self.oversubscribe(entry, children)

    def draw_switches(self, draw: st.DrawFn, socket: str, mine: list[int]) -> None:
        """The switches of one socket over its leaves (`mine`: their GPU counts): maybe a root
        port, maybe a second level of top switches over 1-4 leaves, one generation per chain."""
        if not mine:
            return
        nic = self.nics.nic
        two_levels = draw(st.booleans(), label="two switch levels")
        root_ports = draw(st.booleans(), label="root ports")
        fan_out = draw(st.integers(1, 4), label="leaves per top switch") if two_levels else 1
        while mine:
            gen = draw(st.sampled_from(self.nics.gens), label="PCIe generation")
            take = fan_out
            if self.nics.mode in ("shared", "serving-leaf") and nic is not None:  # HW402: every shared NIC below a top switch crosses its uplink
                take = min(take, max(1, int(_bandwidth(gen, 16) // nic.speed)))
            chunk, mine = mine[:take], mine[take:]
            parent = socket
            top = None
            if root_ports:
                rp = self.bridge("rp", parent, gen, socket, None, root_port=True)
                parent = top = rp["id"]
            if two_levels:
                upper = self.bridge("top", parent, gen, socket, top)
                self.oversubscribe(upper, [(gen, 16)] * len(chunk))
                parent, top = upper["id"], top or upper["id"]
            for size in chunk:
                self.leaf(parent, gen, size, socket, top)


def _host_devices(draw: st.DrawFn, tree: _PcieTree, sockets: list[str]) -> tuple[list[YamlDict], list[YamlDict]]:
    """Host (ingestion/frontend) NICs and SSDs on sockets, with bus ids after the tree's."""
    host_parts = [n for n, part in _parts("nics").items() if _host_nic_fits(part)]
    host_nics = []
    for i in range(draw(st.integers(0, len(sockets)), label="host NICs") if host_parts else 0):
        socket = sockets[draw(st.integers(0, len(sockets) - 1), label="host NIC socket")]
        part = draw(st.sampled_from(host_parts), label="host NIC part")
        role = draw(st.sampled_from(("ingestion", "frontend")), label="host NIC role")
        host_nics.append({"id": f"fe{i}", "part": part, "role": role, "transport": "tcp", "interface": f"ens{i}",
                          "pcie": {"upstream": socket, "bus": tree.bus_id()}})
        tree.layout.socket_of[f"fe{i}"] = socket
    ssds = []
    for i in range(draw(st.integers(0, 2), label="SSDs")):
        socket = sockets[draw(st.integers(0, len(sockets) - 1), label="SSD socket")]
        ssds.append({"id": f"ssd{i}", "capacity": "3.84 TB", "bandwidth": "3.2 GB/s",
                     "pcie": {"upstream": socket, "bus": tree.bus_id()}})
    return host_nics, ssds


def _host_side(draw: st.DrawFn, sockets: list[str], parts: _Parts) -> tuple[list[YamlDict], YamlDict]:
    """The socket entries (DDR per socket) and `declares` (any of sockets, gpus, memory)."""
    socket_entries, total = [], 0
    for i, socket in enumerate(sockets):
        capacity = draw(st.sampled_from(_MEMORY), label="DDR capacity")
        bandwidth = draw(st.sampled_from(_DDR_BANDWIDTH), label="DDR bandwidth")
        total += parse_bytes(capacity)
        socket_entries.append({"id": socket, "part": parts.cpu_part, "numa_node": i,
                               "memory": {"capacity": capacity, "bandwidth": bandwidth}})
    declares: YamlDict = {}
    if draw(st.booleans(), label="declares sockets"):
        declares["sockets"] = parts.n_sockets
    if draw(st.booleans(), label="declares gpus"):
        declares["gpus"] = parts.n_gpus
    if draw(st.booleans(), label="declares memory"):
        declares["memory"] = format_bytes(total)
    return socket_entries, declares


def _backend_nic(i: int, part: str, transport: str, gpus: list[str], pcie: YamlDict) -> YamlDict:
    entry: YamlDict = {"id": f"nic{i}", "part": part, "role": "backend", "transport": transport}
    if len(gpus) == 1:
        entry["gpu"] = gpus[0]
    elif gpus:
        entry["gpus"] = gpus
    entry["device"] = f"mlx5_{i}"
    if transport == "rocev2":
        entry["interface"] = f"eth{i}"
    entry["pcie"] = pcie
    return entry


def _backend(draw: st.DrawFn, mode: str, transport: str | None, rails_align: bool = True) -> YamlDict | None:
    if mode == "none":
        if not draw(st.booleans(), label="backend section"):
            return None
        backend: YamlDict = {"transport": "tcp"}
    elif mode in ("per-gpu", "several-per-gpu"):
        backend = {"transport": transport, "nic_per_gpu": True, "gpudirect": True}
    else:
        backend = {"transport": transport}
        if draw(st.booleans(), label="gpudirect"):
            backend["gpudirect"] = True
    if rails_align and draw(st.booleans(), label="rail-optimized"):
        backend["rail_optimized"] = True
    if transport == "rocev2" and draw(st.booleans(), label="RoCE settings"):
        backend["gid_index"] = 3
        backend["traffic_class"] = 106
    return backend


def _fabric(draw: st.DrawFn, layout: _Layout, gpus: list[YamlDict], pattern: str, links: int) -> tuple[YamlDict | None, YamlDict | None]:
    """(baseboard, nvlink) for `pattern`; sets GPU slots and `layout.per_pair`."""
    from hwspec.model.resolve_node import HYBRID_CUBE_MESH

    n = len(gpus)
    if pattern == "none":
        return None, None
    if pattern == "nvswitch":
        if not draw(st.booleans(), label="NVSwitch chips described"):
            return None, {"topology": "nvswitch"}
        # an hgx board: 1-6 switches, each GPU's links spread over them within the part's budget
        count = draw(st.integers(1, min(6, links)), label="NVSwitch chips")
        per_switch = [draw(st.integers(1, links - count + 1), label="links to a switch") for _ in range(count)]
        while sum(per_switch) > links:  # shrink the largest until the budget holds (every switch keeps >= 1)
            per_switch[per_switch.index(max(per_switch))] -= 1
        switches = [{"id": f"nvs{i}", "links_per_gpu": k} for i, k in enumerate(per_switch)]
        return {"kind": "hgx", "slots": n, "wiring": "nvswitch", "nvswitches": switches}, {"topology": "nvswitch"}
    slots_total = 8 if pattern == "hybrid-cube-mesh" else n + draw(st.integers(0, 2), label="empty slots")
    slots = draw(st.permutations(range(slots_total)), label="slots")[:n]
    for entry, slot in zip(gpus, slots):
        # insert `slot` after `part`, where people write it
        items = list(entry.items())
        entry.clear()
        entry.update(items[:2] + [("slot", slot)] + items[2:])

    nvlink: YamlDict
    pairs: dict[tuple[int, int], int] = {}  # slot pair -> logical links
    if pattern == "hybrid-cube-mesh":
        nvlink = {"topology": "hybrid-cube-mesh"}
        pairs = dict(HYBRID_CUBE_MESH)
    elif pattern == "ring":
        per_pair = draw(st.integers(1, links if n == 2 else links // 2), label="links per ring pair")
        order = draw(st.permutations(range(n)), label="ring order")
        ring = [(order[i], order[(i + 1) % n]) for i in range(n if n > 2 else 1)]
        nvlink = {"topology": [{"gpus": [gpus[a]["id"], gpus[b]["id"]], "links": per_pair} for a, b in ring]}
        pairs = {(min(slots[a], slots[b]), max(slots[a], slots[b])): per_pair for a, b in ring}
        layout.per_pair = per_pair
    else:
        excluded: set[tuple[int, int]] = set()
        exclude = []
        if pattern == "fully-connected-minus-matching":
            per_pair = draw(st.integers(1, links // (n - 2)), label="links per pair")
            order = draw(st.permutations(range(n)), label="matching")
            exclude = [sorted((slots[order[i]], slots[order[i + 1]])) for i in range(0, n, 2)]
            excluded = {(a, b) for a, b in exclude}
        else:
            per_pair = draw(st.integers(1, links // (n - 1)), label="links per pair") if n > 1 else 1
        nvlink = {"topology": "fully-connected"}
        if per_pair != 1:
            nvlink["links_per_pair"] = per_pair
        if exclude:
            nvlink["exclude"] = exclude
        ordered = sorted(slots)
        pairs = {(a, b): per_pair for i, a in enumerate(ordered) for b in ordered[i + 1:] if (a, b) not in excluded}
        layout.per_pair = per_pair

    widest = max(pairs.values(), default=1)
    wirings = ["fully-connected", "explicit"] + (["hybrid-cube-mesh"] if pattern == "hybrid-cube-mesh" else [])
    wiring = draw(st.sampled_from(wirings), label="baseboard wiring")
    board: YamlDict = {}
    kind = draw(st.sampled_from(("oam-ubb", "hgx", "custom")), label="baseboard kind")
    if kind != "oam-ubb":
        board["kind"] = kind
    board["slots"] = slots_total
    if wiring == "fully-connected":
        per_port = widest + draw(st.integers(0, 1), label="spare links per port")
        ports = slots_total - 1
        wired: Any = "fully-connected"
    elif wiring == "hybrid-cube-mesh":
        per_port = 1 + draw(st.integers(0, 1), label="spare links per port")
        ports = 6
        wired = "hybrid-cube-mesh"
    else:
        per_port = draw(st.integers(1, widest), label="links per port")
        wired = [[a, b] for (a, b), count in sorted(pairs.items()) for _ in range(-(-count // per_port))]
        if slots_total > 1:
            extra = draw(st.lists(st.tuples(st.integers(0, slots_total - 1), st.integers(1, slots_total - 1)),
                                  max_size=3), label="extra wired ports")
            wired += [[a, (a + step) % slots_total] for a, step in extra]
        per_slot = [0] * slots_total
        for a, b in wired:
            per_slot[a] += 1
            per_slot[b] += 1
        ports = max(per_slot)
    board["ports_per_slot"] = ports + draw(st.integers(0, 1), label="spare ports")
    if per_port != 1:
        board["links_per_port"] = per_port
    board["wiring"] = wired
    return board, nvlink


def node_specs(*, min_sockets: int = 1, max_sockets: int = 8, min_gpus: int = 1, max_gpus: int = 16,
               gpu_parts: Iterable[str] | None = None, nvlink: Iterable[str] | None = None,
               nic_modes: Iterable[str] | None = None, name: str = "node",
               virtual_links: bool = False, numa_nodes: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """Valid node platform specs as plain dicts (what a YAML file holds).

    `min_/max_sockets` (1-8) and `min_/max_gpus` (1-16) bound the sizes; `gpu_parts` limits the
    catalogue GPU parts (APU parts, whose sockets share their HBM, are not drawn), `nvlink` the
    patterns (`NVLINK_PATTERNS`), `nic_modes` the backend NIC layouts (`NIC_MODES`); `name` is
    the platform name; `virtual_links` lets links be presented as a VM shows them (see
    `present_virtually`), `numa_nodes` lets sockets hold several NUMA nodes (see
    `group_numa_nodes`). Every spec passes every built-in rule with no finding; see the module docstring for what varies and what is guaranteed."""
    layouts = _layouts(min_sockets=min_sockets, max_sockets=max_sockets, min_gpus=min_gpus, max_gpus=max_gpus,
                       gpu_parts=gpu_parts, nvlink=nvlink, nic_modes=nic_modes, name=name)
    specs = layouts.map(lambda layout: layout.spec)
    if numa_nodes:
        specs = specs.flatmap(lambda spec: group_numa_nodes(spec))
    return specs.flatmap(lambda spec: present_virtually(spec)) if virtual_links else specs


ENVIRONMENT_SETTINGS: dict[str, tuple[str | int | bool, ...]] = {
    "NCCL_IB_QPS_PER_CONNECTION": (1, 2, 4, 8),
    "NCCL_IB_TIMEOUT": (18, 20, 22),
    "NCCL_IB_ADAPTIVE_ROUTING": (True, False),
    "NCCL_IB_PCI_RELAXED_ORDERING": (1,),
    "NCCL_DEBUG": ("WARN", "INFO"),
    "NCCL_CROSS_NIC": (0, 1, 2),
    "UCX_TLS": ("rc", "ud,rc"),
    "CUDA_MODULE_LOADING": ("LAZY",),
}
"""Settings vendors document, and values for them, that `with_environment` draws from."""


@st.composite
def with_environment(draw: st.DrawFn, spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with an `environment:` of 0-4 settings from ENVIRONMENT_SETTINGS (NCCL names
    NCCL knows, launcher names; one may replace a setting hwspec writes, NCCL_CROSS_NIC)."""
    spec = copy.deepcopy(spec)
    names = draw(st.lists(st.sampled_from(sorted(ENVIRONMENT_SETTINGS)), max_size=4, unique=True), label="settings")
    if names:
        spec["environment"] = {name: draw(st.sampled_from(ENVIRONMENT_SETTINGS[name]), label=name) for name in names}
    return spec


@st.composite
def group_numa_nodes(draw: st.DrawFn, spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with some pairs of consecutive sockets grouped into one physical socket (`pkgN`)
    listing them as its `numa_nodes`: ids, NUMA numbers, memory and CPU lists stay as they
    were (the CPU lists written out), so every device, binding and figure is unchanged;
    `declares.sockets` counts the physical sockets."""
    from hwspec.cpulist import format_cpu_list as cpu_ranges

    spec = copy.deepcopy(spec)
    cpus = {s.id: s.cpus for s in load_node_text(dump_yaml(spec)).sockets}
    sockets, i = spec["sockets"], 0
    grouped: list[YamlDict] = []
    while i < len(sockets):
        if i + 1 < len(sockets) and draw(st.booleans(), label=f"group {sockets[i]['id']}"):
            pair = sockets[i:i + 2]
            grouped.append({"id": f"pkg{len(grouped)}", "part": pair[0]["part"], "numa_nodes": [
                {"id": s["id"], "numa_node": s["numa_node"], "cpus": cpu_ranges(cpus[s["id"]]), "memory": s["memory"]}
                for s in pair]})
            i += 2
        else:  # written out too: a derived list depends on the socket's place among the packages
            grouped.append({**sockets[i], "cpus": cpu_ranges(cpus[sockets[i]["id"]])})
            i += 1
    spec["sockets"] = grouped
    if "sockets" in spec.get("declares", {}):
        spec["declares"]["sockets"] = len(grouped)
    return spec


def _physical_link(entry: YamlDict, part_link: PartLink | None) -> YamlDict:
    """The link an entry trains at, as written: its own `link`, else its part's interface (a
    bridge has its own: no part)."""
    if "link" in entry or part_link is None:
        return dict(entry["link"])
    return {"gen": part_link.generation, "width": part_link.width}


@st.composite
def present_virtually(draw: st.DrawFn, spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with some links presented as a VM shows them: a bridge as Gen1 x1, a GPU or NIC
    with width 0 at its trained generation; each keeps its trained link as `link.physical`,
    so every bandwidth, rule and roofline figure is unchanged."""
    spec = copy.deepcopy(spec)
    gpu_parts, nic_parts = _parts("gpus"), _parts("nics")
    for bridge in spec.get("pcie", []):
        if draw(st.booleans(), label=f"{bridge['id']} virtual"):
            bridge["link"] = {"gen": 1, "width": 1, "physical": _physical_link(bridge, None)}
    for section, parts in (("gpus", gpu_parts), ("nics", nic_parts)):
        for entry in spec.get(section, []):
            if draw(st.booleans(), label=f"{entry['id']} virtual"):
                trained = _physical_link(entry["pcie"], parts[entry["part"]].pcie)
                entry["pcie"]["link"] = {"gen": trained["gen"], "width": 0, "physical": trained}
    return spec


@takes_parameters_of(node_specs)
def node_yaml(**kwargs: Any) -> st.SearchStrategy[str]:
    """YAML text of `node_specs(...)` with the same parameters (`dump_yaml`: yaml.safe_dump,
    sort_keys=False)."""
    return node_specs(**kwargs).map(dump_yaml)


@takes_parameters_of(node_specs)
def node_platforms(**kwargs: Any) -> st.SearchStrategy[Platform]:
    """Resolved `hwspec.model.node.Platform`s of `node_specs(...)` with the same parameters, loaded
    from their YAML text by the real loader (`load_node_text`), so every example also exercises the loader."""
    return node_yaml(**kwargs).map(load_node_text)


