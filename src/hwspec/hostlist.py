"""Slurm hostlist expressions: `zionex[00-15]` for a run of numbered hosts.

`compress` keeps the order of first appearance of each prefix/suffix/width family, merges
consecutive numbers into ranges and preserves zero padding, as Slurm's own hostlist code
prints them. `expand` is its inverse (used by tests and by people checking output), and
`compress_in_order` says whether a list survives the round trip in its own order.

A cluster lists tens of thousands of hosts several times, so the common shape (ASCII names,
each with a number, no hostlist syntax in them) is split into runs of one prefix and suffix by
string methods mapped over the whole list (`_runs`: a few C-level passes, no object per host
but strings); anything else takes the per-host path. Both give the same text
(tests/test_hostlist.py compares them). `HostIndex` keeps the runs of one list (a cluster's
nodes), so that each slice of it is printed without looking at its hosts again.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
import os
import re
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import NamedTuple

_NUMBERED = re.compile(r"^(?P<prefix>.*?)(?P<number>\d+)(?P<suffix>[^\d]*)$")
_HOSTLIST_SYNTAX = re.compile(r"[,\[\]]")
_DIGITS = "0123456789"
_PADDED = re.compile(r"\n0[0-9]")
"""A number with a leading zero, in a text of one number per line."""
_NOT_DIGITS = "".join(chr(code) for code in range(128) if chr(code) not in _DIGITS)

Family = tuple[str, str, int]
"""(prefix, suffix, width): hosts printed as one `prefix[ranges]suffix`; width 0 means unpadded."""


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

    A number with leading zeros fixes its family's width (`n09` and `n10` are both width 2), and
    a longer number without one joins the widest such family narrower than itself, as in
    Slurm's hostlists (`n[098-100,1000]`; `zx[00000-131071]` past 100,000 hosts); numbers of a
    family without padding are printed as they are (`n[9-10]`)."""
    return _compress(tuple(hosts))[0]


def compress_in_order(hosts: Iterable[str]) -> str | None:
    """`compress(hosts)` when `expand` gives `hosts` back exactly, in their order (Slurm pairs
    `NodeName=` and `NodeAddr=` lists by position); None otherwise (duplicates, numbers out
    of order, families interleaved, a name holding `,[]`)."""
    hosts = tuple(hosts)
    expression, in_order = _compress(hosts)
    if in_order is None:  # the per-host path: expand and see (a name with `,[]` never round-trips)
        in_order = not any(map(_HOSTLIST_SYNTAX.search, hosts)) and expand(expression) == list(hosts)
    return expression if in_order else None


@functools.lru_cache(maxsize=64)
def _compress(hosts: tuple[str, ...]) -> tuple[str, bool | None]:
    """(expression, whether it expands to `hosts` in order, or None when not known), cached:
    the Slurm and scheduler files list the same hosts several times. Slices of a cluster's
    node list go through `HostIndex` instead, so a few entries suffice, and a long-lived
    process keeps at most 64 lists."""
    unique = list(dict.fromkeys(hosts))
    grouped = _families_fast(unique)
    if grouped is None:
        return _join(*_families_per_host(unique)), None
    families, order, contiguous, ascending = grouped
    in_order = len(unique) == len(hosts) and contiguous and ascending
    return _join(families, order), in_order


class _Run(NamedTuple):
    """Consecutive hosts `start:stop` of one prefix and suffix, with their numbers in host
    order; `width` is 0 (no number padded), the digit count of the padded ones when the others
    have at least as many digits (`zx00000`...`zx131071`: 5), or -1 (padded numbers of several
    widths, or shorter numbers beside them: the per-host path decides)."""

    start: int
    stop: int
    prefix: str
    suffix: str
    width: int
    numbers: list[int]


