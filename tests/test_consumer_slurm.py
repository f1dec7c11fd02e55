"""The generated Slurm files as Slurm 22.05+ reads them: slurmd's own GRES parser (`slurmd -G`)
on slurm.conf + gres.conf, and a real slurmctld loading the node lines, the partition and
topology.conf (`scontrol show node`, `scontrol show topology`). Debian's slurmd, slurmctld and
slurm-client packages; `.ci/run` installs them. Runs as root (slurmd and slurmctld run as
SlurmUser=root here, with auth/none, in a temporary directory; nothing is installed in /etc)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests import slurm_daemons
from tests.consumers import ROOT, generate
from tests.slurm_daemons import slurm_dir, slurmctld, slurmd, submit_and_wait

pytestmark = pytest.mark.consumer

FIXTURES = ROOT / "tests" / "fixtures" / "cluster"


@pytest.fixture(scope="module")
def slurm_programs() -> dict[str, str]:
    return slurm_daemons.slurm_programs()


def slurmd_gres(programs: dict[str, str], conf: Path, node: str) -> tuple[list[dict[str, str]], str]:
    """`slurmd -G`: the GRES slurmd would register for `node`, one dict per line, and its log."""
    result = subprocess.run([programs["slurmd"], "-f", str(conf / "slurm.conf"), "-N", node, "-G"],
                            capture_output=True, text=True, timeout=60)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    gres = [dict(re.findall(r"(\w+)=(\S+)", line.split("Gres ", 1)[1])) for line in log.splitlines() if " Gres Name=" in line]
    return gres, log


@pytest.fixture(scope="module")
def zionex16() -> Path:
    """The committed zionex-16 cluster files (kept current by test_generated_up_to_date)."""
    return ROOT / "generated" / "zionex-16"


def test_slurmd_registers_every_typed_gpu_of_gres_conf(slurm_programs, zionex16: Path, tmp_path: Path) -> None:
    gres, log = slurmd_gres(slurm_programs, slurm_dir(tmp_path, zionex16), "zionex07")
    assert "Ignoring extra GRES" not in log and "fatal" not in log
    assert [(g["Name"], g["Type"], g["Count"], g["Index"]) for g in gres] == [
        ("gpu", "a100-oam-40gb", "1", str(i)) for i in range(8)]
    # two GPUs per socket of 28 cores: Slurm's core indices 0-27, 28-55, ...
    assert [g["Cores"] for g in gres] == ["0-27", "0-27", "28-55", "28-55", "56-83", "56-83", "84-111", "84-111"]
    assert gres[0]["Links"] == "-1,2,2,2,0,2,2,2"


def test_slurmd_reads_cores_as_core_indices_when_cpu_ids_interleave(slurm_programs, tmp_path: Path) -> None:
    generated = generate(FIXTURES / "interleaved_cpus.yaml", tmp_path / "out") / "interleaved_cpus"
    gres, log = slurmd_gres(slurm_programs, slurm_dir(tmp_path / "slurm", generated), "node1")
    # socket cpu0 holds the even CPU ids, cpu1 the odd ones; Slurm numbers cores 0-27 and 28-55
    assert [(g["Type"], g["Cores"]) for g in gres] == [("a100-sxm4-40gb", "0-27"), ("a100-sxm4-40gb", "28-55")]
    assert "Invalid GRES" not in log


def test_slurmd_with_an_untyped_node_line_ignores_the_typed_gpus(slurm_programs, zionex16: Path, tmp_path: Path) -> None:
    """Why the node line must say Gres=gpu:TYPE:N: the usual Gres=gpu:8 loses every GPU."""
    conf = slurm_dir(tmp_path, zionex16)
    fragment = (zionex16 / "slurm" / "slurm.conf").read_text().replace("Gres=gpu:a100-oam-40gb:8", "Gres=gpu:8")
    (tmp_path / "untyped.conf").write_text(fragment)
    (conf / "slurm.conf").write_text((conf / "slurm.conf").read_text().replace(
        f"Include {zionex16}/slurm/slurm.conf", f"Include {tmp_path}/untyped.conf"))
    _, log = slurmd_gres(slurm_programs, conf, "zionex00")
    assert "Ignoring extra GRES" in log


def test_slurmctld_loads_node_lines_partition_and_topology(slurm_programs, zionex16: Path, tmp_path: Path) -> None:
    with slurmctld(slurm_programs, slurm_dir(tmp_path, zionex16)) as scontrol:
        assert scontrol("show", "topology").split() == ["SwitchName=switch0", "Level=0", "LinkSpeed=1", "Nodes=zionex[00-15]"]
        fields = dict(re.findall(r"(\w+)=(\S+)", scontrol("show", "node", "zionex15")))
        assert {k: fields[k] for k in ("Gres", "NodeAddr", "Sockets", "CoresPerSocket", "ThreadsPerCore", "RealMemory",
                                       "CPUTot", "Partitions")} == {
            "Gres": "gpu:a100-oam-40gb:8", "NodeAddr": "10.16.0.16", "Sockets": "4", "CoresPerSocket": "28",
            "ThreadsPerCore": "2", "RealMemory": str(int(4 * 384 * 1024 * 0.97)), "CPUTot": "224",
            "Partitions": "zionex-16"}


def test_slurmctld_reads_rail_pods_under_the_spine(slurm_programs, tmp_path: Path) -> None:
    generated = generate(FIXTURES / "rail_pods_spine.yaml", tmp_path / "out") / "rail_pods_spine"
    with slurmctld(slurm_programs, slurm_dir(tmp_path / "slurm", generated)) as scontrol:
        switches = [dict(re.findall(r"(\w+)=(\S+)", line)) for line in scontrol("show", "topology").splitlines()]
    assert sorted((s["SwitchName"], s["Level"], s.get("Nodes"), s.get("Switches")) for s in switches) == [
        ("pod0", "0", "r[0-1]", None), ("pod1", "0", "r[2-3]", None), ("pod2", "0", "r[4-5]", None),
        ("pod3", "0", "r[6-7]", None), ("spine", "1", "r[0-7]", "pod[0-3]")]


def test_plain_sbatch_of_the_generated_train_sbatch_runs_to_completion(slurm_programs, tmp_path: Path) -> None:
    """The first thing a user does, as docs/schedulers.md writes it: `sbatch train.sbatch
    hostname`, no --partition; and a bare `sbatch --wrap` lands in the generated partition too.
    A fake torchrun on PATH records what node-launch.sh hands it; the rest is the generated chain."""
    (command,) = [b.strip() for b in re.findall(r"```sh\n(.*?)```", (ROOT / "docs" / "schedulers.md").read_text(),
                                                re.DOTALL) if b.startswith("sbatch ")]
    assert command == "sbatch train.sbatch hostname"
    programs = slurm_programs
    generated = generate(FIXTURES / "one_node_loopback.yaml", tmp_path / "out") / "loopback-one"
    conf = slurm_dir(tmp_path / "slurm", generated)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "torchrun").write_text(f'#!/bin/sh\necho "$SLURMD_NODENAME $*" > {tmp_path}/torchrun.args\n')
    (bin_dir / "torchrun").chmod(0o755)
    env = {**os.environ, "SLURM_CONF": str(conf / "slurm.conf"), "HWSPEC_DIR": str(generated),
           "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    with slurmctld(programs, conf) as scontrol, slurmd(programs, conf, "node0"):
        assert "Default=YES" in scontrol("show", "partition", "loopback-one")
        job = submit_and_wait(programs, scontrol, generated, env, *command.split()[1:])
        plain = submit_and_wait(programs, scontrol, tmp_path, env, "--wrap", "true")
    output = (generated / f"slurm-{job['JobId']}.out").read_text()
    assert (job["JobState"], job["ExitCode"], job["Partition"]) == ("COMPLETED", "0:0", "loopback-one"), output
    assert (tmp_path / "torchrun.args").read_text() == f"node0 --no-python {generated}/nodes/one-gpu/bind.sh hostname\n"
    assert (plain["JobState"], plain["Partition"]) == ("COMPLETED", "loopback-one")
