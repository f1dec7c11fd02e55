"""Workload files through the loader, `hwspec estimate`, `hwspec compare`, and the plot."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.model.workload import load_workload
from hwspec.perf import cluster_roofline
from hwspec.perf.platform_figures import figures
from hwspec.pipeline import load_any
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
ZION16, ZIONEX16 = ROOT / "platforms" / "zion-16.yaml", ROOT / "platforms" / "zionex-16.yaml"
ZIONEX = ROOT / "platforms" / "zionex.yaml"
MODEL_A = ROOT / "workloads" / "model-a.yaml"
WORKLOADS = sorted((ROOT / "workloads").glob("*.yaml"))

BROKEN_BATCH_AND_KEY = """\
hwspec: 1
kind: workload
name: broken
batch: {per_gpu: 512, global: 4096}
bottom_mlp: [13, 512, 64]
top_mlp: [64, 1]
embeddings:
  index_dtype: int64
  tables:
    - {name: t, rows: 100, dim: 16, pooling: 2, shardng: row-wise}
communication: {allreduce: fp32}
"""


# ---------------------------------------------------------------- shipped workloads


@pytest.mark.parametrize("name, parameters, layers, batch", [
    ("model-a", 793e9, 20, 512), ("model-f", 12e12, 7, 512), ("model-i", 332e9, 43, 2048)])
def test_shipped_workloads_match_the_papers_model_table(name, parameters, layers, batch):
    w = load_workload(ROOT / "workloads" / f"{name}.yaml")
    assert sum(t.parameters for t in w.tables) == pytest.approx(parameters, rel=0.01)
    assert len(w.bottom_mlp) - 1 + len(w.top_mlp) - 1 == layers
    assert w.batch_per_gpu == batch


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.name)
def test_shipped_workloads_validate_and_say_what_they_assume(path, capsys):
    assert main(["validate", str(path)]) == 0
    assert load_workload(path).assumptions


def test_a_broken_workload_is_reported_at_its_lines(tmp_path, capsys):
    bad = tmp_path / "broken.yaml"
    bad.write_text(BROKEN_BATCH_AND_KEY)
    assert main(["estimate", str(ZIONEX), str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:4:8: error[E110]: batch: give either 'global' or 'per_gpu', not both or neither" in err
    assert f"{bad}:10:49: error[E112]: embeddings.tables[0]: unknown key 'shardng'" in err
    assert "did you mean 'sharding'?" in err


def test_a_workload_that_is_not_yaml_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: workload\nbatch: [1, 2\n")
    assert main(["estimate", str(ZIONEX), str(bad)]) == 2
    assert re.search(rf"{re.escape(str(bad))}:\d+:\d+: error\[E10\d\]", capsys.readouterr().err)


def test_duplicate_table_names_are_refused(tmp_path, capsys):
    bad = tmp_path / "dup.yaml"
    bad.write_text(BROKEN_BATCH_AND_KEY.replace("{per_gpu: 512, global: 4096}", "{per_gpu: 512}")
                   .replace(", shardng: row-wise}", "}\n    - {name: t, rows: 5, dim: 4, pooling: 1}"))
    assert main(["validate", str(bad)]) == 1
    assert (f"{bad}:11:14: error[E202]: embeddings.tables[1]: duplicate table name 't' (also used by embeddings.tables[0])"
            in capsys.readouterr().out)


def test_platform_and_workload_in_the_wrong_order_exit_2(capsys):
    assert main(["estimate", str(MODEL_A), str(ZIONEX)]) == 2
    assert "is a workload file; give the platform (node or cluster) file here" in capsys.readouterr().err


def test_a_platform_file_given_as_workload_is_refused_at_its_kind(capsys):
    assert main(["estimate", str(ZIONEX), str(ZIONEX16)]) == 1
    assert "error[E113]: expected kind: workload here, got 'cluster'" in capsys.readouterr().err


def test_generate_checks_a_workload_and_writes_nothing_for_it(tmp_path, capsys):
    assert main(["generate", str(MODEL_A), "-o", str(tmp_path / "out"), "--no-svg"]) == 0
    assert [p for p in (tmp_path / "out").rglob("*") if p.is_file()] == []
    assert "0 file(s) generated" in capsys.readouterr().err


# ---------------------------------------------------------------- figures from the topology


def test_cluster_figures_are_the_cluster_rooflines_numbers():
    cluster, _ = load_any(ZIONEX16)
    f = figures(topology_of(cluster))
    doc = cluster_roofline.cluster_roofline(topology_of(cluster))
    assert (f.gpus, f.gpus_per_node, f.nodes) == (128, 8, 16)
    assert f.injection_bandwidth == doc["network"]["per_gpu_injection_bytes_per_s"] == 25e9
    assert f.algbw["all_to_all"] == doc["collectives"]["all_to_all"]["algbw_bytes_per_s"]
    assert f.hbm_bandwidth == 1.555e12 and f.peak_flop_per_s["fp16"] == 312e12
    assert (f.transport, f.gpudirect) == ("rocev2", True)


def test_zion_collectives_run_over_tcp_without_gpudirect():
    cluster, _ = load_any(ZION16)
    f = figures(topology_of(cluster))
    assert (f.transport, f.gpudirect) == ("tcp", False)
    assert f.injection_bandwidth == 6.25e9  # 4 x 100 Gb/s CPU NICs shared by 8 GPUs


# ---------------------------------------------------------------- estimate


def test_estimate_prints_terms_qps_and_bottleneck(capsys):
    assert main(["estimate", str(ZIONEX16), str(MODEL_A)]) == 0
    out = capsys.readouterr().out
    for label in ("embedding lookups forward", "MLP + interaction backward", "input (sparse ids) AlltoAll",
                  "pooled-embedding AlltoAll forward", "pooled-embedding AlltoAll backward", "dense-gradient AllReduce",
                  "host-to-device input copy"):
        assert label in out
    assert re.search(r"^QPS bound: [\d.]+ [kM] samples/s with overlap, [\d.]+ [kM] without$", out, re.M)
    assert re.search(r"^Bottleneck: \S", out, re.M)


def test_estimate_json_has_terms_resources_and_bounds(capsys):
    assert main(["estimate", str(ZIONEX16), str(MODEL_A), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"platform", "workload", "terms", "resources_seconds", "serial_seconds", "overlapped_seconds", "qps_serial",
            "qps_overlapped", "bottleneck", "placement", "local_batch", "global_batch"} <= set(doc)
    assert [t["id"] for t in doc["terms"]][:2] == ["embedding_fwd", "embedding_bwd"]
    assert set(doc["resources_seconds"]) == {"gpu", "network", "pcie", "ingestion", "host"}
    assert doc["serial_seconds"] >= doc["overlapped_seconds"] == max(doc["resources_seconds"].values())
    assert doc["qps_overlapped"] == pytest.approx(doc["global_batch"] / doc["overlapped_seconds"])


def test_estimate_of_a_model_too_big_for_one_node_exits_1_at_the_tables(capsys):
    assert main(["estimate", str(ZIONEX), str(ROOT / "workloads" / "model-f.yaml")]) == 1
    assert re.search(r"model-f\.yaml:\d+:\d+: error\[E401\]: the embedding tables need [\d.]+ TiB per GPU on zionex \(8 GPUs\)",
                     capsys.readouterr().err)


# ---------------------------------------------------------------- compare


def test_compare_prints_the_side_by_side_table_and_the_speedup_with_reasons(capsys):
    assert main(["compare", str(ZION16), str(ZIONEX16), str(MODEL_A)]) == 0
    out = capsys.readouterr().out
    for row in ("inter-node transport", "per-GPU injection bandwidth", "CPU-GPU traffic", "peak fp16 per GPU",
                "all_reduce busbw bound", "all_to_all busbw bound"):
        assert row in out
    assert re.search(r"^  inter-node transport\s+tcp\s+rocev2\s*$", out, re.M)
    assert re.search(r"^  per-GPU injection bandwidth\s+6\.25 GB/s\s+25 GB/s\s+4x$", out, re.M)
    speedup = re.search(r"^Estimated speedup of zionex-16 over zion-16 on model-a: ([\d.]+)x with overlap", out, re.M)
    assert speedup and float(speedup.group(1)) > 1
    assert "Why:" in out and re.search(r"^The term that changes most: \S", out, re.M)


def test_compare_json_names_the_term_that_changes_most(capsys):
    assert main(["compare", str(ZION16), str(ZIONEX16), str(MODEL_A), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    changes = doc["term_changes"]
    assert doc["changes_most"] == changes[0]["id"]
    assert abs(changes[0]["saved_seconds"]) == max(abs(c["saved_seconds"]) for c in changes)
    assert doc["speedup_overlapped"] == pytest.approx(
        doc["estimates"]["b"]["qps_overlapped"] / doc["estimates"]["a"]["qps_overlapped"])


def test_compare_without_workload_prints_only_the_platforms(capsys):
    assert main(["compare", str(ZIONEX), str(ZIONEX16)]) == 0
    out = capsys.readouterr().out
    assert "per-GPU injection bandwidth" in out and "Estimated speedup" not in out


# ---------------------------------------------------------------- plot


@pytest.mark.slow  # matplotlib (its import alone is half a second)
def test_svg_plot_is_byte_identical_across_runs_and_undated(tmp_path, capsys):
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    assert main(["compare", str(ZION16), str(ZIONEX16), str(MODEL_A), "--plot", str(first)]) == 0
    assert main(["compare", str(ZION16), str(ZIONEX16), str(MODEL_A), "--plot", str(second)]) == 0
    data = first.read_bytes()
    assert data == second.read_bytes()
    assert data.startswith(b"<?xml") and b"<dc:date>" not in data


@pytest.mark.slow  # matplotlib (its import alone is half a second)
def test_png_plot_is_written(tmp_path, capsys):
    out = tmp_path / "estimate.png"
    assert main(["estimate", str(ZIONEX16), str(MODEL_A), "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_to_an_unknown_format_exits_2_before_any_work(tmp_path, capsys):
    assert main(["estimate", str(ZIONEX16), str(MODEL_A), "--plot", str(tmp_path / "x.pdf")]) == 2
    assert "--plot" in capsys.readouterr().err and not (tmp_path / "x.pdf").exists()


def test_plot_without_matplotlib_says_how_to_get_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["estimate", str(ZIONEX16), str(MODEL_A), "--plot", str(tmp_path / "x.svg")]) == 2
    assert "plotting needs matplotlib: pip install 'hwspec[plot]'" in capsys.readouterr().err


def test_the_compare_example_of_docs_estimates_is_what_hwspec_prints(capsys, monkeypatch):
    section = (ROOT / "docs" / "estimates.md").read_text().split("\n## Comparing two platforms\n", 1)[1].split("\n## ", 1)[0]
    (command,) = re.findall(r"```sh\nhwspec (compare .*)\n```", section)
    (shown,) = re.findall(r"```text\n(.*?)```", section, re.DOTALL)
    monkeypatch.chdir(ROOT)
    assert main(command.split()) == 0
    assert shown in capsys.readouterr().out, "docs/estimates.md's compare example is stale: paste the command's output"


def test_the_workload_example_of_docs_estimates_loads(tmp_path):
    section = (ROOT / "docs" / "estimates.md").read_text().split("\n## A workload file\n", 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    (tmp_path / "example.yaml").write_text(example)
    w = load_workload(tmp_path / "example.yaml")
    assert (w.name, w.tables[0].count, w.comm_backward) == ("model-i", 200, "bf16")


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.name)
def test_shipped_workloads_match_the_json_schema_and_point_editors_at_it(path):
    import jsonschema
    import yaml

    from hwspec.spec.json_schema import platform_schema

    validator = jsonschema.Draft202012Validator(platform_schema())
    assert list(validator.iter_errors(yaml.safe_load(path.read_text()))) == []
    assert path.read_text().splitlines()[0] == "# yaml-language-server: $schema=../schema/hwspec.schema.json"
    data = yaml.safe_load(path.read_text())
    data["embeddings"]["tables"][0]["poolng"] = 3
    assert list(validator.iter_errors(data))


@pytest.mark.slow  # matplotlib (its import alone is half a second)
@pytest.mark.parametrize("command", [["estimate", str(ZIONEX16)], ["compare", str(ZION16), str(ZIONEX16)]])
def test_plot_write_error_names_the_path_given_not_the_temporary_file(tmp_path, capsys, command):
    (tmp_path / "d.svg").mkdir()
    assert main([*command, str(MODEL_A), "--plot", str(tmp_path / "d.svg")]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"hwspec: error[E114]: cannot write {tmp_path / 'd.svg'}: is a directory"


@pytest.mark.parametrize(("a", "b", "row"), [
    ("mi300x-oam", "mi300x-oam", r"xGMI per GPU\s+448 GB/s\s+448 GB/s"),
    ("hgx-h100", "hgx-b200", r"NVLink per GPU\s+450 GB/s\s+900 GB/s"),
    ("mi300x-oam", "hgx-h100", r"GPU fabric per GPU \(xGMI / NVLink\)\s+448 GB/s\s+450 GB/s"),
])
def test_compare_names_the_gpu_fabric_each_platform_has(a, b, row, capsys):
    assert main(["compare", str(ROOT / "platforms" / f"{a}.yaml"), str(ROOT / "platforms" / f"{b}.yaml")]) == 0
    assert re.search(rf"^  {row}\s", capsys.readouterr().out, re.M)
