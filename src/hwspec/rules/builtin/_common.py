"""Helpers shared by the built-in rules: numbers for people, places in the file, the fabric's locations.

Rule modules import them relatively (`from ._common import gbit`); the rule engine makes this
directory a private package, so nothing here is importable as `validators`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol, TypeVar

from hwspec.formats.environment import REVIEWED_TUNABLES, environment_limits
from hwspec.formats.limits import Limit
from hwspec.formats.nccl_env import KNOWN, closest_known
from hwspec.model.node import Bridge, Gpu, Nic, NvlinkConnection, PcieDevice, PcieLink, Platform
from hwspec.rules import At
from hwspec.text import significant


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=_HasId)  # a model item with an `id`


# ---------------------------------------------------------------- numbers


def number(x: float) -> str:
    """Three significant digits, no exponent: 7.8769 -> '7.88', 31.5077 -> '31.5', 1555.0 -> '1555'."""
    return significant(x, 3)


def gbit(rate: float) -> str:
    """A NIC speed (bytes/s per direction) as people quote it: '200 Gb/s'."""
    return f"{number(rate * 8 / 1e9)} Gb/s"


def gbyte(rate: float) -> str:
    """A PCIe, NVLink or memory bandwidth (bytes/s per direction): '7.88 GB/s'."""
    return f"{number(rate / 1e9)} GB/s"


def link_text(link: PcieLink, noun: str = "link") -> str:
    """'Gen3 x8 link (7.88 GB/s)'."""
    return f"{link} {noun} ({gbyte(link.bandwidth)})"


def id_list(ids: Iterable[str]) -> str:
    return ", ".join(ids)


# ---------------------------------------------------------------- places in the file


def in_file_order(platform: Platform, items: Iterable[T]) -> list[T]:
    """`items` in the order they are written (repeat-expanded copies keep their model order)."""
    def key(item: T) -> tuple[int, int]:
        where = platform.locate(item.id)
        return (where.line, where.col)
    return sorted(items, key=key)


def pcie_field(item: Bridge | PcieDevice, name: str) -> tuple[str, ...]:
    """Where a PCIe attachment field is written: a bridge's own `link`, a device's `pcie.link`."""
    return (item.id, name) if isinstance(item, Bridge) else (item.id, "pcie", name)


def physical_field(item: Bridge | PcieDevice) -> tuple[str, ...]:
    """Where the link bandwidth rules judge is written: `link.physical` when the presented link
    differs from the trained one (a VM's virtual bridge), else `link`."""
    where = pcie_field(item, "link")
    return where + ("physical",) if item.physical != item.link else where


# ---------------------------------------------------------------- the topology
# Paths, bridges, NUMA nodes, islands and NIC shares are queries of `ctx.topology`
# (`hwspec.topology.node.Topology`); rules never walk the PCIe tree themselves.


def place(item: Gpu | Nic) -> str:
    """'gpu3 (sw1, NUMA 0)': a device with its PCIe parent and NUMA node."""
    return f"{item.id} ({item.upstream}, NUMA {item.numa_node})"


FABRIC_AT = (None, "nvlink", "topology")
"""Where fabric findings about the whole pattern point."""


def connection_at(connection: NvlinkConnection) -> At:
    """Where a finding about one GPU pair points: its entry in an explicit `nvlink.topology`
    list, or the named pattern it comes from."""
    return FABRIC_AT if connection.entry is None else FABRIC_AT + (connection.entry,)


# ---------------------------------------------------------------- environment


def unknown_nccl_names(ctx: Any) -> Iterator[Any]:
    """Findings for the NCCL_* names of `ctx.platform.environment` outside
    `hwspec.formats.nccl_env.KNOWN` (a name the policy refuses is reported by the policy rule only)."""
    for name in ctx.platform.environment:
        if name.startswith("NCCL_") and name not in KNOWN and ctx.policy.refusal(name) is None:
            guess = closest_known(name)
            yield ctx.finding(f"environment: NCCL does not read {name}",
                              at=(None, "environment", name),
                              hint=(f"did you mean {guess}? " if guess else "") + "a variable of a newer NCCL or a "
                                   "plugin is fine: change this rule under 'rules:' with the reason")


def limit_findings(ctx: Any, limits: Iterable[Limit]) -> Iterator[Any]:
    """Findings for what a generator cannot write (`hwspec.formats.limits.Limit`), except a
    limit another rule already reports (`Limit.reported_by`), which that rule reports."""
    for limit in limits:
        if not limit.reported_by:
            yield ctx.finding(limit.message, at=limit.at, hint=limit.hint)


def refused_names(ctx: Any) -> Iterator[Any]:
    """Findings for the `environment:` names of `ctx.platform` that the run's policy refuses."""
    return limit_findings(ctx, environment_limits(ctx.platform, ctx.policy))


POLICY_DOC = f"""

    The reviewed tunables outside NCCL_* and RCCL_*: {", ".join(sorted(REVIEWED_TUNABLES))}."""
"""What the policy rules' docstrings end with (`hwspec explain` prints it): the reviewed list."""
