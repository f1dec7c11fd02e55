"""This machine, read directly (`--live`, `--sysfs-root`), and saved for replay (`hwspec capture`).

    read_live(root)       sysfs/procfs under `root` (live/sysfs.py) + NVML's answers: asked of
                          the driver when `root` is `/`, else replayed from `root/nvml.json`
    capture(root, out)    reads as `read_live` does and saves into `out` exactly the files,
                          directories and links it read, and NVML's answers as `nvml.json`;
                          `hwspec diff SPEC --sysfs-root OUT` then sees what `--live` saw

A capture is bounded (`MAX_CAPTURE_FILES`, `MAX_CAPTURE_BYTES`; each file by the reader's own
limit), holds only links the reader resolved inside the root (a link it refused, even where the
refusal only leaves a fact unknown, is not recorded: `Tree`), so none leads out of it, and is
written whole or not at all: into a temporary sibling of `out` whose lock the capture holds
while it writes, renamed at the end (a later capture removes a sibling only once it can take
its lock: its writer is gone).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hwspec.diagnostics import Code, Location, Severity
from hwspec.live import nvml
from hwspec.live.observed import Machine
from hwspec.live.sysfs import Tree, TreeError, read_sysfs

MAX_CAPTURE_FILES = 50_000
"""More files than --live reads on a node with 8 GPUs, 8 NICs and 2,000 SR-IOV functions."""
MAX_CAPTURE_BYTES = 64 * 1024 * 1024
"""A capture is some hundred kilobytes; cpuinfo of the largest nodes a few megabytes."""


@dataclass
class LiveRead:
    """What `read_live` read: the machine, the tree (with what it recorded) and NVML's answers."""

    machine: Machine
    tree: Tree
    nvml: dict[str, Any] | None
    notes: list[str]
    """What NVML could not be asked or did not answer (the machine has NVIDIA GPUs), each
    left out of the comparison."""


def is_live_root(root: Path) -> bool:
    return root.resolve() == Path("/")


def read_live(root: Path, record: bool = False) -> LiveRead:
    """The machine under `root` (see the module docstring); problems are in `.machine.problems`.
    Whether `record`ed for a capture or not, the tree is read within what a capture holds
    (MAX_CAPTURE_FILES), and one past it is refused from its listings, before its functions'
    files are read: a tree `capture` refuses, `diff` and `import` refuse as early."""
    tree = Tree(root, record=record, max_files=MAX_CAPTURE_FILES)  # read within what a capture holds, recorded or not
    answers: dict[str, Any] | None = None
    notes: list[str] = []
    try:
        machine = read_sysfs(root, tree)
        if any(gpu.vendor == "0x10de" for gpu in machine.gpus.values()):
            if is_live_root(root):
                answers, notes = nvml.query()
                if answers is not None:
                    notes += nvml.apply(answers, "NVML", machine)
            else:
                notes = _replay(tree, machine)
    finally:
        tree.close()
    return LiveRead(machine, tree, answers, notes)


def _replay(tree: Tree, machine: Machine) -> list[str]:
    """NVML's answers saved in the tree (`nvml.json`), folded into `machine`; the notes."""
    try:
        text = tree.read(nvml.NVML_FILE)
    except TreeError as exc:
        machine.problem(exc.where, Severity.ERROR, Code.INPUT_SYNTAX, exc.message)
        return []
    if text is None:
        return [f"{tree.where(nvml.NVML_FILE).file} is absent: the capture has no NVML answers, NVLink state not compared"]
    return nvml.parse(text.encode("utf-8"), tree.where(nvml.NVML_FILE).file, machine)


