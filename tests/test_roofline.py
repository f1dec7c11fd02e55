"""Roofline numbers, the TorchRec and Calculon views, and `hwspec roofline`.

Datasheet figures are checked through the shipped platforms (ZionEX: A100 40GB; Zion: V100
32GB), so a wrong part, a unit slip or a lost sparse flag shows up here.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hwspec import pipeline
from hwspec.cli.commands import main
from hwspec.generate import engine as generate
from hwspec.model.node import NvlinkConnection, PcieLink
from hwspec.perf import roofline as rf
from hwspec.perf.torchrec import torchrec_topology
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "spec"

# torchrec.distributed.planner.types.Topology.__init__ parameters (TorchRec main, a48cef79), as
# listed in the project's consumer notes. Every kwarg we write must be one of these.
TORCHREC_TOPOLOGY_SIGNATURE = {
    "world_size", "compute_device", "hbm_cap", "ddr_cap", "local_world_size", "hbm_mem_bw", "ddr_mem_bw",
    "hbm_to_ddr_mem_bw", "intra_host_bw", "inter_host_bw", "bwd_compute_multiplier", "custom_topology_data",
    "weighted_feature_bwd_compute_multiplier", "uneven_sharding_perf_multiplier", "generalized_comms_bandwidths",
}
CALCULON_TOP_KEYS = {"matrix", "vector", "mem1", "mem2", "processing_mode", "networks"}
CALCULON_NETWORK_KEYS = {"bandwidth", "efficiency", "size", "latency", "ops", "must_be_filled", "processor_usage"}
CALCULON_OPS = {"p2p", "reduce_scatter", "all_gather", "all_reduce"}
CALCULON_DTYPES = {"float8", "float16", "float32", "bfloat16"}

GIB = 1024**3
PCIE4_X16 = PcieLink(4, 16).bandwidth  # 31.5 GB/s per direction
PCIE3_X16 = PcieLink(3, 16).bandwidth  # 15.75 GB/s


def _load(name: str):
    checked = pipeline.check(ROOT / "platforms" / f"{name}.yaml")
    assert not checked.failed(), [d.message for d in checked.diagnostics]
    return checked


@pytest.fixture(scope="module")
def zionex():
    return _load("zionex").platform


@pytest.fixture(scope="module")
def zion():
    return _load("zion").platform


def _only_group(doc):
    assert len(doc["gpu_groups"]) == 1, "shipped platforms have identical GPUs"
    return doc["gpu_groups"][0]


# ------------------------------------------------------------------ datasheet figures


def test_a100_datasheet_figures(zionex):
    group = _only_group(rf.roofline(topology_of(zionex)))
    assert group["gpus"] == [f"gpu{i}" for i in range(8)]
    dense = {dtype: c["dense_flop_per_s"] for dtype, c in group["compute"].items()}
    assert dense == {"bf16": 312e12, "fp16": 312e12, "fp32": 19.5e12, "fp64": 9.7e12, "fp64_tensor": 19.5e12,
                     "tf32": 156e12, "int8": 624e12}
    sparse = {dtype: c["sparse_flop_per_s"] for dtype, c in group["compute"].items() if "sparse_flop_per_s" in c}
    assert sparse == {"bf16": 624e12, "fp16": 624e12, "tf32": 312e12, "int8": 1248e12}
    tiers = group["tiers"]
    assert tiers["hbm"] == {"capacity_bytes": 40 * GIB, "bandwidth_bytes_per_s": 1555e9}
    assert tiers["nvlink"]["bandwidth_bytes_per_s"] == 300e9 and tiers["nvlink"]["links"] == 12
    assert tiers["pcie_host"]["bandwidth_bytes_per_s"] == PCIE4_X16 and tiers["pcie_host"]["link"] == "Gen4 x16"
    assert PCIE4_X16 == pytest.approx(31.5e9, rel=1e-3)
    assert tiers["pcie_host_shared"]["bandwidth_bytes_per_s"] == PCIE4_X16 / 2  # 2 GPUs below each switch uplink
    assert tiers["backend_nic"]["bandwidth_bytes_per_s"] == 25e9  # 200 Gb/s ConnectX-6 per GPU
    assert tiers["ingestion_share"]["bandwidth_bytes_per_s"] == 4 * 12.5e9 / 8
    # 1.5 TiB over 4 sockets, 2 GPUs per socket; 320 GB/s over 4 sockets, 2 GPUs each
    assert tiers["host_ddr"]["capacity_bytes"] == 192 * GIB and tiers["host_ddr"]["bandwidth_bytes_per_s"] == 40e9
    assert tiers["host_ddr"]["numa_node_capacity_bytes"] == 384 * GIB
    assert tiers["ssd"]["capacity_bytes"] == 2 * 3_840_000_000_000 // 8
    assert tiers["ssd"]["bandwidth_bytes_per_s"] == 2 * 3.2e9 / 8


def test_v100_datasheet_figures(zion):
    group = _only_group(rf.roofline(topology_of(zion)))
    assert {dtype: c["dense_flop_per_s"] for dtype, c in group["compute"].items()} == {
        "fp16": 125e12, "fp32": 15.7e12, "fp64": 7.8e12}
    assert not any("sparse_flop_per_s" in c for c in group["compute"].values())
    tiers = group["tiers"]
    assert tiers["hbm"] == {"capacity_bytes": 32 * GIB, "bandwidth_bytes_per_s": 900e9}
    assert tiers["nvlink"]["bandwidth_bytes_per_s"] == 150e9 and tiers["nvlink"]["links"] == 6
    assert tiers["pcie_host"]["bandwidth_bytes_per_s"] == PCIE3_X16
    # Zion has no per-GPU NIC: the CPUs' four 100 Gb/s NICs are shared by 8 GPUs
    assert tiers["backend_nic"]["bandwidth_bytes_per_s"] == 4 * 12.5e9 / 8
    assert tiers["backend_nic"]["shared_by_gpus"] == 8
    # GPUs sit on the even sockets only: 256 GiB / 2 GPUs each
    assert tiers["host_ddr"]["capacity_bytes"] == 128 * GIB
    assert _only_group(rf.roofline(topology_of(zion)))["numa_nodes"] == [0, 2, 4, 6]


def test_node_aggregates(zionex, zion):
    node = rf.roofline(topology_of(zionex))["node"]
    assert node["gpus"] == 8 and node["sockets"] == 4
    assert node["compute"]["bf16"] == {"dense_flop_per_s": 8 * 312e12, "sparse_flop_per_s": 8 * 624e12}
    assert node["compute"]["fp64"] == {"dense_flop_per_s": 8 * 9.7e12}
    assert node["hbm_capacity_bytes"] == 320 * GIB and node["hbm_bandwidth_bytes_per_s"] == 8 * 1555e9
    assert node["ddr_capacity_bytes"] == 1536 * GIB and node["ddr_bandwidth_bytes_per_s"] == 320e9
    assert node["backend_nic_bandwidth_bytes_per_s"] == 8 * 25e9 and node["host_nic_bandwidth_bytes_per_s"] == 50e9
    assert rf.roofline(topology_of(zion))["node"]["ddr_capacity_bytes"] == 2048 * GIB


def test_units_convention_every_numeric_leaf_has_a_suffix(zionex, zion):
    """Numbers sit under keys with a unit suffix (directly or one mapping level down), or are counts."""
    counts = {"schema_version", "n_gpus", "gpu_pairs", "gpu_pairs_with_direct_nvlink", "links", "hops", "shared_by_gpus",
              "ssds", "nics", "gpus", "sockets", "busbw_factor", "numa_nodes"}
    suffixes = tuple(k for k in rf.UNITS if k.startswith("_"))

    def walk(value, key, parent_key):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k, key)
        elif isinstance(value, list):
            for item in value:
                walk(item, key, parent_key)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            assert key in counts or key.endswith(suffixes) or (parent_key or "").endswith(suffixes), (key, parent_key)

    for platform in (zionex, zion):
        walk(rf.roofline(topology_of(platform)), None, None)


def test_assumptions_are_carried_with_their_file_and_entry(zionex):
    doc = rf.roofline(topology_of(zionex))
    assert len(doc["assumptions"]) == len(zionex.assumptions) > 0
    assert [a["path"] for a in doc["assumptions"]] == sorted(a["path"] for a in doc["assumptions"])
    nvlink = next(a for a in doc["assumptions"] if a["path"] == "nvlink")
    assert nvlink["file"] == zionex.file and "almost fully connected" in nvlink["assumed"]
    memory = next(a for a in doc["assumptions"] if a["path"] == "cpu0.memory.capacity")
    assert memory["source"] == "paper: 1.5 TB in total"


# ------------------------------------------------------------------ ridge points and collectives


@pytest.mark.parametrize("name", ["zionex", "zion"])
def test_ridge_is_peak_over_bandwidth_for_every_entry(name, zionex, zion):
    platform = {"zionex": zionex, "zion": zion}[name]
    for group in rf.roofline(topology_of(platform))["gpu_groups"]:
        bandwidths = {t: v["bandwidth_bytes_per_s"] for t, v in group["tiers"].items() if v is not None}
        assert set(bandwidths) == set(rf.TIERS)  # the shipped platforms have every tier
        for dtype, entry in group["compute"].items():
            for kind in ("dense", "sparse"):
                if f"{kind}_flop_per_s" not in entry:
                    continue
                ridge = entry[f"{kind}_ridge_flop_per_byte"]
                assert set(ridge) == set(bandwidths)
                for tier, bandwidth in bandwidths.items():
                    assert ridge[tier] == entry[f"{kind}_flop_per_s"] / bandwidth, (dtype, kind, tier)
    assert _only_group(rf.roofline(topology_of(zionex)))["compute"]["bf16"]["dense_ridge_flop_per_byte"]["hbm"] == 312e12 / 1555e9


@pytest.mark.parametrize("name, busbw", [("zionex", 300e9), ("zion", 150e9)])
def test_collective_bounds_for_eight_gpus(name, busbw, zionex, zion):
    bounds = rf.roofline(topology_of({"zionex": zionex, "zion": zion}[name]))["intra_node_collectives"]
    assert bounds["n_gpus"] == 8 and bounds["via"] == "nvlink" and bounds["busbw_bound_bytes_per_s"] == busbw
    factors = {"all_reduce": 2 * 7 / 8, "all_gather": 7 / 8, "reduce_scatter": 7 / 8, "all_to_all": 7 / 8}
    for collective, factor in factors.items():
        entry = bounds[collective]
        assert entry["busbw_factor"] == factor == rf.busbw_factor(collective, 8)
        assert entry["busbw_bytes_per_s"] == busbw
        assert entry["algbw_bytes_per_s"] == busbw / factor
    assert "nccl-tests" in bounds["method"] and "PCIe" in bounds["method"]
    assert bounds["gpu_pairs"] == 28
    assert bounds["gpu_pairs_with_direct_nvlink"] == {"zionex": 24, "zion": 16}[name]


def test_without_nvlink_the_bound_is_pcie(zionex):
    pcie_only = dataclasses.replace(zionex, nvlinks=())
    bounds = rf.roofline(topology_of(pcie_only))["intra_node_collectives"]
    assert bounds["via"] == "pcie" and bounds["busbw_bound_bytes_per_s"] == PCIE4_X16
    assert _only_group(rf.roofline(topology_of(pcie_only)))["tiers"]["nvlink"] is None
    assert torchrec_topology(topology_of(pcie_only))["topology_kwargs"]["intra_host_bw"] == PCIE4_X16 / 1000


def test_disconnected_nvlink_falls_back_to_pcie(zionex):
    # only pairs inside each switch: four NVLink islands, so a ring over 8 GPUs needs PCIe
    islands = tuple(c for c in zionex.nvlinks if (c.a, c.b) in {("gpu0", "gpu1"), ("gpu2", "gpu3"), ("gpu4", "gpu5"), ("gpu6", "gpu7")})
    bounds = rf.roofline(topology_of(dataclasses.replace(zionex, nvlinks=islands)))["intra_node_collectives"]
    assert bounds["via"] == "pcie" and bounds["busbw_bound_bytes_per_s"] == PCIE4_X16


def test_single_gpu_has_no_collective_bound():
    assert rf.collective_bounds(1, [300e9], [31.5e9], True) is None
    with pytest.raises(ValueError):
        rf.busbw_factor("broadcast", 8)


# Property: adding a GPU's worth of bandwidth never lowers a bound. (A fuller property suite
# comes later; this is the simple parametrized form.)
_BASE_NVLINK = [300e9, 300e9, 250e9, 300e9]
_BASE_PCIE = [31.5e9, 15.75e9, 31.5e9, 31.5e9]


def _all_bounds(bounds):
    return [bounds["busbw_bound_bytes_per_s"]] + [bounds[c][k] for c in rf.COLLECTIVES
                                                  for k in ("busbw_bytes_per_s", "algbw_bytes_per_s")]


@pytest.mark.parametrize("connected", [True, False])
@pytest.mark.parametrize("which", ["nvlink", "pcie"])
@pytest.mark.parametrize("gpu", range(4))
def test_more_bandwidth_never_lowers_a_bound(connected, which, gpu):
    before = rf.collective_bounds(4, _BASE_NVLINK, _BASE_PCIE, connected)
    nvlink, pcie = list(_BASE_NVLINK), list(_BASE_PCIE)
    target = nvlink if which == "nvlink" else pcie
    target[gpu] += target[gpu]  # one more GPU's worth of bandwidth on this GPU
    after = rf.collective_bounds(4, nvlink, pcie, connected)
    assert all(b >= a for a, b in zip(_all_bounds(before), _all_bounds(after)))


def test_connecting_nvlink_never_lowers_a_bound():
    for nvlink in ([10e9] * 4, [300e9] * 4):  # slower and faster than PCIe
        apart = rf.collective_bounds(4, nvlink, _BASE_PCIE, False)
        joined = rf.collective_bounds(4, nvlink, _BASE_PCIE, True)
        assert all(b >= a for a, b in zip(_all_bounds(apart), _all_bounds(joined)))


def test_adding_an_nvlink_connection_to_a_platform_never_lowers_a_bound(zionex):
    extra = NvlinkConnection("gpu0", "gpu4", 2, 50e9)  # the pair ZionEX leaves out
    more = dataclasses.replace(zionex, nvlinks=zionex.nvlinks + (extra,))
    before, after = rf.roofline(topology_of(zionex)), rf.roofline(topology_of(more))
    assert all(b >= a for a, b in zip(_all_bounds(before["intra_node_collectives"]), _all_bounds(after["intra_node_collectives"])))
    assert after["intra_node_collectives"]["gpu_pairs_with_direct_nvlink"] == 25
    assert (torchrec_topology(topology_of(more))["topology_kwargs"]["intra_host_bw"]
            >= torchrec_topology(topology_of(zionex))["topology_kwargs"]["intra_host_bw"])


# ------------------------------------------------------------------ generated files


def _plan(name):
    checked = _load(name)
    return generate.plan_for(checked.topology, only=["roofline", "torchrec-topology", "calculon-system"])


@pytest.mark.parametrize("name", ["zionex", "zion"])
def test_json_files_are_deterministic_strict_json_with_provenance(name):
    plan = _plan(name)
    assert plan == _plan(name)
    assert set(plan) == {f"{name}/roofline.json", f"{name}/torchrec-topology.json", f"{name}/calculon-system.json"}
    for text in plan.values():
        data = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-finite number {c}"))
        assert data["_generated"][0].startswith("Generated by hwspec") and f"platforms/{name}.yaml" in data["_generated"][0]
        assert text == json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert json.loads(plan[f"{name}/roofline.json"])["schema_version"] == 1


def test_torchrec_kwargs_zionex():
    view = json.loads(_plan("zionex")["zionex/torchrec-topology.json"])
    kwargs = view["topology_kwargs"]
    assert set(kwargs) <= TORCHREC_TOPOLOGY_SIGNATURE
    assert kwargs == {
        "world_size": 8, "local_world_size": 8, "compute_device": "cuda",
        "hbm_cap": 40 * GIB,                         # bytes
        "ddr_cap": 192 * GIB,                        # bytes per rank
        "hbm_mem_bw": 1555e9 / 1000,                 # bytes per millisecond from here on
        "ddr_mem_bw": 40e9 / 1000,
        "hbm_to_ddr_mem_bw": PCIE4_X16 / 1000,
        "intra_host_bw": 2 * 300e9 / 1000,           # both directions: TorchRec's NVLink convention
        "inter_host_bw": 25e9 / 1000,
    }
    assert isinstance(kwargs["hbm_cap"], int) and isinstance(kwargs["ddr_cap"], int)
    assert "bytes per millisecond" in view["_units"]
    assert set(view["_derivation"]) == set(kwargs)


def test_torchrec_kwargs_zion_share_the_cpu_nics():
    kwargs = json.loads(_plan("zion")["zion/torchrec-topology.json"])["topology_kwargs"]
    assert set(kwargs) <= TORCHREC_TOPOLOGY_SIGNATURE
    assert kwargs["inter_host_bw"] == 4 * 12.5e9 / 8 / 1000
    assert kwargs["intra_host_bw"] == 2 * 150e9 / 1000 and kwargs["hbm_mem_bw"] == 900e9 / 1000
    assert kwargs["hbm_to_ddr_mem_bw"] == PCIE3_X16 / 1000 and kwargs["hbm_cap"] == 32 * GIB


def _descending_to_zero(table):
    thresholds = [row[0] for row in table]
    return (all(len(row) == 2 for row in table) and thresholds == sorted(thresholds, reverse=True)
            and len(set(thresholds)) == len(thresholds) and thresholds[-1] == 0
            and all(0 < row[1] <= 1 for row in table))


@pytest.mark.parametrize("name", ["zionex", "zion"])
def test_calculon_system_has_exactly_the_required_keys(name):
    system = json.loads(_plan(name)[f"{name}/calculon-system.json"])
    assert set(system) == CALCULON_TOP_KEYS | {"_generated", "_notes"}
    assert system["processing_mode"] == "roofline"
    for section in ("matrix", "vector"):
        assert system[section] and set(system[section]) <= CALCULON_DTYPES
        for entry in system[section].values():
            assert set(entry) == {"tflops", "gflops_efficiency"} and entry["tflops"] > 0
            assert _descending_to_zero(entry["gflops_efficiency"])
    for memory in ("mem1", "mem2"):
        assert set(system[memory]) == {"GiB", "GBps", "MB_efficiency"}
        assert _descending_to_zero(system[memory]["MB_efficiency"])
    assert len(system["networks"]) == 2
    for network in system["networks"]:
        assert set(network) == CALCULON_NETWORK_KEYS
        assert set(network["ops"]) == CALCULON_OPS
        assert network["ops"]["p2p"][1] is None
        assert all(len(op) == 2 for op in network["ops"].values())
        assert 0 < network["efficiency"] <= 1 and 0 <= network["processor_usage"] < 1
        assert 0 < network["latency"] < 1e-3  # seconds
        assert isinstance(network["must_be_filled"], bool)
    assert system["networks"][0]["size"] == 8 and system["networks"][1]["size"] == 65536


def test_calculon_units_zionex():
    system = json.loads(_plan("zionex")["zionex/calculon-system.json"])
    assert system["matrix"]["float16"]["tflops"] == 312 and system["matrix"]["bfloat16"]["tflops"] == 312
    assert system["matrix"]["float32"]["tflops"] == 19.5
    assert system["mem1"] == {"GiB": 40, "GBps": 1555, "MB_efficiency": [[0, 1.0]]}
    assert system["mem2"]["GiB"] == 192 and system["mem2"]["GBps"] == PCIE4_X16 / 1e9  # min(DDR share 40, PCIe)
    assert [n["bandwidth"] for n in system["networks"]] == [300, 25]
    assert system["networks"][0]["ops"]["all_reduce"] == [2.0, -1]


def test_calculon_leaves_out_dtypes_the_gpu_lacks():
    system = json.loads(_plan("zion")["zion/calculon-system.json"])
    assert set(system["matrix"]) == {"float16", "float32"}  # V100: no bf16
    assert system["matrix"]["float16"]["tflops"] == 125 and system["mem1"]["GBps"] == 900
    assert [n["bandwidth"] for n in system["networks"]] == [150, 6.25]


# ------------------------------------------------------------------ hwspec roofline


def test_cli_text_report_zionex(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert main(["roofline", "platforms/zionex.yaml"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "zionex: Meta ZionEX (4 sockets, 8x A100 OAM, one 200 Gb/s RoCE NIC per GPU)"
    for expected in [
        "  dtype        dense TFLOPS  sparse TFLOPS",
        "  bf16                  312            624",
        "  fp64                  9.7              -",
        "  int8                  624           1248",
        "  hbm                  40 GiB   1555 GB/s",
        "  host_ddr            192 GiB     40 GB/s  NUMA node: 384 GiB, 80 GB/s / 2 GPU(s)",
        "  nvlink                    -    300 GB/s  12 x nvlink3 link(s)",
        "  pcie_host                 -  31.51 GB/s  Gen4 x16, 3 hop(s) to the socket",
        "  backend_nic               -     25 GB/s  backend NIC of its own (rocev2)",
        "  all_reduce        1.75  300 GB/s  171.4 GB/s  Ring",
        "  all_to_all       0.875  300 GB/s  342.9 GB/s  point-to-point",
        "Assumptions: 13 value(s) in this platform are assumed, not sourced (listed in roofline.json; "
        "'hwspec roofline --format json' prints them)",
    ]:
        assert expected in lines, expected
    ridge_header = next(line for line in lines if line.startswith("  dtype          hbm"))
    assert ridge_header.split() == ["dtype", *rf.TIERS]
    assert next(line for line in lines if line.startswith("  bf16         200.6")).split()[1:3] == ["200.6", "7800"]


def test_cli_json_matches_the_library(monkeypatch, capsys, zion):
    monkeypatch.chdir(ROOT)
    assert main(["roofline", "platforms/zion.yaml", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(rf.roofline(topology_of(zion))))


def test_cli_refuses_invalid_and_unreadable_platforms(capsys, tmp_path):
    assert main(["roofline", str(FIXTURES / "dangling_reference.yaml")]) == 1
    err = capsys.readouterr().err
    assert "E201" in err and "fix them first" in err
    assert main(["roofline", str(FIXTURES / "malformed_yaml.yaml")]) == 2
    assert main(["roofline", str(tmp_path / "missing.yaml")]) == 2
