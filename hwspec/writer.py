"""Writing files atomically: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path, PurePosixPath


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write `text` (UTF-8, newlines as given) to `path` via a temp file and rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def safe_join(root: Path, relative: str) -> Path:
    """`root / relative`, refusing absolute paths, `..`, and anything that escapes `root`."""
    parts = PurePosixPath(relative)
    if parts.is_absolute() or relative.startswith("\\") or any(p in ("..", "") for p in parts.parts) or "\\" in relative:
        raise ValueError(f"refusing output path {relative!r}: it must stay inside {root}")
    target = (root / Path(*parts.parts)).resolve()
    if not target.is_relative_to(root.resolve()):
        raise ValueError(f"refusing output path {relative!r}: it escapes {root}")
    return target


def write_atomic_bytes(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `data` to `path` via a temp file and rename (binary files: PNG, SVG bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
