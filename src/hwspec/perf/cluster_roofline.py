"""Cluster roofline parameters: aggregates, injection and bisection bandwidth, and
hierarchical collective bounds, built on the node documents of `hwspec.perf.roofline`.

Units as in `hwspec.perf.roofline`: bytes, bytes/s per direction, FLOP/s, in key names.
Collective bounds follow nccl-tests' conventions for n = world size ranks: for a buffer of S
bytes, algbw = S / t and busbw = algbw x factor (2(n-1)/n for AllReduce, (n-1)/n otherwise).
Every bound is an upper bound from link bandwidths alone (no latency, no protocol overhead).
"""

from __future__ import annotations

import math
from typing import Any

from hwspec.perf import roofline as rf
from hwspec.perf.roofline_report import unknown_report
from hwspec.perf.tables import gbps, gib, number, table
from hwspec.perf.torchrec import torchrec_topology
from hwspec.text import visible
from hwspec.topology import topology_of
from hwspec.topology.cluster import ClusterTopology

HIERARCHICAL_METHOD = (
    "Upper bounds from bandwidth alone, per byte of the nccl-tests buffer S, with G GPUs per node, N nodes, "
    "n = N*G ranks, B_intra = the node's intra-node busbw bound (NVLink, else PCIe) and B_inj = per-GPU "
    "injection bandwidth (its backend NIC, capped by its share of the bisection). "
    "all_reduce: intra-node reduce-scatter, inter-node all-reduce of S/G per GPU, intra-node all-gather, "
    "pipelined (NCCL overlaps the phases, so the slowest one bounds): "
    "t/S = max(2(G-1)/(G*B_intra), 2(N-1)/(N*G*B_inj)); with NVLink SHARP (NVLS) the intra phases move "
    "(1+1/G)/B_intra, with SHARP switches (CollNet) the inter phase moves 1/(G*B_inj) (each GPU sends its "
    "S/G into the network and receives it reduced). "
    "all_gather / reduce_scatter: t/S = max((G-1)/(G*B_intra), (N-1)/(N*G*B_inj)). "
    "all_to_all: each GPU sends S/n to every rank; (n-G)/n of S leaves the node: "
    "t/S = max((n-G)/(n*B_inj), (G-1)/(n*B_intra), n/(4*bisection)). "
    "A flat ring over the same links (busbw = min(B_intra, G*B_inj)) never beats these. "
    "algbw = 1/(t/S); busbw = algbw * nccl-tests factor; 'algorithm' names the NCCL algorithm the bound is for "
    "(Ring, NVLS / NVLSTree, CollNetDirect). "
    "With NVLink domains beyond a node, the domain takes the node's place: G = GPUs per domain, N = domains, "
    "B_intra = min(the node's intra-node bound, the GPU's NVLink bandwidth into the domain's switches)."
)


def ring_busbw(gpus: int, intra: float, injection: float) -> float:
    """busbw bound of NCCL's flat ring over every GPU of `N` nodes of `gpus` GPUs: each ring
    channel crosses each node boundary once, so a node's NICs carry what one GPU's links carry:
    busbw = min(B_intra, G x B_inj) (nccl-tests' busbw, bytes/s)."""
    return min(intra, gpus * injection)


def reduction_phases(nodes: int, gpus: int, intra: float, injection: float, nvls: bool, sharp: bool) -> dict[str, float]:
    """Seconds per byte of S of the AllReduce's intra- and inter-node phases, each with the
    better of the plain and the in-network algorithm the platform has (`nvls`: NVLink SHARP in
    the node's switches; `sharp`: SHARP in the backend switches)."""
    intra_phase = 2 * (gpus - 1) / (gpus * intra)
    if nvls:
        intra_phase = min(intra_phase, (1 + 1 / gpus) / intra)
    inter_phase = 2 * (nodes - 1) / (nodes * gpus * injection) if nodes > 1 else 0.0
    if sharp and nodes > 1:
        inter_phase = min(inter_phase, 1 / (gpus * injection))
    return {"intra": intra_phase, "inter": inter_phase}


