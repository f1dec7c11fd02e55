"""The files a command writes at a path the user names (`schema -o`, `import -o`, `--plot` of
`estimate`, `compare` and `diff`): an operating-system error is one E114 line naming the path
given (never E903, never the temporary file); a write killed half-way leaves a temporary file
that the next write of that path removes, and nothing else is ever removed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hwspec.atomic import write_atomic_bytes
from hwspec.cli.commands import main
from tests.test_acceptance_diff import BIG, nccl_tests

ROOT = Path(__file__).resolve().parent.parent
LIVE = ROOT / "tests" / "data" / "live"
ZIONEX16 = ROOT / "platforms" / "zionex-16.yaml"
MODEL_A = ROOT / "workloads" / "model-a.yaml"
H100 = ROOT / "platforms" / "hgx-h100.yaml"

KILLED_WRITE = """
import os, signal, sys
from pathlib import Path
from hwspec import atomic

def killed(fd):  # the write is done, not yet renamed: SIGKILL, as an OOM killer or a job's end would
    os.kill(os.getpid(), signal.SIGKILL)

atomic.os.fsync = killed
atomic.write_atomic_bytes(Path(sys.argv[1]), b"half")
"""


def killed_write(path: Path) -> None:
    """A process that dies by SIGKILL while writing `path` through `write_atomic_bytes`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run([sys.executable, "-c", KILLED_WRITE, str(path)], env=env, capture_output=True, timeout=60)
    assert result.returncode == -signal.SIGKILL, result.stderr


def hidden(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str]:
    status = main([str(a) for a in argv])
    return status, capsys.readouterr().err


# ---------------------------------------------------------------- an OS error is E114 with the path given


def test_schema_output_the_os_refuses_is_one_e114_line_not_an_internal_error(tmp_path, capsys):
    (tmp_path / "schema.json").mkdir()
    (tmp_path / "file").write_text("x\n")
    for path, reason in ((tmp_path / "schema.json", "is a directory"), (tmp_path / "file" / "schema.json", "not a directory"),
                         (tmp_path / ("s" * 300 + ".json"), "file name too long")):
        status, err = run(capsys, "schema", "-o", path)
        assert (status, err) == (2, f"hwspec: error[E114]: cannot write {path}: {reason}\n")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_schema_output_into_a_read_only_directory_is_e114_permission_denied(tmp_path, capsys):
    (tmp_path / "ro").mkdir(mode=0o555)
    status, err = run(capsys, "schema", "-o", tmp_path / "ro" / "schema.json")
    assert (status, err) == (2, f"hwspec: error[E114]: cannot write {tmp_path}/ro/schema.json: permission denied\n")


def test_import_output_the_os_refuses_is_one_e114_line(tmp_path, capsys):
    (tmp_path / "draft.yaml").mkdir()
    status, err = run(capsys, "import", LIVE / "zionex.nccl.xml", "-o", tmp_path / "draft.yaml")
    assert (status, err.splitlines()[-1]) == (2, f"hwspec: error[E114]: cannot write {tmp_path}/draft.yaml: is a directory")


@pytest.mark.slow  # matplotlib (its import alone is half a second)
@pytest.mark.parametrize("command", [["estimate", ZIONEX16, MODEL_A], ["diff", H100, "{result}"]], ids=["estimate", "diff"])
def test_plot_output_the_os_refuses_is_one_e114_line(tmp_path, capsys, command):
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib")
    result = tmp_path / "pair.txt"
    result.write_text(nccl_tests("all_reduce", ["gpu01", "gpu02"], 8, dict.fromkeys(BIG, 480.0)))
    (tmp_path / "d.svg").mkdir()
    status, err = run(capsys, *(str(a).format(result=result) for a in command), "--plot", tmp_path / "d.svg")
    assert (status, err.splitlines()[-1]) == (2, f"hwspec: error[E114]: cannot write {tmp_path}/d.svg: is a directory")


# ---------------------------------------------------------------- a killed write's temporary file


def test_a_killed_write_leaves_a_temporary_file_the_next_write_of_that_path_removes(tmp_path):
    target = tmp_path / "schema.json"
    killed_write(target)
    (leftover,) = hidden(tmp_path)
    assert leftover.startswith(".schema.json.hwspec-tmp.") and not target.exists()
    write_atomic_bytes(target, b"whole\n")
    assert (hidden(tmp_path), target.read_bytes()) == ([], b"whole\n")


@pytest.mark.parametrize("argv", [["schema", "-o", "{out}"], ["import", str(LIVE / "zionex.nccl.xml"), "-o", "{out}"]],
                         ids=["schema", "import"])
def test_a_killed_commands_temporary_file_is_removed_by_its_next_run(tmp_path, capsys, argv):
    out = tmp_path / "out.yaml"
    killed_write(out)
    assert len(hidden(tmp_path)) == 1
    main([a.format(out=out) for a in argv])
    capsys.readouterr()
    assert hidden(tmp_path) == [] and out.exists()


@pytest.mark.slow  # matplotlib (its import alone is half a second)
def test_a_killed_plots_temporary_file_is_removed_by_the_next_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib")
    plot = tmp_path / "estimate.svg"
    killed_write(plot)
    assert main(["estimate", str(ZIONEX16), str(MODEL_A), "--plot", str(plot)]) == 0
    assert hidden(tmp_path) == [] and plot.read_bytes().startswith(b"<?xml")


def test_the_temporary_file_of_a_write_still_running_is_left_alone(tmp_path):
    """Another process writing the same path holds its temporary file's lock: its file is not a leftover."""
    target = tmp_path / "schema.json"
    code = ("import os, sys; from pathlib import Path; from hwspec import atomic\n"
            "atomic.os.fsync = lambda fd: (print('writing', flush=True), sys.stdin.readline())\n"
            "atomic.write_atomic_bytes(Path(sys.argv[1]), b'theirs')\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    writer = subprocess.Popen([sys.executable, "-c", code, str(target)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
        (theirs,) = hidden(tmp_path)
        write_atomic_bytes(target, b"mine")
        assert hidden(tmp_path) == [theirs]
    finally:
        writer.communicate("\n", timeout=60)
    assert writer.returncode == 0 and hidden(tmp_path) == [] and target.read_bytes() == b"theirs"


def test_what_a_write_did_not_make_is_never_removed(tmp_path):
    """Names like a temporary file's, but not one: another file's, a directory, a link, an old-style `.tmp`."""
    target = tmp_path / "schema.json"
    (tmp_path / ".schema.json.hwspec-tmp.dir12345").mkdir()
    (tmp_path / ".schema.json.hwspec-tmp.link1234").symlink_to(tmp_path / "elsewhere")
    (tmp_path / ".other.json.hwspec-tmp.abcdefgh").write_text("another path's\n")
    (tmp_path / ".schema.json.k2j3h4.tmp").write_text("not hwspec's\n")
    (tmp_path / ".schema.json.hwspec-tmp.short").write_text("not a name hwspec makes\n")
    before = hidden(tmp_path)
    write_atomic_bytes(target, b"x")
    assert hidden(tmp_path) == before
