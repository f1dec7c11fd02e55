"""Slurm hostlist expressions: `zionex[00-15]` for a run of numbered hosts.

`compress` keeps the order of first appearance of each prefix/suffix/width family, merges
consecutive numbers into ranges and preserves zero padding, as Slurm's own hostlist code
prints them. `expand` is its inverse (used by tests and by people checking output).
"""

from __future__ import annotations

import functools
import re
from typing import Iterable

_NUMBERED = re.compile(r"^(?P<prefix>.*?)(?P<number>\d+)(?P<suffix>[^\d]*)$")


@functools.lru_cache(maxsize=1 << 17)
def _split(host: str) -> tuple[str, str, str] | None:
    """`"zx0042b"` -> `("zx", "0042", "b")`: the last run of digits and what surrounds it;
    None without digits. Cached: a cluster's hosts are compressed once per switch and block."""
    match = _NUMBERED.match(host)
    return match.groups() if match else None  # type: ignore[return-value]


def _has_padding(item: tuple[str, tuple[str, str, str] | None]) -> bool:
    split = item[1]
    return split is not None and len(split[1]) > 1 and split[1].startswith("0")


def compress(hosts: Iterable[str]) -> str:
    """`["n01", "n02", "n03", "x"]` -> `"n[01-03],x"`. Duplicates are kept once.

    A number with leading zeros fixes its family's width (`n09` and `n10` are both width 2);
    numbers of a family without padding are printed as they are (`n[9-10]`)."""
    return _compress(tuple(hosts))


@functools.lru_cache(maxsize=4096)
def _compress(hosts: tuple[str, ...]) -> str:
    """`compress`, cached: the Slurm and scheduler files list the same hosts (all of them, each
    pod on every rail) several times."""
    unique = list(dict.fromkeys(hosts))
    parsed = [(host, _split(host)) for host in unique]
    padded = {(prefix, suffix, len(digits)) for _, (prefix, digits, suffix) in filter(_has_padding, parsed)}
    families: dict[tuple[str, str, int], list[int]] = {}
    order: list[tuple[str, str, int] | str] = []
    for host, split in parsed:
        if split is None:
            order.append(host)
            continue
        prefix, digits, suffix = split
        key = (prefix, suffix, len(digits))
        if key not in padded:
            key = (prefix, suffix, 0)
        if key not in families:
            families[key] = []
            order.append(key)
        families[key].append(int(digits))
    parts = []
    for item in order:
        if isinstance(item, str):
            parts.append(item)
            continue
        prefix, suffix, width = item
        numbers = sorted(set(families[item]))
        if len(numbers) == 1:
            parts.append(f"{prefix}{numbers[0]:0{width}d}{suffix}")
        else:
            parts.append(f"{prefix}[{_ranges(numbers, width)}]{suffix}")
    return ",".join(parts)


def _ranges(numbers: list[int], width: int) -> str:
    out = []
    start = previous = numbers[0]
    for number in numbers[1:] + [None]:  # type: ignore[list-item]
        if number is not None and number == previous + 1:
            previous = number
            continue
        out.append(f"{start:0{width}d}" if start == previous else f"{start:0{width}d}-{previous:0{width}d}")
        if number is not None:
            start = previous = number
    return ",".join(out)


def expand(expression: str) -> list[str]:
    """`"n[01-03],x"` -> `["n01", "n02", "n03", "x"]`."""
    hosts: list[str] = []
    for part in re.findall(r"[^,\[]*(?:\[[^\]]*\])?[^,\[]*", expression):
        if not part:
            continue
        match = re.fullmatch(r"(?P<prefix>[^\[]*)\[(?P<body>[^\]]*)\](?P<suffix>.*)", part)
        if match is None:
            hosts.append(part)
            continue
        for chunk in match.group("body").split(","):
            lo, _, hi = chunk.partition("-")
            width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
            for number in range(int(lo), int(hi or lo) + 1):
                hosts.append(f"{match.group('prefix')}{number:0{width}d}{match.group('suffix')}")
    return hosts
