"""NICs and GPUs many-to-many: a GPU with several backend NICs (AWS p5: four EFA devices per
GPU), a NIC serving several GPUs (AWS p4d: one EFA device per two GPUs). Every figure uses the
GPU's real set of NICs and its summed share; GPUDirect and locality are judged per GPU-NIC pair.

The fixtures in tests/fixtures/many_nics/ are hgx-h100.yaml with its NICs replaced (RoCE parts
stand in for EFA, whose transport is another change)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hwspec import content
from hwspec.cli.commands import main
from hwspec.diagnostics import HwspecError
from hwspec.generate.engine import plan_for
from hwspec.live.draft import draft_text
from hwspec.live.merge import read_inputs
from hwspec.model.load import load_platform
from hwspec.model.parts import load_catalogue
from hwspec.model.workload import load_workload
from hwspec.perf import roofline as rf
from hwspec.perf.calculon import calculon_system
from hwspec.perf.estimate import estimate
from hwspec.perf.platform_figures import figures
from hwspec.perf.torchrec import torchrec_topology
from hwspec.pipeline import load_any
from hwspec.testing import load_node_text
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
MANY = ROOT / "tests" / "fixtures" / "many_nics"
SPEC = ROOT / "tests" / "fixtures" / "spec"
FOUR_PER_GPU = MANY / "four_nics_per_gpu.yaml"            # p5-like: 4 x 100 Gb/s per GPU
ONE_PER_TWO_GPUS = MANY / "nic_per_two_gpus.yaml"         # p4d-like: 1 x 200 Gb/s per 2 GPUs
ONE_200G_PER_GPU = MANY / "one_200g_nic_per_gpu.yaml"     # a3-like: 1 x 200 Gb/s per GPU
TWO_P5_NODES = MANY / "two_p5_like_nodes.yaml"
MODEL_A = ROOT / "workloads" / "model-a.yaml"


def _node(path: Path):
    return load_platform(path)


def _plan(path: Path, target: str) -> str:
    return next(iter(plan_for(topology_of(_node(path)), only=[target]).values()))


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # diagnostics show paths relative to the working directory


# ---------------------------------------------------------------- the spec


@pytest.mark.parametrize("name, expected", [
    ("nic_gpu_and_gpus.yaml", "50:5: error[E110]: nics[0]: give either 'gpu' (one GPU) or 'gpus' (a list), not both"),
    ("nic_gpus_repeated.yaml", "50:5: error[E110]: nics[0]: 'gpus' names gpu0 more than once"),
    ("nic_gpus_missing_gpu.yaml", "54:18: error[E201]: nics[0].gpus[1]: 'gpu9' does not name a GPU\n"
                                  "  hint: did you mean 'gpu1'? known: gpu0, gpu1"),
])
def test_a_nic_naming_its_gpus_wrongly_is_a_located_error(name: str, expected: str) -> None:
    with pytest.raises(HwspecError) as caught:
        load_platform(SPEC / name)
    assert [d.format() for d in caught.value.diagnostics] == [f"tests/fixtures/spec/{name}:{expected}"]


def test_gpu_is_shorthand_for_a_one_gpu_list_and_the_topology_answers_both_ways() -> None:
    p5, p4d = _node(FOUR_PER_GPU), _node(ONE_PER_TWO_GPUS)
    assert topology_of(p5).nics_of("gpu1") == ("nic4", "nic5", "nic6", "nic7")
    assert topology_of(p5).gpus_of("nic5") == ("gpu1",)
    assert topology_of(p4d).nics_of("gpu3") == ("nic1",)
    assert topology_of(p4d).gpus_of("nic1") == ("gpu2", "gpu3")
    assert topology_of(p4d).gpus_of("dpu0") == ()  # a host NIC serves no GPU


# ---------------------------------------------------------------- figures


@pytest.mark.parametrize("path, per_gpu, nics, users", [
    (FOUR_PER_GPU, 50e9, 4, 1),        # 4 x 12.5 GB/s, each NIC the GPU's own
    (ONE_PER_TWO_GPUS, 12.5e9, 1, 2),  # 25 GB/s divided between two GPUs
    (ONE_200G_PER_GPU, 25e9, None, 1),
])
def test_each_gpus_scale_out_share_sums_its_nics_divided_among_their_gpus(path, per_gpu, nics, users) -> None:
    topology = topology_of(_node(path))
    doc = rf.roofline(topology)
    tier = doc["gpu_groups"][0]["tiers"]["backend_nic"]
    assert len(doc["gpu_groups"]) == 1  # every GPU alike
    assert (tier["bandwidth_bytes_per_s"], tier.get("nics"), tier["shared_by_gpus"]) == (per_gpu, nics, users)
    torchrec = torchrec_topology(topology, doc)
    assert torchrec is not None and torchrec["topology_kwargs"]["inter_host_bw"] == per_gpu / 1000  # bytes per ms
    calculon = calculon_system(topology, doc)
    assert calculon is not None and calculon[0]["networks"][1]["bandwidth"] == per_gpu / 1e9


def test_the_roofline_says_how_a_many_nic_share_is_made() -> None:
    p5 = rf.roofline(topology_of(_node(FOUR_PER_GPU)))
    p4d = rf.roofline(topology_of(_node(ONE_PER_TWO_GPUS)))
    assert p5["gpu_groups"][0]["tiers"]["backend_nic"]["via"] == "4 backend NICs of its own, summed"
    assert p4d["gpu_groups"][0]["tiers"]["backend_nic"]["via"] == "backend NIC shared by 2 GPUs"
    assert p5["tier_notes"]["backend_nic"].startswith("the GPU's share of the backend NICs that serve it: each NIC's "
                                                      "speed divided among the GPUs using it, summed over the GPU's NICs")


def test_the_estimate_of_two_p5_like_nodes_runs_on_each_gpus_50_gb_s() -> None:
    cluster, _ = load_any(TWO_P5_NODES)
    f = figures(topology_of(cluster))
    assert (f.nic_bandwidth, f.injection_bandwidth, f.gpudirect) == (50e9, 50e9, True)
    doc = estimate(f, load_workload(MODEL_A))
    alltoall = next(t for t in doc["terms"] if t["id"] == "embedding_alltoall_fwd")
    assert alltoall["bound_by"] == "all_to_all algbw 100 GB/s (hierarchical)"  # 50 GB/s x 16 / 8 GPUs off the node


def test_compare_shows_four_100g_nics_per_gpu_against_one_200g_as_50_against_25_gb_s(capsys) -> None:
    assert main(["compare", str(FOUR_PER_GPU), str(ONE_200G_PER_GPU)]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if "NIC bandwidth" in line]
    assert rows == [["per-GPU", "NIC", "bandwidth", "50", "GB/s", "25", "GB/s", "0.5x"]]


# ---------------------------------------------------------------- generated files


def test_ranks_tsv_lists_all_of_a_ranks_nics_comma_separated() -> None:
    rows = [line.split("\t") for line in _plan(FOUR_PER_GPU, "ranks").splitlines() if not line.startswith("#")]
    assert rows[1][:5] == ["0", "gpu0", "0000:18:00.0", "rdma0,rdma1,rdma2,rdma3",
                           "0000:1c:00.0,0000:1c:01.0,0000:1c:02.0,0000:1c:03.0"]
    p4d = [line.split("\t") for line in _plan(ONE_PER_TWO_GPUS, "ranks").splitlines() if not line.startswith("#")]
    assert [row[3] for row in p4d[1:3]] == ["rdma0", "rdma0"]  # two ranks on one NIC


def test_nccl_conf_judges_gpudirect_per_pair_and_names_every_nic() -> None:
    conf = _plan(FOUR_PER_GPU, "nccl-conf")
    assert "NCCL_NET_GDR_LEVEL=PIX\n" in conf  # every GPU with each of its four NICs under one switch
    assert "NCCL_IB_HCA==" + ",".join(f"rdma{i}:1" for i in range(32)) + "\n" in conf
    xml = _plan(FOUR_PER_GPU, "nccl-topo")
    # each GPU's four NICs are devices 0-3 of one PCI bus: NCCL numbers their <net port> 1-4 (net_ib.cc
    # portNum + realPort, the devices before it on that bus), while NCCL_IB_HCA names each one's verbs port 1
    ports = re.findall(r'<net name="rdma(\d+)" dev="\d+" speed="100000" port="(\d)" gdr="1"/>', xml)
    assert sorted((int(nic), int(port)) for nic, port in ports) == [(nic, nic % 4 + 1) for nic in range(32)]


def test_the_diagram_draws_a_gpu_with_all_of_its_own_nics_and_a_shared_nic_apart() -> None:
    p5, p4d = (plan_for(topology_of(_node(path)), only=["diagram"])[f"{name}/topology.dot"]
               for path, name in ((FOUR_PER_GPU, "four-nics-per-gpu"), (ONE_PER_TWO_GPUS, "nic-per-two-gpus")))
    pair = p5.split('subgraph "cluster_pair_gpu0" {', 1)[1].split("}", 1)[0]
    assert re.findall(r'^ *"(\w+)" \[', pair, re.M) == ["gpu0", "nic0", "nic1", "nic2", "nic3"]
    assert "cluster_pair_" not in p4d and "for gpu0, gpu1" in p4d


# ---------------------------------------------------------------- import


def test_an_import_pairs_only_what_the_placement_says(tmp_path: Path) -> None:
    """An NCCL dump shows no pairing: a NIC on a switch with two GPUs serves both."""
    dump = tmp_path / "p4d-like.xml"
    dump.write_text(_plan(ONE_PER_TWO_GPUS, "nccl-topo"))
    catalogue = load_catalogue([content.builtin_dir("parts")])
    text, _ = draft_text(read_inputs([dump]), catalogue, "p4d-like")
    platform = load_node_text(text, "p4d-like.yaml")
    assert [n.gpus for n in platform.backend_nics] == [("gpu0", "gpu1"), ("gpu2", "gpu3"), ("gpu4", "gpu5"), ("gpu6", "gpu7")]
    assert "gpus: [gpu0, gpu1]" in text and "nic_per_gpu" not in text
    assert topology_of(platform).scale_out_share("gpu0") == 12.5e9
