"""What `hwspec diff`'s health-check outputs (`--format json|prometheus`) add to its findings:
the node's name and the spec device each finding is about."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING

from hwspec.diagnostics import Diagnostic

if TYPE_CHECKING:
    from hwspec.model.node import Platform


def node_name(given: str | None = None) -> str:
    """`given` (`--node NAME`), else this machine's host name in short form (as `hostname -s`)."""
    return given if given else socket.gethostname().split(".", 1)[0]


def device_of(diagnostic: Diagnostic, device_ids: Iterable[str]) -> str | None:
    """The spec device a finding is about: the id among `device_ids` that its message names
    first (a longer id wins at the same place: `gpu10` over `gpu1`), or None when it names none
    (`the machine has a GPU the spec does not describe`). Every diff message names the spec's
    device by its id; `-` may join two ids (`gpu0-gpu1`), so it ends an id here."""
    ids = sorted(set(device_ids), key=len, reverse=True)
    if not ids:
        return None
    pattern = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, ids)) + r")(?![A-Za-z0-9_])")
    match = pattern.search(diagnostic.message)
    return match.group(1) if match else None


def with_devices(diagnostics: list[Diagnostic], platform: Platform | None) -> list[tuple[Diagnostic, str | None]]:
    """Each diagnostic with `device_of` it among `platform`'s sockets, bridges, GPUs, NICs and
    SSDs (every device None without a platform)."""
    ids = list(platform.by_id) if platform is not None else []
    return [(d, device_of(d, ids)) for d in diagnostics]
