"""Atomic file writes: a reader sees the old file or the new one, never a part; a write killed
half-way leaves a temporary file that the next write of the same path removes.

A leaf helper: the generators' writer (`hwspec.generate.writer`), `schema -o`, `import -o` and
the plots (`hwspec.perf.plot`, `hwspec.acceptance.plot`) write through it.

The temporary file of `DIR/NAME` is `DIR/.NAME.hwspec-tmp.XXXXXXXX` (eight random characters),
created exclusively and locked (`flock`) by its writer until it is renamed to `DIR/NAME` or
removed. A later write of `DIR/NAME` removes the ones it can prove an earlier write left: named
so, a regular file (never a link or a directory), owned by this user, and not locked (a kernel
lock goes with its process however that process ends, in any PID namespace, so a file being
written is never taken for a leftover). Nothing else is removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
import tempfile
from pathlib import Path

TEMP_MARK = ".hwspec-tmp."
_RANDOM = re.compile(r"[a-z0-9_]{8}")
"""What `tempfile` puts after the prefix."""


def temp_prefix(path: Path) -> str:
    """The name of `path`'s temporary files up to their random part: `.NAME.hwspec-tmp.`."""
    return f".{path.name}{TEMP_MARK}"


def write_atomic_bytes(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `data` to `path` with `mode` (exactly, whatever the umask) via a locked temporary
    file beside it, fsync and rename, so that a reader sees the old file or the new one, never a
    part. A symlink at `path` is replaced by the file, not followed. Leftovers of earlier writes
    of `path` killed half-way are removed first (module docstring). An OSError (which may name
    the temporary file) is the caller's to report, naming `path` (`hwspec.cli.common.cannot_write`)."""
    with contextlib.suppress(FileExistsError):  # a file in the way: mkstemp says "not a directory"
        path.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=temp_prefix(path))
    try:
        _lock(fd)  # a write of the same path in the moment between these two calls may take it for a
        # leftover and remove it: then the rename below fails (an OSError), and no half file is put in place
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(data)
        os.fchmod(fd, mode)
        os.fsync(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    finally:
        os.close(fd)  # the lock goes only now: the file is in place or gone


def remove_leftovers(path: Path) -> list[Path]:
    """Remove the temporary files of `path` whose writers are gone (module docstring); the
    paths removed."""
    prefix = temp_prefix(path)
    try:
        with os.scandir(path.parent) as entries:
            names = sorted(e.name for e in entries if e.name.startswith(prefix) and _RANDOM.fullmatch(e.name[len(prefix):]))
    except OSError:
        return []
    return [path.parent / name for name in names if _abandoned(path.parent / name)]


def _abandoned(path: Path) -> bool:
    """Remove `path` if it is a regular file of this user that no process holds locked; whether
    it did. A FIFO or device is never opened, a link never followed."""
    try:
        seen = os.lstat(path)
        if not stat.S_ISREG(seen.st_mode) or seen.st_uid != os.geteuid():
            return False
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (seen.st_dev, seen.st_ino):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # its writer holds it (or the file system cannot tell: leave it)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # under the lock: no writer can be using it
        return True
    finally:
        os.close(fd)


def _lock(fd: int) -> None:
    """Lock a new temporary file for as long as it is open. Where the file system has no locks
    the write goes on unlocked: a later write cannot tell it is alive, and leaves it."""
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