def all_reduce_algorithm(nodes: int, gpus: int, intra: float, injection: float, nvls: bool, sharp: bool) -> str:
    """The NCCL algorithm the AllReduce bound is for: in-network reduction only where it raises
    the bound (the phase it shortens is the slowest), else Ring."""
    plain = max(reduction_phases(nodes, gpus, intra, injection, False, False).values())
    with_nvls = max(reduction_phases(nodes, gpus, intra, injection, nvls, False).values())
    with_sharp = max(reduction_phases(nodes, gpus, intra, injection, False, sharp).values())
    both = max(reduction_phases(nodes, gpus, intra, injection, nvls, sharp).values())
    if both >= plain:
        return "Ring"
    if both < with_nvls and both < with_sharp:
        return "NVLS"            # NCCL's multi-node NVLS reduces over SHARP between nodes
    if with_sharp <= with_nvls:
        return "CollNetDirect"
    return "NVLS" if nodes <= 1 else "NVLSTree"


def phase_seconds_per_byte(nodes: int, gpus: int, intra: float, injection: float, bisection: float,
                           nvls: bool = False, sharp: bool = False) -> dict[str, dict[str, float]]:
    """Seconds per byte of S of each collective's intra-node ("intra") and inter-node ("inter")
    phase under the hierarchical algorithm (HIERARCHICAL_METHOD); NCCL pipelines the phases, so
    the bound is the slower one. An AlltoAll's bisection share belongs to its inter phase."""
    n = nodes * gpus
    gather = {"intra": (gpus - 1) / (gpus * intra), "inter": (nodes - 1) / (nodes * gpus * injection) if nodes > 1 else 0.0}
    return {
        "all_reduce": reduction_phases(nodes, gpus, intra, injection, nvls, sharp),
        "all_gather": gather,
        "reduce_scatter": dict(gather),
        "all_to_all": {"intra": (gpus - 1) / (n * intra) if gpus > 1 else 0.0,
                       "inter": max((n - gpus) / (n * injection), n / (4 * bisection) if nodes > 1 else 0.0)},
    }


def _hierarchical(nodes: int, gpus: int, intra: float, injection: float, bisection: float,
                  nvls: bool = False, sharp: bool = False) -> dict[str, Any]:
    n = nodes * gpus
    phases = phase_seconds_per_byte(nodes, gpus, intra, injection, bisection, nvls, sharp)
    per_byte = {name: max(phase.values()) for name, phase in phases.items()}
    algorithms = {**rf.ALGORITHMS, "all_reduce": all_reduce_algorithm(nodes, gpus, intra, injection, nvls, sharp)}
    result: dict[str, Any] = {"n_ranks": n, "method": HIERARCHICAL_METHOD,
                              "ring_busbw_bytes_per_s": ring_busbw(gpus, intra, injection),
                              "in_network_reduction": {"nvls": nvls, "sharp": sharp}}
    for name in rf.COLLECTIVES:
        algbw = 1 / per_byte[name] if per_byte[name] > 0 else math.inf
        factor = rf.busbw_factor(name, n)
        result[name] = {"algbw_bytes_per_s": algbw, "busbw_factor": factor, "busbw_bytes_per_s": algbw * factor,
                        "algorithm": algorithms[name]}
    result["all_to_all"]["inter_node_share"] = (n - gpus) / (n - 1) if n > 1 else 0.0
    return result


def cluster_roofline(topology: ClusterTopology) -> dict[str, Any]:
    """The cluster's roofline document (without `_generated`). When a node platform has unknown
    figures (`Platform.unknown_figures`), every figure is null and `unknown` names them: no
    aggregate is summed over a figure nobody gave."""
    return cluster_roofline_and_phases(topology)[0]


