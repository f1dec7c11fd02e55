"""JSON from files hwspec did not write (NVML's saved answers, node reports), read within bounds.

`json` converts every number it meets (`int` of a 5,000-digit one raises, shorter ones cost
quadratic time) and recurses once per nesting level (100,000 levels raise RecursionError). So
before a document is decoded, `check` finds the first number longer than `MAX_NUMBER_CHARS`
and the first opening bracket deeper than `MAX_DEPTH`, and says where: the decoder then
never sees them. The scan is linear and runs at C speed (regular expressions over the text,
strings blanked first so that brackets and digits inside them do not count).
"""

from __future__ import annotations

import itertools
import re

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects a reader accepts; hwspec's own documents nest 5 deep."""
MAX_NUMBER_CHARS = 32
"""The longest number (sign, digits, point and exponent) a reader converts: 2**64 has 20 digits."""

_STRING = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)', re.DOTALL)
"""A JSON string; one left open runs to the end of the text (the decoder reports it), so that
the scan never goes back: every character is looked at once."""
_BRACKET = re.compile(r"[\[\]{}]")
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_NUMBER = re.compile(rf"[-+0-9.eE]{{{MAX_NUMBER_CHARS + 1},}}")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class BoundError(ValueError):
    """A document past a bound: `message`, at character `offset` of the text."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message, self.offset = message, offset


def check(text: str, start: int = 0, end: int | None = None) -> None:
    """Raise `BoundError` at the first number longer than `MAX_NUMBER_CHARS` or the first bracket
    nested deeper than `MAX_DEPTH` in `text[start:end]` (outside strings), its offset in `text`;
    return when there is none."""
    part = text[start:end]
    if _first_past_bound(_STRING.sub('""', part)) is None:  # the common case, at C speed
        return
    blanked = _STRING.sub(lambda m: " " * len(m.group()), part)  # offsets kept, to say where
    found = _first_past_bound(blanked)
    assert found is not None
    raise BoundError(found[1], start + found[0])


def _first_past_bound(skeleton: str) -> tuple[int, str] | None:
    """The offset and reason of the first bound `skeleton` (JSON without its strings) passes."""
    number = _NUMBER.search(skeleton)
    depths = list(itertools.accumulate(map(_STEP.__getitem__, _NOT_BRACKET.sub("", skeleton))))
    deep_at = None
    if depths and max(depths) > MAX_DEPTH:
        index = next(i for i, depth in enumerate(depths) if depth > MAX_DEPTH)
        deep_at = next(itertools.islice((m.start() for m in _BRACKET.finditer(skeleton)), index, index + 1))
    if number is not None and (deep_at is None or number.start() < deep_at):
        return number.start(), f"a number of {len(number.group())} characters, more than the {MAX_NUMBER_CHARS} a reader converts"
    if deep_at is not None:
        return deep_at, f"arrays and objects nested deeper than {MAX_DEPTH}"
    return None


_TOKEN = re.compile(_STRING.pattern + r"|[\[\]{}]", re.DOTALL)


def value_end(text: str, start: int) -> int | None:
    """The offset just past the array or object that opens at `text[start]`, found by its
    brackets alone (nothing is converted), or None when none opens there or it never closes.
    Linear in the value's length: how a reader steps over a document past a bound."""
    if text[start:start + 1] not in ("[", "{"):
        return None
    depth = 0
    for match in _TOKEN.finditer(text, start):
        first = match.group()[0]
        if first in "[{":
            depth += 1
        elif first in "]}":
            depth -= 1
            if depth == 0:
                return match.end()
    return None


def line_col(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of character `offset` of `text`."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1
