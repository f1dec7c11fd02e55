"""Embedding placement on CPU hosts (`embeddings.placement: cpu-host`, Zion's design), the
`pipeline` flag, and `--placement` on the command line, on hand-computed tiny cases.

HOST is the tiny 2-node x 2-GPU record of tests/test_estimate.py with two CPU sockets per node,
4e8 B/s of host DDR per node (2e8 per socket), and no GPUDirect RDMA. The workload: 2 table-wise
tables of 100 rows x dim 2 fp32 (sgd: no optimizer state), pooling 3, int32 ids, 10 samples
per GPU, so the global batch B = 40 and each of the N x S = 4 sockets serves 10 samples.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.diagnostics import HwspecError
from hwspec.perf.estimate import estimate, host_figures, placement
from tests.test_estimate import TINY, UNIQUE, terms, tiny

ROOT = Path(__file__).resolve().parent.parent
HOST = dataclasses.replace(TINY, sockets_per_node=2, host_memory_capacity=1e6, host_memory_bandwidth=4e8, gpudirect=False)


def cpu_host(tmp_path: Path, **changes: str):
    return dataclasses.replace(tiny(tmp_path, **changes), placement="cpu-host")


def test_host_figures_make_each_socket_a_rank_with_its_ddr_and_nic_share():
    hosts = host_figures(HOST)
    assert (hosts.gpus, hosts.gpus_per_node, hosts.nodes) == (4, 2, 2)
    assert hosts.hbm_bandwidth == 2e8 and hosts.hbm_capacity == 5e5      # the node's DDR over 2 sockets
    assert hosts.injection_bandwidth == 1e8                               # 2 GPUs' NIC shares over 2 sockets


def test_cpu_host_tables_live_in_the_busiest_sockets_ddr(tmp_path):
    place = placement(HOST, cpu_host(tmp_path))
    # 2 tables of 100 x 8 B on 4 sockets: the busiest holds a whole table, 800 B, all in DDR
    assert (place["on"], place["rank"], place["need_bytes_per_gpu"]) == ("cpu-host", "CPU socket", 800)
    assert [(t["tier"], t["stored_bytes"], t["fraction"]) for t in place["tiers"]] == [("host_ddr", 800, 1.0), ("ssd", 0, 0.0)]


def test_cpu_host_lookups_run_on_the_host_at_the_sockets_ddr_bandwidth(tmp_path):
    doc = estimate(HOST, cpu_host(tmp_path))
    t = terms(doc)
    # forward, one table on the busiest socket, B = 40: rows 40 x 3 x 64 B (8 B rows in 64 B lines) = 7680,
    # ids 40 x 3 x 4 = 480, pooled 40 x (4 + 2 x 4) = 480: 8640 B at 2e8 B/s
    assert t["embedding_fwd"] == pytest.approx(8640 / 2e8)
    # backward: the UNIQUE (~70.06) distinct rows of the 120 ids read and written back once, 128 B
    # each (~8968 B), ids 480, gradients 480
    backward = UNIQUE * 128 + 960
    assert t["embedding_bwd"] == pytest.approx(backward / 2e8)
    assert doc["resources_seconds"]["host"] == pytest.approx((8640 + backward) / 2e8)
    assert {x["id"]: x["resource"] for x in doc["terms"]}["embedding_fwd"] == "host"


def test_cpu_host_exchanges_charge_what_crosses_nodes_to_the_sockets_nic_share(tmp_path):
    t = terms(estimate(HOST, cpu_host(tmp_path)))
    # ids: the busiest socket receives 40 x (3 x 4 + 4) = 640 B (a socket sends 10 x 2 x 16 = 320), half crosses
    assert t["input_alltoall"] == pytest.approx(320 / 1e8)
    # pooled: the busiest socket sends 40 samples x dim 2 x 4 B, half to the other node; the gradients alike
    assert t["embedding_alltoall_fwd"] == pytest.approx(160 / 1e8)
    assert t["embedding_alltoall_bwd"] == pytest.approx(160 / 1e8)


def test_cpu_host_pooled_embeddings_cross_pcie_both_ways_and_the_gpu_takes_no_ids(tmp_path):
    t = terms(estimate(HOST, cpu_host(tmp_path)))
    # input copy: 10 x (4 dense x 4 B + 4 B label) = 200 B, no ids (the CPUs take them)
    assert t["host_to_device"] == pytest.approx(200 / 1e8)
    # 10 samples x 4 dims x 4 B = 160 B each way: max(200 + 160, 160) - 200 = 160 B more at 1e8 B/s
    assert t["pooled_host_transfer"] == pytest.approx(160 / 1e8)
    # only the dense AllReduce is a GPU collective to stage: 83 parameters x 4 B x 2(N-1)/(NG) = 166 B
    assert t["host_staging"] == pytest.approx(166 / 1e8)
    # ingestion still brings the ids: 200 + 10 x 2 x 16 = 520 B at 5e7 B/s
    assert t["ingestion"] == pytest.approx(520 / 5e7)


def test_gpu_placement_has_no_host_work_and_no_pooled_pcie_transfer(tmp_path):
    doc = estimate(HOST, tiny(tmp_path))
    assert doc["embedding_placement"] == "gpu" and doc["placement"]["rank"] == "GPU"
    assert doc["resources_seconds"]["host"] == 0 == terms(doc)["pooled_host_transfer"]


def test_cpu_host_on_nodes_without_host_ddr_is_a_located_e401(tmp_path):
    with pytest.raises(HwspecError) as caught:
        estimate(dataclasses.replace(HOST, host_memory_bandwidth=0.0), cpu_host(tmp_path))
    (d,) = caught.value.diagnostics
    assert d.code == "E401"
    assert d.message == "embeddings.placement: cpu-host needs host DDR, but tiny's nodes have none of their own"


def test_cpu_host_tables_too_big_for_the_sockets_are_e401_per_socket(tmp_path):
    with pytest.raises(HwspecError) as caught:
        estimate(dataclasses.replace(HOST, host_memory_capacity=1000.0, ssd_capacity=0.0), cpu_host(tmp_path))
    (d,) = caught.value.diagnostics
    assert d.message == "the embedding tables need 800 B per CPU socket on tiny (4 CPU sockets), but host DDR and SSD hold 500 B"


def test_cpu_host_expected_iteration_waits_for_the_host_and_the_pcie_transfer(tmp_path):
    doc = estimate(HOST, cpu_host(tmp_path))
    exp = doc["expected"]
    rows = {r["id"]: r["seconds"] for r in exp["terms"]}
    assert exp["critical_path_seconds"] == pytest.approx(
        exp["resources_seconds"]["gpu"] + exp["resources_seconds"]["host"] + rows["embedding_alltoall_fwd"]
        + rows["embedding_alltoall_bwd"] + rows["pooled_host_transfer"])
    assert rows["embedding_fwd"] == terms(doc)["embedding_fwd"]  # host lookups launch no GPU kernel
    assert doc["qps_expected"] <= doc["qps_overlapped"]


def test_without_pipelining_the_input_alltoall_lookups_and_update_run_in_series(tmp_path):
    # the AllReduce at 2e8 (1.66e-6 s), so the network (1.446e-5 s) is below the chain
    # (6.4e-6 + 4.8e-6 + ~5.44e-6 s) and the chain binds
    quick = dataclasses.replace(TINY, algbw=TINY.algbw | {"all_reduce": 2e8})
    pipelined = estimate(quick, tiny(tmp_path))
    doc = estimate(quick, dataclasses.replace(tiny(tmp_path), pipeline=False))
    t = terms(doc)
    chain = t["input_alltoall"] + t["embedding_fwd"] + t["embedding_bwd"]
    assert chain > max(doc["resources_seconds"].values())  # so the chain is what binds here
    assert doc["overlapped_seconds"] == pytest.approx(chain) and not doc["pipeline"]
    assert pipelined["overlapped_seconds"] == max(pipelined["resources_seconds"].values()) < chain
    rows = {r["id"]: r["seconds"] for r in doc["expected"]["terms"]}
    # unpipelined, the GPU waits for the input AlltoAll instead of working beside it, so its NCCL
    # kernel no longer takes HBM from the GPU's work
    beside = pipelined["expected"]["nccl_hbm_seconds"] - doc["expected"]["nccl_hbm_seconds"]
    assert beside > 0
    assert doc["expected"]["critical_path_seconds"] == pytest.approx(
        pipelined["expected"]["critical_path_seconds"] + rows["input_alltoall"] - beside)
    assert doc["qps_expected"] <= doc["qps_overlapped"]


def test_pipeline_is_a_yes_no_field_defaulting_to_true(tmp_path):
    assert tiny(tmp_path).pipeline is True
    path = tmp_path / "tiny.yaml"
    path.write_text(path.read_text() + "pipeline: false\n")
    from hwspec.model.workload import load_workload
    assert load_workload(path).pipeline is False
    path.write_text(path.read_text().replace("pipeline: false", "pipeline: 'no'"))
    with pytest.raises(HwspecError):
        load_workload(path)


def test_compare_places_each_side_as_asked_and_says_so(capsys):
    argv = ["compare", "--placement-a", "cpu-host", "--format", "json", str(ROOT / "platforms" / "zion-16.yaml"),
            str(ROOT / "platforms" / "zionex-16.yaml"), str(ROOT / "workloads" / "model-a.yaml")]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    a, b = doc["estimates"]["a"], doc["estimates"]["b"]
    assert (a["embedding_placement"], b["embedding_placement"]) == ("cpu-host", "gpu")
    assert a["resources_seconds"]["host"] > 0 == b["resources_seconds"]["host"]


def test_estimate_placement_option_overrides_the_workload(capsys):
    argv = ["estimate", "--placement", "cpu-host", str(ROOT / "platforms" / "zion.yaml"), str(ROOT / "workloads" / "model-i.yaml")]
    assert main(argv) == 0
    assert "Embedding placement per CPU socket (cpu-host):" in capsys.readouterr().out