def cluster_roofline_and_phases(topology: ClusterTopology) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """`cluster_roofline` and the `phase_seconds_per_byte` its collective bounds come from ({}
    where it has none): the expected estimate derates each phase by its own link's efficiency."""
    cluster = topology.platform
    unknown = [f"{p.name}: {line}" for p in cluster.node_platforms for line in p.unknown_figures]
    if unknown:
        return {**_header(cluster), "unknown": unknown, "aggregate": None, "network": None, "collectives": None}, {}
    node_docs = {p.name: rf.roofline(topology_of(p)) for p in cluster.node_platforms}
    aggregate: dict[str, Any] = {"nodes": cluster.node_count, "gpus": cluster.world_size, "compute": {}}
    sums = ("hbm_capacity_bytes", "hbm_bandwidth_bytes_per_s", "ddr_capacity_bytes", "ddr_bandwidth_bytes_per_s",
            "ssd_capacity_bytes", "ssd_bandwidth_bytes_per_s")
    for key in sums:
        aggregate[key] = sum(group.count * node_docs[group.platform.name]["node"][key] for group in cluster.groups)
    for group in cluster.groups:
        for dtype, peaks in node_docs[group.platform.name]["node"]["compute"].items():
            entry = aggregate["compute"].setdefault(dtype, {})
            for kind, value in peaks.items():
                entry[kind] = entry.get(kind, 0.0) + group.count * value

    gpus = min(g.gpus_per_node for g in cluster.groups)
    intra = min((node_docs[p.name]["intra_node_collectives"] or {}).get("busbw_bound_bytes_per_s", 0.0)
                for p in cluster.node_platforms) or math.inf
    nic = min(topology.per_gpu_scale_out(p) for p in cluster.node_platforms)
    fabric = cluster.fabric
    network: dict[str, Any] = {"per_gpu_nic_bytes_per_s": nic}
    injection = nic
    bisection = math.inf
    if fabric is not None:
        bisection = fabric.bisection
        share = 2 * bisection / cluster.world_size if cluster.world_size else math.inf
        injection = min(nic, share)
        network.update({
            "topology": fabric.topology, "transport": fabric.transport,
            "leaf_switches": len(fabric.leaves), "spine_switches": fabric.spine_count,
            "oversubscription": fabric.design_oversubscription or 1.0,
            "bisection_bytes_per_s": bisection,
            "injection_total_bytes_per_s": fabric.injection_total,
        })
    network["per_gpu_injection_bytes_per_s"] = injection
    if cluster.frontend is not None:
        hosts = sum(len(g.platform.host_nics) * g.count for g in cluster.groups)
        network["frontend_total_bytes_per_s"] = hosts * cluster.frontend.speed
        if cluster.frontend.ingestion_share is not None:
            network["ingestion_per_gpu_bytes_per_s"] = (hosts * cluster.frontend.speed * cluster.frontend.ingestion_share
                                                        / cluster.world_size)
    domains = cluster.nvlink_domains
    units, unit_gpus = cluster.node_count, gpus
    if domains is not None:
        nvlink = topology.domain_gpu_bandwidth
        units, unit_gpus = domains.count, topology.domain_gpus
        if domains.size > 1:
            intra = min(intra, nvlink) if nvlink else intra
        network["nvlink_domain"] = {
            "domains": domains.count, "nodes_per_domain": domains.size, "gpus_per_domain": unit_gpus,
            "switch_trays": domains.switch_trays, "switch_ports_per_tray": domains.switch_ports,
            "per_gpu_nvlink_bytes_per_s": nvlink,
            "busbw_bound_bytes_per_s": intra if math.isfinite(intra) else None,
            "method": "per-GPU NVLink bandwidth into the domain's switches (links x per-link bandwidth of the GPU part); "
                      "an NVLink switch fabric is non-blocking, so every GPU of the domain reaches every other at this rate",
        }
    collectives, phases = None, {}
    if cluster.world_size > 1 and math.isfinite(intra) and nic > 0:
        nvls = all(rf.nvlink_sharp(topology_of(p)) for p in cluster.node_platforms)
        sharp = fabric is not None and fabric.sharp
        arguments = (units, unit_gpus, intra, injection, bisection if fabric else math.inf, nvls, sharp)
        collectives = _hierarchical(*arguments)
        phases = phase_seconds_per_byte(*arguments)
    return {**_header(cluster), "aggregate": aggregate, "network": network, "collectives": collectives}, phases


def _header(cluster: Any) -> dict[str, Any]:
    """The keys every cluster roofline document starts with: schema, units, the cluster and its assumptions."""
    return {
        "schema_version": rf.SCHEMA_VERSION,
        "units": rf.UNITS,
        "cluster": {"name": cluster.name, "title": cluster.title, "file": visible(cluster.file),
                    "node_platforms": {g.platform.name: g.count for g in cluster.groups}},
        "assumptions": [{"path": a.path, "assumed": a.assumed, "source": a.source, "file": visible(a.location.file)}
                        for a in sorted((*cluster.assumptions, *(a for p in cluster.node_platforms for a in p.assumptions)),
                                        key=lambda a: (a.location.file, a.path))],
    }


