"""Folding runs of regular list entries into `repeat` blocks, as a person would write them.

`fold(entries, var)` returns the list with every run of three or more consecutive entries
that differ only in values following the index of the run folded into one
`{repeat: {var: 0..n-1}, ...}` item. A value follows the index when it is an integer (or a
number inside a string: `gpu3`, `mlx5_3`, the hex fields of a bus id) that is affine in the
index, or affine in `index // k` and `index % k` (two GPUs per switch). Everything else must
be equal across the run. The caller checks the folded document by expanding it again.
"""

from __future__ import annotations

import re
from typing import Any

BUSID = re.compile(r"([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])")
_DECIMAL = re.compile(r"(0|[1-9][0-9]*)")
MIN_RUN = 3

Entry = dict[str, Any]
"""One mapping of a draft as `hwspec.live.draft`'s writers build it (a spec entry, a section, an
`override:`): keys in writing order, values what YAML holds (text, numbers, lists, mappings)."""
KeyPath = tuple[str, ...]
"""Keys from an entry down to one of its values."""


def _flatten(entry: object, path: KeyPath = ()) -> dict[KeyPath, object] | None:
    """Every value of `entry` by its key path (a mapping as ("dict", its keys)); None when it holds a list."""
    if isinstance(entry, dict):
        out: dict[KeyPath, object] = {path: ("dict", tuple(entry))}
        for key, value in entry.items():
            inner = _flatten(value, path + (key,))
            if inner is None:
                return None
            out.update(inner)
        return out
    if isinstance(entry, list):
        return None  # lists inside entries stay literal: not folded
    return {path: entry}


def _int_expression(values: list[int], var: str, hexa: bool) -> str | None:
    """An expression of `var` giving values[i] for every i, or None."""
    n = len(values)

    def lit(x: int) -> str:
        return f"0x{x:02x}" if hexa and x >= 10 else str(x)

    def terms(parts: list[tuple[int, str]], constant: int) -> str:
        pieces = [(c, t if c in (1, -1) else f"{t}*{lit(abs(c))}") for c, t in parts if c]
        if pieces and pieces[0][0] < 0 and constant > 0:  # 7-g reads better than -g+7
            text = lit(constant)
            constant = 0
        else:
            text = ""
        for coefficient, piece in pieces:
            text += ("-" if coefficient < 0 else "+" if text else "") + piece
        if constant or not text:
            text += ("+" if constant > 0 and text else "-" if constant < 0 and text else "") + lit(abs(constant) if text else constant)
        return text

    a = values[1] - values[0]
    if all(values[i] == values[0] + a * i for i in range(n)):
        return terms([(a, var)], values[0])
    for k in range(2, n):
        if n % k:
            continue
        big, small = values[k] - values[0], values[1] - values[0]
        if all(values[i] == values[0] + (i // k) * big + (i % k) * small for i in range(n)):
            return terms([(big, f"{var}//{k}"), (small, f"{var}%{k}")], values[0])
    return None


def _string_pattern(values: list[str], var: str) -> str | None:
    """A `${...}` pattern giving values[i], or None."""
    matches = [BUSID.fullmatch(v) for v in values]
    if all(matches):
        fields = [m.groups() for m in matches if m]
        out: list[str] = []
        for position, width in enumerate((4, 2, 2, 1)):
            column = [int(f[position], 16) for f in fields]
            if len(set(column)) == 1:
                out.append(fields[0][position])
                continue
            expr = _int_expression(column, var, hexa=True)
            if expr is None or min(column) < 0:
                return None
            out.append(f"${{{expr}:0{width}x}}")
        return f"{out[0]}:{out[1]}:{out[2]}.{out[3]}"
    pieces = [_DECIMAL.split(v) for v in values]
    if len({len(p) for p in pieces}) != 1:
        return None
    out = []
    for position in range(len(pieces[0])):
        texts = [p[position] for p in pieces]
        if position % 2 == 0 or len(set(texts)) == 1:
            if len(set(texts)) != 1 or "$" in texts[0]:
                return None
            out.append(texts[0])
            continue
        expr = _int_expression([int(c) for c in texts], var, hexa=False)
        if expr is None:
            return None
        out.append(f"${{{expr}}}")
    return "".join(out)


def _template(run: list[Entry], var: str) -> Entry | None:
    """The repeat body for `run`, or None when the run is not regular."""
    maybe_flats = [_flatten(e) for e in run]
    flats = [f for f in maybe_flats if f is not None]
    if len(flats) != len(maybe_flats) or len({tuple(f) for f in flats}) != 1:
        return None
    patterns: dict[KeyPath, object] = {}
    varied = False
    for path in flats[0]:
        column = [f[path] for f in flats]
        if all(c == column[0] for c in column):
            patterns[path] = column[0]
            continue
        varied = True
        ints = [c for c in column if type(c) is int]  # not bool
        texts = [c for c in column if isinstance(c, str)]
        if len(ints) == len(column):
            expr = _int_expression(ints, var, hexa=False)
            pattern = None if expr is None else f"${{{expr}}}"
        elif len(texts) == len(column):
            pattern = _string_pattern(texts, var)
        else:
            pattern = None
        if pattern is None:
            return None
        patterns[path] = pattern
    if not varied:
        return None  # identical entries are not folded: they are a mistake to show, not hide

    def build(path: KeyPath) -> object:
        value = patterns[path]
        if isinstance(value, tuple) and value and value[0] == "dict":
            return {key: build(path + (key,)) for key in value[1]}
        return value

    return {key: build((key,)) for key in run[0]}


WINDOW = 8
"""A run is extended while a longer one fits within this many more entries (block patterns
need up to k entries to show themselves): linear work on irregular lists."""


def fold(entries: list[Entry], var: str = "i") -> list[Entry]:
    """`entries` with regular runs folded into repeat blocks (the longest run from each
    position, left to right)."""
    out: list[Entry] = []
    start = 0
    while start < len(entries):
        best: tuple[Entry, int] | None = None
        end, misses = start + MIN_RUN, 0
        while end <= len(entries) and misses < WINDOW:
            body = _template(entries[start:end], var)
            if body is not None:
                best, misses = (body, end), 0
            else:
                misses += 1
            end += 1
        if best is None:
            out.append(entries[start])
            start += 1
        else:
            out.append({"repeat": {var: f"0..{best[1] - start - 1}"}, **best[0]})
            start = best[1]
    return out
