"""The resolved `Topology`: its queries, their single home, and the figures built on them."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import re
from functools import cached_property
from pathlib import Path

import pytest

from hwspec import pipeline
from hwspec.model.load import load_platform
from hwspec.perf import cluster_roofline
from hwspec.perf import roofline as rf
from hwspec.perf.torchrec import torchrec_topology
from hwspec.topology import topology_of
from hwspec.topology.cluster import ClusterTopology
from hwspec.topology.node import Topology, climb

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def zionex():
    return load_platform(ROOT / "platforms" / "zionex.yaml")


def test_the_topology_is_built_once_per_platform(zionex):
    assert isinstance(topology_of(zionex), Topology)
    assert topology_of(zionex) is topology_of(zionex)
    assert topology_of(zionex).platform is zionex


def test_a_model_asked_for_its_old_topology_attribute_says_where_it_went(zionex):
    """Site code written for `platform.topology` gets a message naming the replacement, not a bare AttributeError."""
    cluster, _ = pipeline.load_any(ROOT / "platforms" / "zionex-16.yaml")
    for model in (zionex, cluster):
        with pytest.raises(AttributeError) as error:
            model.topology  # noqa: B018
        assert str(error.value) == (f"{type(model).__name__} has no '.topology': use hwspec.topology_of(model) "
                                    "(a rule or generator has it as ctx.topology)")
        assert topology_of(model).platform is model


def test_climb_stops_at_a_root_a_cycle_or_a_dangling_parent():
    parents = {"gpu0": "sw0", "sw0": "rp0", "rp0": "cpu0", "a": "b", "b": "a", "x": "nowhere"}
    assert climb("gpu0", parents.get, {"cpu0"}) == ["gpu0", "sw0", "rp0", "cpu0"]
    assert climb("a", parents.get, {"cpu0"}) == ["a", "b", "a"]
    assert climb("x", parents.get, {"cpu0"}) == ["x", "nowhere"]
    assert climb("cpu0", parents.get, {"cpu0"}) == ["cpu0"]


def test_pcie_queries_on_zionex(zionex):
    t = topology_of(zionex)
    assert t.chain("gpu0") == ["gpu0", "sw0", "rp0", "cpu0"]
    assert t.bridges_above("gpu0") == ("sw0", "rp0")
    assert t.common_bridge("gpu0", "nic0") == "sw0"
    assert t.common_bridge("gpu0", "nic2") is None
    assert t.pcie_path("gpu0", "nic0") == ("gpu0", "sw0", "nic0")
    assert t.pcie_path("gpu0", "fe0") == ("gpu0", "sw0", "rp0", "cpu0", "fe0")
    assert t.pcie_path_type("gpu0", "nic0") == "PIX"
    assert t.pcie_path_type("gpu0", "fe0") == "PHB"
    assert t.pcie_path_type("gpu0", "nic2") == "SYS"
    assert t.path_type("gpu0", "gpu1") == "NVL"
    assert t.numa_node("nic2") == 1 and t.socket_of("gpu0") == "cpu0"
    assert t.host_path("gpu0") == ("gpu0", "sw0", "rp0")
    assert t.gpus_crossing["sw0"] == 2 and t.gpus_crossing["gpu0"] == 1
    assert t.gpus_on("cpu0") == ("gpu0", "gpu1")
    assert t.cpus(0) == zionex.sockets[0].cpus


ENTRY_TYPES = re.compile(r"\b(NumaNode|Bridge|Gpu|Nic|Ssd|PcieDevice)\b")
"""The model's entry classes: no query takes or gives one (it names them by id)."""


def query_annotations(cls: type) -> dict[str, str]:
    """Every public query of `cls` -> its parameters' and return annotations, as written."""
    found = {}
    for name in dir(cls):
        value = inspect.getattr_static(cls, name)
        if name.startswith("_"):
            continue
        function = value.fget if isinstance(value, property) else value.func if isinstance(value, cached_property) else value
        if inspect.isfunction(function):
            signature = inspect.signature(function)
            found[name] = " ".join(str(p.annotation) for p in signature.parameters.values()) + " -> " + str(signature.return_annotation)
    return found


@pytest.mark.parametrize("cls", [Topology, ClusterTopology])
def test_every_query_names_the_platform_s_entries_by_id_in_and_out(cls):
    queries = query_annotations(cls)
    assert len(queries) >= (40 if cls is Topology else 10)  # the walk finds them: 47 and 15 when this was written
    assert {name: text for name, text in queries.items() if ENTRY_TYPES.search(text)} == {}


def test_nics_of_and_gpus_of_answer_each_other_in_ids():
    p4d = load_platform(FIXTURES / "many_nics" / "nic_per_two_gpus.yaml")  # one NIC per two GPUs, as on an AWS p4d
    topology = topology_of(p4d)
    served = {(gpu.id, nic) for gpu in p4d.gpus for nic in topology.nics_of(gpu.id)}
    assert served == {(gpu, nic.id) for nic in p4d.nics for gpu in topology.gpus_of(nic.id)}
    assert topology.nics_of("gpu3") == ("nic1",) and topology.gpus_of("nic1") == ("gpu2", "gpu3")
    assert topology.collective_nics == tuple(n.id for n in p4d.backend_nics)
    assert all(topology.socket_of(nic) == p4d.nic_by_id[nic].socket for nic in topology.collective_nics)


