"""Clusters over one drawn node platform: `cluster_specs()`, `clusters()`, `ClusterFiles`."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from hwspec.testing.nodes import YamlDict, _builtin_rules, _layouts, _parts, dump_yaml, takes_parameters_of

if TYPE_CHECKING:
    from hwspec.model.cluster import Cluster
    from hwspec.pipeline import Checked
    from hwspec.rules.engine import Rule


@dataclass(frozen=True)
class ClusterFiles:
    """A cluster file and the node platform file it names (`nodes[*].platform` is `node_file`)."""

    cluster: dict[str, Any]
    node: dict[str, Any]
    node_file: str = "node.yaml"
    cluster_file: str = "cluster.yaml"

    def write(self, directory: Path | str) -> Path:
        """Write both files into `directory`; returns the cluster file's path."""
        directory = Path(directory)
        (directory / self.node_file).write_text(dump_yaml(self.node), encoding="utf-8")
        target = directory / self.cluster_file
        target.write_text(dump_yaml(self.cluster), encoding="utf-8")
        return target


def check_cluster_files(files: ClusterFiles, rules: Sequence[Rule] | None = None, directory: Path | str | None = None) -> Checked:
    """Write `files` into `directory` (default: a fresh temporary directory, removed afterwards)
    and check the cluster with `hwspec.pipeline.check` (node rules once, then cluster rules).
    Returns the `Checked`; its platform and diagnostics stay usable after the files are gone."""
    from hwspec.pipeline import check

    rules = list(_builtin_rules() if rules is None else rules)
    if directory is not None:
        return check(files.write(directory), rules)
    with tempfile.TemporaryDirectory(prefix="hwspec-cluster-") as temporary:
        return check(files.write(temporary), rules)


def _collective_nics(node: YamlDict) -> list[YamlDict]:
    """The NICs carrying collectives (Platform.collective_nics), from the spec dict."""
    nics = node.get("nics", [])
    backend = [n for n in nics if n["role"] == "backend"]
    if backend:
        return backend
    transport = (node.get("backend") or {}).get("transport", "tcp")
    return [n for n in nics if n["role"] in ("ingestion", "frontend") and n["transport"] == transport]


@st.composite
def _cluster_files(draw: st.DrawFn, /, *, min_nodes: int = 1, max_nodes: int = 16, backend_network: bool | None = None,
                   nvlink_domains: bool = False, **node_kwargs: Any) -> ClusterFiles:
    if backend_network:
        node_kwargs.setdefault("nic_modes", ("per-gpu", "shared", "several-per-gpu", "serving-leaf"))
    if nvlink_domains:
        node_kwargs.setdefault("nvlink", ("nvswitch",))
    layout = draw(_layouts(**node_kwargs))
    node = layout.spec
    domain: YamlDict | None = None
    if nvlink_domains:
        domain = _nvlink_domain(draw, node, min_nodes, max_nodes)
        count = domain["count"]
    else:
        count = draw(st.integers(min_nodes, max_nodes), label="nodes")
    prefix = draw(st.sampled_from(("node", "zx", "gpu-")), label="hostname prefix")
    variable = draw(st.sampled_from(("i", "n")), label="hostname variable")
    fmt = draw(st.sampled_from(("", ":03", ":04")), label="hostname format")
    group: YamlDict = {"platform": "node.yaml", "count": count}
    first = draw(st.integers(0, 3), label="first") if variable == "i" else 0
    if first:
        group["first"] = first
    group["hostname"] = f"{prefix}${{{variable}{fmt}}}"
    if draw(st.booleans(), label="addresses"):
        group["address"] = "10.1.${n//256}.${n%256}"
    cluster: YamlDict = {"hwspec": 1, "kind": "cluster", "name": "cluster", "nodes": [group]}
    if draw(st.booleans(), label="world_size"):
        cluster["world_size"] = count * len(node["gpus"])

    nics = _collective_nics(node)
    catalogue = _parts("nics")
    speeds = {catalogue[n["part"]].speed for n in nics}
    transports = {n["transport"] for n in nics}
    wanted = backend_network if backend_network is not None else draw(st.booleans(), label="backend network")
    if domain is not None:
        cluster["nvlink_domain"] = domain["spec"]
    if wanted and len(speeds) == 1 and len(transports) == 1:
        cluster["backend"] = _network(draw, node, count, len(nics), speeds.pop(), transports.pop(),
                                      block=domain["spec"]["nodes"] if domain else 1)
    elif backend_network:
        raise ValueError("backend_network=True needs a node with uniform collective NICs")
    if draw(st.booleans(), label="frontend network"):
        cluster["frontend"] = {"speed": "100 Gb/s"}
    return ClusterFiles(cluster, node)


