"""Host memory the source does not give is `unknown`, never a placeholder: a socket's (or NUMA
node's) `capacity: unknown` / `bandwidth: unknown`, what HW603 says about it, and what every
consumer of host memory does with it (issue 22, item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwspec import pipeline
from hwspec.cli.commands import main
from hwspec.diagnostics import HwspecError
from hwspec.generate.engine import plan_for
from hwspec.model.load import load_platform
from hwspec.topology import topology_of

NODE = """\
hwspec: 1
kind: node
name: ddr
declares: {memory: 256 GiB}
sockets:
  - id: cpu0
    part: xeon-platinum-8380h
    numa_node: 0
    memory: {capacity: unknown, bandwidth: unknown}
pcie:
  - {id: rp0, kind: root-port, upstream: cpu0, bus: "0000:10:00.0", link: {gen: 4, width: 16}}
gpus:
  - {id: gpu0, part: a100-sxm4-40gb, pcie: {upstream: rp0, bus: "0000:14:00.0"}}
"""

CLUSTER = """\
hwspec: 1
kind: cluster
name: c
nodes:
  - {platform: ddr.yaml, count: 2, hostname: "n${i}"}
"""

HINT = ("give the memory's 'capacity:' (lsmem's total online memory, 'free -b', or the DIMM sizes of 'dmidecode -t memory'); "
        "give the memory's 'bandwidth:' (the DIMMs' speed x 8 bytes x populated channels from 'dmidecode -t memory', "
        "or the CPU datasheet's figure)")
WAITING = ("warning[HW603 unknown-facts]: waiting for the unknown facts of devices: the figures of roofline.json, "
           "torchrec-topology.json, calculon-system.json, 'hwspec estimate' and 'compare' (memory capacity and memory bandwidth of cpu0)")


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    Path("ddr.yaml").write_text(NODE)
    return Path("ddr.yaml")


def test_a_socket_with_unknown_capacity_and_bandwidth_validates_with_one_hw603_naming_both(node, capsys):
    assert main(["validate", str(node)]) == 0
    out = capsys.readouterr().out
    assert out == (f"ddr.yaml:1:1: {WAITING}\n  hint: fill in the facts the findings above name, then generate again\n"
                   "ddr.yaml:6:5: warning[HW603 unknown-facts]: cpu0: unknown memory capacity, memory bandwidth\n"
                   f"  hint: {HINT}\n")  # and no HW502: an unknown capacity is not 0 bytes against declares.memory


def test_unknown_memory_resolves_to_none_and_is_an_unknown_figure(node):
    platform = load_platform(node)
    (socket,) = platform.sockets
    assert (socket.memory_capacity, socket.memory_bandwidth) == (None, None)
    assert (platform.memory_capacity, platform.memory_bandwidth) == (None, None)
    assert platform.unknown_figures == ("cpu0: memory capacity, memory bandwidth (not given)",)


def test_a_known_capacity_with_unknown_bandwidth_names_only_the_bandwidth(node, capsys):
    node.write_text(NODE.replace("capacity: unknown", "capacity: {value: 512 GiB, source: lsmem}"))
    platform = load_platform(node)
    assert (platform.memory_capacity, platform.memory_bandwidth) == (512 * 2**30, None)
    assert platform.unknown_figures == ("cpu0: memory bandwidth (not given)",)
    main(["validate", str(node)])
    assert "ddr.yaml:6:5: warning[HW603 unknown-facts]: cpu0: unknown memory bandwidth\n" in capsys.readouterr().out


def test_a_numa_nodes_unknown_memory_is_named_at_that_numa_node(node, capsys):
    node.write_text(NODE.replace("    numa_node: 0\n    memory: {capacity: unknown, bandwidth: unknown}\n",
                                 "    numa_nodes:\n      - {id: numa0, numa_node: 0, memory: {capacity: 128 GiB, bandwidth: 100 GB/s}}\n"
                                 "      - {id: numa1, numa_node: 1, memory: {capacity: 128 GiB, bandwidth: unknown}}\n")
                     .replace("upstream: cpu0", "upstream: numa0"))
    assert main(["validate", str(node)]) == 0
    findings = [line for line in capsys.readouterr().out.splitlines() if "HW603" in line]
    assert findings[1:] == ["ddr.yaml:10:9: warning[HW603 unknown-facts]: numa1: unknown memory bandwidth"]


def test_unknown_is_the_only_word_a_memory_figure_takes(node):
    node.write_text(NODE.replace("bandwidth: unknown", "bandwidth: Unknown"))
    with pytest.raises(HwspecError) as caught:
        load_platform(node)
    assert [d.format() for d in caught.value.diagnostics] == [
        "ddr.yaml:9:44: error[E110]: sockets[0].memory.bandwidth: cannot read 'Unknown' as a bandwidth: expected a number "
        "followed by a unit, e.g. '200 Gb/s'"]


def test_roofline_says_the_memory_is_unknown_and_torchrec_and_calculon_wait(node):
    plan = plan_for(topology_of(load_platform(node)))
    roofline = json.loads(plan["ddr/roofline.json"])
    assert roofline["unknown"] == ["cpu0: memory capacity, memory bandwidth (not given)"]
    # the tiers it can give are given (issue 34): host_ddr is null, the rest computed
    tiers = roofline["gpu_groups"][0]["tiers"]
    assert tiers["host_ddr"] is None and tiers["hbm"]["bandwidth_bytes_per_s"] > 0 and tiers["pcie_host"] is not None
    assert (roofline["node"]["ddr_capacity_bytes"], roofline["node"]["ddr_bandwidth_bytes_per_s"]) == (None, None)
    assert not any(name.endswith(("torchrec-topology.json", "calculon-system.json")) for name in plan)


def test_estimate_with_unknown_memory_is_a_located_e403_naming_it(node, capsys):
    assert main(["estimate", str(node), str(Path(__file__).parent.parent / "workloads" / "model-a.yaml")]) == 1
    assert ("ddr.yaml:9:13: error[E403]: cannot estimate with unknown figures: cpu0: memory capacity, memory bandwidth "
            "(not given)\n") in capsys.readouterr().err


def test_slurm_conf_leaves_real_memory_out_and_says_why(node):
    Path("c.yaml").write_text(CLUSTER)
    plan = plan_for(pipeline.check(Path("c.yaml")).topology)
    text = plan["c/slurm/slurm.conf"]
    assert ("# ddr\n"
            "# RealMemory left out: ddr says its memory capacity is unknown (hwspec validate: HW603).\n"
            "# Slurm then takes RealMemory=1 (MiB): the node is not drained, but no job asking for --mem fits when memory is a\n"
            "# consumable resource. Give the capacity in the platform, or add RealMemory= from 'slurmd -C' on the node.\n"
            "NodeName=n[0-1] Sockets=1 CoresPerSocket=28 ThreadsPerCore=2 Gres=gpu:a100-sxm4-40gb:1 State=UNKNOWN\n") in text
    roofline = json.loads(plan["c/roofline.json"])
    assert (roofline["unknown"], roofline["aggregate"]) == (["ddr: cpu0: memory capacity, memory bandwidth (not given)"], None)


def test_slurm_conf_states_real_memory_once_the_capacity_is_given(node):
    node.write_text(NODE.replace("capacity: unknown", "capacity: 256 GiB"))
    Path("c.yaml").write_text(CLUSTER)
    text = plan_for(pipeline.check(Path("c.yaml")).topology)["c/slurm/slurm.conf"]
    assert f" RealMemory={int(256 * 1024 * 0.97)} " in text and "RealMemory left out" not in text


def test_roofline_text_of_unknown_memory_gives_the_other_tiers_and_lists_it(node, capsys):
    assert main(["roofline", str(node)]) == 0
    out = capsys.readouterr().out
    assert [line.split() for line in out.splitlines() if line.startswith("  host_ddr")] == [
        ["host_ddr", "-", "-", "unknown", "(see", "below)"]]
    assert "  hbm " in out and "Ridge points per GPU" in out
    assert ("\nUnknown (host_ddr and the figures that need it are left out; hwspec validate says what to fill in, HW603)\n"
            "  cpu0: memory capacity, memory bandwidth (not given)\n") in out


def test_import_of_an_nccl_dump_drafts_unknown_memory_not_placeholders(tmp_path, capsys):
    draft = tmp_path / "d.yaml"
    assert main(["import", "tests/data/live/minimal-node.nccl.xml", "-o", str(draft)]) == 0
    text = draft.read_text()
    assert "  memory: {capacity: unknown, bandwidth: unknown}\n" in text
    assert "256 GiB" not in text and "100 GB/s" not in text and "placeholders" not in text
    assert f"{draft}:11:3: warning[HW603 unknown-facts]: cpu0: unknown memory capacity, memory bandwidth\n" in capsys.readouterr().err


def test_import_of_lstopo_keeps_its_capacity_and_leaves_bandwidth_unknown(tmp_path, capsys):
    draft = tmp_path / "d.yaml"
    assert main(["import", "tests/data/live/minimal-node.lstopo.xml", "-o", str(draft)]) == 0
    memory = [line.strip() for line in draft.read_text().splitlines() if "memory:" in line]
    assert memory and all(line.startswith("memory: {capacity: ") and line.endswith(" GiB, bandwidth: unknown}")
                          and "unknown," not in line for line in memory)
    assert main(["diff", str(draft), "tests/data/live/minimal-node.lstopo.xml"]) == 0
