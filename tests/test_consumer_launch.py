"""The generated launchers as they really run: train.sbatch -> srun -> node-launch.sh ->
torchrun -> bind.sh -> the training command, with torch's gloo backend on CPU (torch 2.13.0
CPU build; `.ci/run` installs it). Slurm's `scontrol show hostnames` is the real one
(slurm-client); `srun` is a stand-in that runs the step once per node of the allocation with
Slurm's per-node variables, as `srun --ntasks-per-node=1` does. Two "nodes" share this machine:
their names resolve nowhere and their addresses (127.0.0.1, 127.0.0.2) are loopback."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.consumers import ROOT, free_port, generate, need_program

pytestmark = pytest.mark.consumer

CLUSTER = ROOT / "tests" / "fixtures" / "cluster" / "loopback_pair.yaml"
NODES = ["hwspec-unresolvable-0", "hwspec-unresolvable-1"]

FAKE_SRUN = """#!/bin/bash
# srun --ntasks-per-node=1 stand-in: the step once per node of the allocation, in parallel
while [[ $# -gt 0 && $1 == -* ]]; do shift; done
i=0; pids=()
for node in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do
    SLURMD_NODENAME=$node SLURM_NODEID=$i SLURM_PROCID=$i SLURM_LOCALID=0 "$@" &
    pids+=($!); i=$((i + 1))
done
rc=0; for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done; exit $rc
"""

FAKE_TORCHRUN = """#!/bin/sh
# torchrun stand-in: records the environment the launcher gives it and its arguments
env > "$HWSPEC_TEST_OUT/${SLURMD_NODENAME:-${HWSPEC_NODE:-node}}.env"
printf '%s\\n' "$@" > "$HWSPEC_TEST_OUT/${SLURMD_NODENAME:-${HWSPEC_NODE:-node}}.args"
"""

RANK_SCRIPT = """import json, os, sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
total = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(total)
keys = ("LOCAL_RANK", "NCCL_TOPO_FILE", "PET_RDZV_ENDPOINT", "PET_NNODES", "NCCL_CONF_FILE", "CUDA_DEVICE_ORDER",
        "NCCL_IB_HCA", "SLURMD_NODENAME")
record = {"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": total.item(),
          **{k: os.environ.get(k) for k in keys}}
with open(os.path.join(sys.argv[1], f"rank{dist.get_rank()}.json"), "w") as out:
    json.dump(record, out)
dist.destroy_process_group()
"""


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture(scope="module")
def scontrol() -> str:
    return need_program("scontrol", "slurm-client")


@pytest.fixture()
def installed(tmp_path: Path) -> Path:
    """The loopback_pair cluster generated with the default install root and then put
    somewhere else: HWSPEC_DIR is the only thing that says where."""
    return generate(CLUSTER, tmp_path / "site") / "loopback_pair"


def _env(tmp_path: Path, installed: Path, scontrol: str, torchrun: str | None, **extra: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    _script(bin_dir / "srun", FAKE_SRUN)
    if torchrun == "fake":
        _script(bin_dir / "torchrun", FAKE_TORCHRUN)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    path = [str(bin_dir), str(Path(scontrol).parent), str(Path(sys.executable).parent), os.environ.get("PATH", "")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "NCCL_", "SLURM", "HWSPEC_"))}
    env.update(PATH=":".join(path), HWSPEC_DIR=str(installed), HWSPEC_TEST_OUT=str(out), SLURM_JOB_NODELIST="hwspec-unresolvable-[0-1]",
               SLURM_JOB_NUM_NODES="2", SLURM_JOB_ID="4242", HWSPEC_BIND="off")
    conf = tmp_path / "slurm.conf"  # scontrol reads a configuration even to expand a hostlist, as in a job
    conf.write_text("ClusterName=hwspectest\nSlurmctldHost=localhost\n")
    env["SLURM_CONF"] = str(conf)
    env.update(extra)
    return env


def _recorded_env(tmp_path: Path, node: str) -> dict[str, str]:
    lines = (tmp_path / "out" / f"{node}.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def test_train_sbatch_runs_gloo_ranks_on_every_node_through_the_generated_launchers(
        tmp_path: Path, installed: Path, scontrol: str) -> None:
    pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0; .ci/run does)")
    port = free_port()
    env = _env(tmp_path, installed, scontrol, torchrun=None, PET_NPROC_PER_NODE="2", HWSPEC_RDZV_PORT=str(port))
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    result = subprocess.run(["bash", str(installed / "train.sbatch"), sys.executable, str(script), str(tmp_path / "out")],
                            env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    records = sorted((json.loads(p.read_text()) for p in (tmp_path / "out").glob("rank*.json")), key=lambda r: r["rank"])
    assert [r["rank"] for r in records] == [0, 1, 2, 3]
    assert {r["world"] for r in records} == {4} and {r["sum"] for r in records} == {1.0 + 2 + 3 + 4}
    assert {r["SLURMD_NODENAME"] for r in records} == set(NODES)
    # the rendezvous is the first node's address from hosts.tsv, not its (unresolvable) name
    assert {r["PET_RDZV_ENDPOINT"] for r in records} == {f"127.0.0.1:{port}"}
    # the install location is one setting: the topology file follows HWSPEC_DIR
    assert {r["NCCL_TOPO_FILE"] for r in records} == {f"{installed}/nodes/zionex/nccl-topo.xml"}
    assert {r["NCCL_CONF_FILE"] for r in records} == {f"{installed}/nccl.conf"}
    assert {r["LOCAL_RANK"] for r in records} == {"0", "1"} and {r["CUDA_DEVICE_ORDER"] for r in records} == {"PCI_BUS_ID"}
    assert {r["PET_NNODES"] for r in records} == {"2"}


def test_train_sbatch_keeps_a_rendezvous_endpoint_already_in_the_environment(
        tmp_path: Path, installed: Path, scontrol: str) -> None:
    env = _env(tmp_path, installed, scontrol, torchrun="fake", PET_RDZV_ENDPOINT="10.9.9.9:1234", PET_NNODES="1:2",
               PET_RDZV_ID="mine", NCCL_CONF_FILE="/site/nccl.conf")
    result = subprocess.run(["bash", str(installed / "train.sbatch"), "true"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for node in NODES:
        seen = _recorded_env(tmp_path, node)
        assert (seen["PET_RDZV_ENDPOINT"], seen["PET_NNODES"], seen["PET_RDZV_ID"], seen["NCCL_CONF_FILE"]) == (
            "10.9.9.9:1234", "1:2", "mine", "/site/nccl.conf")


def test_train_sbatch_falls_back_to_the_node_name_when_hosts_tsv_has_no_address(
        tmp_path: Path, installed: Path, scontrol: str) -> None:
    hosts = installed / "hosts.tsv"
    hosts.write_text(hosts.read_text().replace("127.0.0.1", "-"))
    env = _env(tmp_path, installed, scontrol, torchrun="fake")
    result = subprocess.run(["bash", str(installed / "train.sbatch"), "true"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert _recorded_env(tmp_path, NODES[1])["PET_RDZV_ENDPOINT"] == "hwspec-unresolvable-0:29500"


def test_node_launch_finds_its_platform_by_slurm_node_name_or_hwspec_node(
        tmp_path: Path, installed: Path, scontrol: str) -> None:
    env = _env(tmp_path, installed, scontrol, torchrun="fake", SLURMD_NODENAME=NODES[1])
    result = subprocess.run([str(installed / "node-launch.sh"), "true"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    args = (tmp_path / "out" / f"{NODES[1]}.args").read_text().split()
    assert args == ["--no-python", f"{installed}/nodes/zionex/bind.sh", "true"]
    env.pop("SLURMD_NODENAME")
    env["HWSPEC_NODE"] = "nobody"
    result = subprocess.run([str(installed / "node-launch.sh"), "true"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == (f"node-launch.sh: host 'nobody' is not in {installed}/hosts.tsv "
                             "(set HWSPEC_NODE to this node's name there)\n")


def test_node_launch_stops_when_the_topology_file_is_missing(tmp_path: Path, installed: Path, scontrol: str) -> None:
    (installed / "nodes" / "zionex" / "nccl-topo.xml").unlink()
    env = _env(tmp_path, installed, scontrol, torchrun="fake", SLURMD_NODENAME=NODES[0])
    result = subprocess.run([str(installed / "node-launch.sh"), "true"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == (f"node-launch.sh: NCCL topology file {installed}/nodes/zionex/nccl-topo.xml is missing: "
                             f"install nodes/zionex/ under {installed}, or set HWSPEC_DIR (or NCCL_TOPO_FILE) to where it is\n")
    assert not (tmp_path / "out" / f"{NODES[0]}.env").exists()


def test_bind_sh_stops_when_the_topology_file_is_missing(tmp_path: Path) -> None:
    out = generate(ROOT / "platforms" / "zionex.yaml", tmp_path / "gen") / "zionex"
    env = {"PATH": os.environ.get("PATH", ""), "LOCAL_RANK": "0", "HWSPEC_BIND": "off",
           "NCCL_TOPO_FILE": "/etc/hwspec/zionex/nccl-topo.xml" if not Path("/etc/hwspec/zionex/nccl-topo.xml").exists()
           else str(tmp_path / "absent.xml")}
    result = subprocess.run([str(out / "bind.sh"), "true"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == (f"bind.sh: NCCL topology file {env['NCCL_TOPO_FILE']} is missing: install this platform's "
                             "nccl-topo.xml there, or set NCCL_TOPO_FILE to where it is\n")
    env["NCCL_TOPO_FILE"] = str(out / "nccl-topo.xml")
    assert subprocess.run([str(out / "bind.sh"), "true"], env=env, timeout=60).returncode == 0
