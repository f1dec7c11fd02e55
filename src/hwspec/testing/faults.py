"""Single-fault mutations of valid specs, each labelled with the rule that must report it:
`faulty_node_specs()`, `faulty_cluster_specs()`, `Fault`."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from hwspec.spec.units import format_bytes, parse_bytes
from hwspec.testing.clusters import ClusterFiles, _cluster_files
from hwspec.testing.nodes import _FIRST_BUS, YamlDict, _Layout, _layouts, _parts

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Fault:
    """One fault put into a valid spec: the rule that must report it, and where.

    `path` is the key path of the mutated value in the mutated spec (`("nics", 3, "pcie",
    "upstream")`); for a removal, the entry whose lack the rule reports (the GPU that lost its
    NIC). The rule's finding is on the line where the value at `path` starts in the YAML text:
    the key's own line for a scalar or flow value, the first line of a block list or mapping."""

    rule: str
    path: Path_
    description: str


Needs = dict[str, int | tuple[str, ...]]
"""What a mutation needs of the base spec, as `node_specs` arguments: `min_gpus`/`min_sockets`
(a lower bound) and `nvlink`/`nic_modes` (the choices it applies to)."""
Apply = Callable[[st.DrawFn, _Layout], tuple[Fault, YamlDict]]
"""A mutation: draws where to put the fault into a copy of the layout's spec."""


@dataclass(frozen=True)
class _Mutation:
    rule: str
    needs: Needs
    apply: Apply


_MUTATIONS: list[_Mutation] = []


def _mutation(rule: str, **needs: int | tuple[str, ...]) -> Callable[[Apply], Apply]:
    """Register the decorated mutation as one for `rule`, applying where `needs` hold."""
    def register(func: Apply) -> Apply:
        _MUTATIONS.append(_Mutation(rule, needs, func))
        return func

    return register


def _file_order(spec: YamlDict) -> list[tuple[str, int, YamlDict]]:
    """(section, index, entry) of every PCIe item in the order the YAML writes them."""
    return [(section, i, e) for section in ("pcie", "gpus", "nics", "ssds") for i, e in enumerate(spec.get(section, []))]


def _bus_path(section: str, index: int) -> Path_:
    return (section, index, "bus") if section == "pcie" else (section, index, "pcie", "bus")


