"""Captures under faults and races (issue 36, class 9): a file is read through the directory
handles its check opened (a directory swapped for a link is refused, never followed), a FIFO or
device node is refused by its type without being opened, an output name past the file system's
limit is a clear error, a killed capture's staging copy is removed by the next one, and a tree
past the 50,000-file limit is refused when its PCI directory is listed, or when its functions'
directories are (before their files are read)."""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hwspec.cli.commands import main
from hwspec.live import capture as capture_module
from hwspec.live.capture import MAX_CAPTURE_FILES, read_live
from hwspec.live.sysfs import Tree

ROOT = Path(__file__).resolve().parent.parent
GOOD = ROOT / "tests" / "data" / "sysfs" / "good"
SPEC = ROOT / "tests" / "data" / "sysfs" / "good-node.yaml"
GPU = "sys/bus/pci/devices/0000:03:00.0"


def good_copy(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(GOOD, tree, symlinks=True)
    return tree


def run(capsys, *args: str | Path) -> tuple[int, str]:
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def _swap_after_check(monkeypatch, tmp_path: Path, function: Path, rel: str, forget_handles: bool = False) -> None:
    """Make `function` (a directory) a link to `tmp_path/outside` (whose `vendor` is 0xdead)
    right after the check of `rel` resolved it, before `rel` is opened; with `forget_handles`,
    the tree's directory handles are closed first (as when more than it keeps are open)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "class").write_text("0x030200\n")
    (outside / "vendor").write_text("0xdead\n")
    resolve = Tree.resolve

    def resolve_then_swap(self: Tree, path: str, final_link: bool = True) -> str:
        resolved = resolve(self, path, final_link)
        if path == rel and not function.is_symlink():
            if forget_handles:
                self.close()
            function.rename(tmp_path / "moved")
            function.symlink_to(outside)
        return resolved

    monkeypatch.setattr(Tree, "resolve", resolve_then_swap)


def test_a_directory_swapped_for_a_link_after_its_check_is_read_through_the_checked_handle(tmp_path, monkeypatch):
    """The race of a capture (2 of 150 runs read a file from outside): the path is checked, then
    a directory on it becomes a link out of the tree before the file is opened. The check
    opened the directory's handle, and the file is read through it: the directory checked."""
    tree = good_copy(tmp_path)
    _swap_after_check(monkeypatch, tmp_path, Path(os.path.realpath(tree / GPU)), f"{GPU}/vendor")
    read = read_live(tree)
    assert [d for d in read.machine.problems if d.severity.label == "error"] == []
    assert read.machine.gpus["0000:03:00.0"].vendor == "0x10de"  # the checked directory's, not 0xdead


def test_a_directory_swapped_for_a_link_before_it_is_opened_again_is_refused(tmp_path, monkeypatch):
    tree = good_copy(tmp_path)
    _swap_after_check(monkeypatch, tmp_path, Path(os.path.realpath(tree / GPU)), f"{GPU}/vendor", forget_handles=True)
    read = read_live(tree)
    assert [(d.file, d.message) for d in read.machine.problems if d.severity.label == "error"] == [
        (f"{tree}/{GPU}/vendor", "changed while it was read (a directory became a link): not a sysfs tree")]
    assert all(gpu.vendor != "0xdead" for gpu in read.machine.gpus.values())


def _blocked_writer(fifo: Path) -> threading.Thread:
    """A thread blocked opening `fifo` for writing: it goes on only when a reader opens it."""
    thread = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)), daemon=True)
    thread.start()
    time.sleep(0.05)
    return thread


def test_a_fifo_attribute_is_refused_without_being_opened(tmp_path, capsys):
    tree = good_copy(tmp_path)
    vendor = Path(os.path.realpath(tree / GPU)) / "vendor"
    vendor.unlink()
    os.mkfifo(vendor)
    writer = _blocked_writer(vendor)
    try:
        status, out = run(capsys, "diff", SPEC, "--sysfs-root", tree)
        assert status == 2
        assert f"{tree}/{GPU}/vendor:1:1: error[I101 input-syntax]: not a regular file: not a sysfs attribute" in out
        assert writer.is_alive()  # never opened: the writer is still blocked
    finally:
        os.close(os.open(vendor, os.O_RDONLY | os.O_NONBLOCK))  # release it
        writer.join(5)