def cluster_torchrec(topology: ClusterTopology, doc: dict[str, Any]) -> dict[str, Any] | None:
    """TorchRec Topology kwargs for the whole cluster: the node view with world_size = all
    GPUs, local_world_size = GPUs per node, inter_host_bw = per-GPU injection bandwidth."""
    cluster = topology.platform
    node = torchrec_topology(topology_of(cluster.node_platforms[0]))
    if node is None:
        return None
    kwargs = dict(node["topology_kwargs"])
    kwargs["world_size"] = cluster.world_size
    kwargs["local_world_size"] = min(g.gpus_per_node for g in cluster.groups)
    kwargs["inter_host_bw"] = doc["network"]["per_gpu_injection_bytes_per_s"] / 1000.0
    derivation = dict(node["_derivation"])
    derivation["world_size"] = "all GPUs of the cluster"
    derivation["local_world_size"] = "GPUs per node"
    derivation["inter_host_bw"] = "per-GPU injection bandwidth: the backend NIC, capped by the GPU's share of the bisection"
    if cluster.nvlink_domains is not None:
        kwargs["pod_size"] = cluster.nvlink_domains.size
        derivation["pod_size"] = ("nodes per NVLink domain (TorchRec 1.8+: intra_group_size = pod_size x local_world_size "
                                  "ranks share intra_host_bw)")
    return {**node, "_derivation": {k: derivation[k] for k in kwargs}, "topology_kwargs": kwargs}


def cluster_text_report(doc: dict[str, Any]) -> str:
    """The cluster roofline document as tables for people (GB/s = 1e9 bytes/s); the unknown
    figures instead when a node platform has some."""
    cluster, aggregate, network = doc["cluster"], doc["aggregate"], doc["network"]
    if doc.get("unknown"):
        return unknown_report(f"{cluster['name']}: {cluster['title']}", doc["unknown"])
    groups = ", ".join(f"{count} x {name}" for name, count in cluster["node_platforms"].items())
    out = [f"{cluster['name']}: {cluster['title']}",
           f"source: {cluster['file']}; {groups}; {aggregate['gpus']} GPUs; bandwidths per direction", "",
           "Aggregate peak compute"]
    out += table(["dtype", "dense PFLOPS", "sparse PFLOPS"],
                    [[dtype, number(peaks["dense_flop_per_s"] / 1e15),
                      number(peaks["sparse_flop_per_s"] / 1e15) if "sparse_flop_per_s" in peaks else "-"]
                     for dtype, peaks in sorted(aggregate["compute"].items())])
    out += ["", "Aggregate memory"]
    out += table(["memory", "capacity", "bandwidth"],
                    [[tier, gib(aggregate[f"{tier}_capacity_bytes"]), gbps(aggregate[f"{tier}_bandwidth_bytes_per_s"])]
                     for tier in ("hbm", "ddr", "ssd")])
    out += ["", "Network"]
    rows = [["per-GPU NIC", gbps(network["per_gpu_nic_bytes_per_s"])],
            ["per-GPU injection", gbps(network["per_gpu_injection_bytes_per_s"])]]
    if "bisection_bytes_per_s" in network:
        rows += [["bisection", gbps(network["bisection_bytes_per_s"])],
                 ["fabric", f"{network['topology']}, {network['leaf_switches']} leaf / {network['spine_switches']} spine "
                            f"switches, {number(network['oversubscription'])}:1"]]
    if "ingestion_per_gpu_bytes_per_s" in network:
        rows.append(["ingestion per GPU", gbps(network["ingestion_per_gpu_bytes_per_s"])])
    if "nvlink_domain" in network:
        domain = network["nvlink_domain"]
        rows.append(["NVLink domain", f"{domain['domains']} x {domain['gpus_per_domain']} GPUs, "
                                      f"{gbps(domain['per_gpu_nvlink_bytes_per_s'])} per GPU"])
    out += table(["", "bandwidth"], rows, align="ll")
    collectives = doc["collectives"]
    if collectives:
        out += ["", f"Cluster collective bounds (n = {collectives['n_ranks']}, hierarchical)"]
        out += table(["collective", "factor", "busbw", "algbw", "algorithm"],
                        [[name, number(collectives[name]["busbw_factor"]), gbps(collectives[name]["busbw_bytes_per_s"]),
                          gbps(collectives[name]["algbw_bytes_per_s"]), collectives[name]["algorithm"]]
                         for name in rf.COLLECTIVES], align="lrrrl")
        unit = "NVLink domains" if "nvlink_domain" in network else "nodes"
        out.append(f"  all_to_all: {number(100 * collectives['all_to_all']['inter_node_share'])}% of the traffic crosses {unit}")
    out += ["", f"{len(doc['assumptions'])} assumption(s): see roofline.json or the platform files"]
    return "\n".join(out) + "\n"
