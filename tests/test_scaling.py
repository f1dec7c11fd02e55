"""Scaling estimates: a cluster re-sized by its own file (`resized`), the per-GPU batch held, and
the efficiency `hwspec estimate --nodes` and `hwspec compare` report."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.diagnostics import Code, HwspecError
from hwspec.model.resolve_cluster import resized
from hwspec.model.workload import load_workload
from hwspec.perf.scaling import scaling
from hwspec.pipeline import load_any

ROOT = Path(__file__).resolve().parent.parent
ZIONEX16, ZION16 = ROOT / "platforms" / "zionex-16.yaml", ROOT / "platforms" / "zion-16.yaml"
MODEL_A = ROOT / "workloads" / "model-a.yaml"

ALLREDUCE_BOUND = """\
hwspec: 1
kind: workload
name: allreduce-bound
batch: {per_gpu: 1}
compute_dtype: fp16
bottom_mlp: [1024, 1024, 16]
top_mlp: [32, 1]
interaction: cat
embeddings:
  index_dtype: int64
  tables:
    - {name: small, rows: 1000, dim: 16, pooling: 1, sharding: data-parallel}
communication: {allreduce: fp32}
"""
"""One sample per GPU, data-parallel tables only: no AlltoAll, and the 4.3 MB dense AllReduce
(25 us at 171 GB/s) dwarfs every other term (under 1 us), so the overlapped time is the AllReduce's."""


def cluster(path: Path = ZIONEX16):
    platform, _ = load_any(path)
    return platform


