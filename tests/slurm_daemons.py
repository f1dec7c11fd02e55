"""Real Slurm daemons for the consumer tests (tests/test_consumer_slurm.py,
tests/test_acceptance_suite.py): a configuration directory around the generated files, a
slurmctld and one slurmd per node on this machine, and a job submitted and waited for. Debian's
slurmd, slurmctld and slurm-client packages (`.ci/run` installs them); run as root (SlurmUser=root,
auth/none, everything in a temporary directory; nothing is installed in /etc)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hwspec.hostlist import expand
from tests.consumers import free_port, is_root, loopback_slurm_conf, need_program

Scontrol = Callable[..., str]


def slurm_programs() -> dict[str, str]:
    """slurmd, slurmctld, scontrol and sbatch, or skip (not root, or not installed)."""
    if not is_root():
        pytest.skip("slurmd and slurmctld need root to run with SlurmUser=root (CI runs as root)")
    return {name: need_program(name, package) for name, package in
            (("slurmd", "slurmd"), ("slurmctld", "slurmctld"), ("scontrol", "slurm-client"), ("sbatch", "slurm-client"))}


def one_line_per_node(fragment: str) -> str:
    """The slurm.conf fragment with each node line split into one line per node, each with a
    free Port=, so that one slurmd per node can run on this machine (a hostlist line with
    NodeAddr= pairs names and addresses by position)."""
    lines = []
    for line in fragment.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S+)", line)) if line.startswith("NodeName=") else {}
        if "NodeName" not in fields:
            lines.append(line)
            continue
        names = expand(fields["NodeName"])
        addresses = expand(fields["NodeAddr"]) if "NodeAddr" in fields else [None] * len(names)
        rest = re.sub(r"^NodeName=\S+( NodeAddr=\S+)?", "", line)
        lines.extend(f"NodeName={name}" + (f" NodeAddr={address}" if address else "") + f" Port={free_port()}{rest}"
                     for name, address in zip(names, addresses))
    return "\n".join(lines) + "\n"


def slurm_dir(tmp: Path, generated: Path, fragment: str | None = None, *extra: str) -> Path:
    """A Slurm configuration directory: a minimal site slurm.conf (select/cons_tres, Slurm's
    default from 23.11, as the fragment asks) that `Include`s the generated fragment (or
    `fragment`, written beside it), with the generated gres.conf and topology.conf beside it,
    and `extra` lines. The only change to the generated files: gres.conf's /dev/nvidiaN become
    character devices under tmp/dev. Spool and pid files are per node (`%n`), for several slurmd."""
    conf = tmp / "etc"
    dev = tmp / "dev"
    for sub in (conf, dev, tmp / "state", tmp / "spool"):
        sub.mkdir(parents=True, exist_ok=True)
    gres = (generated / "slurm" / "gres.conf").read_text()
    for index in sorted({int(i) for i in re.findall(r"File=/dev/nvidia(\d+)", gres)}):
        os.mknod(dev / f"nvidia{index}", 0o600 | 0o020000, os.makedev(195, index))
    (conf / "gres.conf").write_text(gres.replace("File=/dev/nvidia", f"File={dev}/nvidia"))
    shutil.copy(generated / "slurm" / "topology.conf", conf / "topology.conf")
    include = generated / "slurm" / "slurm.conf"
    if fragment is not None:
        include = tmp / "fragment.conf"
        include.write_text(fragment)
    head = loopback_slurm_conf(tmp, "hwspectest", f"Include {include}", *extra)
    # slurmstepd's sockets live in the spool directory, and a socket's path may not pass 107
    # characters: a short directory of this configuration's own under /tmp, one per node (slurmd()
    # makes and removes it)
    spool = Path("/tmp") / f"hwspec-slurmd-{hashlib.sha256(str(tmp).encode()).hexdigest()[:16]}"
    head = head.replace(f"SlurmdSpoolDir={tmp}/spool", f"SlurmdSpoolDir={spool}/%n")
    (conf / "slurm.conf").write_text(head.replace(f"SlurmdPidFile={tmp}/slurmd.pid", f"SlurmdPidFile={tmp}/slurmd-%n.pid"))
    return conf


@contextlib.contextmanager
def slurmctld(programs: dict[str, str], conf: Path) -> Iterator[Scontrol]:
    """A slurmctld running on `conf` (foreground, its own state, logging to slurmctld.log beside
    `conf`); yields `scontrol(*args)`, which returns scontrol's standard output and fails the test
    on an error. On exit, its log must hold no fatal error."""
    env = {**os.environ, "SLURM_CONF": str(conf / "slurm.conf")}
    log_path = conf.parent / "slurmctld.log"  # a file, not a pipe: a pipe nobody reads blocks the daemon once full
    with open(log_path, "w") as log:
        daemon = subprocess.Popen([programs["slurmctld"], "-D", "-i", "-f", str(conf / "slurm.conf")],
                                  stdout=log, stderr=subprocess.STDOUT, text=True, env=env)

    def scontrol(*args: str) -> str:
        result = subprocess.run([programs["scontrol"], *args], capture_output=True, text=True, env=env, timeout=30)
        assert result.returncode == 0, result.stderr
        return result.stdout

    try:
        deadline = time.monotonic() + 60
        while subprocess.run([programs["scontrol"], "ping"], capture_output=True, env=env, timeout=30).returncode != 0:
            assert daemon.poll() is None and time.monotonic() < deadline, "slurmctld did not start"
            time.sleep(0.5)
        yield scontrol
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover
            daemon.kill()
            daemon.wait()
        text = log_path.read_text()
        assert "fatal" not in text, text


@contextlib.contextmanager
def slurmd(programs: dict[str, str], conf: Path, *nodes: str) -> Iterator[None]:
    """A slurmd running as each of `nodes` on `conf` (foreground, logging to slurmd-NODE.log beside
    `conf`), stopped on exit; waits until slurmctld sees every one of them idle when `nodes` are several."""
    env = {**os.environ, "SLURM_CONF": str(conf / "slurm.conf")}
    spool = re.search(r"^SlurmdSpoolDir=(\S+)/%n$", (conf / "slurm.conf").read_text(), re.MULTILINE)
    for node in nodes:  # slurm_dir's per-node spool directories, there before the daemons need them
        if spool:
            (Path(spool.group(1)) / node).mkdir(parents=True, exist_ok=True)
    logs = [open(conf.parent / f"slurmd-{node}.log", "w") for node in nodes]  # files, as slurmctld's; closed below
    daemons = [subprocess.Popen([programs["slurmd"], "-D", "-v", "-N", node, "-f", str(conf / "slurm.conf")],
                                stdout=log, stderr=subprocess.STDOUT, text=True, env=env) for node, log in zip(nodes, logs)]
    try:
        deadline = time.monotonic() + 60
        while len(nodes) > 1:
            shown = subprocess.run([programs["scontrol"], "show", "node"], capture_output=True, text=True, env=env,
                                   timeout=30).stdout
            if shown.count("State=IDLE") >= len(nodes):
                break
            assert time.monotonic() < deadline, f"slurmd did not register every node:\n{shown}"
            time.sleep(0.5)
        yield
    finally:
        for daemon in daemons:
            daemon.terminate()
        for daemon in daemons:
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:  # pragma: no cover
                daemon.kill()
                daemon.wait()
        for log in logs:
            log.close()
        if spool:
            shutil.rmtree(spool.group(1), ignore_errors=True)


def submit(programs: dict[str, str], cwd: Path, env: dict[str, str], *sbatch_args: str) -> str:
    """`sbatch --parsable ARGS` (no partition or other option added) in `cwd`: the job id."""
    result = subprocess.run([programs["sbatch"], "--parsable", *sbatch_args], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().split(";")[0]


def wait_for(scontrol: Scontrol, job: str, timeout: float = 90) -> dict[str, str]:
    """Waits until `job` leaves PENDING/RUNNING and returns `scontrol show job`'s fields."""
    deadline = time.monotonic() + timeout
    while True:
        fields = dict(re.findall(r"(\w+)=(\S+)", scontrol("show", "job", job)))
        if fields["JobState"] not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
            return fields
        assert time.monotonic() < deadline, f"job {job} still {fields['JobState']}: {fields.get('Reason')}"
        time.sleep(0.5)


def submit_and_wait(programs: dict[str, str], scontrol: Scontrol, cwd: Path, env: dict[str, str],
                    *sbatch_args: str) -> dict[str, str]:
    """`sbatch --parsable ARGS` in `cwd`; waits until the job leaves PENDING/RUNNING and returns
    `scontrol show job`'s fields."""
    return wait_for(scontrol, submit(programs, cwd, env, *sbatch_args))
