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


def _split(host: str) -> tuple[str, str, str, int] | None:
    """`"zx0042b"` -> `("zx", "0042", "b", 42)`: the last run of digits, what surrounds it, and
    its value; None without digits."""
    match = _NUMBERED.match(host)
    if match is None:
        return None
    prefix, digits, suffix = match.groups()
    return prefix, digits, suffix, int(digits)


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
    splits = list(map(_split, unique))
    padded = {(prefix, suffix, len(digits)) for prefix, digits, suffix, _ in filter(None, splits)
              if len(digits) > 1 and digits[0] == "0"}
    families: dict[tuple[str, str, int], list[int]] = {}
    order: list[tuple[str, str, int] | str] = []
    for host, split in zip(unique, splits):
        if split is None:
            order.append(host)
            continue
        prefix, digits, suffix, number = split
        key = (prefix, suffix, len(digits))
        if key not in padded:
            key = (prefix, suffix, 0)
        numbers = families.get(key)
        if numbers is None:
            families[key] = numbers = []
            order.append(key)
        numbers.append(number)
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