def _runs(hosts: list[str]) -> list[_Run] | None:
    """`hosts` split into runs with C-level loops over the hosts and only strings made per
    host; None when a host is not ASCII, has no digits, or holds hostlist syntax (`,[]`) or a
    line break."""
    text = "\n".join(hosts)
    if not text.isascii() or text.count("\n") != len(hosts) - 1 or _HOSTLIST_SYNTAX.search(text):
        return None
    # what all hosts start with: a common prefix of characters, as host names are compared
    prefix = os.path.commonprefix([min(hosts), max(hosts)]).rstrip(_DIGITS)  # noqa: RUF071
    digits = list(map(str.removeprefix, hosts, repeat(prefix)))
    if "".join(digits).isdigit() and all(digits):  # one run, no suffix: a node group's names
        return _numbered_runs([f"{prefix}\n"], [len(hosts)], digits)
    bodies = list(map(str.rstrip, hosts, repeat(_NOT_DIGITS)))  # each host without its suffix
    prefixes = list(map(str.rstrip, bodies, repeat(_DIGITS)))
    if not all(map(operator.ne, bodies, prefixes)):
        return None  # a host without a number stands alone
    digits = list(map(str.removeprefix, bodies, prefixes))
    suffixes = list(map(str.removeprefix, hosts, bodies))
    keys: Iterable[str]
    lengths: Iterable[int]
    if suffixes.count(suffixes[0]) == len(hosts):  # one suffix (addresses: none): runs of one prefix
        keys, lengths = zip(*((f"{key}\n{suffixes[0]}", len(list(run))) for key, run in itertools.groupby(prefixes)))
    else:
        grouped = itertools.groupby(map("{}\n{}".format, prefixes, suffixes))
        keys, lengths = zip(*((key, len(list(run))) for key, run in grouped))
    return _numbered_runs(keys, lengths, digits)


def _numbered_runs(keys: Iterable[str], lengths: Iterable[int], digits: list[str]) -> list[_Run]:
    """Runs of `lengths` hosts each, from every host's digits; each key is the run's prefix and
    suffix joined by a line break (which no host holds)."""
    runs = []
    start = 0
    for key, length in zip(keys, lengths):
        stop = start + length
        run_digits = digits[start:stop]
        numbers = list(map(int, run_digits))
        text = "\n" + "\n".join(run_digits)
        if not _PADDED.search(text):
            width = 0
        else:  # padded: all as wide as the shortest, which are all the padded ones
            shortest = min(map(len, run_digits))
            width = -1 if re.search(f"\n0[0-9]{{{shortest}}}", text) else shortest
        prefix, suffix = key.split("\n")
        runs.append(_Run(start, stop, prefix, suffix, width, numbers))
        start = stop
    return runs


def _families_fast(unique: list[str]) -> tuple[dict[Family, list[int]], list[Family], bool, bool] | None:
    """`_families_per_host` from `_runs`; None where that is None, or when a run's numbers would
    join a padded family of another run (`n10` or `n100` belongs with `n09`: the per-host path
    decides). Also says whether each family's hosts are contiguous and whether its numbers ascend."""
    runs = _runs(unique)
    if runs is None or any(run.width < 0 for run in runs):
        return None
    families: dict[Family, list[int]] = {}
    for run in runs:
        families.setdefault((run.prefix, run.suffix, run.width), []).extend(run.numbers)
    for run in runs:  # a padded family of another run, wider than this run's, that some of its numbers would join
        longest = len(str(max(run.numbers)))
        if any((run.prefix, run.suffix, width) in families for width in range(max(run.width + 1, 2), longest + 1)):
            return None
    ascending = all(all(map(operator.lt, found, itertools.islice(found, 1, None))) for found in families.values())
    return families, list(families), len(runs) == len(families), ascending


class HostIndex:
    """Hostlist expressions of slices of one host list (a cluster's nodes in order), each
    equal to `compress` of the slice: the list is split into runs once, and a slice inside one
    run is printed from its numbers without looking at its hosts again."""

    def __init__(self, hosts: Sequence[str]) -> None:
        self.hosts = tuple(hosts)
        self.runs = _runs(list(self.hosts)) or []
        self._starts = [run.start for run in self.runs]
        self._ascends: dict[int, bool] = {}

    def compress(self, nodes: range) -> str:
        """`compress(hosts[nodes.start:nodes.stop])`."""
        numbers, run = self._numbers(nodes)
        if run is None:
            return compress(self.hosts[nodes.start:nodes.stop]) if nodes.start < nodes.stop else ""
        return _format(run.prefix, sorted(set(numbers)), run.width, run.suffix)

    def compress_in_order(self, nodes: range) -> str | None:
        """`compress_in_order(hosts[nodes.start:nodes.stop])`."""
        numbers, run = self._numbers(nodes)
        if run is None:
            return compress_in_order(self.hosts[nodes.start:nodes.stop])
        if not all(map(operator.lt, numbers, itertools.islice(numbers, 1, None))):
            return None
        return _format(run.prefix, numbers, run.width, run.suffix)

    def compress_spans_in_order(self, spans: Sequence[range]) -> str | None:
        """`compress_in_order` of the hosts of `spans` one after the other (`hosts[span.start:span.stop]`
        for each span)."""
        numbers: list[int] = []
        found: _Run | None = None
        for span in spans:
            part, run = self._numbers(span)
            if run is None or (found is not None and run is not found):
                return compress_in_order([host for span in spans for host in self.hosts[span.start:span.stop]])
            if numbers and part and numbers[-1] >= part[0]:
                return None
            numbers += part
            found = run
        if found is None:
            return compress_in_order(())
        if not self._ascending(found) and not all(map(operator.lt, numbers, itertools.islice(numbers, 1, None))):
            return None
        return _format(found.prefix, numbers, found.width, found.suffix)

    def _ascending(self, run: _Run) -> bool:
        """Whether `run`'s numbers ascend (then so does every slice of them), found once per run."""
        known = self._ascends.get(run.start)
        if known is None:
            known = self._ascends[run.start] = all(map(operator.lt, run.numbers, itertools.islice(run.numbers, 1, None)))
        return known

    def _numbers(self, nodes: range) -> tuple[list[int], _Run | None]:
        """The numbers of hosts `nodes` and their run, when one regular run holds them all."""
        found = bisect.bisect_right(self._starts, nodes.start) - 1
        if nodes.start >= nodes.stop or found < 0:
            return [], None
        run = self.runs[found]
        if run.width < 0 or nodes.stop > run.stop:
            return [], None
        return run.numbers[nodes.start - run.start:nodes.stop - run.start], run


