"""`generate -o DIR` cleans up only what it made: the hidden staging and parked directories of
this run, and of an earlier run killed half-way, as the run recorded them in DIR/.hwspec-journal
before making them. Anything else in DIR, whatever its name, stays."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hwspec.generate.engine import write_plan
from hwspec.generate.writer import JOURNAL, recover

ROOT = Path(__file__).resolve().parent.parent
OLD = {"p/nccl.conf": "NCCL_A=1\n", "p/health/check.sh": "#!/bin/sh\nexit 0\n"}
NEW = {"p/nccl.conf": "NCCL_A=2\n", "p/health/check.sh": "#!/bin/sh\nexit 0\n"}

KILLED_RUN = """
import os, signal, sys
from pathlib import Path
from hwspec.generate import writer
from hwspec.generate.engine import write_plan

def die(*_):
    os.kill(os.getpid(), signal.SIGKILL)

if sys.argv[2] == "before-exchange":
    writer._exchange = die
else:  # between parking the old set and putting the new one in place (a file system without RENAME_EXCHANGE)
    writer._renameat2 = lambda: None
    renames = []
    real_rename = os.rename
    def rename(a, b):
        renames.append(a)
        if len(renames) == 2:
            die()
        real_rename(a, b)
    writer.os.rename = rename
write_plan({"p/nccl.conf": "NCCL_A=2\\n", "p/health/check.sh": "#!/bin/sh\\nexit 0\\n"}, Path(sys.argv[1]))
"""


def killed_run(out: Path, when: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([sys.executable, "-c", KILLED_RUN, str(out), when], env=env, capture_output=True, timeout=60)
    assert result.returncode == -signal.SIGKILL, result.stderr


def hidden(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def not_hwspecs(out: Path) -> list[str]:
    """Hidden entries named like a killed run's leftovers, and one hwspec's old versions removed, none made by hwspec."""
    (out / ".notes.tmp").mkdir(parents=True)
    (out / ".notes.tmp" / "draft.md").write_text("mine\n")
    (out / ".x.conf.k2j3.tmp").write_text("mine\n")
    (out / ".p.hwspec-new.abcd1234").mkdir()
    (out / ".p.hwspec-old.77").mkdir()
    return hidden(out)


def test_generate_leaves_every_hidden_entry_it_did_not_make(tmp_path):
    out = tmp_path / "out"
    before = not_hwspecs(out)
    write_plan(OLD, out)
    write_plan(NEW, out)
    assert hidden(out) == before and (out / ".notes.tmp" / "draft.md").read_text() == "mine\n"


def test_a_journal_naming_what_hwspec_did_not_make_removes_nothing(tmp_path):
    """A record is believed only for what it can be: a hidden staging or parked directory's name."""
    out = tmp_path / "out"
    write_plan(OLD, out)
    before = not_hwspecs(out)
    (tmp_path / "victim").mkdir()
    (out / JOURNAL).write_text("../victim\np\n.notes.tmp\n.x.conf.k2j3.tmp\n/etc\n.p.hwspec-new.abcd1234/..\n")
    recover(out)
    assert hidden(out) == before and (tmp_path / "victim").is_dir() and tree(out / "p") == {"nccl.conf": "NCCL_A=1\n",
                                                                                          "health/check.sh": "#!/bin/sh\nexit 0\n"}


@pytest.mark.slow  # a hwspec process, killed
def test_a_killed_runs_staging_directory_is_removed_by_the_next_run(tmp_path):
    out = tmp_path / "out"
    write_plan(OLD, out)
    killed_run(out, "before-exchange")
    assert [name for name in hidden(out) if name != JOURNAL] != [] and tree(out / "p")["nccl.conf"] == "NCCL_A=1\n"
    write_plan(OLD, out)
    assert hidden(out) == [] and tree(out / "p")["nccl.conf"] == "NCCL_A=1\n"


@pytest.mark.slow  # a hwspec process, killed
def test_a_killed_runs_parked_old_set_is_put_back_by_the_next_run(tmp_path):
    out = tmp_path / "out"
    write_plan(OLD, out)
    killed_run(out, "after-parking")
    assert not (out / "p").exists()
    recover(out)  # what the next run does first, under the lock
    assert hidden(out) == [] and tree(out / "p") == {"nccl.conf": "NCCL_A=1\n", "health/check.sh": "#!/bin/sh\nexit 0\n"}
