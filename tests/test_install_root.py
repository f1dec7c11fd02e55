"""The install location is one setting: `hwspec generate --install-root DIR` moves every path
the generated files name (nccl.conf's and launch.env's NCCL_TOPO_FILE, the scripts' default
HWSPEC_DIR, the comments); nothing keeps pointing at /etc/hwspec."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli import run_hwspec

ROOT = Path(__file__).resolve().parent.parent


def _generate(out: Path, *args: str) -> subprocess.CompletedProcess:
    return run_hwspec("generate", "platforms/zionex.yaml", "platforms/zionex-16.yaml", "-o", str(out), "--no-svg", *args, cwd=ROOT)


def test_every_generated_path_follows_the_install_root(tmp_path: Path) -> None:
    result = _generate(tmp_path, "--install-root", "/opt/site/hwspec/")
    assert result.returncode == 0, result.stderr
    texts = {p.relative_to(tmp_path).as_posix(): p.read_text() for p in tmp_path.rglob("*") if p.is_file()}
    assert [name for name, text in texts.items() if "/etc/hwspec" in text] == []
    assert "NCCL_TOPO_FILE=/opt/site/hwspec/zionex/nccl-topo.xml\n" in texts["zionex/nccl.conf"]
    assert "NCCL_TOPO_FILE=/opt/site/hwspec/zionex/nccl-topo.xml\n" in texts["zionex/launch.env"]
    assert ("NCCL_TOPO_FILE=/opt/site/hwspec/zionex-16/nodes/zionex/nccl-topo.xml\n"
            in texts["zionex-16/nodes/zionex/nccl.conf"])
    assert "dir=${HWSPEC_DIR:-/opt/site/hwspec/zionex-16}\n" in texts["zionex-16/node-launch.sh"]
    assert "export HWSPEC_DIR=${HWSPEC_DIR:-/opt/site/hwspec/zionex-16}\n" in texts["zionex-16/train.sbatch"]


def test_the_default_install_root_is_etc_hwspec(tmp_path: Path) -> None:
    assert _generate(tmp_path).returncode == 0
    assert "NCCL_TOPO_FILE=/etc/hwspec/zionex/nccl-topo.xml\n" in (tmp_path / "zionex" / "nccl.conf").read_text()


@pytest.mark.parametrize("root, message", [
    ("opt/hwspec", "hwspec: error: --install-root 'opt/hwspec': must be an absolute path (NCCL_TOPO_FILE cannot be relative)\n"),
    ("/opt/my hwspec", "hwspec: error: --install-root '/opt/my hwspec': only letters, digits and _./:,@%+^- in plain "
                       "path components are allowed (it is written unquoted into nccl.conf and scripts)\n"),
    ("/opt/../etc", "hwspec: error: --install-root '/opt/../etc': only letters, digits and _./:,@%+^- in plain "
                    "path components are allowed (it is written unquoted into nccl.conf and scripts)\n"),
])
def test_an_install_root_that_cannot_be_written_is_refused(tmp_path: Path, root: str, message: str) -> None:
    result = _generate(tmp_path / "out", "--install-root", root)
    assert result.returncode == 2
    assert result.stderr == message
    assert not (tmp_path / "out").exists()