def workload_file(tmp_path: Path, text: str, name: str = "w.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------- re-sizing


def test_resized_cluster_derives_hostnames_fabric_and_world_size_from_the_new_count():
    two = resized(cluster(), 2)
    assert (two.node_count, two.world_size, two.declared_world_size) == (2, 16, 16)
    assert two.hostnames == ("zionex00", "zionex01")
    assert two.fabric is not None and two.fabric.leaves[0].down_ports == 16
    assert two.fabric.bisection == 16 * 25e9 / 2  # half of 16 NICs at 200 Gb/s
    assert cluster().node_count == 16  # the cluster as loaded is left alone


def test_resized_to_its_own_count_is_the_cluster_as_loaded():
    gb200 = cluster(ROOT / "platforms" / "gb200-nvl72-x4.yaml")
    same = resized(gb200, gb200.node_count)
    assert (same.fabric, same.hostnames, same.nvlink_domains) == (gb200.fabric, gb200.hostnames, gb200.nvlink_domains)


def test_nvlink_domains_and_the_spine_tier_follow_the_count():
    gb200 = cluster(ROOT / "platforms" / "gb200-nvl72-x4.yaml")  # 72 nodes, racks of 18, rail-optimized
    two_racks = resized(gb200, 36)
    assert two_racks.nvlink_domains is not None and two_racks.nvlink_domains.names == ("nvl72-rack0", "nvl72-rack1")
    assert two_racks.fabric is not None and (len(two_racks.fabric.leaves), two_racks.fabric.spine_count) == (4, 0)
    assert gb200.fabric is not None and (len(gb200.fabric.leaves), gb200.fabric.spine_count) == (8, 4)


def test_more_nodes_than_the_backend_switch_has_ports_is_a_located_e404():
    with pytest.raises(HwspecError) as caught:
        resized(cluster(), 17)
    (d,) = caught.value.diagnostics
    assert (d.code, Path(d.file).name, d.line, d.col) == (Code.CANNOT_SCALE, "zionex-16.yaml", 25, 17)  # backend.leaf.ports
    assert d.message == "zionex-16 cannot take 17 nodes: its backend switch switch0 would carry 136 NIC ports + 0 uplinks on 128 ports"
    assert d.hint == "give at most 16 nodes, or a cluster file whose backend has more ports (more leaves: rail-optimized or clos)"


def test_a_cluster_of_two_node_groups_is_refused_at_its_nodes(tmp_path):
    shutil.copy(ROOT / "platforms" / "zionex.yaml", tmp_path / "zionex.yaml")
    two_groups = tmp_path / "two-groups.yaml"
    first = "    assumed: \"host naming and addresses are site choices; these are examples\"\n"
    two_groups.write_text(ZIONEX16.read_text().replace(first, first + "  - platform: zionex.yaml\n    count: 2\n"
                                                       "    hostname: extra${i}\n").replace("world_size: 128", "world_size: 144"))
    with pytest.raises(HwspecError) as caught:
        resized(cluster(two_groups), 4)
    (d,) = caught.value.diagnostics
    assert (d.code, d.line, d.col) == (Code.CANNOT_SCALE, 13, 3)
    assert d.message == "zionex-16 has 2 node groups: '4 nodes' does not say how many of each"
    assert d.hint == ("scaling re-sizes a cluster of one node group: write a cluster file with one group (or one file per "
                      "size) and give that")


# ---------------------------------------------------------------- efficiency


def test_efficiency_at_the_smallest_count_is_one_and_the_global_batch_grows_with_the_gpus():
    document, problems = scaling(cluster(), load_workload(MODEL_A), [1, 2, 16])
    assert problems == []
    assert document["reference_nodes"] == 1
    assert document["local_batch"] == 512
    assert [r["global_batch"] for r in document["rows"]] == [512 * 8, 512 * 16, 512 * 128]
    assert document["rows"][0]["efficiency"] == {bound: 1.0 for bound in document["rows"][0]["per_gpu_qps"]}


def test_inter_node_allreduce_lowers_the_efficiency_as_computed_by_hand(tmp_path):
    """zionex: G = 8 GPUs, NVLink B_intra = 300 GB/s, B_inj = 25 GB/s per GPU. AllReduce seconds
    per byte = max(intra 2(G-1)/(G B_intra), inter 2(N-1)/(N G B_inj)) (docs/estimates.md):
      N = 1, 2: intra 1.75/300e9 = 7/1200e9 (inter at N = 2: 2/400e9 = 6/1200e9 is faster)
      N = 4:    inter 6/800e9 = 9/1200e9
      N = 16:   inter 30/3200e9 = 11.25/1200e9
    With the per-GPU batch held, per-GPU QPS is 1 / time, so efficiency = t(1)/t(N):
    1, 1, 7/9, 7/11.25 = 28/45."""
    workload = load_workload(workload_file(tmp_path, ALLREDUCE_BOUND))
    document, _ = scaling(cluster(), workload, [1, 2, 4, 16])
    assert [r["bottleneck"]["term"] for r in document["rows"]] == ["dense_allreduce"] * 4
    efficiency = [r["efficiency"]["overlapped"] for r in document["rows"]]
    assert efficiency == pytest.approx([1, 1, 7 / 9, 28 / 45], rel=1e-12)


def test_a_global_batch_is_held_per_gpu_and_must_divide_into_whole_samples(tmp_path):
    held = workload_file(tmp_path, ALLREDUCE_BOUND.replace("{per_gpu: 1}", "{global: 256}"))
    document, _ = scaling(cluster(), load_workload(held), [1, 4])
    assert (document["local_batch"], [r["global_batch"] for r in document["rows"]]) == (2, [16, 64])
    odd = workload_file(tmp_path, ALLREDUCE_BOUND.replace("{per_gpu: 1}", "{global: 1000}"), "odd.yaml")
    with pytest.raises(HwspecError) as caught:
        scaling(cluster(), load_workload(odd), [1])
    (d,) = caught.value.diagnostics
    assert (d.code, d.line, d.col) == (Code.CANNOT_SCALE, 4, 17)
    assert d.message == ("batch.global 1000 over 128 GPUs is 7.812 per GPU: scaling holds the per-GPU batch constant, "
                         "and it must be whole")


# ---------------------------------------------------------------- the command


@pytest.mark.slow  # a hwspec process
def test_estimate_nodes_runs_as_a_process_and_prints_json_rows():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-m", "hwspec", "estimate", str(ZIONEX16), str(MODEL_A), "--nodes", "1,8-9,16",
                           "--format", "json"], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert [(r["nodes"], r["gpus"]) for r in document["rows"]] == [(1, 8), (8, 64), (9, 72), (16, 128)]
    assert all(set(r["efficiency"]) >= {"overlapped", "serial"} for r in document["rows"])


