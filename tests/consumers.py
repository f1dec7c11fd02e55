"""Shared helpers for the tests that run real consumers of the generated files
(tests/test_consumer_*.py, marked `consumer`): generating a platform into a temporary directory
and finding the consumer's program, or skipping with the reason and the package that provides it.

CI installs every consumer (`.ci/run`); a test is skipped only where its consumer is missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HWSPEC = [sys.executable, "-m", "hwspec"]


def generate(platform: Path, out: Path, *extra: str) -> Path:
    """`hwspec generate PLATFORM -o OUT --no-svg` from the repository root; returns OUT. A
    fixture cluster may name node platforms anywhere in the repository (--platform-root)."""
    result = subprocess.run([*HWSPEC, "generate", str(platform), "-o", str(out), "--no-svg",
                             "--platform-root", str(ROOT), *extra],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return out


def need_program(name: str, package: str) -> str:
    """The path of `name`, or skip: the consumer is not installed (CI installs `package`)."""
    path = shutil.which(name) or next((str(p) for p in (Path("/usr/sbin") / name, Path("/sbin") / name) if p.exists()), None)
    if path is None:
        pytest.skip(f"{name} is not installed (Debian package {package}; .ci/run installs it)")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loopback_slurm_conf(tmp: Path, cluster: str, *extra: str) -> str:
    """The head of a slurm.conf for daemons on loopback, run as root in `tmp` (state, spool and pid
    files there, free ports, no auth), followed by the `extra` lines."""
    return "\n".join([
        f"ClusterName={cluster}", "SlurmctldHost=localhost(127.0.0.1)", "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/none", "CredType=cred/none", "SelectType=select/cons_tres", "MpiDefault=none",
        f"StateSaveLocation={tmp}/state", f"SlurmdSpoolDir={tmp}/spool", f"SlurmctldPidFile={tmp}/slurmctld.pid",
        f"SlurmdPidFile={tmp}/slurmd.pid", f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SlurmdParameters=config_overrides",
        "ReturnToService=2", *extra]) + "\n"


def torchrec_planner_types():
    """TorchRec's `torchrec.distributed.planner.types` (1.8 or later: it has `TopologyFactory`),
    or the test is skipped, saying how CI installs it."""
    import pytest

    pytest.importorskip("torch", reason="torch is not installed: pip install torch==2.13.0 (the consumers extra; .ci/run installs it)")
    try:
        from torchrec.distributed.planner import types
    except ImportError as exc:  # pragma: no cover - CI installs TorchRec
        pytest.skip(f"TorchRec is not installed ({exc}): pip install torch==2.13.0 fbgemm-gpu-cpu==1.8.0 "
                    "and torchrec==1.8.0 --no-deps (.ci/run does)")
    if not hasattr(types, "TopologyFactory"):  # pragma: no cover
        pytest.skip("this TorchRec has no TopologyFactory (added in TorchRec 1.8)")
    return types


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0