def _nvlink_domain(draw: st.DrawFn, node: YamlDict, min_nodes: int, max_nodes: int) -> YamlDict:
    """An `nvlink_domain` section the rules accept, and the node count it needs: 1-4 nodes per
    domain, a whole number of domains within min_nodes..max_nodes, switch trays with a port
    for every GPU link (plus spares)."""
    size = draw(st.integers(1, max(1, min(4, max_nodes))), label="nodes per domain")
    low = max(1, -(-min_nodes // size))
    high = max(low, max_nodes // size)
    domains = draw(st.integers(low, high), label="domains")
    catalogue = _parts("gpus")
    links = size * sum(catalogue[g["part"]].fabric.links for g in node["gpus"])
    trays = draw(st.integers(1, 4), label="switch trays")
    ports = -(-links // trays) + draw(st.integers(0, 8), label="spare switch ports")
    spec: YamlDict = {"nodes": size, "name": draw(st.sampled_from(("nvl${d}", "rack${d:02}", "blk-${d}.a")),
                                                        label="domain name pattern"),
                            "switch_trays": trays, "switch_ports": max(1, ports)}
    if draw(st.booleans(), label="clique id"):
        spec["clique_id"] = draw(st.sampled_from(("nvml", "rack-serial")), label="clique id source")
    return {"count": size * domains, "spec": spec}


def _network(draw: st.DrawFn, node: YamlDict, count: int, rails: int, speed: float, transport: str, block: int = 1) -> YamlDict:
    """A backend network the rules accept: ports suffice, every leaf reaches the spine, and
    every leaf (pod) holds whole blocks of `block` nodes (NVLink domains, HW825)."""
    from hwspec.spec.units import format_byte_rate

    declared = (node.get("backend") or {}).get("rail_optimized")
    if declared is True:
        topology = "rail-optimized"
    elif declared is False or "backend" in node:
        topology = draw(st.sampled_from(("single-switch", "clos")), label="backend topology")
    else:
        topology = draw(st.sampled_from(("single-switch", "rail-optimized", "clos")), label="backend topology")
    spare = draw(st.integers(0, 4), label="spare leaf ports")
    network: YamlDict = {"transport": transport, "speed": format_byte_rate(speed), "topology": topology}
    if topology == "single-switch":
        network["leaf"] = {"ports": max(2, count * rails + spare)}
        return network
    if block == 1:
        groups = draw(st.integers(1, count), label="leaves per rail" if topology == "rail-optimized" else "leaves")
        per_leaf = -(-count // groups)
    else:
        per_leaf = block * draw(st.integers(1, count // block), label="domains per leaf")
    leaves = -(-count // per_leaf)  # what the fabric derives from the ports
    down = per_leaf if topology == "rail-optimized" else per_leaf * rails
    uplinks = draw(st.integers(1, 2), label="uplinks") if leaves > 1 else 0
    network["leaf"] = {"ports": max(2, down + uplinks)}
    if uplinks:
        network["leaf"]["uplinks"] = uplinks
        total = leaves * (rails if topology == "rail-optimized" else 1)
        network["spine"] = {"ports": max(2, total, total * uplinks)}  # one spine reaches every leaf
    return network


def cluster_specs(*, min_nodes: int = 1, max_nodes: int = 16, backend_network: bool | None = None,
                  nvlink_domains: bool = False, **node_kwargs: Any) -> st.SearchStrategy[ClusterFiles]:
    """Valid clusters of `min_nodes..max_nodes` nodes of one generated node platform
    (`node_specs(**node_kwargs)`), as `ClusterFiles` (write them with `.write(dir)` or check
    them with `check_cluster_files`).

    Hostnames are unique patterns over `i` or `n`, addresses unique IPv4; `world_size` (when
    declared) is nodes x GPUs. The backend network (when drawn, or when `backend_network` is
    True) matches the nodes' collective NICs in speed and transport, has a leaf port for every
    NIC, and a spine reaching every leaf; it is rail-optimized exactly when the node platform
    declares `rail_optimized`. With `nvlink_domains`, the node's GPUs are on NVSwitches (unless
    `nvlink` says otherwise) and the cluster declares `nvlink_domain`: 1-4 nodes per domain, a
    whole number of domains (so the node count is a multiple of the domain size, possibly above
    min_nodes), enough switch ports, and leaves holding whole domains. Every cluster passes
    every built-in rule with no finding."""
    return _cluster_files(min_nodes=min_nodes, max_nodes=max_nodes, backend_network=backend_network,
                          nvlink_domains=nvlink_domains, **node_kwargs)


def _loaded_cluster(files: ClusterFiles) -> Cluster:
    """The cluster of `files`; HwspecError with the diagnostics when it does not load."""
    return check_cluster_files(files).cluster_topology().platform


@takes_parameters_of(cluster_specs)
def clusters(**kwargs: Any) -> st.SearchStrategy[Cluster]:
    """Resolved `hwspec.model.cluster.Cluster`s of `cluster_specs(...)` with the same parameters, loaded from files in a
    temporary directory by `hwspec.pipeline.check` (removed once loaded; `Cluster.file` names it)."""
    return cluster_specs(**kwargs).map(_loaded_cluster)


