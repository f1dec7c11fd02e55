"""Writing generated files: atomic per file, and all-or-nothing per platform directory.

`write_atomic` writes one file through a temp file and a rename: a reader sees the old file or
the new one. `write_tree` writes a whole output directory (`<out>/<platform>/...`) so that a kill
at any moment leaves either the old set of files or the new one, never a mix:

1. the whole plan is checked before anything is written (every path stays inside the output
   directory, every text is valid UTF-8), so a refused path never leaves half a plan behind;
2. the output directory is locked (`flock` on the directory itself, so no lock file is left)
   for the whole run, so two runs into one directory take turns instead of sweeping each
   other's files;
3. each platform's new set is written into a fresh hidden staging directory beside the old
   one, every file of it a new file of the user running hwspec with the mode hwspec sets
   (`generated_mode`: never an old file's inode, mode or owner kept), then exchanged with the
   old directory in one `renameat2(RENAME_EXCHANGE)` (Linux; elsewhere two renames, and a run
   that finds the old set parked after a kill restores it first); the old set is then removed.
   A set is left as it is only when every file holds the planned bytes, has hwspec's mode and
   is owned by the user running it (`is_fresh`);
4. symlinks are never followed below the output directory: an existing file or directory that
   is a symlink is not read and is replaced by the new regular file or directory (the link
   itself goes, never the file it points to);
5. clean-up removes only what a run made: each hidden staging or parked directory is recorded
   in the output directory's journal (`JOURNAL`) before it is made, and `recover` (at the start
   of a run, for a run killed before, and at its end) removes or puts back exactly the
   directories the journal names, then the journal. No other entry, however it is named, is
   touched.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import secrets
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from hwspec.atomic import write_atomic_bytes

STAGING = ".hwspec-new."
PARKED = ".hwspec-old."
"""Markers of the hidden directories of an unfinished write: `.<platform>.hwspec-new.XXXXXXXX`
(a new set being written) and `.<platform>.hwspec-old.XXXXXXXX` (an old set being replaced)."""
JOURNAL = ".hwspec-journal"
"""The file in an output directory that names, one a line, the hidden directories a run made
there, each written (and synced) before the directory is made: all that `recover` acts on."""
MAX_JOURNAL_BYTES = 1 << 20
"""A journal is read up to this size: a run records one or two names per platform."""
_RECORDED = re.compile(r"\.(?P<platform>[^./][^/\x00]*?)(?P<marker>\.hwspec-new\.|\.hwspec-old\.)[0-9a-f]{8}")
"""A name the journal may hold: a staging or parked directory's, beside a platform directory."""


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write `text` (UTF-8, newlines as given) to `path` via a temp file and rename. A symlink
    at `path` is replaced by the file, not followed."""
    write_atomic_bytes(path, text.encode("utf-8"), mode)


def check_relative(relative: str, root: Path) -> PurePosixPath:
    """`relative` as a safe path below `root`: not absolute, no `..`, `.` or empty parts, no
    backslash, NUL or line break, and no hidden top-level name (those are the writer's own).
    Raises ValueError naming the path."""
    parts = PurePosixPath(relative)
    if (parts.is_absolute() or "\\" in relative or "\x00" in relative or "\n" in relative or "\r" in relative
            or any(p in ("..", "", ".") for p in relative.split("/"))):
        raise ValueError(f"refusing output path {relative!r}: it must stay inside {root}")
    if parts.parts[0].startswith("."):
        raise ValueError(f"refusing output path {relative!r}: a hidden top-level name in {root}")
    return parts


def safe_join(root: Path, relative: str) -> Path:
    """`root / relative`, refusing absolute paths, `..`, and anything that escapes `root`.
    Symlinks below `root` are not resolved (the writer never follows them)."""
    return Path(root) / Path(*check_relative(relative, Path(root)).parts)


def _open_existing(root: Path, relative: str, directories: set[str] | None = None) -> int | None:
    """A read-only descriptor of the regular file `root/relative`, or None when it is missing,
    is not a regular file, or any directory on the way below `root` is a symlink (never
    followed). `directories` (one set per tree read) remembers the directories already found to
    be real ones, so reading many files of one tree checks each directory once."""
    current = os.fspath(root)
    parts = PurePosixPath(relative).parts
    last = len(parts) - 1
    for index, part in enumerate(parts):
        current = os.path.join(current, part)
        if index < last and directories is not None and current in directories:
            continue
        try:
            info = os.lstat(current)
        except (OSError, ValueError):
            return None
        if (index == last and not stat.S_ISREG(info.st_mode)) or (index < last and not stat.S_ISDIR(info.st_mode)):
            return None
        if index < last and directories is not None:
            directories.add(current)
    try:
        fd = os.open(current, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def read_existing(root: Path, relative: str, directories: set[str] | None = None, limit: int | None = None) -> bytes | None:
    """The bytes of the regular file `root/relative` (see `_open_existing` for when it is
    None), or None too when it is larger than `limit` bytes: a file hwspec did not write may be
    of any size, and is never read whole beyond what the caller can use."""
    fd = _open_existing(root, relative, directories)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as handle:
        if limit is not None and os.fstat(fd).st_size > limit:
            return None
        return handle.read() if limit is None else handle.read(limit + 1)[:limit]


def generated_mode(data: bytes) -> int:
    """The mode of a generated file, set exactly whatever the umask: 0755 for a script (its
    first bytes are `#!`), 0644 for any other file."""
    return 0o755 if data.startswith(b"#!") else 0o644


def matching_file(root: Path, relative: str, data: bytes, directories: set[str] | None = None) -> os.stat_result | None:
    """The status of the regular file `root/relative` when it holds exactly `data` (its size
    first, then its bytes a chunk at a time: an old file of any size is never read whole), else None."""
    fd = _open_existing(root, relative, directories)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if info.st_size != len(data) or not _same_stream(handle, data):
            return None
        return info


def is_fresh(info: os.stat_result, data: bytes) -> bool:
    """Whether a file holding `data` is as `generate` leaves it: its mode exactly
    `generated_mode`, its owner the user running hwspec."""
    return stat.S_IMODE(info.st_mode) == generated_mode(data) and info.st_uid == os.geteuid()


def checkout_accepts(mode: int, data: bytes, umask: int) -> bool:
    """Whether a file of permission bits `mode` holding `data` is up to date for `generate
    --check`: the mode `generate` sets, or the one a checkout under `umask` gives it (git writes
    0666, 0777 for a script, less the umask) when that grants nothing more but group write
    (umask 002: 0664, 0775) and keeps a script executable. A world-writable, setuid, setgid or
    sticky file is never up to date."""
    wanted = generated_mode(data)
    checkout = (0o777 if wanted & 0o100 else 0o666) & ~umask
    return mode == wanted or (mode == checkout and not checkout & ~wanted & ~0o020 and checkout & 0o100 == wanted & 0o100)


def current_umask() -> int:
    """The process's umask (set and put back: there is no call that only reads it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _same_stream(handle: BinaryIO, data: bytes) -> bool:
    offset = 0
    while chunk := handle.read(_CHUNK):
        if data[offset:offset + len(chunk)] != chunk:  # bytes to bytes: memcmp (a memoryview compares byte by byte)
            return False
        offset += len(chunk)
    return offset == len(data)


def existing_same(a: Path, b: Path, relative: str) -> bool:
    """Whether `a/relative` and `b/relative` are regular files with the same bytes (sizes
    first, then a chunk at a time), mode and owner."""
    fa = _open_existing(a, relative)
    if fa is None:
        return _open_close(b, relative) is None
    with os.fdopen(fa, "rb") as first:
        fb = _open_existing(b, relative)
        if fb is None:
            return False
        with os.fdopen(fb, "rb") as second:
            ia, ib = os.fstat(fa), os.fstat(fb)
            if (ia.st_size, ia.st_mode, ia.st_uid) != (ib.st_size, ib.st_mode, ib.st_uid):
                return False
            while chunk := first.read(_CHUNK):
                if second.read(len(chunk)) != chunk:
                    return False
            return not second.read(1)


def _open_close(root: Path, relative: str) -> int | None:
    fd = _open_existing(root, relative)
    if fd is not None:
        os.close(fd)
    return fd


def existing_status(root: Path, relative: str, directories: set[str] | None = None) -> os.stat_result | None:
    """The status of the regular file `root/relative` (as `_open_existing` finds it), or None."""
    fd = _open_existing(root, relative, directories)
    if fd is None:
        return None
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


_CHUNK = 1 << 20
"""How much of an old file is compared at a time."""


def existing_files(root: Path) -> list[str]:
    """Relative paths (with /) of the regular files below `root`, without following symlinks
    (a symlink is listed as a file: it is something in the way)."""
    found: list[str] = []
    if not root.is_dir() or root.is_symlink():
        return found
    for directory, dirs, files in os.walk(root, followlinks=False):
        base = Path(directory).relative_to(root)
        for name in files + [d for d in dirs if (Path(directory) / d).is_symlink()]:
            found.append((base / name).as_posix())
    return sorted(found)


@contextlib.contextmanager
def locked(out_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on `out_dir` (created if missing) for the block. Another hwspec
    writing to the same directory waits (and says so on stderr)."""
    import fcntl

    out_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(out_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            sys.stderr.write(f"hwspec: waiting for another hwspec run writing to {out_dir}\n")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


@functools.cache
def _renameat2() -> Callable[[str, str], bool] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # only writing needs it (`validate` and `generate --check` do not)

    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols: libc is among them
        function = libc.renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2

    def exchange(a: str, b: str) -> bool:
        if function(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
            return True
        code = ctypes.get_errno()
        if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            return False  # the filesystem cannot exchange: fall back to two renames
        raise OSError(code, os.strerror(code), b)

    return exchange




def _exchange(new: Path, target: Path) -> Path | None:
    """Put directory `new` at `target`. Returns where the old `target` now is (to be removed),
    or None when there was none. Atomic with RENAME_EXCHANGE; otherwise the old directory is
    parked first, and `recover` puts it back if a kill comes between the two renames."""
    if not os.path.lexists(target):
        os.rename(new, target)
        return None
    exchange = _renameat2()
    if exchange is not None and exchange(str(new), str(target)):
        return new
    parked = _recorded_name(target.parent, target.name, PARKED)
    os.rename(target, parked)
    os.rename(new, target)
    return parked


def _remove(path: Path) -> None:
    """Remove a file, a symlink (the link only) or a directory tree, without following links."""
    if path.is_symlink() or not path.is_dir():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _recorded_name(out_dir: Path, platform: str, marker: str) -> Path:
    """A new hidden name for a directory of `platform` in `out_dir` (staging or parked, by
    `marker`), recorded in the journal before anything is made at it (call with the lock held)."""
    while True:
        path = out_dir / f".{platform}{marker}{secrets.token_hex(4)}"
        if not os.path.lexists(path):
            break
    fd = os.open(out_dir / JOURNAL, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, path.name.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def _journal(out_dir: Path) -> list[re.Match[str]]:
    """The names `out_dir`'s journal records (each once, in order), of those it may hold; none
    when there is no journal, or it is not a regular file."""
    raw = read_existing(out_dir, JOURNAL, limit=MAX_JOURNAL_BYTES) or b""
    names = dict.fromkeys(raw.decode("utf-8", "replace").split("\n"))
    return [match for name in names if (match := _RECORDED.fullmatch(name))]


def recover(out_dir: Path) -> None:
    """Clean up what runs recorded in `out_dir`'s journal (call with the lock held): a parked
    old set whose platform directory is missing (a run killed between its two renames) is put
    back, the other recorded directories are removed, then the journal. An entry the journal
    does not name, or that is not a directory, is never touched."""
    for recorded in _journal(out_dir):
        entry = out_dir / recorded.group()
        if not (os.path.isdir(entry) and not os.path.islink(entry)):
            continue
        platform = out_dir / recorded["platform"]
        if recorded["marker"] == PARKED and not os.path.lexists(platform):
            os.rename(entry, platform)
        else:
            _remove(entry)
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        os.unlink(out_dir / JOURNAL)


def write_tree(out_dir: Path, plan: dict[str, str], keep: Callable[[str], bool] = lambda _: False,
               extra: Callable[[Path, str], list[str]] | None = None) -> list[Path]:
    """Write `plan` (`{"<platform>/<path>": text}`) under `out_dir`, one platform directory
    at a time, all-or-nothing (see the module docstring). Files of an old set that the plan no
    longer has are dropped unless `keep(relative path)` says so (rendered SVGs); `extra(staging
    directory, platform)` may add files to a platform's new set before it is put in place and
    returns their relative paths. Returns the paths written, changed or removed."""
    encoded: dict[str, bytes] = {}
    groups: dict[str, dict[str, bytes]] = {}
    for relative, text in plan.items():
        parts = check_relative(relative, out_dir)
        if len(parts.parts) < 2:
            raise ValueError(f"refusing output path {relative!r}: files go into a platform directory")
        try:
            encoded[relative] = text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"refusing to write {relative}: it holds {text[exc.start]!r}, which is not valid UTF-8") from None
        groups.setdefault(parts.parts[0], {})["/".join(parts.parts[1:])] = encoded[relative]
    changed: list[Path] = []
    with locked(out_dir):
        recover(out_dir)
        try:
            for platform, files in sorted(groups.items()):
                changed.extend(_write_platform(out_dir, platform, files, keep, extra))
        finally:
            recover(out_dir)  # whatever this run left (an old set rmtree could not remove), and its journal
    return changed


def _write_platform(out_dir: Path, platform: str, files: dict[str, bytes], keep: Callable[[str], bool],
                    extra: Callable[[Path, str], list[str]] | None) -> list[Path]:
    target = out_dir / platform
    intact = target.is_dir() and not target.is_symlink()
    old = existing_files(target) if intact else []
    # old files are compared by size, then a chunk at a time, and never read whole: one hwspec
    # did not write may be of any size (a 2 GiB file made generate hold 2 GiB, --check 10 GiB)
    directories: set[str] = set()
    same = {r for r, data in files.items() if r in old and _fresh(target, r, data, directories)}
    kept = {r: info for r in old if r not in files and keep(r) and (info := existing_status(target, r)) is not None}
    changed = [target / r for r in sorted(files) if r not in same]
    changed += [target / r for r in old if r not in files and r not in kept]
    changed += [target / r for r, info in kept.items() if (stat.S_IMODE(info.st_mode), info.st_uid) != (0o644, os.geteuid())]
    if not changed and extra is None and (intact or not files):
        return []
    staging = _recorded_name(out_dir, platform, STAGING)
    os.mkdir(staging, 0o700)
    try:
        for relative, data in sorted(files.items()):
            _place(staging, relative, data)
        for relative in kept:
            _keep(staging, relative, target)
        added = extra(staging, platform) if extra is not None else []
        if not changed and intact and all(existing_same(target, staging, r) for r in added):
            _remove(staging)
            return []
        os.chmod(staging, 0o755)
        old_set = _exchange(staging, target)
    except BaseException:
        _remove(staging)
        raise
    if old_set is not None:
        _remove(old_set)
    return changed


def _fresh(root: Path, relative: str, data: bytes, directories: set[str]) -> bool:
    """Whether `root/relative` holds `data` as `generate` leaves it (`is_fresh`)."""
    info = matching_file(root, relative, data, directories)
    return info is not None and is_fresh(info, data)


def _keep(root: Path, relative: str, old_set: Path) -> None:
    """Copy an old set's file the plan keeps (a rendered SVG) into the new set: a new file,
    0644, copied a chunk at a time (never the old inode, mode or owner)."""
    fd = _open_existing(old_set, relative)
    if fd is None:
        return
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    with os.fdopen(fd, "rb") as source, _created(path, 0o644) as handle:
        shutil.copyfileobj(source, handle, _CHUNK)


def _place(root: Path, relative: str, data: bytes) -> None:
    """Write one file of a new set into the staging directory: a new file with `generated_mode`."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    with _created(path, generated_mode(data)) as handle:
        handle.write(data)


@contextlib.contextmanager
def _created(path: Path, mode: int) -> Iterator[BinaryIO]:
    """A new file at `path` (never an existing one, never through a link) to write, then
    given `mode` exactly and synced to disk."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as handle:
        yield handle
        handle.flush()
        os.fchmod(fd, mode)
        os.fsync(fd)
