"""Paths the operating system refuses (a name over 255 bytes, a symlink loop, a dangling link, a
directory, a file used as a directory, no permission): wherever a path reaches hwspec (a
platform file, a cluster's `platform:`, a `parts/` entry, an import or diff input, an option's
directory or output), the outcome is a located E100 / I100 (for an output, one E114 line)
naming the OS's reason, or a one-line usage error (exit 2), never a traceback."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.diagnostics import HwspecError
from hwspec.model.parts import load_catalogue

ROOT = Path(__file__).resolve().parent.parent
ZIONEX = ROOT / "platforms" / "zionex.yaml"
LIVE = ROOT / "tests" / "data" / "live"
LONG = "a" * 300 + ".yaml"  # one name over NAME_MAX (255 bytes): ENAMETOOLONG

CLUSTER = """\
hwspec: 1
kind: cluster
name: c
nodes:
  - platform: {platform}
    count: 2
    hostname: "n${{i}}"
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding zionex.yaml, loop.yaml (a link to itself), dangling.yaml (a
    link to nothing), dir.yaml (a directory) and file (a regular file)."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(ZIONEX, "zionex.yaml")
    os.symlink("loop.yaml", "loop.yaml")
    os.symlink("nowhere.yaml", "dangling.yaml")
    os.mkdir("dir.yaml")
    Path("file").write_text("x\n")
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Exit status and stdout + stderr of `hwspec ARGV` (a usage error's SystemExit included)."""
    try:
        status = main(list(argv))
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return status, out + err


# ---------------------------------------------------------------- a platform file on the command line


@pytest.mark.parametrize("path, reason", [
    (LONG, "file name too long"),
    ("loop.yaml", "too many levels of symbolic links"),
    ("file/x.yaml", "not a directory"),
])
def test_platform_path_the_os_refuses_is_a_located_e100_not_a_traceback(here, capsys, path, reason):
    assert run(capsys, "validate", path) == (2, f"{path}:1:1: error[E100]: cannot read file: {reason}\n"
                                                "hwspec: 1 file(s) checked: 1 error(s), 0 warning(s): failed\n")


def test_platform_path_over_255_bytes_in_sarif_is_reported_not_a_traceback(here, capsys):
    status, out = run(capsys, "validate", "--format", "sarif", "--exit-zero", f"{'d' * 300}/x.yaml")
    assert status == 0 and '"text": "cannot read file: file name too long"' in out


def test_symlink_loop_in_sarif_is_reported_at_the_path_given(here, capsys):
    status, out = run(capsys, "validate", "--format", "sarif", "--exit-zero", "loop.yaml")
    assert status == 0 and '"uri": "loop.yaml"' in out and "too many levels of symbolic links" in out


def test_unreadable_platform_file_is_a_located_e100_permission_denied(here, capsys, monkeypatch):
    Path("zionex.yaml").chmod(0)
    if os.geteuid() == 0:  # root reads any file: the open fails as it does for anyone else
        real_open = os.open

        def refusing_open(path, flags, *args, **kwargs):
            if str(path).endswith("zionex.yaml"):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
            return real_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", refusing_open)
    assert run(capsys, "validate", "zionex.yaml")[1].startswith(
        "zionex.yaml:1:1: error[E100]: cannot read file: permission denied\n")


# ---------------------------------------------------------------- a cluster's platform: reference


@pytest.mark.parametrize("platform, reported", [
    (LONG, f"{LONG}:1:1: error[E100]: cannot read file: file name too long\n"
           f"c.yaml:5:15: error[E206]: nodes[0]: node platform '{'a' * 77}...' has errors (reported above)\n"),
    ("loop.yaml", "c.yaml:5:15: error[E206]: nodes[0]: node platform 'loop.yaml' has errors (reported above)\n"
                  "loop.yaml:1:1: error[E100]: cannot read file: too many levels of symbolic links\n"),
    ("dir.yaml", "c.yaml:5:15: error[E206]: nodes[0]: node platform 'dir.yaml' has errors (reported above)\n"
                 "dir.yaml:1:1: error[E100]: cannot read file: it is a directory, not a regular file\n"),
    ("file/x.yaml", "c.yaml:5:15: error[E206]: nodes[0]: node platform 'file/x.yaml' has errors (reported above)\n"
                    "file/x.yaml:1:1: error[E100]: cannot read file: not a directory\n"),
    ("dangling.yaml", "c.yaml:5:15: error[E206]: nodes[0]: node platform file 'dangling.yaml' not found\n"),
])
def test_cluster_platform_reference_the_os_refuses_is_located_at_the_reference(here, capsys, platform, reported):
    Path("c.yaml").write_text(CLUSTER.format(platform=platform))
    status, out = run(capsys, "validate", "c.yaml")
    assert (status, out.rsplit("hwspec: 1 file(s)", 1)[0]) == (1 if "not found" in reported else 2, reported)


# ---------------------------------------------------------------- parts/ entries and directories


@pytest.mark.parametrize("entry, make, reason", [
    ("loop.yaml", lambda p: os.symlink(p.name, p), "too many levels of symbolic links"),
    ("dangling.yaml", lambda p: os.symlink("nowhere.yaml", p), "no such file or directory"),
    ("dir.yaml", os.mkdir, "it is a directory, not a regular file"),
])
def test_parts_entry_the_os_refuses_is_a_located_e100_not_a_traceback(here, capsys, entry, make, reason):
    os.mkdir("parts")
    make(Path("parts", entry))
    status, out = run(capsys, "validate", "zionex.yaml")
    shown = "parts/nowhere.yaml" if entry == "dangling.yaml" else f"parts/{entry}"  # the link's target, resolved
    assert (status, out.splitlines()[0]) == (2, f"{shown}:1:1: error[E100]: cannot read file: {reason}")


def test_parts_directory_in_a_symlink_loop_is_an_e100_from_load_catalogue(here):
    with pytest.raises(HwspecError) as error:
        load_catalogue([Path("loop.yaml")])
    assert str(error.value) == "loop.yaml:1:1: error[E100]: cannot read parts directory: too many levels of symbolic links"


def test_platform_beside_a_parts_link_to_itself_loads_without_it(here, capsys):
    os.symlink("parts", "parts")
    assert run(capsys, "validate", "zionex.yaml")[0] == 0


# ---------------------------------------------------------------- options


@pytest.mark.parametrize("option", ["--parts", "--rules", "--platform-root", "--templates"])
@pytest.mark.parametrize("path, reason", [
    (LONG, "file name too long"),
    ("loop.yaml", "too many levels of symbolic links"),
    ("dangling.yaml", "no such directory"),
    ("file/x", "not a directory"),
    ("file", "is not a directory"),
])
def test_option_directory_the_os_refuses_is_a_one_line_usage_error(here, capsys, option, path, reason):
    status, out = run(capsys, "generate", "--check", option, path, "zionex.yaml")
    assert (status, out.splitlines()[-1]) == (2, f"hwspec: error: {option} {path}: {reason}")


@pytest.mark.parametrize("path, reason", [
    (LONG, "file name too long"),
    ("loop.yaml/out", "too many levels of symbolic links"),
    ("file/out", "not a directory"),
])
def test_generate_output_the_os_refuses_is_one_e114_line(here, capsys, path, reason):
    status, out = run(capsys, "generate", "--no-svg", "-o", path, "zionex.yaml")
    assert (status, out.splitlines()[-1]) == (2, f"hwspec: error[E114]: cannot write {path}: {reason}")


# ---------------------------------------------------------------- hwspec import / diff inputs and output


@pytest.mark.parametrize("path, reason", [
    (LONG, "file name too long"),
    ("loop.yaml", "too many levels of symbolic links"),
    ("dir.yaml", "is a directory"),
    ("file/x.xml", "not a directory"),
])
def test_live_input_the_os_refuses_is_an_i100_not_a_traceback(here, capsys, path, reason):
    i100 = f"{path}:0:0: error[I100 input-unreadable]: cannot read: {reason}\n"
    assert run(capsys, "import", path) == (2, i100 + "hwspec: nothing written: the inputs cannot be used\n")
    assert run(capsys, "diff", "zionex.yaml", path) == (2, i100 + "hwspec: the inputs cannot be used: nothing compared\n")


@pytest.mark.parametrize("path, reason", [(LONG, "file name too long"), ("dir.yaml", "is a directory")])
def test_import_output_the_os_refuses_is_one_e114_line_exit_2(here, capsys, path, reason):
    status, out = run(capsys, "import", str(LIVE / "zionex.nccl.xml"), "-o", path)
    assert (status, out.splitlines()[-1]) == (2, f"hwspec: error[E114]: cannot write {path}: {reason}")