@_mutation("HW101")
def _pcie_cycle(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    i = draw(st.integers(0, len(spec["pcie"]) - 1), label="bridge")
    bridge = spec["pcie"][i]
    bridge["upstream"] = bridge["id"]
    return Fault("HW101", ("pcie", i, "upstream"), f"{bridge['id']} is its own upstream: a PCIe cycle"), spec


@_mutation("HW102")
def _duplicate_bus(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    items = _file_order(spec)
    j = draw(st.integers(1, len(items) - 1), label="second device")
    i = draw(st.integers(0, j - 1), label="first device")
    (s1, _, first), (s2, i2, second) = items[i], items[j]
    bus = first["bus"] if s1 == "pcie" else first["pcie"]["bus"]
    (second if s2 == "pcie" else second["pcie"])["bus"] = bus
    return Fault("HW102", _bus_path(s2, i2), f"{second['id']} takes bus id {bus} of {first['id']}"), spec


@_mutation("HW103")
def _narrow_uplink(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    leaf = draw(st.sampled_from(layout.leaves), label="leaf")
    i = layout.index("pcie", leaf)
    spec["pcie"][i]["link"]["width"] = 1
    return Fault("HW103", ("pcie", i, "link"), f"{leaf}'s uplink narrowed to x1 under its GPUs"), spec


@_mutation("HW104")
def _link_newer_than_switch(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    i = draw(st.integers(0, len(spec["gpus"]) - 1), label="GPU")
    gpu = spec["gpus"][i]
    gen = layout.gen_of[gpu["pcie"]["upstream"]] + 1
    gpu["pcie"]["link"] = {"gen": gen, "width": 16}
    return Fault("HW104", ("gpus", i, "pcie", "link"), f"{gpu['id']} claims a Gen{gen} link below a Gen{gen - 1} switch"), spec


@_mutation("HW105")
def _link_wider_than_part(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    devices = [("gpus", i) for i in range(len(spec["gpus"]))] + [("nics", i) for i in range(len(spec.get("nics", [])))]
    section, i = draw(st.sampled_from(devices), label="device")
    device = spec[section][i]
    gen = (device["pcie"].get("link") or {}).get("gen") or _part_gen(section, device["part"])
    device["pcie"]["link"] = {"gen": gen, "width": 32}
    return Fault("HW105", (section, i, "pcie", "link"), f"{device['id']} claims an x32 link, wider than its part"), spec


def _part_gen(section: str, part: str) -> int:
    """The PCIe generation of GPU (`section` "gpus") or NIC ("nics") part `part`."""
    parts = _parts("gpus") if section == "gpus" else _parts("nics")
    return parts[part].pcie.generation


@_mutation("HW201", nic_modes=("per-gpu",))
def _gpu_loses_nic(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    backend = [i for i, n in enumerate(spec["nics"]) if n["role"] == "backend"]
    k = draw(st.sampled_from(backend), label="backend NIC")
    nic = spec["nics"].pop(k)
    g = layout.index("gpus", nic["gpu"])
    return Fault("HW201", ("gpus", g), f"{nic['id']}, the backend NIC of {nic['gpu']}, removed"), spec


@_mutation("HW202", nic_modes=("per-gpu",))
def _nic_on_other_switch(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    backend = [i for i, n in enumerate(spec["nics"]) if n["role"] == "backend"]
    k = draw(st.sampled_from(backend), label="backend NIC")
    nic = spec["nics"][k]
    home = layout.top_of[nic["gpu"]]
    away = [leaf for leaf in layout.leaves if layout.top_of[leaf] != home]
    target = draw(st.sampled_from(away), label="other switch") if away else layout.socket_of[nic["gpu"]]
    nic["pcie"]["upstream"] = target
    return Fault("HW202", ("nics", k, "pcie", "upstream"), f"{nic['id']} moved to {target}, away from {nic['gpu']}"), spec


@_mutation("HW204", nic_modes=("per-gpu", "shared"))
def _nic_transport(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    backend = [i for i, n in enumerate(spec["nics"]) if n["role"] == "backend"]
    k = draw(st.sampled_from(backend), label="backend NIC")
    spec["nics"][k]["transport"] = "tcp"
    return Fault("HW204", ("nics", k, "transport"), f"{spec['nics'][k]['id']} runs tcp on an RDMA backend"), spec


def _fresh_host_nic(spec: YamlDict, upstream: str, interface: str | None = None) -> YamlDict:
    used = {e["pcie"]["bus"] if "pcie" in e else e["bus"] for _, _, e in _file_order(spec)}
    bus = next(f"0000:{b:02x}:00.0" for b in range(_FIRST_BUS, 0x100) if f"0000:{b:02x}:00.0" not in used)
    ids = {n["id"] for n in spec.get("nics", [])}
    ident = next(f"fe{i}" for i in range(100) if f"fe{i}" not in ids)
    return {"id": ident, "part": "ethernet-100g", "role": "ingestion", "transport": "tcp",
            "interface": interface or f"ing{ident[2:]}", "pcie": {"upstream": upstream, "bus": bus}}


@_mutation("HW205")
def _host_nic_on_gpu_switch(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    leaf = draw(st.sampled_from(layout.leaves), label="GPU switch")
    nics = spec.setdefault("nics", [])
    hosts = [i for i, n in enumerate(nics) if n["role"] in ("ingestion", "frontend")]
    if hosts:
        k = draw(st.sampled_from(hosts), label="host NIC")
        nics[k]["pcie"]["upstream"] = leaf
        what = f"{nics[k]['id']} moved below {leaf}"
    else:
        nics.append(_fresh_host_nic(spec, leaf))
        k = len(nics) - 1
        what = f"ingestion NIC {nics[k]['id']} added below {leaf}"
    return Fault("HW205", ("nics", k, "pcie", "upstream"), what + ", a switch holding GPUs"), spec


@_mutation("HW206")
def _duplicate_interface(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    nics = spec.setdefault("nics", [])
    named = [i for i, n in enumerate(nics) if "interface" in n]
    if named and named[0] < len(nics) - 1:
        first = named[0]
        k = draw(st.integers(first + 1, len(nics) - 1), label="second NIC")
        nics[k]["interface"] = nics[first]["interface"]
    else:
        interface = nics[named[0]]["interface"] if named else "ens9"
        if not named:
            nics.append(_fresh_host_nic(spec, spec["sockets"][0]["id"], interface))
        nics.append(_fresh_host_nic(spec, spec["sockets"][0]["id"], interface))
        k = len(nics) - 1
    return Fault("HW206", ("nics", k, "interface"), f"{nics[k]['id']} reuses interface {nics[k]['interface']}"), spec


_PAIRED = ("fully-connected", "ring", "hybrid-cube-mesh", "fully-connected-minus-matching")


@_mutation("HW301", nvlink=_PAIRED, min_gpus=2)
def _no_baseboard(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    del spec["baseboard"]
    return Fault("HW301", ("nvlink", "topology"), "the baseboard carrying the NVLink pairs removed"), spec


def _ring_pair(draw: st.DrawFn, spec: YamlDict) -> tuple[int, YamlDict]:
    pairs = spec["nvlink"]["topology"]
    k = draw(st.integers(0, len(pairs) - 1), label="ring pair")
    return k, pairs[k]


def _carried(spec: YamlDict, pair: YamlDict) -> int:
    """NVLink links the baseboard carries between the slots of an explicit pair's GPUs."""
    from hwspec.model.resolve_node import HYBRID_CUBE_MESH

    board = spec["baseboard"]
    slot = {g["id"]: g["slot"] for g in spec["gpus"]}
    a, b = sorted(slot[g] for g in pair["gpus"])
    wiring = board["wiring"]
    if wiring == "fully-connected":
        ports = 1
    elif wiring == "hybrid-cube-mesh":
        ports = HYBRID_CUBE_MESH.get((a, b), 0)
    else:
        ports = sum(1 for p in wiring if sorted(p) == [a, b])
    per_port: int = board.get("links_per_port", 1)
    return ports * per_port


@_mutation("HW301", nvlink=("ring",), min_gpus=2)
def _pair_beyond_board(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    k, pair = _ring_pair(draw, spec)
    pair["links"] = _carried(spec, pair) + 1
    return Fault("HW301", ("nvlink", "topology", k),
                 f"{pair['gpus'][0]}-{pair['gpus'][1]} given {pair['links']} links, more than the baseboard wires"), spec


@_mutation("HW302", nvlink=("ring",), min_gpus=2)
def _over_link_budget(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    _, pair = _ring_pair(draw, spec)
    pair["links"] = layout.gpu_links + 1
    return Fault("HW302", ("nvlink", "topology"),
                 f"{pair['gpus'][0]}-{pair['gpus'][1]} given {pair['links']} links, more than the part has"), spec


@_mutation("HW303", nvlink=("ring",), min_gpus=2)
def _self_link(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    k, pair = _ring_pair(draw, spec)
    pair["gpus"][1] = pair["gpus"][0]
    return Fault("HW303", ("nvlink", "topology", k), f"{pair['gpus'][0]} linked to itself"), spec


@_mutation("HW305", nvlink=("ring",), min_gpus=3)
def _asymmetric(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    _, pair = _ring_pair(draw, spec)
    pair["links"] = layout.per_pair - 1 if layout.per_pair > 1 else layout.per_pair + 1
    return Fault("HW305", ("nvlink", "topology"),
                 f"{pair['gpus'][0]}-{pair['gpus'][1]} given {pair['links']} links, the other ring pairs {layout.per_pair}"), spec


@_mutation("HW307", nvlink=_PAIRED, min_gpus=2)
def _slot_taken(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    j = draw(st.integers(1, len(spec["gpus"]) - 1), label="second GPU")
    i = draw(st.integers(0, j - 1), label="first GPU")
    spec["gpus"][j]["slot"] = spec["gpus"][i]["slot"]
    return Fault("HW307", ("gpus", j, "slot"), f"{spec['gpus'][j]['id']} put in {spec['gpus'][i]['id']}'s slot"), spec


@_mutation("HW501", min_sockets=2)
def _numa_taken(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = copy.deepcopy(layout.spec)
    j = draw(st.integers(1, len(spec["sockets"]) - 1), label="second socket")
    i = draw(st.integers(0, j - 1), label="first socket")
    spec["sockets"][j]["numa_node"] = spec["sockets"][i]["numa_node"]
    return Fault("HW501", ("sockets", j, "numa_node"), f"{spec['sockets'][j]['id']} given {spec['sockets'][i]['id']}'s NUMA node"), spec


def _with_declares(spec: YamlDict) -> YamlDict:
    """The spec with a `declares` mapping in its usual place (after `name`)."""
    if "declares" in spec:
        return spec
    items = list(spec.items())
    at = [k for k, _ in items].index("name") + 1
    return dict(items[:at] + [("declares", {})] + items[at:])


@_mutation("HW502")
def _memory_total(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = _with_declares(copy.deepcopy(layout.spec))
    total = sum(parse_bytes(s["memory"]["capacity"]) for s in spec["sockets"])
    extra = parse_bytes(spec["sockets"][0]["memory"]["capacity"])
    spec["declares"]["memory"] = format_bytes(total + extra)
    return Fault("HW502", ("declares", "memory"), f"declares.memory is {format_bytes(total + extra)}, the sockets have {format_bytes(total)}"), spec


@_mutation("HW601")
def _gpu_count(draw: st.DrawFn, layout: _Layout) -> tuple[Fault, YamlDict]:
    spec = _with_declares(copy.deepcopy(layout.spec))
    field_ = draw(st.sampled_from(("gpus", "sockets")), label="declared count")
    wrong = len(spec[field_]) + draw(st.integers(1, 2), label="off by")
    spec["declares"][field_] = wrong
    return Fault("HW601", ("declares", field_), f"declares.{field_} is {wrong}, {len(spec[field_])} described"), spec


FAULT_RULES = tuple(sorted({m.rule for m in _MUTATIONS}))
"""The node rules `faulty_node_specs` has mutations for."""


def _merge_needs(kwargs: dict[str, Any], needs: Needs) -> dict[str, Any] | None:
    """`kwargs` (`node_specs` arguments) narrowed by a mutation's needs; None when they cannot both hold."""
    merged = dict(kwargs)
    for key, value in needs.items():
        if isinstance(value, int):  # min_gpus, min_sockets
            merged[key] = max(value, merged.get(key, 1))
            if merged[key] > merged.get("max_" + key[4:], {"min_gpus": 16, "min_sockets": 8}[key]):
                return None
        else:
            allowed = [v for v in value if v in merged.get(key, value)]
            if not allowed:
                return None
            merged[key] = tuple(allowed)
    return merged


def faulty_node_specs(*, rules: Iterable[str] | None = None, **node_kwargs: Any) -> st.SearchStrategy[tuple[Fault, dict[str, Any]]]:
    """`(Fault, spec)`: a valid `node_specs(**node_kwargs)` spec with exactly one fault put in,
    labelled with the rule that must report it and the key path of the fault (see `Fault`).

    `rules` limits the faults to those rules (`FAULT_RULES` lists every rule covered). The base
    spec is drawn with what the fault needs (e.g. per-GPU NICs to take one away), so every draw
    applies. Other rules may report the fault too (a NIC moved away from its GPU is often on
    another NUMA node as well); the labelled one always does."""
    wanted = set(FAULT_RULES if rules is None else rules)
    unknown = wanted - set(FAULT_RULES)
    if unknown:
        raise ValueError(f"no faults for {', '.join(sorted(unknown))}; covered: {', '.join(FAULT_RULES)}")
    choices = [(m, merged) for m in _MUTATIONS if m.rule in wanted
               if (merged := _merge_needs(node_kwargs, m.needs)) is not None]
    if not choices:
        raise ValueError(f"none of the faults for {', '.join(sorted(wanted))} fit {node_kwargs}")

    @st.composite
    def fault(draw: st.DrawFn) -> tuple[Fault, YamlDict]:
        # sampled_from's overloads give Any for elements holding Any (the keyword arguments): the type is restated
        chosen: tuple[_Mutation, dict[str, Any]] = draw(st.sampled_from(choices), label="fault")
        mutation, kwargs = chosen
        return mutation.apply(draw, draw(_layouts(**kwargs)))

    return fault()


@st.composite
def _cluster_fault(draw: st.DrawFn, rules: frozenset[str], kwargs: dict[str, Any]) -> tuple[Fault, ClusterFiles]:
    rule = draw(st.sampled_from(sorted(rules)), label="cluster fault")
    if rule == "HW805":
        files = draw(_cluster_files(**{**kwargs, "min_nodes": max(2, kwargs.get("min_nodes", 1))}))
        cluster = copy.deepcopy(files.cluster)
        cluster["nodes"][0]["hostname"] = "node"
        return Fault("HW805", ("nodes", 0, "hostname"), "every node is called 'node'"), ClusterFiles(cluster, files.node)
    if rule == "HW806":
        files = draw(_cluster_files(**kwargs))
        cluster = copy.deepcopy(files.cluster)
        world = cluster["nodes"][0]["count"] * len(files.node["gpus"])
        cluster["world_size"] = world + draw(st.integers(1, 8), label="off by")
        return Fault("HW806", ("world_size",), f"world_size is {cluster['world_size']}, the nodes hold {world}"), ClusterFiles(cluster, files.node)
    if rule in ("HW821", "HW822"):
        files = draw(_cluster_files(**{**kwargs, "nvlink_domains": True}))
        cluster = copy.deepcopy(files.cluster)
        domain = cluster["nvlink_domain"]
        count = cluster["nodes"][0]["count"]
        if rule == "HW821":
            domain["nodes"] = count + 1
            return Fault("HW821", ("nvlink_domain", "nodes"), f"{count} nodes in one domain of {count + 1}"), ClusterFiles(cluster, files.node)
        catalogue = _parts("gpus")
        links = domain["nodes"] * sum(catalogue[g["part"]].fabric.links for g in files.node["gpus"])
        domain["switch_trays"], domain["switch_ports"] = 1, links - 1
        return (Fault("HW822", ("nvlink_domain", "switch_ports"), f"one switch tray of {links - 1} ports for {links} GPU links"),
                ClusterFiles(cluster, files.node))
    files = draw(_cluster_files(**{**kwargs, "backend_network": True}))
    cluster = copy.deepcopy(files.cluster)
    speed = cluster["backend"]["speed"]
    cluster["backend"]["speed"] = "400 Gb/s" if speed != "50 GB/s" else "100 Gb/s"
    fault = Fault("HW807", ("backend", "speed"), f"the backend network runs at {cluster['backend']['speed']}, the NICs at {speed}")
    return fault, ClusterFiles(cluster, files.node)


CLUSTER_FAULT_RULES = ("HW805", "HW806", "HW807", "HW821", "HW822")
"""The cluster rules `faulty_cluster_specs` has mutations for."""


def faulty_cluster_specs(*, rules: Iterable[str] | None = None, **kwargs: Any) -> st.SearchStrategy[tuple[Fault, ClusterFiles]]:
    """`(Fault, ClusterFiles)`: a valid `cluster_specs(**kwargs)` cluster with one fault in the
    cluster file (duplicate hostnames HW805, wrong world size HW806, backend speed unlike the
    NICs' HW807, an NVLink domain larger than the cluster HW821, too few NVLink switch ports
    HW822). `Fault.path` is a path in the cluster file."""
    wanted = frozenset(CLUSTER_FAULT_RULES if rules is None else rules)
    if not wanted or wanted - set(CLUSTER_FAULT_RULES):
        raise ValueError(f"cluster faults cover {', '.join(CLUSTER_FAULT_RULES)}, not {sorted(wanted)}")
    return _cluster_fault(wanted, kwargs)