def test_nvlink_islands_need_no_graph(zionex):
    assert topology_of(zionex).nvlink_islands == (tuple(f"gpu{i}" for i in range(8)),)
    assert topology_of(zionex).nvlink_connected
    split = dataclasses.replace(zionex, nvlinks=tuple(c for c in zionex.nvlinks
                                                      if (c.a < "gpu4") == (c.b < "gpu4")))
    assert topology_of(split).nvlink_islands == (("gpu0", "gpu1", "gpu2", "gpu3"), ("gpu4", "gpu5", "gpu6", "gpu7"))
    assert not topology_of(split).nvlink_connected
    assert "graph" not in vars(topology_of(split))  # answered without building the networkx graph


def test_two_gpus_on_one_nic_get_half_of_it_in_the_node_and_the_cluster_roofline():
    # Node and cluster rooflines used to disagree here (6.25 vs 12.5 GB/s): gpu1 has no NIC of
    # its own and was given a share of the ingestion NIC. Both GPUs' collectives go through nic0.
    node = load_platform(FIXTURES / "topology" / "shared_nic_node.yaml")
    t = topology_of(node)
    assert t.scale_out_nics("gpu1") == ("nic0",) and t.scale_out_users("nic0") == 2
    assert [t.scale_out_share(g.id) for g in node.gpus] == [12.5e9, 12.5e9]
    doc = rf.roofline(t)
    assert {g["tiers"]["backend_nic"]["bandwidth_bytes_per_s"] for g in doc["gpu_groups"]} == {12.5e9}
    assert torchrec_topology(t, doc)["topology_kwargs"]["inter_host_bw"] == 12.5e9 / 1000
    checked = pipeline.check(FIXTURES / "topology" / "shared_nic_cluster.yaml")
    assert checked.diagnostics == []
    network = cluster_roofline.cluster_roofline(checked.topology)["network"]
    assert network["per_gpu_nic_bytes_per_s"] == network["per_gpu_injection_bytes_per_s"] == 12.5e9


def test_a_gpu_with_its_own_nic_keeps_all_of_it(zionex):
    assert {topology_of(zionex).scale_out_share(g.id) for g in zionex.gpus} == {25e9}


def test_validating_a_cluster_never_builds_its_switch_graph():
    checked = pipeline.check(FIXTURES / "topology" / "shared_nic_cluster.yaml")
    assert "graph" not in vars(checked.topology)
    assert checked.topology.graph.number_of_nodes() == 2  # one group, one switch: built on demand


def test_the_model_does_not_import_the_yaml_layer():
    tree = ast.parse((ROOT / "src/hwspec/model/node.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not imported & {"hwspec.source.loader", "hwspec.source.expand", "hwspec.model.load", "yaml"}


SOURCES = sorted([*(ROOT / "src" / "hwspec").rglob("*.py")])


def _mentions(node: ast.AST, name: str) -> bool:
    return any((isinstance(n, ast.Attribute) and n.attr == name) or (isinstance(n, ast.Name) and n.id == name)
               or (isinstance(n, ast.Constant) and n.value == name) for n in ast.walk(node))


@pytest.mark.slow  # parses every module of the package
def test_only_the_topology_walks_the_pcie_tree():
    """No loop outside `hwspec.topology.node.climb` follows `upstream` links: every path, bridge
    and socket question is a topology query (the check the closing note of issue 10 names)."""
    walks = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.While) and _mentions(node, "upstream"):
                walks.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert walks == []
    assert "climb(" in (ROOT / "src/hwspec/topology/node.py").read_text()


@pytest.mark.slow  # parses every module of the package
def test_networkx_is_imported_only_by_the_graph_views():
    """networkx costs a third of a second to import: only the on-demand graph views use it
    (imports for type checkers only do not count)."""
    users = []
    for path in SOURCES:
        tree = ast.parse(path.read_text())
        typing_only = {id(n) for block in ast.walk(tree)
                       if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                       for n in ast.walk(block)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "networkx" for n in names):
                users.append(str(path.relative_to(ROOT)))
    assert sorted(set(users)) == ["src/hwspec/topology/cluster.py", "src/hwspec/topology/graph.py"]


def test_roofline_json_of_the_shipped_platforms_is_unchanged_by_the_topology():
    for name in ("zionex", "zion"):
        committed = json.loads((ROOT / "generated" / name / "roofline.json").read_text())
        computed = rf.roofline(topology_of(load_platform(ROOT / "platforms" / f"{name}.yaml")))
        assert {k: v for k, v in committed.items() if k != "_generated"} == json.loads(json.dumps(computed))