def test_estimate_nodes_on_a_node_platform_exits_2_and_says_what_to_give(capsys):
    assert main(["estimate", str(ROOT / "platforms" / "zionex.yaml"), str(MODEL_A), "--nodes", "1,2"]) == 2
    err = capsys.readouterr().err
    assert err.endswith(f"hwspec: --nodes re-sizes a cluster, but {ROOT / 'platforms' / 'zionex.yaml'} is a node platform: "
                        "give a cluster file of these nodes (see platforms/zionex-16.yaml), or leave out --nodes\n")


def test_estimate_nodes_beyond_the_fabric_exits_1_before_estimating(capsys):
    assert main(["estimate", str(ZIONEX16), str(MODEL_A), "--nodes", "16-17"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "error[E405]: zionex-16 cannot take 17 nodes: its backend switch switch0 would carry 136 NIC ports" in err


@pytest.mark.parametrize("counts, message", [
    ("1,x", "'1,x': give node counts and ranges, e.g. 1,2,4,8,16 or 1-4"),
    ("\u0661", "'\u0661': give node counts and ranges, e.g. 1,2,4,8,16 or 1-4"),  # an Arabic-Indic 1 is no ASCII count
    ("0,2", "'0': node counts run from 1 to 1000000, a range low-high"),
    ("4-2", "'4-2': node counts run from 1 to 1000000, a range low-high"),
    ("1-100", "'1-100': at most 64 node counts at once"),
])
def test_bad_node_counts_are_usage_errors(counts, message, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["estimate", str(ZIONEX16), str(MODEL_A), "--nodes", counts])
    assert exited.value.code == 2
    assert f"argument --nodes: {message}" in capsys.readouterr().err


def test_a_count_whose_tables_do_not_fit_is_a_row_with_its_error_and_exit_1(capsys):
    assert main(["estimate", str(ZIONEX16), str(ROOT / "workloads" / "model-f.yaml"), "--nodes", "1,16"]) == 1
    out, err = capsys.readouterr()
    assert "Scaling efficiency: per-GPU QPS over per-GPU QPS at 16 node(s)" in out
    assert re.search(r"^ +1 +8 +- .* E401: the embedding tables need 2.751 TiB per GPU on zionex-16 \(8 GPUs\)", out, re.M)
    assert "error[E401]" in err


def test_compare_of_two_clusters_gives_each_ones_efficiency_over_its_own_one_node(capsys):
    assert main(["compare", str(ZION16), str(ZIONEX16), str(MODEL_A), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    for side in ("a", "b"):
        s = document["scaling"][side]
        per_gpu = document["estimates"][side]["qps_overlapped"] / 128
        assert s["per_gpu_qps"]["overlapped"] == pytest.approx(per_gpu)
        assert s["efficiency"]["overlapped"] == pytest.approx(per_gpu / s["one_node_per_gpu_qps"]["overlapped"])


def test_the_scaling_example_of_docs_estimates_is_what_hwspec_prints(capsys, monkeypatch):
    section = (ROOT / "docs" / "estimates.md").read_text().split("\n## Scaling\n", 1)[1].split("\n## ", 1)[0]
    ((command, shown),) = re.findall(r"```sh\nhwspec (estimate .*?--nodes .*?)\n```\n\n```text\n(.*?)```", section, re.DOTALL)
    monkeypatch.chdir(ROOT)
    assert main(command.split()) == 0
    assert shown in capsys.readouterr().out, "docs/estimates.md's scaling example is stale: paste the command's output"
