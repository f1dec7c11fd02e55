"""Which network interfaces NCCL's socket transport runs on when nothing tells it which.

NCCL's socket net (`src/transport/net_socket.cc`, `ncclNetSocketInit`) takes the interfaces
`ncclFindInterfaces` (`src/misc/socket.cc`) returns. With `NCCL_SOCKET_IFNAME` unset (a value of
one character or none counts as unset) and no subnet hint from `NCCL_COMM_ID`, it tries, in
order, and keeps the first step that finds any:

1. interfaces named `ib*` (IPoIB);
2. every other interface but `docker*`, `lo*` and `virbr*` (`"^docker,lo,virbr"`; NCCL 2.26.2,
   socket.cc at f44ac759, and earlier leave out `docker*` and `lo*` only);
3. `docker*`, then `lo*`, then `virbr*`.

Names match by prefix (`matchIfList` without `=`), in the order the kernel lists the interfaces
(`getifaddrs`), at most `MAX_IFS` of them. Read at NVIDIA/nccl 081eafaf (socket.cc
`ncclFindInterfaces`, `ncclOsFindInterfaces("^docker,lo,virbr", ...)`) and f44ac759 (2.26.2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

MAX_IFS = 16
"""The most interfaces NCCL's socket transport takes (`MAX_IFS`, socket.h)."""
DEFAULT_EXCLUDED = ("docker", "lo", "virbr")
"""Prefixes of the interfaces NCCL's default selection leaves out while it finds any other."""

_STEPS: tuple[Callable[[str], bool], ...] = (
    lambda name: name.startswith("ib"),
    lambda name: not name.startswith(DEFAULT_EXCLUDED),
    lambda name: name.startswith("docker"),
    lambda name: name.startswith("lo"),
    lambda name: name.startswith("virbr"),
)


def default_socket_interfaces(names: Iterable[str]) -> list[str]:
    """The interfaces of `names` (in the kernel's order) that NCCL's socket transport takes when
    `NCCL_SOCKET_IFNAME` is unset and `NCCL_COMM_ID` gives no subnet: the first selection step
    that finds any, at most `MAX_IFS`. Empty when `names` is."""
    listed = list(dict.fromkeys(names))
    for step in _STEPS:
        chosen = [name for name in listed if step(name)]
        if chosen:
            return chosen[:MAX_IFS]
    return []