def _families_per_host(unique: list[str]) -> tuple[dict[Family, list[int]], list[Family | str]]:
    """Each host's family by `_split`, one host at a time; hosts without a number stand alone."""
    splits = list(map(_split, unique))
    padded = {(prefix, suffix, len(digits)) for prefix, digits, suffix, _ in filter(None, splits)
              if len(digits) > 1 and digits[0] == "0"}
    widths: dict[tuple[str, str], list[int]] = {}
    for prefix, suffix, width in sorted(padded):
        widths.setdefault((prefix, suffix), []).append(width)
    families: dict[Family, list[int]] = {}
    order: list[Family | str] = []
    for host, split in zip(unique, splits):
        if split is None:
            order.append(host)
            continue
        prefix, digits, suffix, number = split
        key = (prefix, suffix, len(digits))
        if key not in padded:  # the widest padded family narrower than the number, else unpadded
            narrower = [width for width in widths.get((prefix, suffix), ()) if width < len(digits)]
            key = (prefix, suffix, narrower[-1] if narrower else 0)
        numbers = families.get(key)
        if numbers is None:
            families[key] = numbers = []
            order.append(key)
        numbers.append(number)
    return families, order


def _join(families: dict[Family, list[int]], order: Sequence[Family | str]) -> str:
    parts = []
    for item in order:
        if isinstance(item, str):
            parts.append(item)
            continue
        prefix, suffix, width = item
        parts.append(_format(prefix, sorted(set(families[item])), width, suffix))
    return ",".join(parts)


def _format(prefix: str, numbers: list[int], width: int, suffix: str) -> str:
    """One family: `n07` alone, `n[07-09,12]` for more (`numbers` sorted and distinct)."""
    if len(numbers) == 1:
        return f"{prefix}{numbers[0]:0{width}d}{suffix}"
    return f"{prefix}[{_ranges(numbers, width)}]{suffix}"


def _ranges(numbers: list[int], width: int) -> str:
    """`[1, 2, 3, 5]` -> `"1-3,5"`, for sorted distinct numbers."""
    if numbers[-1] - numbers[0] == len(numbers) - 1:  # one run: the usual case, decided at once
        return f"{numbers[0]:0{width}d}-{numbers[-1]:0{width}d}"
    out = []
    start = previous = numbers[0]
    for number in numbers[1:] + [None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        out.append(f"{start:0{width}d}" if start == previous else f"{start:0{width}d}-{previous:0{width}d}")
        if number is not None:
            start = previous = number
    return ",".join(out)


_PART = re.compile(r"[^,\[]*(?:\[[^\]]*\])?[^,\[]*")
_BRACKETED = re.compile(r"(?P<prefix>[^\[]*)\[(?P<body>[^\]]*)\](?P<suffix>.*)")


def expand(expression: str) -> list[str]:
    """`"n[01-03],x"` -> `["n01", "n02", "n03", "x"]`."""
    hosts: list[str] = []
    for part in _PART.findall(expression):
        if not part:
            continue
        match = _BRACKETED.fullmatch(part)
        if match is None:
            hosts.append(part)
            continue
        prefix, body, suffix = match.group("prefix", "body", "suffix")
        for chunk in body.split(","):
            lo, _, hi = chunk.partition("-")
            width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
            hosts.extend(f"{prefix}{number:0{width}d}{suffix}" for number in range(int(lo), int(hi or lo) + 1))
    return hosts
