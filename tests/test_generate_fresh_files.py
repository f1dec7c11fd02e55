"""A generated file is always a fresh file of the user who ran `generate`, with the mode hwspec
sets (0755 for a script, 0644 otherwise): an old file is never kept as it is (hard-linked into the
new set) with a mode or owner someone gave it, and `generate --check` compares modes too."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hwspec.generate.engine import check_plan, write_plan

SCRIPT = "p/health/slurm-healthcheck.sh"
PLAN = {SCRIPT: "#!/bin/sh\nexit 0\n", "p/nccl.conf": "NCCL_A=1\n"}


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.mark.parametrize("tampered", [0o777, 0o4755, 0o2755, 0o1755, 0o700], ids=oct)
def test_a_script_with_another_mode_is_stale_and_generate_writes_it_fresh(tmp_path, tampered):
    out = tmp_path / "out"
    write_plan(PLAN, out)
    os.chmod(out / SCRIPT, tampered)
    assert check_plan(PLAN, out, ["p"]) == [f"stale: {out / SCRIPT}\nmode {tampered:04o}, generated 0755"]
    write_plan(PLAN, out)
    assert (mode(out / SCRIPT), check_plan(PLAN, out, ["p"])) == (0o755, [])


def test_a_world_writable_file_is_stale_and_generate_writes_it_fresh(tmp_path):
    out = tmp_path / "out"
    write_plan(PLAN, out)
    os.chmod(out / "p" / "nccl.conf", 0o666)
    assert check_plan(PLAN, out, ["p"]) == [f"stale: {out}/p/nccl.conf\nmode 0666, generated 0644"]
    write_plan(PLAN, out)
    assert mode(out / "p" / "nccl.conf") == 0o644


def test_a_rewritten_set_shares_no_file_with_the_old_one(tmp_path):
    """Another file changed: the unchanged ones are written again too, not hard-linked from the old set."""
    out = tmp_path / "out"
    write_plan(PLAN, out)
    before = {relative: os.lstat(out / relative).st_ino for relative in PLAN}
    os.link(out / SCRIPT, tmp_path / "kept-elsewhere.sh")  # holds the old inode, so that its number is not reused
    write_plan({**PLAN, "p/nccl.conf": "NCCL_A=2\n"}, out)
    assert os.lstat(out / SCRIPT).st_ino != before[SCRIPT]
    assert os.lstat(tmp_path / "kept-elsewhere.sh").st_nlink == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_file_of_another_owner_is_written_fresh_by_generate(tmp_path):
    out = tmp_path / "out"
    write_plan(PLAN, out)
    os.chown(out / SCRIPT, 4321, 4321)
    write_plan(PLAN, out)
    info = os.lstat(out / SCRIPT)
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (os.geteuid(), 0o755)


def test_a_checkout_under_a_group_writable_umask_is_up_to_date(tmp_path):
    """git checks files out as 0666 (0777 for a script) less the umask: under umask 002 that is
    0664 and 0775, up to date for --check as long as that umask is in force (never o+w)."""
    out = tmp_path / "out"
    write_plan(PLAN, out)
    os.chmod(out / SCRIPT, 0o775)
    os.chmod(out / "p" / "nccl.conf", 0o664)
    previous = os.umask(0o002)
    try:
        assert check_plan(PLAN, out, ["p"]) == []
    finally:
        os.umask(previous)
    assert check_plan(PLAN, out, ["p"]) == [f"stale: {out / SCRIPT}\nmode 0775, generated 0755",
                                            f"stale: {out}/p/nccl.conf\nmode 0664, generated 0644"]
