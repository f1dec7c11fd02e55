"""Atomic file writes: a reader sees the old file or the new one, never a part.

A leaf helper: the generators' writer (`hwspec.generate.writer`) and the estimate plot
(`hwspec.perf.plot`) both write through it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic_bytes(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `data` to `path` via a temp file in its directory, fsync and rename, so that a
    reader sees the old file or the new one, never a part. A symlink at `path` is replaced by
    the file, not followed."""
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
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