def test_a_device_node_attribute_is_refused_without_being_opened(tmp_path, capsys):
    tree = good_copy(tmp_path)
    vendor = Path(os.path.realpath(tree / GPU)) / "vendor"
    vendor.unlink()
    try:
        os.mknod(vendor, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:
        pytest.skip("making a device node needs CAP_MKNOD")
    status, out = run(capsys, "diff", SPEC, "--sysfs-root", tree)
    assert status == 2
    assert f"{tree}/{GPU}/vendor:1:1: error[I101 input-syntax]: not a regular file: not a sysfs attribute" in out


def test_an_output_name_past_the_file_system_limit_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    name = "x" * 300
    extra = len(f"..capture-{os.getpid()}.") + 8
    status, out = run(capsys, "capture", "--sysfs-root", GOOD, name)
    assert status == 2
    assert out.splitlines() == [
        f"{name}:1:1: error[I100 input-unreadable]: the name is 300 bytes, and the capture is staged beside it under a "
        f"name {extra} bytes longer: its file system takes names of at most 255 bytes: give a name of at most {255 - extra}",
        "hwspec: nothing captured"]
    assert os.listdir(tmp_path) == []


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", ""])
    process.wait()
    return process.pid


def _held(directory: Path) -> int:
    """A handle of `directory` holding its lock, as a running capture holds its staging copy's."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def test_a_killed_captures_staging_copy_is_removed_by_the_next_capture(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dead = capture_module._staging_prefix(Path("cap"), _dead_pid()) + "abc_1234"
    alive = capture_module._staging_prefix(Path("cap"), os.getppid()) + "abcd1234"  # a running capture's
    other = capture_module._staging_prefix(Path("other"), _dead_pid()) + "abcd1234"  # another capture's name
    for name in (dead, alive, other):
        (tmp_path / name / "sys").mkdir(parents=True)
    fd = _held(tmp_path / alive)
    try:
        status, _ = run(capsys, "capture", "--sysfs-root", GOOD, "cap")
    finally:
        os.close(fd)
    assert status == 0
    assert sorted(os.listdir(tmp_path)) == sorted([alive, "cap", other])


def test_a_running_capture_in_another_pid_namespace_keeps_its_staging_copy(tmp_path, capsys, monkeypatch):
    """A capture in a container writes beside this one: its process id names no process here
    (as a dead one's), but it holds its staging copy's lock, and the copy is left to it."""
    monkeypatch.chdir(tmp_path)
    running = capture_module._staging_prefix(Path("cap"), _dead_pid()) + "abcd1234"
    (tmp_path / running / "sys").mkdir(parents=True)
    fd = _held(tmp_path / running)
    try:
        status, _ = run(capsys, "capture", "--sysfs-root", GOOD, "cap")
        assert status == 0
        assert sorted(os.listdir(tmp_path)) == sorted([running, "cap"])
    finally:
        os.close(fd)


def test_a_capture_holds_its_staging_copys_lock_while_it_writes(tmp_path, monkeypatch):
    seen = []
    write_bytes = Path.write_bytes

    def try_lock(self: Path, data: bytes) -> int:
        if not seen:
            staging = next(p for p in tmp_path.iterdir() if p.name.startswith(".cap.capture-"))
            fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                seen.append("free")
            except BlockingIOError:
                seen.append("held")
            finally:
                os.close(fd)
        return write_bytes(self, data)

    monkeypatch.setattr(Path, "write_bytes", try_lock)
    capture_module.capture(GOOD, tmp_path / "cap")
    assert seen == ["held"]


@pytest.mark.slow  # writes 25,000 links
def test_a_tree_past_the_file_limit_is_refused_when_its_pci_directory_is_listed(tmp_path, capsys, monkeypatch):
    """40,000 PCI functions took 15-28 s to read before the capture was refused."""
    tree = good_copy(tmp_path)
    devices = tree / "sys/bus/pci/devices"
    count = MAX_CAPTURE_FILES // 2 + 1 - len(os.listdir(devices))
    for index in range(count):
        os.symlink("../../../devices/none", devices / f"0001:{index // 256 % 256:02x}:{index % 32:02x}.{index % 8}{index}")
    monkeypatch.chdir(tmp_path)
    started = time.process_time()
    status, out = run(capsys, "capture", "--sysfs-root", tree, "cap")
    elapsed = time.process_time() - started
    assert status == 2
    assert (f"tree/sys/bus/pci/devices:1:1: error[I101 input-syntax]: {MAX_CAPTURE_FILES // 2 + 1} entries of 2 files or more each: "
            f"more than the {MAX_CAPTURE_FILES} files a capture holds") in out
    assert elapsed < 5  # refused at the listing (well under a second unloaded), not after reading every function
    assert not (tmp_path / "cap").exists()


def _add_functions(tree: Path, count: int) -> None:
    """`count` NIC functions under a host bridge of their own, each with the six attributes the
    reader reads of every function (as benchmarks/capture_limit.py writes them)."""
    devices, host = tree / "sys/bus/pci/devices", tree / "sys/devices/pci0001:00"
    for index in range(count):
        name = f"0001:00:{index // 8:02x}.{index % 8}"
        (host / name).mkdir(parents=True)
        for attribute, text in (("class", "0x020000"), ("vendor", "0x15b3"), ("device", "0x101b"), ("numa_node", "0"),
                                ("current_link_speed", "16.0 GT/s PCIe"), ("current_link_width", "16")):
            (host / name / attribute).write_text(text + "\n")
        (devices / name).symlink_to(f"../../../devices/pci0001:00/{name}")


def test_a_tree_whose_functions_hold_more_than_the_file_limit_is_refused_before_their_files_are_read(tmp_path, monkeypatch):
    """A tree just under the listing's refusal (2 files a function) whose functions hold more
    files than the limit: counted from one listing of each function's directory, and refused
    before any function's class is read (25,000 such functions read 50,000 files first)."""
    tree = good_copy(tmp_path)
    _add_functions(tree, 40)
    monkeypatch.setattr(capture_module, "MAX_CAPTURE_FILES", 124)  # what the good tree alone keeps
    read = read_live(tree, record=True)
    # before the PCI functions 5 files (NUMA nodes, cpuinfo); the good tree's 12 functions 84
    # (each its link and six attributes); each added one 7: the 6th added makes 131
    assert [(d.file, d.message) for d in read.machine.problems if d.severity.label == "error"] == [
        (f"{tree}/sys/bus/pci/devices", "its first 18 PCI functions hold 131 files and links to read: "
         "more than the 124 files a capture holds")]
    assert not [rel for rel in read.tree.files if rel.endswith("/class")]


def test_a_tree_whose_functions_are_counted_and_fit_the_file_limit_is_captured_whole(tmp_path, capsys, monkeypatch):
    """The count is a floor of what is read: a tree that fits exactly is not refused by it."""
    monkeypatch.setattr(capture_module, "MAX_CAPTURE_FILES", 124)  # 12 functions of up to 16 files: counted
    monkeypatch.chdir(tmp_path)
    status, _ = run(capsys, "capture", "--sysfs-root", GOOD, "cap")
    assert status == 0
    read = read_live(tmp_path / "cap", record=True)
    assert read.tree.kept() == 124


def _links_leaving(capture: Path) -> list[str]:
    """Every link of `capture` that a tool following links (cp -L, tar -h) would leave it by."""
    inside = str(capture.resolve())
    return sorted(str(path.relative_to(capture)) for path in capture.rglob("*")
                  if path.is_symlink() and not os.path.realpath(path).startswith(inside + os.sep))


def test_a_link_whose_target_leaves_the_tree_is_not_saved_in_the_capture(tmp_path, capsys, monkeypatch):
    """A GPU's `driver` link climbing out of the tree: the reader refuses to follow it (the GPU is
    read without a driver), and the capture holds no link it did not resolve inside the tree."""
    tree = good_copy(tmp_path)
    gpu = Path(os.path.realpath(tree / GPU))
    (gpu / "driver").symlink_to("../" * 8 + "etc")  # 7 levels reach the tree's root: one more leaves it
    nic = Path(os.path.realpath(tree / "sys/bus/pci/devices/0000:04:00.0"))
    (nic / "driver").symlink_to("../" * 6 + "bus/pci/drivers/mlx5_core")  # sysfs's own form, inside: kept
    monkeypatch.chdir(tmp_path)
    status, _ = run(capsys, "capture", "--sysfs-root", tree, "cap")
    assert status == 0
    assert _links_leaving(tmp_path / "cap") == []
    assert not (tmp_path / "cap" / os.path.relpath(gpu, tree) / "driver").is_symlink()
    assert (tmp_path / "cap" / os.path.relpath(nic, tree) / "driver").is_symlink()