def capture(root: Path, out: Path) -> LiveRead:
    """Read the machine under `root` and save what was read into `out` (a new directory).
    Problems (an unusable tree, a capture over its bounds, `out` unwritable) are in
    `.machine.problems`; nothing is left at `out` when there are errors."""
    read = read_live(root, record=True)
    machine, tree = read.machine, read.tree
    if any(d.severity == Severity.ERROR for d in machine.problems):
        return read
    where = Location(str(out), 1)
    total = sum(map(len, tree.files.values()))
    if len(tree.files) > MAX_CAPTURE_FILES or total > MAX_CAPTURE_BYTES:
        machine.problem(where, Severity.ERROR, Code.INPUT_UNREADABLE, f"{len(tree.files)} files, {total} bytes: more than a capture holds "
                        f"({MAX_CAPTURE_FILES} files, {MAX_CAPTURE_BYTES // (1024 * 1024)} MiB)")
        return read
    from hwspec.diagnostics import os_reason

    parent = out.absolute().parent
    try:
        name_max = os.pathconf(parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    longest = len(os.fsencode(_staging_prefix(out))) + _STAGING_SUFFIX
    if longest > name_max:
        extra = longest - len(os.fsencode(out.name))
        machine.problem(where, Severity.ERROR, Code.INPUT_UNREADABLE, f"the name is {len(os.fsencode(out.name))} bytes, and the capture is "
                        f"staged beside it under a name {extra} bytes longer: its file system takes names of at most "
                        f"{name_max} bytes: give a name of at most {name_max - extra}")
        return read
    try:
        if out.exists() or out.is_symlink():
            machine.problem(where, Severity.ERROR, Code.INPUT_UNREADABLE, "already exists: give a new directory")
            return read
        _remove_leftovers(out)
        _write(tree, read.nvml, out)
    except OSError as exc:
        machine.problem(where, Severity.ERROR, Code.INPUT_UNREADABLE, f"cannot write: {os_reason(exc)}")
    return read


_STAGING_SUFFIX = 8
"""The random characters `tempfile.mkdtemp` adds to a staging directory's prefix."""


def _staging_prefix(out: Path, pid: int | None = None) -> str:
    """The name a capture into `out` is staged under, before mkdtemp's random suffix: hidden,
    beside `out`, naming the process that writes it (for a person looking at a leftover: whether
    it is stale is its lock's to say, `_remove_leftovers`)."""
    return f".{out.name}.capture-{os.getpid() if pid is None else pid}."


def _remove_leftovers(out: Path) -> None:
    """Remove the staging directories of earlier captures into `out` whose writer is gone
    (killed with SIGKILL before it could clean up): only real directories this user owns, named
    as `_staging_prefix` names them, and only while this process holds their lock, which a
    running capture holds on its own (`_locked_staging`) and the kernel lets go of when its
    process ends, whatever PID namespace it ran in (a process id says nothing across them).
    A directory whose lock cannot be asked (a file system without locks) is left."""
    parent = out.absolute().parent
    pattern = re.compile(re.escape(f".{out.name}.capture-") + rf"(\d{{1,10}})\.[A-Za-z0-9_]{{{_STAGING_SUFFIX}}}")
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        if pattern.fullmatch(entry.name) is None or not entry.is_dir(follow_symlinks=False) \
                or entry.stat(follow_symlinks=False).st_uid != os.getuid():
            continue
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by a running capture (EWOULDBLOCK), or no locks here: left
            os.close(fd)
            continue
        try:
            if os.path.samestat(os.fstat(fd), os.stat(entry.path, follow_symlinks=False)):
                shutil.rmtree(entry.path, ignore_errors=True)  # removed while locked: no writer can take it meanwhile
        except OSError:
            pass
        finally:
            os.close(fd)


def _locked_staging(out: Path) -> tuple[Path, int]:
    """A new staging directory beside `out` and a handle of it holding its lock (released when
    the handle is closed or the process ends). A directory removed by another capture's clean-up
    before it was locked (it saw it unlocked) is made again."""
    parent = out.absolute().parent
    while True:
        staging = Path(tempfile.mkdtemp(prefix=_staging_prefix(out), dir=parent))
        fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.path.samestat(os.fstat(fd), os.stat(staging, follow_symlinks=False)):
                return staging, fd
        except FileNotFoundError:
            pass
        except OSError:
            return staging, fd  # no locks on this file system: `_remove_leftovers` leaves such directories
        os.close(fd)


def _write(tree: Tree, answers: dict[str, Any] | None, out: Path) -> None:
    staging, fd = _locked_staging(out)
    try:
        for rel in sorted(tree.dirs):
            (staging / rel).mkdir(parents=True, exist_ok=True)
        for rel, target in sorted(tree.links.items()):
            link = staging / rel
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(_inside(rel, target), link)
        for rel, data in sorted(tree.files.items()):
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        if answers is not None:
            (staging / nvml.NVML_FILE).write_text(nvml.dump(answers), encoding="utf-8")
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        os.close(fd)


def _inside(rel: str, target: str) -> str:
    """A link's target as the capture holds it: relative, so that it stays inside the capture
    (an absolute target is the root's, as the reader takes it)."""
    if not target.startswith("/"):
        return target
    return os.path.relpath(target.lstrip("/") or ".", os.path.dirname(rel) or ".")
