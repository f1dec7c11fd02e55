"""`hwspec diff PLATFORM RESULT...` and `hwspec expect`, end to end through the command line:
exit statuses, findings at the limiting part, every report format, the span a run's hosts give
on a cluster, and never a clean report from what could not be checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.diagnostics import display_path

ROOT = Path(__file__).resolve().parent.parent
H100 = str(ROOT / "platforms" / "hgx-h100.yaml")
DGX16 = str(ROOT / "platforms" / "dgx-h100-16.yaml")
X4 = str(ROOT / "platforms" / "gb200-nvl72-x4.yaml")

HEADER = """# nThread 1 nGpus 1 minBytes 4294967296 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
{devices}NCCL version 2.23.4+cuda12.6
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""


def nccl_tests(collective: str, hosts: list[str], per_host: int, busbw: dict[int, float], wrong: int = 0) -> str:
    """An nccl-tests output as its programs print it: the header, one `# Using devices` line per
    rank, one row per size with the given busbw (algbw and time consistent with it)."""
    ranks = len(hosts) * per_host
    devices = "".join(f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on {hosts[r // per_host]:>10} device {r % per_host:2d} "
                      f"[0000:{0x18 + r % per_host:02x}:00] NVIDIA H100 80GB HBM3\n" for r in range(ranks))
    factor = 2 * (ranks - 1) / ranks if collective == "all_reduce" else (ranks - 1) / ranks
    rows = []
    for size, bus in sorted(busbw.items()):
        algbw = bus / factor
        time = size / algbw / 1e3
        count = size // 4 if collective == "all_reduce" else size // 4 // ranks
        redop = "sum" if collective == "all_reduce" else "none"
        rows.append(f"{size:12d}  {count:12d}     float  {redop:>6}      -1  {time:7.1f}  {algbw:6.2f}  {bus:6.2f}  {wrong:6d}  "
                    f"{time:7.1f}  {algbw:6.2f}  {bus:6.2f}  {wrong:6d}\n")
    return (f"# Collective test starting: {collective}_perf\n" + HEADER.format(devices=devices) + "".join(rows)
            + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1\n#\n# Collective test concluded: " + collective + "_perf\n")


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


BIG = (4 << 30, 8 << 30, 16 << 30)


def test_a_healthy_two_node_run_is_clean(tmp_path, capsys):
    result = write(tmp_path, "pair.txt", nccl_tests("all_reduce", ["a", "b"], 8, dict.fromkeys(BIG, 480.0)))
    status, out, err = run(capsys, "diff", H100, result)
    assert status == 0, out + err
    assert "every judged size within its band" in err and "error[" not in out


def test_a_slow_pair_is_drift_at_the_limiting_part_with_its_suspects(tmp_path, capsys):
    result = write(tmp_path, "pair.txt", nccl_tests("all_reduce", ["gpu01", "gpu02"], 8, dict.fromkeys(BIG, 216.0)))
    status, out, _ = run(capsys, "diff", H100, result)
    assert status == 1
    first = out.splitlines()[0]
    assert first == (f"{display_path(H100)}:64:32: error[A101 below-band]: all_reduce over 2 nodes (gpu01, gpu02) x 8 GPUs reached 216 GB/s "
                     "at 16 GiB, expected 462.6-515.1 GB/s (NVLink SHARP in the NVSwitches, 18 nvlink4 links of gpu0 "
                     f"(h100-sxm5-80gb), 450 GB/s, NVLSTree/Simple); 3 of 3 judged sizes below the band ({result}:28)")
    assert out.splitlines()[1].startswith("  hint: first suspects: an NVLink down or trained at fewer links")


def test_wrong_results_are_drift_whatever_the_bandwidth(tmp_path, capsys):
    result = write(tmp_path, "one.txt", nccl_tests("all_reduce", ["a"], 8, dict.fromkeys(BIG, 480.0), wrong=3))
    status, out, _ = run(capsys, "diff", H100, result)
    assert status == 1
    assert "error[A103 wrong-results]: all_reduce on one node (a) x 8 GPUs counted 6 wrong result(s) at 4 GiB" in out


def test_a_run_above_the_datasheet_bound_warns_that_the_spec_understates_the_machine(tmp_path, capsys):
    result = write(tmp_path, "one.txt", nccl_tests("all_gather", ["a"], 8, dict.fromkeys(BIG, 500.0)))
    status, out, _ = run(capsys, "diff", H100, result)
    assert status == 0
    assert "warning[A102 above-bound]: all_gather on one node (a) x 8 GPUs reached 500 GB/s at 16 GiB, above the 450 GB/s" in out


def test_a_run_that_lists_no_ranks_could_not_be_checked_without_nodes(tmp_path, capsys):
    text = nccl_tests("all_reduce", ["a", "b"], 8, dict.fromkeys(BIG, 480.0))
    cut = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#  Rank"))
    result = write(tmp_path, "pair.txt", cut)
    status, out, _ = run(capsys, "diff", H100, result)
    assert status == 2
    assert ("warning[A104 run-unchecked]: all_reduce: the output does not list its ranks ('# Using devices' lines): "
            "give --nodes (and --gpus-per-node where not every GPU ran a rank)") in out
    assert run(capsys, "diff", H100, result, "--nodes", "2")[0] == 0


def test_results_and_topology_inputs_cannot_be_mixed(tmp_path, capsys):
    result = write(tmp_path, "pair.txt", nccl_tests("all_reduce", ["a", "b"], 8, dict.fromkeys(BIG, 480.0)))
    status, _, err = run(capsys, "diff", H100, result, str(ROOT / "tests" / "data" / "h100-8gpu-8nic-dump.xml"))
    assert status == 2 and "give either benchmark results" in err


def test_an_unreadable_result_is_never_clean(tmp_path, capsys):
    good = write(tmp_path, "pair.txt", nccl_tests("all_reduce", ["a", "b"], 8, dict.fromkeys(BIG, 480.0)))
    bad = write(tmp_path, "bad.txt", nccl_tests("all_reduce", ["a", "b"], 8, dict.fromkeys(BIG, 480.0)).replace(
        "  8589934592", "  2147483648", 1))  # a size out of order: another output's row
    status, out, _ = run(capsys, "diff", H100, good, bad)
    assert status == 2
    assert "error[I101 input-syntax]" in out


def test_the_json_report_adds_every_size_compared(tmp_path, capsys):
    result = write(tmp_path, "pair.txt", nccl_tests("all_reduce", ["gpu01", "gpu02"], 8, dict.fromkeys(BIG, 216.0)))
    status, out, _ = run(capsys, "diff", H100, result, "--format", "json", "--node", "gpu01")
    report = json.loads(out)
    assert (status, report["status"], report["node"], report["platform"]) == (1, "drift", "gpu01", "hgx-h100")
    sizes = report["acceptance"]
    assert [s["bytes"] for s in sizes] == list(BIG)
    assert sizes[-1] == {"file": result, "line": 28, "run": f"{result}:1", "collective": "all_reduce", "bytes": 16 << 30,
                         "nodes": 2, "gpus_per_node": 8, "hosts": ["gpu01", "gpu02"], "devices": list(range(8)),
                         "measured_busbw_gbps": 216.0, "expected_busbw_gbps": 515.1, "low_busbw_gbps": 462.6,
                         "high_busbw_gbps": 750.0, "algorithm": "NVLSTree", "protocol": "Simple", "limit": "nvswitch",
                         "judged": True, "verdict": "below"}
    assert report["findings"][0]["code"] == "A101"


def test_prometheus_and_sarif_report_the_acceptance_codes(tmp_path, capsys):
    result = write(tmp_path, "pair.txt", nccl_tests("all_reduce", ["gpu01", "gpu02"], 8, dict.fromkeys(BIG, 216.0)))
    status, out, _ = run(capsys, "diff", H100, result, "--format", "prometheus")
    assert status == 1 and "hwspec_node_drift{" in out and 'code="A101"' in out
    status, out, _ = run(capsys, "diff", H100, result, "--format", "sarif")
    log = json.loads(out)
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["A101"]["defaultConfiguration"] == {"level": "error"} and "A104" in rules
    assert log["runs"][0]["results"][0]["ruleId"] == "A101"


def test_a_cluster_run_takes_its_span_from_where_its_hosts_sit(tmp_path, capsys):
    """dgx-h100-16: two nodes of its one pod are a leaf pair, NIC-bound across them."""
    result = write(tmp_path, "pair.txt", nccl_tests("alltoall", ["dgxh100-00", "dgxh100-01"], 8, dict.fromkeys(BIG, 90.0)))
    status, out, _ = run(capsys, "diff", DGX16, result, "--format", "json")
    report = json.loads(out)
    assert status == 0, out
    assert {s["limit"] for s in report["acceptance"]} == {"nic"}


def test_a_host_that_is_not_the_clusters_is_compared_only_when_nodes_say_so(tmp_path, capsys):
    result = write(tmp_path, "pair.txt", nccl_tests("all_reduce", ["elsewhere-1", "elsewhere-2"], 4, dict.fromkeys(BIG, 800.0)))
    status, out, _ = run(capsys, "diff", X4, result)
    assert status == 2 and "host elsewhere-1 is not a node of gb200-nvl72-x4 (give --nodes 2" in out
    status, out, _ = run(capsys, "diff", X4, result, "--nodes", "2")
    assert status == 0 and "compared as its first 2 nodes" in out


@pytest.mark.slow  # matplotlib (its import alone is half a second)
def test_the_plot_draws_every_run(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib: pip install -e '.[test]' (or '.[plot]')")
    result = write(tmp_path, "pair.txt", nccl_tests("all_reduce", ["gpu01", "gpu02"], 8, dict.fromkeys(BIG, 216.0)))
    plot = tmp_path / "runs.svg"
    status, _, err = run(capsys, "diff", H100, result, "--plot", str(plot))
    assert status == 1 and f"plot written to {plot}" in err
    first = plot.read_bytes()
    assert first.startswith(b"<?xml") and b"below the band" in first
    run(capsys, "diff", H100, result, "--plot", str(plot))
    assert plot.read_bytes() == first  # deterministic


def test_expect_prints_the_figures_and_their_json(capsys):
    status, out, _ = run(capsys, "expect", H100, "--nodes", "2", "--test", "all_reduce")
    assert status == 0
    assert "  16 GiB       515.1  462.6   750  NVLSTree/Simple  nvswitch  *" in out
    status, out, _ = run(capsys, "expect", H100, "--format", "json")
    doc = json.loads(out)
    assert {r["scope"] for r in doc["runs"]} == {"node", "2 nodes", "2 nodes, 1 GPU each"}
    assert {c["test"] for c in doc["copies"]} == {"host_to_device_memcpy_ce", "device_to_host_memcpy_ce",
                                                  "device_to_device_memcpy_read_ce", "device_to_device_memcpy_write_ce"}


def test_expect_refuses_a_span_the_platform_does_not_have(capsys):
    status, _, err = run(capsys, "expect", H100, "--gpus-per-node", "9")
    assert status == 2 and err == "hwspec: hgx-h100 has 8 GPUs, not 9\n"


@pytest.mark.slow  # runs the page's commands in a shell, each running hwspec
def test_the_pages_first_commands_run_as_written(tmp_path):
    """docs/acceptance.md's first block, in a directory holding the platforms and a results/
    folder with one saved output: expect prints the two-node figures, diff finds them clean."""
    import re
    import subprocess
    import sys

    block = re.search(r"```sh\n(.*?)```", (ROOT / "docs" / "acceptance.md").read_text(), re.DOTALL).group(1)
    commands = [line.split("#")[0].split() for line in block.splitlines()]
    (tmp_path / "platforms").symlink_to(ROOT / "platforms")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "pair.txt").write_text(nccl_tests("all_reduce", ["a", "b"], 8, dict.fromkeys(BIG, 480.0)))
    expect = subprocess.run([sys.executable, "-m", "hwspec", *commands[0][1:]], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert expect.returncode == 0 and "all_reduce (nccl-tests), 2 nodes: 2 node(s) x 8 GPU(s)" in expect.stdout
    files = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "results").glob("*.txt"))
    assert commands[1][-1] == "results/*.txt"
    diff = subprocess.run([sys.executable, "-m", "hwspec", *commands[1][1:-1], *files], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert diff.returncode == 0, diff.stdout + diff.stderr
